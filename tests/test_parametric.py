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


# ----------------------------------------------------------------------------- pair-free
def _leaderboard(scales, S=5, n=300, seed=3):
    """(S, 1, n) correlated scores, system s multiplied by ``scales[s]``."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    X = np.stack([base + 0.15 * s + rng.normal(size=n) for s in range(S)])[:, None, :]
    return X * np.asarray(scales, float)[:, None, None], X


def test_gram_scaled_is_the_gram_matrix_bit_for_bit():
    # reference: the centred Gram matrix written out with numpy, at ordinary scale the
    # power-of-two scaling changes no bit (division by 2^k is exact)
    from multistat.significance._batch import Slab

    X, _ = _leaderboard([1.0, 3.0, 0.01, 250.0, 1.0])
    slab = Slab(X)
    # every sum runs on x - k, k the lower median of every system's scores on 16 evenly
    # spread instances (multistat._centre, issue 24.1)
    pos = np.unique(np.linspace(0, X.shape[-1] - 1, 16).round().astype(int))
    k = np.sort(X[:, 0, pos].ravel())[(X.shape[0] * pos.size - 1) // 2]
    assert slab.centres()[0] == k
    xk = X[:, 0] - k
    xc = xk - xk.mean(-1, keepdims=True)
    assert np.array_equal(slab.gram()[0], xc @ xc.T)
    assert np.array_equal(slab.centred_means()[:, 0], xk.mean(-1))
    assert np.array_equal(slab.means()[:, 0], xk.mean(-1) + k)
    _, c = slab.gram_scaled()
    assert np.all(np.log2(c) == np.round(np.log2(c)))  # powers of two
    spread = np.abs(xk).max(-1)[:, None]
    assert np.all((spread / c >= 0.5) & (spread / c < 1))


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e-305, 1e150])
def test_pair_free_t_is_scale_free_without_warnings(scale):
    # reference: scipy.stats.ttest_rel on the unscaled scores (t and p do not depend on
    # the units); before, 1e300 raised "overflow encountered in matmul" from the Gram
    # product and 1e-300 gave NaN effect sizes (the Gram matrix underflowed)
    import warnings

    from multistat import compare, cube

    X, X1 = _leaderboard([scale] * 5)
    names = [f"s{i}" for i in range(5)]

    def table(x):
        ds = cube.make_dataset("d", x, systems=names, metrics=["m"], instances=range(300))
        return compare(cube.make_study({"d": ds}), tests=("t",), correction=None)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tab = table(X)
    base = table(X1)
    a = np.array([names.index(s) for s in tab.system_a])
    b = np.array([names.index(s) for s in tab.system_b])
    ref = stats.ttest_rel(X1[a, 0], X1[b, 0], axis=-1)
    np.testing.assert_allclose(tab.statistic, ref.statistic, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tab.p_value, ref.pvalue, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tab.estimate / scale, base.estimate, rtol=1e-12)
    np.testing.assert_allclose(tab.ci_low / scale, base.ci_low, rtol=1e-12)
    for col in ("cohens_d", "hedges_g", "cohens_d_ci_low", "hedges_g_ci_high"):
        np.testing.assert_allclose(tab[col], base[col], rtol=1e-12, atol=1e-14)
    assert (tab.note == "").all()


def test_pair_free_moments_with_systems_at_different_scales():
    # reference: the per-pair formula d.mean(), d.std(ddof=1) on differences computed
    # after dividing both systems by 1e300 (exact for these magnitudes up to rounding)
    from multistat.significance._batch import Slab
    from multistat.significance.parametric import pair_mean_sd

    scales = np.array([1e300, 3e299, 1e300, 2e295, 1e300])
    X, _ = _leaderboard(scales)
    ia, ib = np.triu_indices(5, 1)
    with np.errstate(all="raise"):
        mean, sd = pair_mean_sd(Slab(X), ia, ib)
    d = X[ia] / 1e300 - X[ib] / 1e300
    np.testing.assert_allclose(mean / 1e300, d.mean(-1), rtol=1e-11)
    np.testing.assert_allclose(sd / 1e300, d.std(-1, ddof=1), rtol=1e-11)


@pytest.mark.parametrize("S,n", [(1, 5000), (3, 2), (7, 401), (100, 10_000), (300, 900),
                                 (2500, 3)])
def test_scale_centre_in_cache_blocks_gives_the_whole_array_bits(S, n):
    # reference: the two whole-array operations it replaces (xc *= inv; xc -= mu) on a
    # gathered metric's layout (instances outermost), with NaN, +-inf, -0.0 and subnormal
    # values among the scores; blocks, long rows and the leftover instances all covered
    from multistat.significance._batch import _scale_centre

    rng = np.random.default_rng(S + n)
    raw = rng.normal(size=(n, S)) * 10.0 ** rng.integers(-290, 290, size=(n, S))
    raw.flat[rng.integers(0, raw.size, size=4)] = [np.nan, np.inf, -np.inf, -0.0]
    raw.flat[rng.integers(0, raw.size)] = 5e-320
    inv = 2.0 ** rng.integers(-20, 20, size=S).astype(float)
    mu = rng.normal(size=S)
    want = raw.T.copy(order="F")
    want *= inv[:, None]
    want -= mu[:, None]
    got = raw.T.copy(order="F")  # (S, n), got.T C-contiguous
    _scale_centre(got, inv, mu)
    assert got.flags.f_contiguous and np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    other = raw.T.copy(order="C")  # another layout: the whole-array operations
    _scale_centre(other, inv, mu)
    assert np.array_equal(other, want, equal_nan=True)


@pytest.mark.parametrize("S,M,n,scale", [(7, 3, 400, 1.0), (5, 1, 33, 1e300),
                                         (40, 2, 7000, 1e-3), (3, 2, 1, 1.0)])
def test_slab_with_a_lazy_order_gives_the_gathered_slabs_bits(S, M, n, scale):
    # reference: a Slab of the gathered cube scores[..., order] (what compare held
    # before; instances outermost in memory, on which numpy's sums run in their own
    # order); the lazy Slab gathers one metric at a time with that layout and must give
    # the same means, Gram matrix and t/d_z moments bit for bit, without gathering the
    # cube (a C-contiguous gather would change the means' last bits)
    from multistat.significance._batch import Slab
    from multistat.significance.parametric import pair_mean_sd

    rng = np.random.default_rng(S * n)
    raw = np.round(rng.normal(size=(S, M, n)) + rng.normal(size=n), 3) * scale
    order = rng.permutation(n)
    ref, lazy = Slab(raw[..., order]), Slab(raw, order=order)
    ia, ib = np.triu_indices(S, 1)
    assert np.array_equal(lazy.means(), ref.means())
    assert np.array_equal(lazy.gram_scaled()[0], ref.gram_scaled()[0])
    for got, want in zip(pair_mean_sd(lazy, ia, ib), pair_mean_sd(ref, ia, ib)):
        assert np.array_equal(got, want, equal_nan=True)
    assert lazy.order is not None  # nothing above needed the gathered cube
    assert lazy.shape == ref.shape and lazy.n == n
    assert np.array_equal(lazy.scores, ref.scores) and lazy.order is None
    assert not lazy.scores.flags.writeable
