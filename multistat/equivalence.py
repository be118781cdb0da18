"""Equivalence of two systems within a margin: two one-sided tests (TOST).

``compare(..., equivalence_margin=delta)`` adds, for every row of the t, Wilcoxon (its
pseudo-median, the Hodges-Lehmann estimand), bootstrap and permutation tests:

* ``p_equivalence = max(p_lower, p_upper)`` where ``p_lower`` tests H0: theta <= -delta
  against theta > -delta (``alternative="greater"``, ``null_value=-delta``) and
  ``p_upper`` tests H0: theta >= +delta against theta < +delta (``"less"``, ``+delta``),
  theta the test's own statistic of ``a - b`` in metric units (Schuirmann 1987,
  doi:10.1007/BF01068419). Each one-sided p comes from the *same* registered test run
  through ``compare`` at that null value and alternative (so resampling tests use the same
  shared plan and seed as the main row).
* ``p_equivalence_adjusted``: corrected over the same families as ``p_value`` with the
  same method (Holm for ``westfall-young``, whose step-down has no TOST form here; the
  table's metadata says so), and ``equivalent = p_equivalence_adjusted <= alpha``: the two
  systems are tied within +-delta.

Other tests (sign, McNemar) and rows a test cannot compute (e.g. the permutation test
of a corpus metric, which tests exchangeability only) get NaN and a note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from multistat.errors import ParameterError, TestNotApplicableError

TESTS = ("t", "wilcoxon", "bootstrap", "permutation")
KEY = ["dataset", "metric", "system_a", "system_b", "test"]


def check_margin(margin) -> float | None:
    """``None`` or a positive finite number (metric units)."""
    if margin is None:
        return None
    from multistat._validation import check_real

    margin = check_real("equivalence_margin", margin)
    if not (margin > 0 and np.isfinite(margin)):
        raise ParameterError("`equivalence_margin` must be a positive number (metric "
                             f"units); got {margin!r}")
    return margin


def add_equivalence(table: pd.DataFrame, study, margin: float, *, tests, correction,
                    family, alpha, **compare_kwargs) -> pd.DataFrame:
    """``table`` with ``p_equivalence``, ``p_equivalence_adjusted`` and ``equivalent``.

    ``compare_kwargs`` are the options of the main run (statistic, pairs, metrics,
    datasets, n_resamples, seed, scheduler, ...); each one-sided test runs through
    :func:`multistat.compare` with them.
    """
    from multistat.comparison import compare
    from multistat.correct import adjust

    margin = check_margin(margin)
    # one-sided p-values only: the interval method does not matter, the cheapest serves
    compare_kwargs = {**compare_kwargs, "ci_method": "percentile"}
    parts = []
    notes = {}
    for test in tests:
        if test not in TESTS:
            notes[test] = f"equivalence: no TOST for the {test} test (use one of {TESTS})"
            continue
        sides = []
        try:
            for alt, null in (("greater", -margin), ("less", margin)):
                side = compare(study, tests=(test,), alternative=alt, null_value=null,
                               correction=None, effect_sizes=False, power=False,
                               **compare_kwargs)
                sides.append(side[KEY + ["p_value"]])
        except TestNotApplicableError as exc:
            notes[test] = f"equivalence: {exc}"
            continue
        both = sides[0].merge(sides[1], on=KEY, suffixes=("_lower", "_upper"))
        both["p_equivalence"] = np.fmax(both["p_value_lower"], both["p_value_upper"])
        both.loc[both[["p_value_lower", "p_value_upper"]].isna().any(axis=1),
                 "p_equivalence"] = np.nan
        parts.append(both[KEY + ["p_equivalence"]])
    out = table.copy()
    if parts:
        merged = out[KEY].merge(pd.concat(parts, ignore_index=True), on=KEY, how="left")
        out["p_equivalence"] = merged["p_equivalence"].to_numpy(float)
    else:
        out["p_equivalence"] = np.nan
    method = "holm" if correction is not None and str(correction).startswith(
        "westfall-young") else correction
    adj = adjust(out.drop(columns=["family", "correction", "p_adjusted", "reject", "alpha"],
                          errors="ignore").assign(p_value=out["p_equivalence"]),
                 method=method, family=family, alpha=alpha)
    out["p_equivalence_adjusted"] = adj["p_adjusted"].to_numpy(float)
    out["equivalent"] = adj["reject"].to_numpy(bool) & np.isfinite(out["p_equivalence"])
    if notes:
        extra = out["test"].map(notes).fillna("")
        out["note"] = [("; ".join(s for s in (a, b) if s)) for a, b in
                       zip(out["note"].fillna("").astype(str), extra)]
    out.attrs = dict(table.attrs)
    return out
