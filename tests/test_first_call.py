"""Issue 23.8: the first ``compare`` call of a fresh process pays only for what its tests
need. The t path imports neither scipy.stats nor statsmodels (0.35 s of imports, more
than the whole t computation of 4,950 pairs x 2 metrics x 10,000 instances), and the
helpers that let it skip them give the same numbers as the scipy functions they stand
for. The timing itself is in benchmarks/bench_first_call.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from multistat._lazy import LazyModule, lazy_module
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
        "left = [m for m in ('scipy.stats', 'statsmodels') if m in sys.modules]\n"
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
