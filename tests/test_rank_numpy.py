"""The numpy kernels of the rank tests (used without numba, the ``fast`` extra) give the
numba kernels' numbers exactly.

References: the numba kernels of :mod:`multistat.significance._rank_kernels` (themselves
checked against complete enumeration in tests/test_walsh.py) and, for the Walsh averages,
complete enumeration with ``np.sort((d[i] + d[j]) / 2.0)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from multistat.significance import _rank_numpy
from tests.test_walsh import _brute, _data, _wanted

KINDS = ["normal", "rounded", "likert", "binary", "constant", "huge", "tiny", "subnormal",
         "mixed_scales", "ulps", "zeros", "negative", "overflowing"]


def _numba():
    return pytest.importorskip("multistat.significance._rank_kernels",
                               reason="numba (the fast extra) is not installed")


def _select(module, d, ks):
    out = np.empty((d.shape[0], len(ks)))
    module.select_rows(np.ascontiguousarray(d), np.asarray(ks, dtype=np.int64), out, 0,
                       d.shape[0], 0, 0)
    return out


@pytest.mark.parametrize("dense", [True, False], ids=["enumerated", "bisection"])
@pytest.mark.parametrize("kind", KINDS)
def test_walsh_selection_equals_numba_and_enumeration(kind, dense, monkeypatch):
    kernels = _numba()
    if not dense:  # every row through the bisection over float values
        monkeypatch.setattr(_rank_numpy, "DENSE_AVERAGES", 0)
    rng = np.random.default_rng(len(kind))
    for n in (1, 2, 7, 64, 200):
        d = np.sort(_data(kind, (3, n), rng), axis=-1)
        ks = _wanted(n, rng)
        with np.errstate(over="ignore", invalid="ignore"):
            got = _select(_rank_numpy, d, ks)
        np.testing.assert_array_equal(got, _select(kernels, d, ks))
        np.testing.assert_array_equal(got, _brute(d, ks))


def test_walsh_selection_nan_and_infinite_rows():
    kernels = _numba()
    rng = np.random.default_rng(3)
    d = rng.normal(size=(5, 40))
    d[0, 30:] = np.nan  # a shorter row: ranks past its averages are NaN
    d[1, :] = np.nan
    d[2, 0], d[2, 1] = -np.inf, np.inf  # inf - inf: a NaN average
    d[3, 5] = np.inf
    d = np.sort(d, axis=-1)
    ks = [0, 10, 400, 600, 819]
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(_select(_rank_numpy, d, ks), _select(kernels, d, ks))


def test_walsh_bisection_on_a_long_row():
    """A row with more than DENSE_AVERAGES averages goes by bisection by default."""
    kernels = _numba()
    rng = np.random.default_rng(7)
    n = 1500  # 1,125,750 averages > 2**20
    d = np.sort(np.round(rng.normal(size=(1, n)), 2), axis=-1)
    N = n * (n + 1) // 2
    ks = [0, 1000, N // 2 - 1, N // 2, N - 1]
    np.testing.assert_array_equal(_select(_rank_numpy, d, ks), _select(kernels, d, ks))


@pytest.mark.parametrize("kind", ["normal", "likert", "binary", "zeros", "constant"])
def test_signed_rank_integers_equal_numba(kind, monkeypatch):
    """Without numba the signed-rank integers come from the keys' sort: the same."""
    _numba()
    from multistat.significance import _signrank

    rng = np.random.default_rng(11)
    d = np.sort(_data(kind, (6, 150), rng), axis=-1)
    theirs = _signrank._merge_integers_rows(d)
    monkeypatch.setattr(_signrank, "numba_kernels", lambda: None)
    ours = _signrank._merge_integers_rows(d)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype == np.int64
        np.testing.assert_array_equal(a, b)


def test_compare_without_numba_gives_the_same_table(monkeypatch):
    """A whole compare run (Wilcoxon with its Hodges-Lehmann interval, effect sizes) with
    the numpy kernels equals the run with numba's, every column."""
    _numba()
    from multistat import compare, cube
    from multistat.significance import _signrank

    rng = np.random.default_rng(5)
    scores = np.round(rng.normal(size=(4, 2, 120)), 1)
    ds = cube.make_dataset("d", scores, systems=["a", "b", "c", "e"], metrics=["m1", "m2"],
                           instances=list(range(120)))
    study = cube.make_study([ds])
    with_numba = compare(study, tests=("wilcoxon", "sign"))
    monkeypatch.setattr(_rank_numpy, "numba_kernels", lambda: None)
    monkeypatch.setattr(_signrank, "numba_kernels", lambda: None)
    without = compare(study, tests=("wilcoxon", "sign"))
    assert len(with_numba) == 24  # 6 pairs x 2 metrics x 2 tests
    import pandas as pd

    pd.testing.assert_frame_equal(with_numba, without)


def test_rank_kernels_falls_back_to_numpy_without_numba(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_numba(name, *args, **kwargs):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("No module named 'numba'")
        return real_import(name, *args, **kwargs)

    import sys

    import multistat.significance as package

    monkeypatch.delitem(sys.modules, "multistat.significance._rank_kernels", raising=False)
    monkeypatch.delattr(package, "_rank_kernels", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_numba)
    assert _rank_numpy.numba_kernels() is None
