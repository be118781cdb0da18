"""The compiled Walsh order-statistic kernel against complete enumeration.

Reference everywhere: all ``n(n+1)/2`` Walsh averages written out with the same
expression, ``(d[i] + d[j]) / 2.0`` for ``i, j = np.triu_indices(n)``, and sorted by
``np.sort`` (NaN last) - the kernel must return exactly those numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from multistat.significance._walsh import walsh_order_statistics


def _brute(d, ks):
    n = d.shape[-1]
    i, j = np.triu_indices(n)
    with np.errstate(over="ignore", invalid="ignore"):
        w = (d[:, i] + d[:, j]) / 2.0
    return np.sort(w, axis=-1)[:, ks]


def _data(kind, shape, rng):
    return {
        "normal": lambda: rng.normal(0.2, 1, shape),
        "rounded": lambda: np.round(rng.normal(0.2, 1, shape), 1),
        "likert": lambda: rng.integers(-4, 5, shape).astype(float),
        "binary": lambda: rng.integers(-1, 2, shape).astype(float),
        "constant": lambda: np.full(shape, -0.75),
        "huge": lambda: rng.normal(size=shape) * 1e300,
        "tiny": lambda: rng.normal(size=shape) * 1e-300,
        "subnormal": lambda: rng.integers(-3, 4, shape) * 5e-324,
        "mixed_scales": lambda: rng.normal(size=shape) * 10.0 ** rng.integers(-300, 300,
                                                                               shape),
        "ulps": lambda: 1.0 + rng.integers(0, 4, shape) * 2.0**-52,
        "zeros": lambda: np.where(rng.random(shape) < 0.4, 0.0, rng.exponential(size=shape)),
        "negative": lambda: -rng.exponential(size=shape),
        "overflowing": lambda: np.where(rng.random(shape) < 0.3, 1.7e308,
                                        rng.normal(size=shape)),
    }[kind]()


def _wanted(n, rng):
    N = n * (n + 1) // 2
    ks = {0, N - 1, (N - 1) // 2, N // 2, max(N // 2 - 3 * n, 0), min(N // 2 + 3 * n, N - 1)}
    ks |= set(rng.integers(0, N, 3).tolist())
    return sorted(ks)


KINDS = ["normal", "rounded", "likert", "binary", "constant", "huge", "tiny", "subnormal",
         "mixed_scales", "ulps", "zeros", "negative", "overflowing"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 91, 92, 300, 1500])
def test_kernel_equals_complete_enumeration(kind, n):
    # n = 91 / 92: the last size enumerated whole by default (91 * 92 / 2 <= 4096) and
    # the first one narrowed by counting
    rng = np.random.default_rng(1000 + n)
    d = np.sort(_data(kind, (5, n), rng), axis=-1)
    ks = _wanted(n, rng)
    np.testing.assert_array_equal(walsh_order_statistics(d, ks), _brute(d, ks))


@pytest.mark.parametrize("kind", ["normal", "rounded", "likert"])
def test_kernel_large_n(kind):
    # n = 3000: 4.5 million averages a row; the ranks the Wilcoxon interval asks for
    rng = np.random.default_rng(7)
    n = 3000
    d = np.sort(_data(kind, (2, n), rng), axis=-1)
    ks = _wanted(n, rng)
    np.testing.assert_array_equal(walsh_order_statistics(d, ks), _brute(d, ks))


def test_nan_and_infinity_sort_as_numpy_does():
    # an average with a NaN is NaN and sorts last; inf - inf is NaN too (that row is
    # enumerated); +inf or -inf alone keep the matrix monotone
    rng = np.random.default_rng(8)
    n = 120
    d = rng.normal(size=(6, n))
    d[0, :5] = np.nan
    d[1, :] = np.nan
    d[2, :3] = np.inf
    d[3, :3] = -np.inf
    d[4, :2], d[4, 2:4] = np.inf, -np.inf
    d[5, 7] = np.nan
    d = np.sort(d, axis=-1)
    N = n * (n + 1) // 2
    ks = [0, 1, 500, N // 2, N - 200, N - 1]
    got = walsh_order_statistics(d, ks)
    np.testing.assert_array_equal(got, _brute(d, ks))  # NaN == NaN for this assertion


def test_ranks_in_any_order_repeated_and_negative():
    rng = np.random.default_rng(9)
    d = np.sort(rng.normal(size=(3, 200)), axis=-1)
    N = 200 * 201 // 2
    ks = [N // 2, 5, N // 2, -1, 0]
    ref = _brute(d, [N // 2, 5, N // 2, N - 1, 0])
    np.testing.assert_array_equal(walsh_order_statistics(d, ks), ref)
    with pytest.raises(IndexError, match="out of range"):
        walsh_order_statistics(d, [N])


def test_leading_shape_and_empty_batch():
    rng = np.random.default_rng(10)
    d = np.sort(rng.normal(size=(2, 3, 150)), axis=-1)
    ks = [10, 5000]
    got = walsh_order_statistics(d, ks)
    assert got.shape == (2, 3, 2)
    np.testing.assert_array_equal(got.reshape(6, 2), _brute(d.reshape(6, 150), ks))
    assert walsh_order_statistics(np.empty((0, 40)), [10, 500]).shape == (0, 2)


def test_no_warnings_and_the_same_under_any_budget():
    rng = np.random.default_rng(11)
    d = np.sort(np.round(rng.normal(size=(40, 500)), 2), axis=-1)
    N = 500 * 501 // 2
    ks = [1000, N // 2 - 1, N // 2, N - 1001]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        small = walsh_order_statistics(d, ks, memory_limit="16MiB")
    np.testing.assert_array_equal(small, walsh_order_statistics(d, ks, memory_limit="4GiB"))
    np.testing.assert_array_equal(small, _brute(d, ks))


def test_numba_is_imported_only_by_a_run_that_needs_a_rank_kernel():
    """numba's import (~2 s, ~100 MiB) is paid only when a kernel of
    multistat.significance._rank_kernels runs: not by importing multistat.compare's module,
    not by a t-test run; a Wilcoxon run then loads it."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from multistat import cube\n"
        "import multistat.comparison as c\n"
        "assert 'numba' not in sys.modules, 'import'\n"
        "ds = cube.make_dataset('d', np.random.default_rng(0).normal(size=(3, 1, 60)),\n"
        "    systems=['a', 'b', 'c'], metrics=['m'], instances=list(range(60)))\n"
        "st = cube.make_study([ds])\n"
        "c.compare(st, tests=('t',), effect_sizes=False)\n"
        "assert 'numba' not in sys.modules, 't test'\n"
        "c.compare(st, tests=('wilcoxon',), effect_sizes=False)\n"
        "assert 'numba' in sys.modules, 'wilcoxon'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
