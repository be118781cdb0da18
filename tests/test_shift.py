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
    plan = {"n_resamples": 999, "seed": 0} if REGISTRY[name].resampling else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return REGISTRY[name].func(x, y, **plan, **kw)


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


@pytest.mark.parametrize("bb,n,S", [(1000, 300, 7), (37, 2000, 40), (8, 50, 3)])
def test_mean_kernel_with_a_centre_is_linear_kernel_on_centred_data_bit_for_bit(bb, n, S):
    # the centred rows are formed one column slab at a time (no centred copy of the
    # cube); rows whose centre is 0 keep their bits, the rows of ones are not centred
    from threadpoolctl import threadpool_limits

    from multistat import engine as eng

    rng = np.random.default_rng(bb + n)
    X = rng.normal(size=(S, 3, n)) + np.array([1e6, 0.0, -3.0])[:, None]
    k = np.array([1e6 - 5.0, 0.0, -7.5])
    with threadpool_limits(limits=1, user_api="blas"):
        for kind in ("bootstrap", "permutation"):
            plan = eng.plan_block(kind, n, bb, 3, "d", 0)
            centred = X - k[:, None]
            centred[:, 1] = X[:, 1]  # (x - 0 is x)
            assert np.array_equal(eng.mean_kernel(plan, X, centre=k),
                                  eng.linear_kernel(plan, centred / n))
            aug = np.concatenate([centred, np.ones((1,) + X.shape[1:])], 0) / n
            assert np.array_equal(eng.mean_kernel(plan, X, ones=True, centre=k),
                                  eng.linear_kernel(plan, aug))
            assert np.array_equal(eng.mean_kernel(plan, X, centre=np.zeros(3)),
                                  eng.mean_kernel(plan, X))


def test_centre_is_a_data_value_or_zero():
    from multistat._centre import CANDIDATES, metric_centres

    # the lower median of every system's scores on up to 16 instances (NaN and inf left
    # out): here all instances, values 2.5, 2.75, 3, 4, 9
    X = np.array([[[3.0, 2.5, np.nan]], [[4.0, 2.75, 9.0]]])
    assert metric_centres(X)[0] == 3.0
    assert metric_centres(np.array([[[-np.inf, 1.0, 2.0, 5.0]]]))[0] == 2.0
    big = np.arange(1000.0)[None, None]  # 16 evenly spread: 0, 67, ..., 999
    pos = np.linspace(0, 999, CANDIDATES).round()
    assert metric_centres(big)[0] == pos[(CANDIDATES - 1) // 2]
    assert metric_centres(np.full((2, 1, 3), np.nan))[0] == 0.0
    assert metric_centres(np.array([[[1e300, -1e300]]]))[0] == -1e300  # 2e300: no overflow
    assert metric_centres(np.array([[[6e300, -6e300]]]))[0] == 0.0  # 2 x 6e300 > 2^1000
