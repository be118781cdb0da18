""""Could we tell?": the smallest detectable difference per pair, power against the true
difference for the pairs adjacent in the ranking, and the study summary DVC tracks.

The minimum detectable difference (MDE) of a pair is the smallest true difference its test
detects with the given power (80 % by default) at this test set's size and the observed
variance. It is taken, first that applies, from

1. the compare table's ``mde`` column (one value per row: its test's own MDE);
2. the paired-t closed form (:func:`multistat.power.mde_paired_t`) with the standard
   deviation of the paired differences A − B computed from the study;
3. the same closed form with that standard deviation recovered from the row's t interval
   (``sd = sqrt(n) * (ci_high - ci_low) / (2 t_{1-(1-level)/2, n-1})``) when the t test
   was run.

The power curves are closed-form paired-t power at this n as a function of the true
difference, for each pair adjacent in the leaderboard (the pairs that decide where one
cluster of systems ends). Nothing here resamples; the numbers are cheap and deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as _st

from multistat._budget import Budget
from multistat.power import mde_paired_t
from multistat.report import tables as _tables

#: columns of :func:`detectability`
COLUMNS = ("dataset", "metric", "system_a", "system_b", "adjacent", "n", "sd",
           "difference", "mde", "mde_source", "power_level", "alpha")


def _paired_t_mde(n: int, sd: float, power: float, alpha: float) -> float:
    if not (n >= 2 and np.isfinite(sd)) or sd <= 0:
        return float("nan")
    return float(mde_paired_t(n=int(n), sd=float(sd), power=power, alpha=alpha))


def _paired_t_power(delta: np.ndarray, n: int, sd: float, alpha: float) -> np.ndarray:
    """Two-sided paired-t power at true difference ``delta`` (noncentral t, exact)."""
    df = n - 1
    crit = _st.t.isf(alpha / 2, df)
    nc = np.asarray(delta, dtype=float) / sd * math.sqrt(n)
    return _st.nct.sf(crit, df, nc) + _st.nct.cdf(-crit, df, nc)


def _study_sds(study, dataset, metric, pairs) -> tuple[np.ndarray, np.ndarray]:
    """``(n, sd)`` per ``(a, b)`` of ``pairs``: the number of instances both scored and the
    standard deviation of A − B over them (n 0 and sd NaN where the study cannot tell:
    unknown dataset, metric or system, corpus metric). Scores are read once per dataset ×
    metric (per system first); the differences are formed in chunks of pairs within the
    default memory budget."""
    n_out, sd = np.zeros(len(pairs), dtype=int), np.full(len(pairs), np.nan)
    # heavy: xarray, lazily
    from multistat import cube
    dss = cube.datasets(study)
    if dataset not in dss or not pairs:
        return n_out, sd
    ds = dss[dataset]
    if metric not in ds["metric"].values or "stats" in ds and \
            str(ds["kind"].sel(metric=metric).values) == "corpus":
        return n_out, sd
    index = {str(s): i for i, s in enumerate(ds["system"].values)}
    known = np.array([a in index and b in index for a, b in pairs])
    if not known.any():
        return n_out, sd
    x = np.asarray(ds["score"].sel(metric=metric).values, dtype=float)  # (S, instances)
    x = x[:, ~np.isnan(x).all(axis=0)]
    partial = bool(np.isnan(x).any())  # NaN of some systems only: drop pairwise
    ia = np.array([index[a] for (a, _), k in zip(pairs, known) if k], dtype=int)
    ib = np.array([index[b] for (_, b), k in zip(pairs, known) if k], dtype=int)
    n_k, sd_k = np.full(ia.size, x.shape[1]), np.empty(ia.size)
    for sl in Budget.of(None).chunks(ia.size, 8.0 * x.shape[1] * 3):
        d = x[ia[sl]] - x[ib[sl]]
        if not partial:
            sd_k[sl] = np.std(d, axis=1, ddof=1) if x.shape[1] > 1 else np.nan
            continue
        ok = ~np.isnan(d)
        cnt = ok.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(ok, d, 0).sum(axis=1) / cnt
            ss = (np.where(ok, d - mean[:, None], 0) ** 2).sum(axis=1)
            sd_k[sl] = np.where(cnt > 1, np.sqrt(ss / (cnt - 1)), np.nan)
        n_k[sl] = cnt
    n_out[known], sd[known] = n_k, sd_k
    return n_out, sd


def _t_row_sd(row) -> float:
    n, lo, hi = row.get("n"), row.get("ci_low"), row.get("ci_high")
    level = row.get("confidence_level", 0.95)
    try:
        n, lo, hi, level = int(n), float(lo), float(hi), float(level)
    except (TypeError, ValueError):
        return float("nan")
    if n < 2 or not (np.isfinite(lo) and np.isfinite(hi)):
        return float("nan")
    crit = _st.t.isf((1 - level) / 2, n - 1)
    return math.sqrt(n) * (hi - lo) / (2 * crit)


def detectability(results: pd.DataFrame, *, study=None, leaderboard=None, test=None,
                  power: float = 0.8, alpha: float | None = None,
                  pairs: str = "all") -> pd.DataFrame:
    """Smallest detectable difference of every compared pair (or only adjacent ones).

    Parameters
    ----------
    results : compare table
    study : optional study the results came from (for the standard deviation of A − B)
    leaderboard : optional :func:`multistat.report.tables.leaderboard` (computed if None);
        decides which pairs are adjacent in the ranking
    test : the test whose rows (and ``mde`` column) are used; default
        :func:`multistat.report.tables.primary_tests`
    power : the power the MDE is defined for (0.8)
    alpha : significance level (default: the results' ``alpha``, else 0.05)
    pairs : ``"all"`` or ``"adjacent"``

    Returns
    -------
    DataFrame with :data:`COLUMNS`, one row per dataset × metric × pair; ``system_a`` is
    the better-ranked system, ``difference`` the observed estimate a − b of the row's test.
    """
    res = _tables.check_results(results)
    if alpha is None:
        al = pd.to_numeric(res.get("alpha", pd.Series(dtype=float)), errors="coerce").dropna()
        alpha = float(al.iloc[0]) if len(al) else 0.05
    chosen = _tables.primary_tests(res, test)
    lb = leaderboard if leaderboard is not None else _tables.leaderboard(res, study=study,
                                                                         test=test)
    rows = []
    for (ds, metric), t in chosen.items():
        part = res[(res["dataset"] == ds) & (res["metric"] == metric)]
        order = lb[(lb["dataset"] == ds) & (lb["metric"] == metric)]["system"].tolist()
        rank = {s: i for i, s in enumerate(order)}
        adjacent = {(order[i], order[i + 1]) for i in range(len(order) - 1)}
        shown = part[part["test"] == t]
        t_rows = part[part["test"] == "t"]
        block, records = [], []
        for r in shown.to_dict("records"):
            a, b = str(r["system_a"]), str(r["system_b"])
            diff = float(r["estimate"]) if pd.notna(r.get("estimate")) else float("nan")
            if rank.get(b, 0) < rank.get(a, 0):
                a, b, diff = b, a, -diff
            adj = (a, b) in adjacent
            if pairs == "adjacent" and not adj:
                continue
            records.append((r, a, b, diff, adj))
        n_s, sds = (_study_sds(study, ds, metric, [(a, b) for _, a, b, _, _ in records])
                    if study is not None else (np.zeros(len(records), dtype=int),
                                               np.full(len(records), np.nan)))
        for (r, a, b, diff, adj), n_pair, sd in zip(records, n_s, sds):
            n = int(n_pair) or (int(r["n"]) if pd.notna(r.get("n")) else 0)
            mde, source, sd = float("nan"), "", float(sd)
            if not np.isfinite(sd) and len(t_rows):
                tr = t_rows[((t_rows["system_a"] == a) & (t_rows["system_b"] == b))
                            | ((t_rows["system_a"] == b) & (t_rows["system_b"] == a))]
                if len(tr):
                    sd = _t_row_sd(tr.iloc[0].to_dict())
            if "mde" in r and pd.notna(r["mde"]):
                mde, source = abs(float(r["mde"])), f"mde column ({t} test)"
            elif np.isfinite(sd):
                mde, source = _paired_t_mde(n, sd, power, alpha), "paired t closed form"
            block.append(((rank.get(a, 0), rank.get(b, 0)),
                          {"dataset": ds, "metric": metric, "system_a": a, "system_b": b,
                           "adjacent": adj, "n": n, "sd": sd, "difference": diff,
                           "mde": mde, "mde_source": source, "power_level": power,
                           "alpha": alpha}))
        rows += [r for _, r in sorted(block, key=lambda kv: kv[0])]  # best-ranked first
    return pd.DataFrame(rows, columns=list(COLUMNS))


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


def power_curves(det: pd.DataFrame, *, points: int = 41) -> pd.DataFrame:
    """Closed-form paired-t power against the true difference at this n, for every row of
    ``det`` (typically the adjacent pairs): ``dataset, metric, system_a, system_b, n,
    delta, power, mde``. The grid runs from 0 to twice the pair's MDE."""
    out = []
    for r in det.to_dict("records"):
        n, sd, mde = int(r["n"]), float(r["sd"]), float(r["mde"])
        if n < 2 or not (np.isfinite(sd) and sd > 0):
            continue
        top = 2 * mde if np.isfinite(mde) and mde > 0 else 4 * sd / math.sqrt(n)
        grid = np.linspace(0.0, top, points)
        pw = _paired_t_power(grid, n, sd, float(r["alpha"]))
        for d, p in zip(grid, pw):
            out.append({"dataset": r["dataset"], "metric": r["metric"],
                        "system_a": r["system_a"], "system_b": r["system_b"],
                        "pair": f"{r['system_a']} vs {r['system_b']}", "n": n,
                        "delta": float(d), "power": float(p), "mde": mde})
    return pd.DataFrame(out, columns=["dataset", "metric", "system_a", "system_b", "pair",
                                      "n", "delta", "power", "mde"])


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
