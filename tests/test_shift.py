"""Shift invariance (issue 24.1): moving every score by a constant changes no p-value,
decision or estimate. The data lie on a 1/8 grid in [-16, 0], so every moved score and
every difference is exact up to a shift of 2^50 (the spacing of doubles just below 2^50 is
1/8): the results must be identical, bit for bit, and levels (a system's mean score) must
be the unshifted level moved by the shift, up to the one rounding at the shift's
magnitude. Every registered test is looped over, as in tests/test_common.py."""

import warnings

import numpy as np
import pytest

from multistat import compare, cube
from multistat.errors import TestNotApplicableError
from multistat.significance import REGISTRY

SHIFTS = (2.0**30, 2.0**40, 2.0**50)
FIELDS = ("statistic", "p_value", "estimate", "ci_low", "ci_high")


def _grid_pairs(rows=3, n=40, seed=0):
    """Two systems' scores, multiples of 1/8 in [-16, 0]: differences of sd about 4, a
    few zero differences and ties (as real scores have)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 1, (rows, n)) / 8
    y = np.clip(x - rng.integers(-24, 30, (rows, n)) / 8, -16, 0)
    y[:, :3] = x[:, :3]
    return x, y


def _run(name, x, y, **kw):
    spec = REGISTRY[name]
    if spec.resampling:
        kw.setdefault("n_resamples", 999)
        kw.setdefault("seed", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spec.func(x, y, **kw)


@pytest.mark.parametrize("shift", SHIFTS)
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_test_is_unchanged_by_a_shift(name, shift):
    if REGISTRY[name].binary_only:  # 0/1 outcomes moved by a constant are not 0/1
        x, y = (v % 2 for v in _grid_pairs())
        with pytest.raises(TestNotApplicableError, match=r"binary \(0/1\) scores"):
            _run(name, x + shift, y + shift)
        return
    x, y = _grid_pairs()
    assert np.array_equal((x + shift) - shift, x) and np.array_equal((y + shift) - shift, y)
    options = ([{}] if not REGISTRY[name].resampling or name == "aso" else
               [{}, {"statistic": "median"}, {"alternative": "greater", "null_value": 0.5}])
    for kw in options:
        base, moved = _run(name, x, y, **kw), _run(name, x + shift, y + shift, **kw)
        for field in FIELDS:
            b = np.asarray(getattr(base, field), float)
            m = np.asarray(getattr(moved, field), float)
            assert np.array_equal(m, b, equal_nan=True), (field, kw)
        assert np.array_equal(np.asarray(moved.note), np.asarray(base.note))


def _grid_study(shift, S=5, n=60, seed=1):
    rng = np.random.default_rng(seed)
    base = rng.integers(-64, 1, n) / 8
    score = np.stack([np.clip(base + rng.integers(-40, 9, n) / 8 + s / 8, -16, 0)
                      for s in range(S)])[:, None, :]
    ds = cube.make_dataset("d", score + shift, systems=[f"s{i}" for i in range(S)],
                           metrics=["m"], instances=[f"i{i:03d}" for i in range(n)])
    return cube.make_study({"d": ds})


LEVELS = ("score_a", "score_b")


@pytest.fixture(scope="module")
def unshifted():
    return _compare(0.0)


def _compare(shift):
    tests = tuple(t for t in sorted(REGISTRY) if not REGISTRY[t].binary_only)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare(_grid_study(shift), tests=tests, n_resamples=999, seed=0,
                       power=True, scheduler="synchronous")


@pytest.mark.parametrize("shift", SHIFTS)
def test_compare_table_is_unchanged_by_a_shift(unshifted, shift):
    got = _compare(shift)
    assert len(got) == len(unshifted) and got["reject"].any()
    numeric = [c for c in unshifted.columns if unshifted[c].dtype.kind in "fiub"
               and c not in LEVELS]
    for col in numeric:  # p-values, decisions, estimates, intervals, effects, power, mde
        assert np.array_equal(got[col].to_numpy(), unshifted[col].to_numpy(),
                              equal_nan=True), col
    assert (got["note"] == unshifted["note"]).all()
    # levels move with the shift, rounded once at its magnitude (half a unit in the last
    # place of the shifted level)
    for col in LEVELS:
        moved = got[col].to_numpy()
        assert np.all(np.abs(moved - (unshifted[col].to_numpy() + shift))
                      <= np.spacing(moved) / 2), col


def test_millisecond_timestamps_give_a_t_test(unshifted):
    # issue 24.1: scores moved by 1.7e12 gave p = NaN, "all differences are equal"
    got = _compare(1.7e12)
    t = got[got.test == "t"]
    assert np.isfinite(t["p_value"]).all() and not t["note"].str.contains("equal").any()
    np.testing.assert_array_equal(t["p_value"], unshifted[unshifted.test == "t"]["p_value"])


def test_systems_table_levels_move_with_the_shift():
    ref = compare(_grid_study(0.0), tests=("bootstrap",), n_resamples=500,
                  return_systems=True, scheduler="synchronous")[1]
    got = compare(_grid_study(2.0**40), tests=("bootstrap",), n_resamples=500,
                  return_systems=True, scheduler="synchronous")[1]
    for col in ("score", "ci_low", "ci_high"):
        moved = got[col].to_numpy()
        # the quantiles interpolate between resampled levels: a few units in the last
        # place of 2^40 (1/4096 each), far below the 1/8 grid of the scores
        assert np.all(np.abs(moved - (ref[col].to_numpy() + 2.0**40))
                      <= 4 * np.spacing(moved)), col
