""""Could we tell?": the words and sums of the detectability table, and the study summary
DVC tracks.

The numbers -- each pair's smallest detectable difference and the paired-t power curves of
the pairs adjacent in the leaderboard -- are computed by
:mod:`multistat.power.detectability` (an analysis stage: :func:`multistat.stages.report_inputs`
runs it for the report); here they are summed per dataset × metric
(:func:`smallest_detectable`), put into words (:func:`statement`) and written as the
metrics file DVC tracks (:func:`study_summary`). Nothing here computes a statistic.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from multistat.report import tables as _tables

#: columns of the detectability table (:func:`multistat.power.detectability.detectability`)
COLUMNS = ("dataset", "metric", "system_a", "system_b", "adjacent", "n", "sd",
           "difference", "mde", "mde_source", "power_level", "alpha")


def smallest_detectable(det: pd.DataFrame) -> pd.DataFrame:
    """Per dataset × metric: the smallest MDE over its pairs (differences smaller than it
    are not detectable for any pair with this test set), the median MDE, the largest
    observed difference ``max_difference`` (absolute), the test set's size ``n`` (the
    largest over its pairs) and ``too_small``: every observed difference is below the
    smallest MDE, so the benchmark is too small to separate these systems at the observed
    variance.

    Degenerate pairs -- identical systems or differences of zero variance, whose MDE is
    0 -- say nothing about the test set and are left out of the MDEs; ``degenerate``
    counts them."""
    out = []
    for (ds, metric), g in det.groupby(["dataset", "metric"], sort=False):
        m = pd.to_numeric(g["mde"], errors="coerce")
        sd = (pd.to_numeric(g["sd"], errors="coerce") if "sd" in g
              else pd.Series(np.nan, index=g.index))
        degenerate = (m <= 0) | (sd == 0)
        m = m[~degenerate].dropna()
        diff = (pd.to_numeric(g["difference"], errors="coerce").abs().dropna()
                if "difference" in g else pd.Series(dtype=float))
        mde_min = float(m.min()) if len(m) else float("nan")
        biggest = float(diff.max()) if len(diff) else float("nan")
        n = pd.to_numeric(g["n"], errors="coerce").max() if "n" in g and len(g) else 0
        out.append({"dataset": ds, "metric": metric, "mde_min": mde_min,
                    "mde_median": float(m.median()) if len(m) else float("nan"),
                    "mde_source": ", ".join(sorted(set(g["mde_source"]) - {""})),
                    "power_level": float(g["power_level"].iloc[0]),
                    "pairs": len(g), "degenerate": int(degenerate.sum()),
                    "max_difference": biggest, "n": int(n) if np.isfinite(n) else 0,
                    "too_small": bool(np.isfinite(mde_min) and np.isfinite(biggest)
                                      and biggest < mde_min)})
    return pd.DataFrame(out, columns=["dataset", "metric", "mde_min", "mde_median",
                                      "mde_source", "power_level", "pairs", "degenerate",
                                      "max_difference", "n", "too_small"])


def statement(row) -> str:
    """"differences smaller than X are not detectable with this test set" for one row of
    :func:`smallest_detectable`, preceded, when every observed difference is below X, by
    "this benchmark (n instances) is too small to separate these systems"."""
    x = row["mde_min"]
    k = int(row.get("degenerate", 0) or 0)
    left = (f"; {k} pair(s) of identical systems or constant differences left out"
            if k else "")
    if not np.isfinite(x):
        return ("the smallest detectable difference could not be computed (no study and no "
                f"t test rows, or no pair whose difference varies{left})")
    text = (f"differences smaller than {_tables._fmt(x, 3)} are not detectable with this "
            f"test set ({100 * row['power_level']:g} % power; {row['mde_source']}{left})")
    if bool(row.get("too_small", False)):
        size = f" ({int(row['n'])} instances)" if row.get("n") else ""
        text = (f"this benchmark{size} is too small to separate these systems: the largest "
                f"observed difference, {_tables._fmt(row['max_difference'], 3)}, is below "
                f"the smallest difference it can detect at the observed variance; {text}")
    return text


def study_summary(results: pd.DataFrame, leaderboard: pd.DataFrame, det: pd.DataFrame,
                  *, test=None) -> dict:
    """The small JSON DVC tracks as metrics: per dataset × metric the leader, whether it is
    significantly better than every other system, the number of significant pairs, the
    smallest detectable difference; and the run's seed, resamples and correction."""
    res = _tables.check_results(results)
    chosen = _tables.primary_tests(res, test)
    small = smallest_detectable(det).set_index(["dataset", "metric"])
    out: dict = {}
    for (ds, metric), t in chosen.items():
        lb = leaderboard[(leaderboard["dataset"] == ds) & (leaderboard["metric"] == metric)]
        rows = res[(res["dataset"] == ds) & (res["metric"] == metric) & (res["test"] == t)]
        n_sig = int(rows["significant"].sum())
        lead = lb.iloc[0] if len(lb) else None
        entry = {
            "test": t,
            "leader": str(lead["system"]) if lead is not None else "",
            "leader_score": _clean(lead["score"]) if lead is not None else None,
            "leader_significantly_best": bool(lead is not None
                                              and int(lead["wins"]) == int(lead["compared"])
                                              and int(lead["compared"]) > 0),
            "systems": len(lb),
            "pairs": len(rows),
            "significant_pairs": n_sig,
            "mde": _clean(small.loc[(ds, metric), "mde_min"]) if (ds, metric) in small.index
            else None,
            # pairs left out of mde: identical systems or constant differences
            "mde_degenerate_pairs": int(small.loc[(ds, metric), "degenerate"])
            if (ds, metric) in small.index else 0,
        }
        out.setdefault(str(ds), {})[str(metric)] = entry
    meta = _tables._meta(res)
    run = {k: meta[k] for k in ("seed", "n_resamples", "correction", "alpha") if k in meta}
    return {"run": {k: _clean(v) for k, v in run.items()}, "results": out}


def _clean(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return None if not math.isfinite(v) else round(v, 6)
    return v
