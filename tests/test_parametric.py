"""Paired t test: agreement with scipy, direction, symmetry, degenerate input, errors."""

import numpy as np
import pytest
from scipy import stats

from multistat.errors import (
    ConstantInputWarning,
    DataValidationError,
    ParameterError,
    ParameterTypeError,
    SmallSampleWarning,
)
from multistat.significance import REGISTRY, paired_t

ALTS = ["two-sided", "less", "greater"]


@pytest.fixture
def batch():
    rng = np.random.default_rng(11)
    x = rng.normal(0.1, 1.0, size=(3, 4, 37))
    y = x + rng.normal(0.05, 0.7, size=x.shape)
    return x, y


@pytest.mark.parametrize("alternative", ALTS)
@pytest.mark.parametrize("null_value", [0.0, -0.08])
def test_matches_scipy(batch, alternative, null_value):
    # reference: scipy.stats.ttest_1samp on x - y with popmean = null_value, and
    # scipy.stats.ttest_rel(...).confidence_interval() for the interval (same for any delta)
    x, y = batch
    res = paired_t(x, y, alternative=alternative, null_value=null_value, confidence_level=0.9)
    ref = stats.ttest_1samp(x - y, null_value, axis=-1, alternative=alternative)
    ci = stats.ttest_rel(x, y, axis=-1, alternative=alternative).confidence_interval(0.9)
    assert res.statistic.shape == (3, 4)
    np.testing.assert_allclose(res.statistic, ref.statistic, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.ci_low, ci.low, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.ci_high, ci.high, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.estimate, (x - y).mean(-1), rtol=0, atol=1e-12)
    assert np.all(res.n == 37) and np.all(res.extra["df"] == 36)
    assert res.test == "t" and res.alternative == alternative and res.null_value == null_value


def test_direction():
    rng = np.random.default_rng(1)
    y = rng.normal(size=40)
    x = y + 0.5 + rng.normal(0, 0.2, size=40)  # x clearly greater
    assert paired_t(x, y, alternative="greater").p_value < 1e-6
    assert paired_t(x, y, alternative="less").p_value > 1 - 1e-6
    assert paired_t(x, y).statistic > 0


def test_swap_symmetry(batch):
    x, y = batch
    a, b = paired_t(x, y), paired_t(y, x)
    np.testing.assert_allclose(a.estimate, -b.estimate, atol=1e-14)
    np.testing.assert_allclose(a.p_value, b.p_value, atol=1e-14)
    np.testing.assert_allclose(a.ci_low, -b.ci_high, atol=1e-14)


def test_other_level_recomputed(batch):
    x, y = batch
    res = paired_t(x, y)
    low, high = res.confidence_interval(0.8)
    ref = stats.ttest_rel(x, y, axis=-1).confidence_interval(0.8)
    np.testing.assert_allclose(low, ref.low, atol=1e-10)
    np.testing.assert_allclose(high, ref.high, atol=1e-10)


def test_one_dimensional_gives_scalars():
    res = paired_t([1.0, 2.0, 3.5], [0.5, 2.5, 2.0])
    assert np.ndim(res.p_value) == 0 and np.ndim(res.note) == 0 and res.note == ""


def test_constant_differences_nan_with_warning():
    x = np.array([[1.0, 2.0, 3.0], [1.0, 2.5, 3.0]])
    y = x - 0.1
    y[1] = [0.0, 2.0, 1.0]
    with pytest.warns(ConstantInputWarning, match=r"all differences are equal.*1 of 2 rows"):
        res = paired_t(x, y)
    assert np.isnan(res.p_value[0]) and np.isnan(res.statistic[0]) and np.isnan(res.ci_low[0])
    assert np.isclose(res.estimate[0], 0.1)
    assert "sd = 0" in res.note[0] and res.note[1] == ""
    assert np.isfinite(res.p_value[1])


def test_single_pair_nan_with_warning():
    with pytest.warns(SmallSampleWarning, match="fewer than 2 pairs"):
        res = paired_t([1.0], [0.0])
    assert np.isnan(res.p_value) and res.estimate == 1.0 and "fewer than 2" in res.note


def test_registered():
    spec = REGISTRY["t"]
    assert spec.func is paired_t and spec.assumes_normal and spec.assumes_symmetric
    assert spec.statistic_kinds == ("mean",) and spec.family == "parametric"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"alternative": "bigger"}, ParameterError, r"`alternative` must be one of .*'bigger'"),
    ({"alternative": 1}, ParameterTypeError, r"`alternative` must be one of"),
    ({"confidence_level": 1.0}, ParameterError, r"`confidence_level` must be in \(0, 1\)"),
    ({"confidence_level": "0.9"}, ParameterTypeError, r"`confidence_level` must be a real"),
    ({"null_value": np.nan}, ParameterError, r"`null_value` must be a finite real"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        paired_t([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], **kwargs)


def test_bad_input():
    with pytest.raises(ParameterError, match="same shape"):
        paired_t([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(DataValidationError, match=r"NaN or infinite values in 1 pair"):
        paired_t([1.0, np.nan, 2.0], [1.0, 2.0, 3.0])
    res = paired_t([1.0, 2.0, 3.0], [0.0, 1.0, 1.0])
    with pytest.raises(ParameterError, match=r"`confidence_level` must be in \(0, 1\); got 2.0"):
        res.confidence_interval(2.0)


@pytest.mark.parametrize("dist, n, true_mean", [("normal", 30, 0.3), ("exponential", 100, 1.0)])
def test_interval_coverage(dist, n, true_mean):
    # 4000 replications (Monte Carlo SE ~ 0.35 points): exact under normality; for skewed
    # (exponential) differences the t interval undercovers at small n (92.8 % at n = 30 in
    # this simulation), so the approximate case is checked at n = 100
    rng = np.random.default_rng(31 + n)
    if dist == "normal":
        d = rng.normal(true_mean, 1.0, size=(4000, n))
    else:
        d = rng.exponential(size=(4000, n))
    res = paired_t(d, np.zeros_like(d))
    cover = np.mean((res.ci_low <= true_mean) & (true_mean <= res.ci_high))
    assert abs(cover - 0.95) <= 0.02, cover
