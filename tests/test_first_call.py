"""The first ``compare`` call of a fresh process pays only for what its tests need. The t
path imports neither scipy.stats nor statsmodels (0.35 s of imports, more than the whole t
computation of 4,950 pairs x 2 metrics x 10,000 instances), nor scipy.optimize for its
``mde`` column, and the helpers that let it skip them give the same numbers as the
functions they stand for. The timing itself is in benchmarks/bench_first_call.py."""

from __future__ import annotations

import itertools
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats

from multistat._lazy import LazyModule, lazy_module
from multistat.errors import MultistatError
from multistat.power import analytic


def _run(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_t_only_compare_imports_no_scipy_stats_nor_statsmodels():
    code = (
        "import sys, numpy as np\n"
        "from multistat import cube\n"
        "import multistat.comparison as c\n"
        "heavy = ('scipy.stats', 'statsmodels', 'scipy.optimize._minimize', 'numba')\n"
        "assert not [m for m in heavy if m in sys.modules], 'import'\n"
        "rng = np.random.default_rng(0)\n"
        "ds = cube.make_dataset('d', rng.normal(size=(4, 2, 300)), systems=list('abcd'),\n"
        "    metrics=['m1', 'm2'], instances=list(range(300)))\n"
        "tab = c.compare(cube.make_study([ds]), tests=('t',), effect_sizes=False)\n"
        "assert tab['mde'].notna().all() and tab['p_adjusted'].notna().all()\n"
        "left = [m for m in ('scipy.stats', 'statsmodels', 'scipy.optimize')\n"
        "        if m in sys.modules]\n"
        "assert not left, left\n"
        # another correction than Holm needs statsmodels: imported then, not before
        "c.compare(cube.make_study([ds]), tests=('t',), effect_sizes=False,\n"
        "          correction='fdr_bh')\n"
        "assert 'statsmodels' in sys.modules, 'fdr_bh'\n"
    )
    _run(code)


def test_lazy_module_imports_on_first_attribute():
    code = (
        "import sys\n"
        "from multistat._lazy import lazy_module\n"
        "m = lazy_module('fractions')\n"
        "assert 'fractions' not in sys.modules and 'fractions' in repr(m)\n"
        "assert m.Fraction(1, 2) == 0.5 and 'fractions' in sys.modules\n"
    )
    _run(code)
    with pytest.raises(AttributeError, match="no_such_name"):
        lazy_module("math").no_such_name  # noqa: B018
    assert isinstance(analytic.stats, LazyModule)


def test_nct_tail_is_stats_nct_sf_bit_for_bit():
    # the far tails where special.nctdtr gives NaN and _nct_sf falls back: the values
    # of scipy.stats.nct.sf itself (the function the fallback used before)
    xs = np.concatenate([np.linspace(-40, 40, 41), [1.96, 2.5758]])
    for df in (1.0, 9.0, 99.0, 9_999.0, 1e6):
        for nc in (-50.0, -38.5, -5.0, 0.0, 5.0, 38.5, 50.0):
            for x in xs:
                ours = analytic._nct_sf_tail(float(x), df, nc)
                ref = float(stats.nct.sf(x, df, nc))
                assert ours == ref or (np.isnan(ours) and np.isnan(ref)), (x, df, nc)


def test_t_power_is_unchanged_where_nctdtr_is_nan():
    # nc = +-d sqrt(n) far out: power ~ 1 from one side, the other side's term from the
    # tail function; the same as the noncentral t of scipy.stats (two-sided sum)
    n, d, alpha = 10_000, 0.6, 0.05
    crit = stats.t.isf(alpha / 2, n - 1)
    ref = stats.nct.sf(crit, n - 1, d * np.sqrt(n)) + stats.nct.sf(crit, n - 1,
                                                                     -d * np.sqrt(n))
    assert analytic._t_power(n, d, alpha, "two-sided") == pytest.approx(ref, rel=1e-12)


_ALTS = ("two-sided", "greater", "less")
_SM_ALT = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}


def _brentq_mde(n, alpha, power, alternative):
    """The mde multiplier as compare computed it before (brentq; NaN where it raises)."""
    try:
        return float(analytic.mde_paired_t(n=n, power=power, alpha=alpha,
                                           alternative=alternative))
    except (MultistatError, ValueError, ArithmeticError):
        return float("nan")


@pytest.mark.parametrize("alternative", _ALTS)
def test_mde_dz_is_the_brentq_root_of_mde_paired_t(alternative):
    # reference: multistat.power.analytic.mde_paired_t, scipy.optimize.brentq with
    # xtol=1e-13 on the same power function (what compare's mde used before issue 23.8)
    ns = [2, 3, 5, 10, 30, 80, 333, 1000, 10_000, 12_345, 10**5, 10**6, 10**7, 10**8]
    alphas = [1e-6, 1e-3, 0.01, 0.05, 0.1, 0.5]
    powers = [0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 0.9, 0.99, 0.999]
    solved = 0
    for n, a, p in itertools.product(ns, alphas, powers):
        ref = _brentq_mde(n, a, p, alternative)
        got = analytic.mde_dz(n, a, p, alternative)
        if np.isnan(ref):  # n too small, power at or below the H0 rejection rate
            assert np.isnan(got), (n, a, p)
            continue
        if alternative == "two-sided" and p == a:
            continue  # root at d = 0 where the power is flat: both only rounding noise
        assert np.sign(got) == np.sign(ref) and got != 0, (n, a, p)
        # brentq stops within xtol = 1e-13 of the root: 1e-10 relative up to n = 1e6,
        # up to 2e-10 at n = 1e7..1e8 (d_z ~ 1e-4); mde_dz brackets it to a few ulps
        assert abs(got - ref) <= max(1e-10 * abs(ref), 1e-13), (n, a, p, got, ref)
        if n <= 10**6:
            assert got == pytest.approx(ref, rel=1e-10, abs=0), (n, a, p)
        # ... and is the root at least as closely as brentq's answer
        pw = analytic.t_power
        assert abs(pw(n, got, a, alternative) - p) <= max(
            abs(pw(n, ref, a, alternative) - p), 2e-15), (n, a, p)
        solved += 1
    assert solved > 500


def test_mde_dz_against_statsmodels_ttestpower():
    # reference: statsmodels TTestPower (exact noncentral t): its power at our d_z is the
    # target, and its own solve_power (brentq, looser tolerance) finds the same root
    from statsmodels.stats.power import TTestPower

    tp = TTestPower()
    compared = 0
    for n, a, p, alt in itertools.product([3, 5, 10, 30, 80, 1000, 10**4, 10**5],
                                          [0.001, 0.01, 0.05, 0.1], [0.5, 0.8, 0.9, 0.99],
                                          _ALTS):
        d = analytic.mde_dz(n, a, p, alt)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = tp.power(effect_size=d, nobs=n, alpha=a, alternative=_SM_ALT[alt])
        if np.isnan(got):  # scipy.stats.nct's far tail (two-sided, 14 of 384 cases): the
            continue       # NaN multistat's nct_sf replaces (test_nct_tail_is_...)
        assert got == pytest.approx(p, abs=1e-12), (n, a, p, alt)
        compared += 1
    assert compared >= 360
    # statsmodels solve_power (two-sided and "larger", where it returns the positive root);
    # it stops early (2.2e-5 relative at n = 1000, while its power at our root is the
    # target within 1e-12, above), hence the loose tolerance
    for n, a, p in [(80, 0.05, 0.8), (30, 0.01, 0.9), (1000, 0.05, 0.8), (10, 0.1, 0.5)]:
        ref = float(np.squeeze(tp.solve_power(effect_size=None, nobs=n, alpha=a, power=p)))
        assert analytic.mde_dz(n, a, p, "two-sided") == pytest.approx(ref, rel=1e-4)
        ref = float(np.squeeze(tp.solve_power(effect_size=None, nobs=n, alpha=a, power=p,
                                              alternative="larger")))
        assert analytic.mde_dz(n, a, p, "greater") == pytest.approx(ref, rel=1e-4)


def test_mde_dz_nan_where_mde_paired_t_refuses():
    # the cases _mde_multiplier turned into NaN by catching mde_paired_t's errors
    with pytest.raises(MultistatError, match="must exceed the rejection rate"):
        analytic.mde_paired_t(n=50, power=0.02, alpha=0.05)
    assert np.isnan(analytic.mde_dz(50, 0.05, 0.02, "two-sided"))
    with pytest.raises(MultistatError, match="no effect size within the feasible range"):
        analytic.mde_paired_t(n=2, power=0.999, alpha=1e-6)
    assert np.isnan(analytic.mde_dz(2, 1e-6, 0.999, "two-sided"))
    for args in [(1, 0.05, 0.8, "two-sided"), (0, 0.05, 0.8, "less"),
                 (50, 0.0, 0.8, "greater"), (50, 0.05, 1.0, "two-sided"),
                 (50, 0.05, 0.8, "sideways"), (50, np.nan, 0.8, "two-sided")]:
        assert np.isnan(analytic.mde_dz(*args)), args


def test_analytic_power_is_the_special_only_module():
    # one power function: paired_t and compare's mde evaluate the same code
    assert analytic._t_power is analytic.t_power
    assert analytic._nct_sf is analytic.nct_sf


def test_blas_controller_finds_what_threadpoolctls_full_scan_finds():
    # the controller compare builds once per process hands threadpoolctl only the
    # libraries with a prefix it knows; reference: threadpoolctl's own full scan
    from threadpoolctl import ThreadpoolController, threadpool_info

    from multistat.significance._batch import _blas_controller

    def libs(c):
        return sorted((lc.internal_api, lc.filepath, lc.prefix, lc.user_api)
                      for lc in c.lib_controllers)

    _blas_controller.cache_clear()
    ours = _blas_controller()
    assert type(ours).__name__ == "_Prefiltered"  # the fast path ran (Linux)
    assert libs(ours) == libs(ThreadpoolController())
    assert any(api == "blas" for *_, api in libs(ours))
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    with ours.limit(limits=1, user_api="blas"):
        assert all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before
