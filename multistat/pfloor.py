"""The resampling floor: the smallest p-value a resampling test can give, after correction.

A resampling p-value counts resamples: with ``B`` of them the bootstrap's shifted
two-sided p is at least ``2 / (B + 1)`` (one-sided, Berg-Kirkpatrick and sacrebleu
p-values: ``1 / (B + 1)``), the sign-flip permutation test's at least ``1 / (B + 1)``
(Phipson & Smyth 2010), or ``2 / 2**n`` two-sided (``1 / 2**n`` one-sided) when all the
``2**n`` sign vectors of ``n`` units are enumerated. A correction over a family of ``m``
pairs then acts on that floor: Holm and Bonferroni multiply the smallest p-value by
``m``, so with ``B = 10,000`` no adjusted p falls below 0.05 from ``m = 253`` pairs (23
systems) on for the bootstrap, ``m = 528`` (33 systems) for the permutation test, and every system
of a leaderboard lands in one cluster whatever the data.
The Westfall-Young step-down does not multiply: its adjusted p is a count over the same
``B`` resamples (:mod:`multistat.comparison.stepdown`), at least ``1 / (B + 1)`` and the pair's own
p-value.

:func:`smallest_adjusted` is the smallest adjusted p-value a configuration can reach (the
correction applied to ``m`` p-values all at the floor: the least any of its adjusted
p-values can be, for Holm ``min(1, m f)``, for the step-up methods ``f``);
:func:`resamples_needed` the least ``B`` that brings it to ``alpha``; :func:`floor_note`
the sentence :func:`multistat.compare` and :func:`multistat.rank` warn with
(:class:`~multistat.errors.
ResamplingFloorWarning`) and stores in its table's metadata, and the report shows.

References: Phipson, B. & Smyth, G. K. (2010), Permutation p-values should never be zero,
Stat. Appl. Genet. Mol. Biol. 9(1), doi:10.2202/1544-6115.1585. Westfall, P. H. &
Young, S. S. (1993), Resampling-Based Multiple Testing, Wiley.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from multistat.significance import REGISTRY

#: largest number of resamples :func:`resamples_needed` searches
MAX_RESAMPLES = 10**12


def smallest_pvalue(test: str, n_resamples: int, *, alternative: str = "two-sided",
                    bootstrap_pvalue: str = "shifted", n_units: int | None = None
                    ) -> float | None:
    """Smallest p-value ``test`` can give with ``n_resamples``: its registry spec's
    ``p_floor`` (None: a test whose p-value is no count over resamples). ``n_units``: the
    permutation test enumerates all ``2**n`` sign vectors when ``2**n <= n_resamples``
    (its p then has no +1)."""

    spec = REGISTRY.get(test)
    if spec is None or spec.p_floor is None:
        return None
    return spec.p_floor(int(n_resamples), alternative=alternative,
                        bootstrap_pvalue=bootstrap_pvalue, n_units=n_units)


def smallest_adjusted(p_floor: float, n_tests: int, correction: str | None) -> float:
    """Smallest adjusted p-value ``correction`` can give in a family of ``n_tests`` whose
    p-values are at least ``p_floor``: the correction applied to ``n_tests`` copies of
    the floor (every method here is monotone in each p-value), its minimum.
    Westfall-Young and no correction: the floor itself."""
    m = int(n_tests)
    if m < 1 or correction is None or str(correction).startswith("westfall-young"):
        return float(p_floor)
    if correction in ("holm", "bonferroni"):
        return float(min(1.0, m * p_floor))
    # heavy: statsmodels, lazily
    from statsmodels.stats.multitest import multipletests

    return float(np.min(multipletests(np.full(m, float(p_floor)), method=correction)[1]))


def resamples_needed(test: str, n_tests: int, correction: str | None, alpha: float, *,
                     alternative: str = "two-sided", bootstrap_pvalue: str = "shifted"
                     ) -> int | None:
    """Least number of resamples ``B`` whose floor, corrected over ``n_tests``, is at most
    ``alpha`` (None: beyond :data:`MAX_RESAMPLES`). Bisection: the adjusted floor falls
    as ``B`` grows."""
    def ok(b):
        f = smallest_pvalue(test, b, alternative=alternative,
                            bootstrap_pvalue=bootstrap_pvalue)
        return smallest_adjusted(f, n_tests, correction) <= alpha

    if not ok(MAX_RESAMPLES):
        return None
    lo, hi = 1, MAX_RESAMPLES  # ok(hi) holds
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def floor_note(test: str, n_resamples: int, n_tests: int, correction: str | None,
               alpha: float, *, alternative: str = "two-sided",
               bootstrap_pvalue: str = "shifted", n_units: int | None = None,
               where: str = "") -> str | None:
    """The sentence saying that no pair of this family can be significant, or None when
    some can (or ``test`` is not a resampling test)."""
    f = smallest_pvalue(test, n_resamples, alternative=alternative,
                        bootstrap_pvalue=bootstrap_pvalue, n_units=n_units)
    if f is None:
        return None
    smallest = smallest_adjusted(f, n_tests, correction)
    if smallest <= alpha:
        return None
    # more resamples do not lower the floor: an exact enumeration (the permutation test
    # over few units), which only more units can help
    more = smallest_pvalue(test, 2 * n_resamples + 1, alternative=alternative,
                           bootstrap_pvalue=bootstrap_pvalue, n_units=n_units)
    exact = more is not None and more >= f
    need = None if exact else resamples_needed(
        test, n_tests, correction, alpha, alternative=alternative,
        bootstrap_pvalue=bootstrap_pvalue)
    if exact:
        why = f"an exact {test} p-value over {n_units} units is at least {f:.3g}"
    else:
        why = f"a {test} p-value is at least {f * (n_resamples + 1):g}/(B + 1) with B = " \
              f"{n_resamples:,} resamples"
    fix = ("use correction='westfall-young' (its adjusted p is not multiplied by the "
           "number of pairs)")
    if need is not None:
        fix += f" or n_resamples >= {need:,}"
    elif exact:
        fix += " or more evaluation units"
    return (f"{test} test with {correction or 'no'} correction over {n_tests:,} pairs"
            f"{' (' + where + ')' if where else ''}: the smallest adjusted p-value it can "
            f"give is {smallest:.3g} > alpha = {alpha:g} ({why}), so no pair can be "
            f"significant and every system falls in one cluster; {fix}")


def floor_notes(table: pd.DataFrame, *, test: str, correction, alpha: float,
                n_resamples: int) -> list[str]:
    """The :func:`floor_note` of every ``dataset x metric`` family of ``test`` in a
    compare table whose corrected p-values cannot reach ``alpha`` (families of one size
    share one sentence naming them all); ``[]`` for a test without a resampling floor.

    Examples
    --------
    >>> import warnings, multistat
    >>> from multistat.demo import demo_frame
    >>> from multistat.pfloor import floor_notes
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # compare itself warns with these notes
    ...     table = multistat.compare(multistat.from_frame(demo_frame()),
    ...                               tests=("bootstrap",), n_resamples=99)
    >>> floor_notes(table, test="bootstrap", correction="holm", alpha=0.05,
    ...             n_resamples=99)[0][:40]
    'bootstrap test with holm correction over'
    """

    if REGISTRY[test].p_floor is None or not len(table):
        return []
    alternative = str(table["alternative"].iloc[0]) if "alternative" in table else \
        "two-sided"
    pvalue = table.attrs.get("multistat", {}).get("bootstrap_pvalue", "shifted")
    sizes = []
    for (ds, metric), g in table.groupby(["dataset", "metric"], sort=False):
        m = int(np.isfinite(g["p_value"].to_numpy(float)).sum())
        n = int(g["n"].max()) if "n" in g and g["n"].notna().any() else None
        sizes.append((ds, metric, m, n))
    return floor_notes_of_sizes(sizes, test=test, correction=correction, alpha=alpha,
                                n_resamples=n_resamples, alternative=alternative,
                                pvalue=pvalue)


def floor_notes_of_sizes(sizes, *, test, correction, alpha, n_resamples,
                         alternative="two-sided", pvalue="shifted") -> list[str]:
    """:func:`floor_notes` from ``(dataset, metric, tested pairs, instances)`` tuples (a
    ranking streamed without a compare table knows them without one)."""
    if REGISTRY[test].p_floor is None:
        return []
    by_size: dict = {}
    for ds, metric, m, n in sizes:
        by_size.setdefault((m, n), []).append(f"{ds} / {metric}")
    notes = []
    for (m, n), where in by_size.items():
        note = floor_note(test, n_resamples, m, correction, alpha, alternative=alternative,
                          bootstrap_pvalue=pvalue, n_units=n, where=", ".join(where))
        if note is not None:
            notes.append(note)
    return notes
