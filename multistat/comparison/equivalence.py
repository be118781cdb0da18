"""Equivalence of two systems within a margin: two one-sided tests (TOST).

``compare(..., equivalence_margin=delta)`` adds, for every row of a test whose registry
spec has ``equivalence=True`` (t, Wilcoxon with its pseudo-median, the Hodges-Lehmann
estimand, bootstrap and permutation):

* ``p_equivalence = max(p_lower, p_upper)`` where ``p_lower`` tests H0: theta <= -delta
  against theta > -delta (``alternative="greater"``, ``null_value=-delta``) and
  ``p_upper`` tests H0: theta >= +delta against theta < +delta (``"less"``, ``+delta``),
  theta the test's own statistic of ``a - b`` in metric units (Schuirmann 1987,
  doi:10.1007/BF01068419). Both one-sided tests run inside ``compare``'s walk
  (:func:`block_pvalues`): the same slab, the same registered test with its options, and
  for resampling tests the same shared plan and seed as the main row.
* ``p_equivalence_adjusted``: corrected over the same families as ``p_value`` with the
  same method (Holm for ``westfall-young``, whose step-down has no TOST form here; the
  table's metadata says so), and ``equivalent = p_equivalence_adjusted <= alpha``: the two
  systems are tied within +-delta (:func:`add_columns`).

Other tests (sign, McNemar) and rows a test cannot compute (e.g. the permutation test
of a corpus metric, which tests exchangeability only) get NaN and a note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from multistat import _table
from multistat.correct import adjust
from multistat.errors import TestNotApplicableError
from multistat.significance import REGISTRY
from multistat.significance._batch import BatchResult


def tost_tests() -> tuple:
    """The registered tests with a TOST (spec ``equivalence=True``)."""
    return tuple(name for name, spec in REGISTRY.items() if spec.equivalence)


def block_pvalues(spec, slab, ia, ib, ctx, margin: float, run=None
                  ) -> tuple[np.ndarray, str]:
    """``(p_equivalence, note)`` of one compare block (test ``spec`` on metric group
    ``slab``, pairs ``ia - ib``), ravelled pair-major like the block's rows; NaN with a
    note where the test has no TOST or cannot run it.

    Each one-sided test is ``spec.run`` with ``ctx`` at the other null value and
    alternative (the interval method set to the cheapest, ``percentile``: only the
    p-value is used), over the same chunks of pairs as the main run for closed-form tests.
    ``run(spec, ia, ib, ctx) -> BatchResult``: how the driver runs a test on this slab
    when it is not ``spec.run`` (a slab with holes runs each pair on its joint
    instances).
    """
    if not spec.equivalence:
        note = f"equivalence: no TOST for the {spec.name} test (use one of {tost_tests()})"
        return np.full(len(ia) * slab.shape[1], np.nan), note
    sides = []
    try:
        for alt, null in (("greater", -margin), ("less", margin)):
            side = ctx.replace(alternative=alt, null_value=null, ci_method="percentile",
                               progress=None)
            res = (_run(spec, slab, ia, ib, side) if run is None else
                   run(spec, ia, ib, side))
            sides.append(_table.flat(res.arrays["p_value"]).astype(float))
    except TestNotApplicableError as exc:
        return np.full(len(ia) * slab.shape[1], np.nan), f"equivalence: {exc}"
    lower, upper = sides
    p = np.fmax(lower, upper)
    p[np.isnan(lower) | np.isnan(upper)] = np.nan
    return p, ""


def _run(spec, slab, ia, ib, ctx) -> BatchResult:
    """``spec.run`` on every pair: at once for specs that take all pairs, else over the
    budget's chunks of pairs (as compare's main run)."""
    if spec.all_pairs or not len(ia):
        return spec.run(slab, ia, ib, ctx)
    pieces = []
    for sl in ctx.budget.chunks(len(ia), slab.shape[1] * slab.n * spec.bytes_per_value):
        pieces.append(spec.run(slab, ia[sl], ib[sl], ctx))
        slab.release_pairs()
    return BatchResult.concat(pieces)


def add_columns(table: pd.DataFrame, blocks, req) -> pd.DataFrame:
    """``table`` with ``p_equivalence``, ``p_equivalence_adjusted`` and ``equivalent``
    from the walk's :func:`block_pvalues` (one per block, in the table's row order),
    corrected as the request's ``p_value`` (Holm in place of a step-down)."""
    p = np.concatenate([pv for pv, _ in blocks])
    notes = np.concatenate([np.full(len(pv), note, dtype=object) for pv, note in blocks])
    out = table.copy()
    out["p_equivalence"] = p
    method = "holm" if req.stepdown else req.correction
    adj = adjust(out.drop(columns=["family", "correction", "p_adjusted", "reject", "alpha"],
                          errors="ignore").assign(p_value=out["p_equivalence"]),
                 method=method, family=req.family, alpha=req.alpha)
    out["p_equivalence_adjusted"] = adj["p_adjusted"].to_numpy(float)
    out["equivalent"] = adj["reject"].to_numpy(bool) & np.isfinite(out["p_equivalence"])
    if (notes != "").any():
        out["note"] = [("; ".join(s for s in (a, b) if s)) for a, b in
                       zip(out["note"].fillna("").astype(str), notes)]
    out.attrs = dict(table.attrs)
    return out
