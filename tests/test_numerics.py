"""Scale-free, tolerant numerics (issue 13.3): p-values do not depend on the units or the
origin of the scores, "constant" is relative to the scale of the data, overflow is
reported as overflow."""

import warnings

import numpy as np
import pytest

from multistat import compare, cube
from multistat.errors import DataValidationError
from multistat.significance import REGISTRY


def _pairs(binary, seed=0, rows=4, n=25):
    rng = np.random.default_rng(seed)
    if binary:
        return ((rng.random((rows, n)) < 0.7).astype(float),
                (rng.random((rows, n)) < 0.5).astype(float))
    x = rng.normal(0.3, 1.0, (rows, n))
    y = rng.normal(0.0, 1.0, (rows, n))
    y[:, :3] = x[:, :3]  # a few zero differences (ties for the rank tests)
    return x, y


def _run(name, x, y, **kw):
    spec = REGISTRY[name]
    if spec.resampling:
        kw.setdefault("n_resamples", 999)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spec.func(x, y, **kw)


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("scale,shift", [(1e-300, 0.0), (1e300, 0.0), (1e-12, 0.0),
                                         (1e12, 0.0), (3.0, 1e3), (0.5, -7.0)])
def test_scaling_and_shifting_leave_p_unchanged(name, scale, shift):
    spec = REGISTRY[name]
    if spec.binary_only and shift != 0.0:
        pytest.skip("binary scores cannot be shifted or scaled")
    if spec.binary_only:
        pytest.skip("McNemar's counts do not change with units")
    x, y = _pairs(False)
    base = _run(name, x, y)
    moved = _run(name, x * scale + shift, y * scale + shift)
    np.testing.assert_allclose(np.asarray(moved.p_value, float),
                               np.asarray(base.p_value, float), rtol=1e-9, atol=0)
    # estimates and intervals move with the units (one-sided open ends stay infinite)
    for field in ("estimate", "ci_low", "ci_high"):
        b = np.asarray(getattr(base, field), float)
        m = np.asarray(getattr(moved, field), float)
        ok = np.isfinite(b)
        np.testing.assert_allclose(m[ok], b[ok] * scale, rtol=1e-6,
                                   atol=1e-9 * scale * (1 + abs(shift)))


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_compare_table_is_scale_free(scale):
    rng = np.random.default_rng(4)
    score = rng.normal(0, 1, (3, 1, 30))
    score[1] += 0.4

    def table(s):
        ds = cube.make_dataset("d", score * s, systems=["a", "b", "c"], metrics=["m"],
                               instances=[f"i{k}" for k in range(30)])
        return compare(cube.make_study({"d": ds}), n_resamples=999, effect_sizes=False,
                       correction=None, scheduler="synchronous")

    base, moved = table(1.0), table(scale)
    np.testing.assert_allclose(moved["p_value"], base["p_value"], rtol=1e-9)
    np.testing.assert_array_equal(moved["reject"], base["reject"])


def test_nearly_constant_difference_is_constant():
    # issue 13: a - (a - 0.1) in floating point varies by a few ulps; it gave t = 2.5e15
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, 30)
    b = a - 0.1
    assert np.ptp(a - b) > 0  # not exactly constant
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = REGISTRY["t"].func(a, b)
    assert np.isnan(res.p_value) and np.isnan(res.statistic)
    assert "all differences are equal" in str(res.note)
    # a real, tiny spread relative to the scores is not constant
    b2 = a - 0.1 - rng.normal(0, 1e-6, 30)
    assert np.isfinite(REGISTRY["t"].func(a, b2).p_value)


def test_overflow_is_reported_as_overflow():
    rng = np.random.default_rng(1)
    a = 1e308 * rng.choice([-1.0, 1.0], 20)
    b = -a
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = REGISTRY["t"].func(a, b)
    assert "overflow" in str(res.note) and np.isfinite(res.p_value)
    for name in ("sign", "wilcoxon", "bootstrap", "permutation"):
        with pytest.raises(DataValidationError, match="overflow"):
            _run(name, a, b)
    ds = cube.make_dataset("big", np.stack([a, b])[:, None, :], systems=["a", "b"],
                           metrics=["m"], instances=[f"i{k}" for k in range(20)])
    with pytest.raises(DataValidationError, match="overflow in dataset 'big'"):
        compare(cube.make_study({"big": ds}), tests=("t",), scheduler="synchronous")


# ------------------------------------------- extreme scales in every family (scale-free)
EXTREME = [1e-300, 1e300, 1e-200, 1e155]


def _close(a, b, rtol=1e-9):
    return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=rtol, atol=0,
                       equal_nan=False)


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_compare_se_and_mde_at_extreme_scales_equal_scale_one(scale, tmp_path):
    """The t and bootstrap standard errors and the MDE of the same data at 1e+-300 are
    the scale-1 values times the scale (main, 3c3bb2d: at 1e-300 the bootstrap se and
    mde were 0, the t se NaN)."""
    import pandas as pd

    import multistat as ms

    rng = np.random.default_rng(0)
    base = rng.normal(size=(3, 40))
    base[1] += 0.3
    out = {}
    for s in (1.0, scale):
        frame = pd.DataFrame({"system": np.repeat(["a", "b", "c"], 40),
                              "instance": np.tile(np.arange(40), 3),
                              "score": (base * s).ravel()})
        frame.to_csv(tmp_path / "s.csv", index=False)
        res = compare(ms.load(tmp_path / "s.csv"), tests=["t", "bootstrap"],
                      n_resamples=199, seed=3)
        out[s] = res.sort_values(["test", "system_a", "system_b"]).reset_index(drop=True)
    one, big = out[1.0], out[scale]
    assert np.isfinite(one["se"]).all() and (one["se"] > 0).all()
    for col in ("estimate", "se", "ci_low", "ci_high", "mde"):
        assert _close(big[col] / scale, one[col]), col
    assert _close(big["p_value"], one["p_value"])


@pytest.mark.parametrize("scale", EXTREME)
def test_meta_analysis_at_extreme_scales_equals_scale_one(scale):
    """Effects and standard errors at 1e+-300 pool as the same ones at 1 (main, 3c3bb2d:
    every pooled number NaN); tau^2 beyond the float range is said in the note."""
    from multistat.meta.pooling import meta_analysis

    rng = np.random.default_rng(1)
    y, se = rng.normal(0.3, 0.2, 6), np.sqrt(rng.uniform(0.01, 0.05, 6))
    one = meta_analysis(y, se=se)
    big = meta_analysis(y * scale, se=se * scale)
    for f in ("estimate", "se", "ci_low", "ci_high", "pi_low", "pi_high"):
        assert _close(getattr(big, f) / scale, getattr(one, f)), f
    for f in ("p_value", "i2", "h2", "q", "statistic"):
        assert _close(getattr(big, f), getattr(one, f)), f
    assert one.tau2 > 0
    tau2 = one.tau2 * scale * scale
    if np.isfinite(tau2) and tau2 > 0:
        assert _close(big.tau2, tau2)
    else:
        assert "tau2 is beyond the float range" in big.note


@pytest.mark.parametrize("scale", EXTREME)
def test_pearson_in_metric_correlation_is_scale_free(scale):
    """main, 3c3bb2d: 0.0 at 1e155, 1.0 at 1e-200 (the true r is 0.732)."""
    from multistat.meta.evaluation import metric_correlation

    rng = np.random.default_rng(1)
    h = rng.normal(size=(5, 40))
    m = h + rng.normal(size=(5, 40))
    one = metric_correlation(h, m, n_resamples=0).value
    # scipy.stats.pearsonr on the flattened cells (average_by="none"): the reference
    from scipy import stats
    assert _close(one, stats.pearsonr(h.ravel(), m.ravel()).statistic, rtol=1e-12)
    assert _close(metric_correlation(h * scale, m * scale, n_resamples=0).value, one)
    assert _close(metric_correlation(h, m * scale, n_resamples=0).value, one)


@pytest.mark.parametrize("scale", EXTREME)
def test_krippendorff_interval_alpha_is_scale_free(scale):
    """main, 3c3bb2d: NaN at 1e+-300."""
    from multistat.human.agreement import krippendorff_alpha

    rng = np.random.default_rng(2)
    r = rng.integers(1, 6, size=(4, 30)).astype(float)
    r[0] = r[1] + rng.integers(-1, 2, 30)
    for level in ("interval", "ratio", "ordinal", "nominal"):
        one = krippendorff_alpha(r, level).alpha
        assert np.isfinite(one)
        assert _close(krippendorff_alpha(r * scale, level).alpha, one, rtol=1e-12), level
