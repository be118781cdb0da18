"""Invariants every registered test must satisfy (scikit-learn test_common style)."""

import numpy as np
import pandas as pd
import pytest

from multistat import cube
from multistat.comparison import compare
from multistat.significance import REGISTRY

# "aso" (Almost Stochastic Order) gives eps_min, not a p-value: its invariants are in
# tests/test_aso.py
ALL_TESTS = sorted(t for t in REGISTRY if t != "aso")


def _data(test, shape=(3, 60), seed=0):
    rng = np.random.default_rng(seed)
    if REGISTRY[test].binary_only:
        x = (rng.random(shape) < 0.7).astype(float)
        y = (rng.random(shape) < 0.5).astype(float)
    else:
        x = np.round(rng.normal(0.3, 1, shape), 2)  # rounding: ties, like real scores
        y = np.round(rng.normal(0.0, 1, shape), 2)
    return x, y


def _call(test, x, y, **kw):
    spec = REGISTRY[test]
    if spec.resampling:
        kw.setdefault("n_resamples", 999)
        kw.setdefault("seed", 0)
    return spec.func(x, y, **kw)


def test_registry_lists_the_documented_tests_with_assumptions():
    assert {"t", "sign", "wilcoxon", "bootstrap", "permutation", "mcnemar"} <= set(REGISTRY)
    assert REGISTRY["t"].assumes_normal and REGISTRY["t"].assumes_symmetric
    assert REGISTRY["wilcoxon"].assumes_symmetric and not REGISTRY["wilcoxon"].assumes_normal
    assert not REGISTRY["sign"].assumes_symmetric
    assert REGISTRY["mcnemar"].binary_only
    assert REGISTRY["bootstrap"].resampling and REGISTRY["permutation"].resampling


@pytest.mark.parametrize("test", ALL_TESTS)
def test_swapping_a_and_b_negates_estimate_and_keeps_two_sided_p(test):
    x, y = _data(test)
    ab = _call(test, x, y)
    ba = _call(test, y, x)
    np.testing.assert_allclose(np.asarray(ba.estimate), -np.asarray(ab.estimate),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ba.p_value, ab.p_value, rtol=1e-12)


@pytest.mark.parametrize("test", ALL_TESTS)
def test_one_sided_p_values_swap_with_the_systems(test):
    x, y = _data(test)
    np.testing.assert_allclose(_call(test, x, y, alternative="greater").p_value,
                               _call(test, y, x, alternative="less").p_value, rtol=1e-12)


@pytest.mark.parametrize("test", [t for t in ALL_TESTS if not REGISTRY[t].resampling])
def test_instance_order_does_not_matter_closed_form(test):
    x, y = _data(test)
    perm = np.random.default_rng(1).permutation(x.shape[-1])
    a, b = _call(test, x, y), _call(test, x[:, perm], y[:, perm])
    for field in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("test", ALL_TESTS)
def test_result_fields_have_the_batch_shape_and_p_in_unit_interval(test):
    x, y = _data(test, shape=(2, 3, 40))
    res = _call(test, x, y)
    for field in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
        assert np.shape(getattr(res, field)) == (2, 3), field
    p = np.asarray(res.p_value)
    assert np.all((p > 0) & (p <= 1))
    assert res.test == test and res.alternative == "two-sided"
    lo, hi = (np.asarray(v, dtype=float) for v in res.confidence_interval())
    if test in ("permutation", "brunner-munzel"):
        # no interval for the estimate (permutation: none; Brunner-Munzel: its interval
        # is for the relative effect, in extra columns), and the note says so
        assert np.all(np.isnan(lo)) and np.all(np.asarray(res.note) != "")
    else:
        assert np.all(lo <= hi)


@pytest.mark.parametrize("test", ALL_TESTS)
def test_seeded_runs_repeat_exactly(test):
    x, y = _data(test)
    a, b = _call(test, x, y), _call(test, x, y)
    assert np.array_equal(a.p_value, b.p_value)
    assert np.array_equal(a.ci_low, b.ci_low, equal_nan=True)


# ------------------------------------------------------------------- study-level invariants
def _study(seed=0, n=(120, 45)):
    rng = np.random.default_rng(seed)
    out = {}
    for d, nn in zip(("big", "small"), n):
        base = rng.normal(size=nn)
        score = np.stack([np.stack([np.round(base + q + rng.normal(0, 1, nn), 1),
                                    (rng.random(nn) < 0.5 + q / 2).astype(float)])
                          for q in (0.0, 0.1, 0.3, 0.3)])
        out[d] = cube.make_dataset(d, score, systems=["s1", "s2", "s3", "s4"],
                                   metrics=["bleu", "acc"],
                                   instances=[f"i{i:03d}" for i in range(nn)],
                                   kind=["mean", "binary"])
    return cube.make_study(out)


KW = {"tests": ("t", "wilcoxon", "sign", "bootstrap", "permutation"), "n_resamples": 2500,
      "seed": 0, "effect_sizes": False}


def _key(table):
    return table.drop(columns=["note"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference():
    return compare(_study(), scheduler="synchronous", n_chunks=1, **KW)


@pytest.mark.parametrize("n_chunks", [1, 2, 7])
def test_same_seed_bit_identical_for_any_chunking(reference, n_chunks):
    got = compare(_study(), scheduler="threads", n_chunks=n_chunks, **KW)
    pd.testing.assert_frame_equal(_key(got), _key(reference), check_exact=True)


def test_same_seed_bit_identical_with_processes(reference):
    got = compare(_study(), scheduler="processes", n_chunks=2, **KW)
    pd.testing.assert_frame_equal(_key(got), _key(reference), check_exact=True)


def test_same_seed_bit_identical_on_a_two_worker_local_cluster(reference):
    distributed = pytest.importorskip("distributed")
    before = open_clients()
    with (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=40) as cluster,
          distributed.Client(cluster) as client):
        got = compare(_study(), scheduler=client, **KW)
        got_addr = compare(_study(), scheduler=cluster.scheduler_address, n_chunks=3, **KW)
    pd.testing.assert_frame_equal(_key(got), _key(reference), check_exact=True)
    pd.testing.assert_frame_equal(_key(got_addr), _key(reference), check_exact=True)
    # the Client compare made for the address is closed again: left open, its connection
    # and background threads outlived the call (one more per resampled dataset and kind)
    assert open_clients() == before


def open_clients():
    from distributed.client import Client

    return sum(c.status not in ("closed", "closing") for c in list(Client._instances))


def test_dask_backed_study_equals_numpy_and_stays_lazy(reference):
    import dask.array as da

    lazy = cube.chunk(_study(), system=2, metric=1)
    assert isinstance(cube.datasets(lazy)["big"]["score"].data, da.Array)
    got = compare(lazy, scheduler="threads", **KW)
    assert isinstance(cube.datasets(lazy)["big"]["score"].data, da.Array)
    pd.testing.assert_frame_equal(_key(got), _key(reference), check_exact=True)


def test_instance_order_does_not_change_the_study_results(reference):
    st = _study()
    shuffled = {}
    for name, ds in cube.datasets(st).items():
        perm = np.random.default_rng(5).permutation(ds.sizes["instance"])
        shuffled[name] = ds.isel(instance=perm)
    got = compare(cube.make_study(shuffled), scheduler="synchronous", **KW)
    pd.testing.assert_frame_equal(_key(got), _key(reference), check_exact=False,
                                  rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------- every registered test via compare
from multistat.significance import TestResult, TestSpec, register, unregister

CALLS: list = []


def _signflip_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
                   seed=0, n_resamples=1000):
    """A user's resampling test (sign flips of the mean difference, its own generator):
    records the seed and resample count it was called with."""
    CALLS.append((seed, n_resamples))
    d = np.asarray(x, float) - np.asarray(y, float) - null_value
    rng = np.random.default_rng(seed)
    flips = rng.choice([-1.0, 1.0], size=(n_resamples, d.shape[-1]))
    obs = d.mean(-1)
    null = np.einsum("bn,...n->b...", flips, d) / d.shape[-1]
    p = (np.sum(np.abs(null) >= np.abs(obs) - 1e-12, axis=0) + 1) / (n_resamples + 1)
    nan = np.full(obs.shape, np.nan)
    note = np.where(np.all(d == 0, axis=-1), "all differences are zero", "")
    return TestResult(test="user_signflip", statistic=obs, p_value=p, estimate=obs + null_value,
                      ci_low=nan, ci_high=nan, confidence_level=confidence_level,
                      n=np.full(obs.shape, d.shape[-1]), alternative=alternative,
                      null_value=null_value, note=note)


@pytest.fixture
def user_test():
    spec = register(TestSpec("user_signflip", _signflip_test, "resampling", ("mean",),
                             assumes_symmetric=True, assumes_normal=False, resampling=True))
    CALLS.clear()
    yield spec
    unregister("user_signflip")


def _registry_study(seed=0, n=40, degenerate=False):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    # scores on a grid of 1/64 (ties, like real scores) so a shift by 3 is exact in binary
    cont = np.stack([np.round((base + q + rng.normal(0, 1, n)) * 64) / 64
                     for q in (0.0, 0.2, 0.5)])
    binr = np.stack([(rng.random(n) < p).astype(float) for p in (0.5, 0.6, 0.8)])
    if degenerate:  # system 2 equals system 1: constant (zero) differences
        cont[2] = cont[1]
        binr[2] = binr[1]
    score = np.stack([cont, binr], 1)
    ds = cube.make_dataset("d", score, systems=["s1", "s2", "s3"], metrics=["m", "acc"],
                           instances=[f"i{i:03d}" for i in range(n)], kind=["mean", "binary"])
    return cube.make_study({"d": ds})


def _run(test, study, **kw):
    metrics = ["acc"] if REGISTRY[test].binary_only else ["m"]
    kw = {"tests": (test,), "seed": 7, "n_resamples": 500, "effect_sizes": False,
          "metrics": metrics, "scheduler": "synchronous", **kw}
    return compare(study, **kw)


def _registered_plus_user():
    return ALL_TESTS + ["user_signflip"]


@pytest.mark.parametrize("test", _registered_plus_user())
def test_registered_test_through_compare_records_what_it_used(test, user_test):
    table = _run(test, _registry_study())
    spec = REGISTRY[test]
    if spec.resampling:
        assert (table["seed"] == 7).all() and (table["n_resamples"] == 500).all()
        # the p-values sit on the grid of the resample count actually used
        p = table["p_value"].to_numpy()
        np.testing.assert_allclose(p * 501, np.round(p * 501), atol=1e-8)
        other = _run(test, _registry_study(), seed=8)
        assert not np.array_equal(other["p_value"], table["p_value"])  # the seed is used
    else:
        assert (table["seed"] == -1).all() and (table["n_resamples"] == 0).all()
    if test == "user_signflip":
        assert set(CALLS) == {(7, 500), (8, 500)}  # never the function's defaults


@pytest.mark.parametrize("test", _registered_plus_user())
def test_registered_test_same_seed_identical_and_shift_invariant(test, user_test):
    st = _registry_study()
    a = _run(test, st)
    b = _run(test, st)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    if REGISTRY[test].binary_only:
        return  # a shift leaves {0, 1}
    ds = cube.datasets(st)["d"].copy(deep=True)
    ds["score"] = ds["score"] + 3.0
    shifted = _run(test, cube.make_study({"d": ds}))
    for col in ("p_value", "estimate", "statistic", "ci_low", "ci_high"):
        np.testing.assert_allclose(shifted[col], a[col], rtol=1e-9, atol=1e-9, err_msg=col)


@pytest.mark.parametrize("test", _registered_plus_user())
def test_registered_test_swapping_a_and_b_mirrors(test, user_test):
    st = _registry_study()
    ab = _run(test, st, pairs=[("s1", "s2"), ("s1", "s3"), ("s2", "s3")])
    ba = _run(test, st, pairs=[("s2", "s1"), ("s3", "s1"), ("s3", "s2")])
    np.testing.assert_allclose(ba["estimate"], -ab["estimate"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ba["p_value"], ab["p_value"], rtol=1e-12)
    lo, hi = ab["ci_low"].to_numpy(), ab["ci_high"].to_numpy()
    if not np.isnan(lo).all() and not REGISTRY[test].resampling:
        np.testing.assert_allclose(ba["ci_low"], -hi, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ba["ci_high"], -lo, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("test", _registered_plus_user())
def test_registered_test_degenerate_and_missing_input_give_notes(test, user_test):
    st = _registry_study(degenerate=True)
    table = _run(test, st)
    same = table[(table["system_a"] == "s2") & (table["system_b"] == "s3")]
    assert len(same) == 1
    row = same.iloc[0]
    assert row["estimate"] == 0
    assert row["note"] != "" or row["p_value"] == 1.0, row.to_dict()
    # instances scored by no system are dropped (n says how many are left)
    ds = cube.datasets(_registry_study())["d"].copy(deep=True)
    ds["score"][:, :, :3] = np.nan
    dropped = _run(test, cube.make_study({"d": ds}))
    assert (dropped["n"] <= 37).all()
    # a single scored instance: NaN with a note, not a crash
    ds = cube.datasets(_registry_study())["d"].copy(deep=True)
    ds["score"][:, :, 1:] = np.nan
    tiny = _run(test, cube.make_study({"d": ds}))
    assert (tiny["n"] <= 1).all()
    assert ((tiny["note"] != "") | tiny["p_value"].notna()).all()
