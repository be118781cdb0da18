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
