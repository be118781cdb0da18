"""The resampling engine: plans, kernels, block independence, p-value counting."""

import numpy as np
import pytest

from multistat import engine as eng
from multistat.errors import ParameterError, ParameterTypeError


def test_block_plans_depend_only_on_seed_dataset_kind_block():
    a = eng.plan_block("bootstrap", 50, 2500, 0, "d", 1)
    b = eng.plan_block("bootstrap", 50, 2500, 0, "d", 1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, eng.plan_block("bootstrap", 50, 2500, 1, "d", 1))
    assert not np.array_equal(a, eng.plan_block("bootstrap", 50, 2500, 0, "e", 1))
    assert not np.array_equal(a, eng.plan_block("bootstrap", 50, 2500, 0, "d", 0))
    # the whole plan is the concatenation of its blocks, whatever the grouping
    whole = np.concatenate(list(eng.plan_blocks("bootstrap", 50, 2500, 0, "d")))
    assert whole.shape == (2500, 50)
    assert np.array_equal(whole[1000:2000], a)


def test_seed_zero_is_a_seed_and_none_is_refused():
    z = eng.plan_block("permutation", 20, 100, 0, "d", 0)
    assert np.array_equal(z, eng.plan_block("permutation", 20, 100, 0, "d", 0))
    with pytest.raises(ParameterTypeError, match="`seed` must be a non-negative integer"):
        eng.block_rng(None, "d", "bootstrap", 0)
    with pytest.raises(ParameterError, match="`seed` must be a non-negative integer; got -1"):
        eng.block_rng(-1, "d", "bootstrap", 0)


def test_bootstrap_counts_are_multinomial():
    rng = np.random.default_rng(1)
    c = eng.bootstrap_counts(rng, 4000, 10)
    assert np.all(c.sum(1) == 10) and c.min() >= 0
    # each count ~ Binomial(10, 1/10): mean 1, variance 0.9 (4000 x 10 draws)
    assert abs(c.mean() - 1) < 0.02
    assert abs(c.var() - 0.9) < 0.05


def test_sign_flips_are_fair_and_exact_enumeration_is_complete():
    s = eng.sign_flips(np.random.default_rng(2), 20000, 5)
    assert set(np.unique(s)) == {-1.0, 1.0}
    assert abs(s.mean()) < 0.01
    e = eng.exact_sign_flips(4)
    assert e.shape == (16, 4) and len({tuple(r) for r in e}) == 16
    assert np.all(e[0] == 1)


def test_linear_kernel_equals_explicit_resampled_means():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4, 30))
    plan = eng.bootstrap_counts(rng, 50, 30)
    got = eng.linear_kernel(plan, x / 30)  # (50, 3, 4)
    idx = [np.repeat(np.arange(30), plan[b].astype(int)) for b in range(50)]
    want = np.stack([x[..., i].mean(-1) for i in idx])
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("n", [9, 10])
def test_weighted_median_equals_numpy_median_of_the_resample(n):
    rng = np.random.default_rng(n)
    d = rng.normal(size=(4, n))
    d[0, :3] = d[0, 3]  # ties
    plan = eng.bootstrap_counts(rng, 200, n)
    got = eng.median_bootstrap_kernel(plan, d)
    idx = [np.repeat(np.arange(n), plan[b].astype(int)) for b in range(200)]
    want = np.stack([np.median(d[:, i], -1) for i in idx])
    np.testing.assert_array_equal(got, want)


def test_corpus_sums_kernel_equals_explicit_sums():
    rng = np.random.default_rng(4)
    stats = rng.integers(0, 9, size=(3, 25, 6)).astype(float)
    plan = eng.bootstrap_counts(rng, 40, 25)
    got = eng.corpus_sums_kernel(plan, stats)
    want = np.einsum("bn,snk->bsk", plan, stats)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n_chunks", [1, 2, 7])
@pytest.mark.parametrize("scheduler", ["threads", "synchronous", "processes"])
def test_resample_is_bit_identical_for_any_grouping_and_scheduler(n_chunks, scheduler):
    x = np.random.default_rng(5).normal(size=(4, 2, 300)) / 300
    ref = eng.resample("bootstrap", eng.linear_kernel, x, n=300, n_resamples=7000, seed=0,
                       dataset="d", scheduler="synchronous", n_chunks=1)
    got = eng.resample("bootstrap", eng.linear_kernel, x, n=300, n_resamples=7000, seed=0,
                       dataset="d", scheduler=scheduler, n_chunks=n_chunks)
    assert got.shape == (7000, 4, 2)
    assert np.array_equal(got, ref)


def test_pvalues_from_null_counting_and_ties():
    null = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])[:, None]
    obs = np.array([2.0])
    # greater: #{null >= 2} = 2 -> (2 + 1) / 7 ; less: #{null <= 2} = 5 -> 6 / 7
    assert eng.pvalues_from_null(null, obs, "greater")[0] == pytest.approx(3 / 7)
    assert eng.pvalues_from_null(null, obs, "less")[0] == pytest.approx(6 / 7)
    assert eng.pvalues_from_null(null, obs, "two-sided")[0] == pytest.approx(6 / 7)
    # exact enumeration: no +1
    assert eng.pvalues_from_null(null, obs, "greater", exact=True)[0] == pytest.approx(2 / 6)
    # a tie within rounding counts as extreme
    assert eng.pvalues_from_null(null, obs + 1e-15, "greater")[0] == pytest.approx(3 / 7)
    # never zero
    assert eng.pvalues_from_null(null, np.array([100.0]), "greater")[0] == pytest.approx(1 / 7)


def test_block_bounds_validation():
    assert eng.block_bounds(2500) == [(0, 1000), (1000, 2000), (2000, 2500)]
    with pytest.raises(ParameterError, match="`n_resamples` must be an integer >= 1; got 0"):
        eng.block_bounds(0)


def test_kernels_are_bit_identical_whatever_the_callers_blas_threads():
    from threadpoolctl import threadpool_limits

    x = np.random.default_rng(6).normal(size=(4, 2, 300)) / 300
    run = {"n": 300, "n_resamples": 3000, "seed": 0, "dataset": "d",
           "scheduler": "synchronous"}
    a = eng.resample("bootstrap", eng.linear_kernel, x, **run)
    with threadpool_limits(limits=1, user_api="blas"):
        b = eng.resample("bootstrap", eng.linear_kernel, x, **run)
    with threadpool_limits(limits=2, user_api="blas"):
        c = eng.resample("bootstrap", eng.linear_kernel, x, **run)
    assert np.array_equal(a, b) and np.array_equal(a, c)


# ----------------------------------------------------------------- row chunks of a block
@pytest.mark.parametrize("kind", ["bootstrap", "permutation"])
@pytest.mark.parametrize("n", [5, 13, 1001])
@pytest.mark.parametrize("max_rows", [1, 4, 7, 64, 999])
def test_row_chunks_of_a_block_are_the_block_bit_for_bit(kind, n, max_rows):
    from multistat.engine import plan_block, plan_chunks

    whole = plan_block(kind, n, 2500, 11, "ds", 1)
    chunks = list(plan_chunks(kind, n, 2500, 11, "ds", 1, max_rows))
    assert all(len(s) % 4 == 0 for s in chunks[:-1])  # sign-flip bytes stay aligned
    assert len(chunks) == -(-1000 // max(4, max_rows - max_rows % 4))
    np.testing.assert_array_equal(np.concatenate(chunks), whole)


def test_uint8_draws_split_off_a_multiple_of_four_bytes_change_the_stream():
    # why chunks are multiples of 4 rows: numpy draws 4 bytes per 32-bit value with a
    # buffer that restarts at every call (if this ever passes, the constraint is moot)
    from multistat.engine import block_rng

    one = block_rng(3, "d", "permutation", 0).integers(0, 256, size=(12, 1), dtype=np.uint8)
    rng = block_rng(3, "d", "permutation", 0)
    split = np.concatenate([rng.integers(0, 256, size=(k, 1), dtype=np.uint8)
                            for k in (3, 9)])
    assert not np.array_equal(one, split)


def test_resample_with_a_small_budget_equals_the_whole_blocks():
    from multistat._budget import Budget
    from multistat.engine import linear_kernel, resample

    rng = np.random.default_rng(0)
    data = rng.normal(size=(3, 4000)) / 4000
    kw = {"n": 4000, "n_resamples": 1500, "seed": 5, "dataset": "x",
          "scheduler": "synchronous"}
    whole = resample("bootstrap", linear_kernel, data, budget=Budget(2**34), **kw)
    ticks = []
    small = resample("bootstrap", linear_kernel, data, budget=Budget(2**21),
                     progress=ticks.append, **kw)
    np.testing.assert_array_equal(small, whole)
    assert sum(ticks) == 2  # one tick per block


def test_null_standard_deviation_is_scale_free():
    """The resampled distribution's sd (compare's `se`, used for the `mde` column) equals
    numpy's bit for bit at ordinary scales and stays finite where squaring overflows."""
    from multistat.significance.resampling import _std

    rng = np.random.default_rng(5)
    dist = rng.normal(size=(999, 4)) * np.array([1e-3, 1.0, 7.5, 1e6])
    assert np.array_equal(_std(dist), dist.std(0, ddof=1))
    with np.errstate(over="raise"):
        big = _std(dist * 1e300)  # plain std: inf (the squares overflow)
    assert np.all(np.isfinite(big))
    np.testing.assert_allclose(big / 1e300, dist.std(0, ddof=1), rtol=1e-14)


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("p", [1, 2, 7, 40])
@pytest.mark.parametrize("b", [9, 1000, 4001])
def test_pair_differences_keep_the_bits_of_fancy_indexing(b, p, m):
    """pair_differences gives arr[:, ia] - arr[:, ib] in C order (fast reductions over the
    resamples); the null's sd, mean and p-values computed from it are bit-identical to
    those of the fancy-indexed array (pair axis outermost in memory) they replace, which
    numpy summed pairwise when M == 1 and sequentially otherwise."""
    from multistat.significance.resampling import _pair_major, _pair_std, _std

    rng = np.random.default_rng(b * 100 + p * 10 + m)
    arr = rng.normal(size=(b, 12, m)) * rng.choice([1e-3, 1.0, 1e5], size=(1, 12, m))
    arr[:, 3] *= 1e200  # squares overflow (sums do not): _std's rescaled path for pairs with 3
    ia = rng.integers(0, 12, p)
    ib = (ia + 1 + rng.integers(0, 11, p)) % 12
    old = arr[:, ia] - arr[:, ib]
    new = eng.pair_differences(arr, ia, ib)
    assert new.flags.c_contiguous and not old.flags.c_contiguous or p == 1
    assert np.array_equal(new, old)
    assert np.array_equal(_pair_std(new), _std(old))  # every entry finite here
    assert np.array_equal(np.abs(_pair_major(new)).mean(0), np.abs(old).mean(0))
    obs = rng.normal(size=(p, m)) * 0.05
    for alt in ("two-sided", "less", "greater"):
        for sym in (False, True):
            want = eng.pvalues_from_null(old, obs, alt, symmetric=sym)
            assert np.array_equal(eng.pvalues_from_null(new, obs, alt, symmetric=sym), want)
            assert np.array_equal(eng.pvalues_from_null(new, obs, alt, symmetric=sym,
                                                        scale=eng.null_scale(new)), want)


def test_null_scale_is_the_finite_max_magnitude():
    null = np.array([[1.0, -np.inf, np.nan, 0.0], [-3.0, 2.0, 1.0, -0.0]])
    assert np.array_equal(eng.null_scale(null), [3.0, 0.0, 0.0, 0.0])
    obs = np.array([0.5, 5.0, 1.0, 0.0])
    assert np.array_equal(eng._tolerance(obs, null), 1e-12 * np.array([3.0, 5.0, 1.0, 0.0]))
    assert np.array_equal(eng._tolerance(obs, scale=eng.null_scale(null)),
                          eng._tolerance(obs, null))


@pytest.mark.parametrize("bb,n", [(1000, 300), (4, 5000), (200, 2000), (17, 999), (64, 64)])
@pytest.mark.parametrize("lead", [(3, 2), (70, 1), (101, 3), (1, 1), (33, 4)])
def test_mean_kernel_is_linear_kernel_on_scaled_data_bit_for_bit(bb, n, lead):
    """mean_kernel scales the data one column chunk at a time (no full data / n copy); the
    product over chunks has the single product's bits, with and without the ones row of
    the permutation's sum of signs. Chunks are about half as wide as the plan has rows (at
    least 8), so these shapes run 1 to 50 chunks with remainders."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(bb + n + lead[0])
    X = rng.normal(size=lead + (n,)) * rng.choice([1e-3, 1.0, 1e4], size=lead + (1,))
    with threadpool_limits(limits=1, user_api="blas"):  # as in resample
        for kind in ("bootstrap", "permutation"):
            plan = eng.plan_block(kind, n, bb, 3, "d", 0)
            want = eng.linear_kernel(plan, X / n)
            got = eng.mean_kernel(plan, X)
            assert got.shape == want.shape == (bb,) + lead
            assert np.array_equal(got, want)
            aug = np.concatenate([X, np.ones((1,) + X.shape[1:])], 0) / n
            assert np.array_equal(eng.mean_kernel(plan, X, ones=True),
                                  eng.linear_kernel(plan, aug))


def test_column_chunks_merge_the_remainder():
    assert eng._column_chunks(10, 64) == [(0, 10)]
    assert eng._column_chunks(128, 64) == [(0, 64), (64, 128)]
    assert eng._column_chunks(130, 64) == [(0, 64), (64, 130)]
    assert eng._column_chunks(17, 8) == [(0, 8), (8, 17)]


def test_mean_kernel_scales_no_more_rows_than_the_plan_has():
    """The scaled chunk stays within the plan's size (what PLAN_BYTES_PER_VALUE counts for
    kernel temporaries); linear_kernel(plan, X / n) needed all of X again."""
    import tracemalloc

    from threadpoolctl import threadpool_limits

    n, rows = 5000, 400
    X = np.random.default_rng(0).normal(size=(rows, n))  # 16 MB
    plan = eng.plan_block("bootstrap", n, 100, 0, "d", 0)  # 4 MB
    out_bytes = plan.shape[0] * rows * 8
    with threadpool_limits(limits=1, user_api="blas"):
        tracemalloc.start()
        eng.mean_kernel(plan, X)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= plan.nbytes + 2 * out_bytes + 2**16
    assert X.nbytes > 3 * (plan.nbytes + 2 * out_bytes)  # so the full copy would fail


@pytest.mark.parametrize("size,n", [(1000, 2000), (7, 3), (50, 200_001), (1000, 131)])
def test_bootstrap_counts_count_the_drawn_indices(size, n):
    """The count matrix (counted a few rows at a time) is the per-row bincount of the very
    indices the block's generator draws."""
    dtype = np.int32 if size * n < 2**31 else np.int64
    idx = eng.block_rng(3, "d", "bootstrap", 1).integers(0, n, size=(size, n), dtype=dtype)
    want = np.stack([np.bincount(row, minlength=n) for row in idx]).astype(np.float64)
    got = eng.bootstrap_counts(eng.block_rng(3, "d", "bootstrap", 1), size, n)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert np.all(got.sum(1) == n)


@pytest.mark.parametrize("size,n", [(1000, 2000), (7, 3), (12, 200_001), (1000, 131)])
def test_sign_flips_are_the_unpacked_bits_of_the_drawn_bytes(size, n):
    raw = eng.block_rng(3, "d", "permutation", 1).integers(0, 256, size=(size, (n + 7) // 8),
                                                           dtype=np.uint8)
    want = np.where(np.unpackbits(raw, axis=1, count=n) == 1, -1.0, 1.0)
    got = eng.sign_flips(eng.block_rng(3, "d", "permutation", 1), size, n)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert not np.signbit(got[got > 0]).any()


def _blas_probe(env_update, code):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update(env_update)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split()


def test_the_command_line_pins_shape_independent_blas_kernels():
    # the engine's bit-identity across memory limits needs products whose entries do not
    # depend on the product's shape (multistat/_blas.py); the command line selects
    # OpenBLAS's Haswell kernels before numpy loads, on x86-64 with AVX2 + FMA
    from multistat import _blas

    if not _blas.can_pin():
        pytest.skip("not x86-64 Linux with AVX2 and FMA: nothing to pin")
    got = _blas_probe({}, (
        "import os\nfrom multistat import cli\ncli.main(['--help'])\n"
        "from threadpoolctl import threadpool_info\nimport numpy\n"
        "from multistat._blas import shape_consistent\n"
        "print(os.environ['OPENBLAS_CORETYPE'], "
        "[i['architecture'] for i in threadpool_info() if i['internal_api'] == 'openblas'][0],"
        " shape_consistent())"))
    assert got[-3:] == ["Haswell", "Haswell", "True"]
    # a value the user set is kept
    env = {"OPENBLAS_CORETYPE": "Zen"}
    assert not _blas.pin_kernels(env) and env == {"OPENBLAS_CORETYPE": "Zen"}


def test_this_suite_runs_shape_independent_blas_products():
    # what every bit-identity test here assumes (make test exports the pinned kernels):
    # row chunks and small products of this process's BLAS give the whole product's bits
    import os

    from multistat._blas import shape_consistent

    if os.environ.get("OPENBLAS_CORETYPE") != "Haswell":
        pytest.skip("OPENBLAS_CORETYPE is not pinned (not x86-64 with AVX2 + FMA, or set "
                    "otherwise)")
    assert shape_consistent()
