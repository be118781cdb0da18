"""Could the test set tell? The smallest detectable difference of every compared pair and
closed-form paired-t power against the true difference: the numbers the report's "Could
the test set tell?" parts draw (:mod:`multistat.report.detectability` words and sums them).

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
from multistat._table import primary_tests
from multistat.power.analytic import mde_paired_t

__all__ = ["COLUMNS", "detectability", "power_curves"]

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


def _default_order(res: pd.DataFrame, chosen) -> pd.DataFrame:
    """``dataset, metric, system`` best first: by score (``score_a``/``score_b``), else by
    the mean signed estimate against the others, in the metric's direction; ties by
    name."""
    rows = []
    for (ds, metric), t in chosen.items():
        part = res[(res["dataset"] == ds) & (res["metric"] == metric) & (res["test"] == t)]
        hib = (bool(pd.Series(part["higher_is_better"]).astype("boolean").fillna(True)
                    .iloc[0]) if "higher_is_better" in part and len(part) else True)
        est = pd.to_numeric(part["estimate"], errors="coerce")
        signed = pd.concat([pd.DataFrame({"system": part["system_a"], "v": est}),
                            pd.DataFrame({"system": part["system_b"], "v": -est})])
        key = signed.groupby("system", sort=True)["v"].mean()
        if {"score_a", "score_b"} <= set(part.columns):
            scores = pd.concat([
                pd.DataFrame({"system": part["system_a"], "v": part["score_a"]}),
                pd.DataFrame({"system": part["system_b"], "v": part["score_b"]})])
            scores["v"] = pd.to_numeric(scores["v"], errors="coerce")
            sc = scores.dropna().groupby("system", sort=True)["v"].first()
            if set(sc.index) == set(key.index):
                key = sc
        key = key if hib else -key
        order = sorted(key.index, key=lambda s: (-float(np.nan_to_num(key[s], nan=-np.inf)),
                                                 s))
        rows += [{"dataset": ds, "metric": metric, "system": s} for s in order]
    return pd.DataFrame(rows, columns=["dataset", "metric", "system"])


def detectability(results: pd.DataFrame, *, study=None, leaderboard=None, test=None,
                  power: float = 0.8, alpha: float | None = None,
                  pairs: str = "all") -> pd.DataFrame:
    """Smallest detectable difference of every compared pair (or only adjacent ones).

    Parameters
    ----------
    results : compare table
    study : optional study the results came from (for the standard deviation of A − B)
    leaderboard : optional table with columns ``dataset, metric, system``, best system
        first (the report's leaderboard, :func:`multistat.report.tables.leaderboard`, or
        a ranking); decides which pairs are adjacent. Default: the systems ordered by
        their score (the ``score_a``/``score_b`` columns), else by their mean signed
        difference against the others, in the metric's direction
    test : the test whose rows (and ``mde`` column) are used; a name, a mapping
        ``{(dataset, metric): name}``, or None (the first test of the run)
    power : the power the MDE is defined for (0.8)
    alpha : significance level (default: the results' ``alpha``, else 0.05)
    pairs : ``"all"`` or ``"adjacent"``

    Returns
    -------
    DataFrame with :data:`COLUMNS`, one row per dataset × metric × pair; ``system_a`` is
    the better-ranked system, ``difference`` the observed estimate a − b of the row's test.

    Examples
    --------
    >>> import warnings, multistat
    >>> from multistat.power.detectability import detectability
    >>> from multistat import cube
    >>> study = cube.from_frame(multistat.demo.demo_frame())
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     table = multistat.compare(study, tests="t")
    >>> det = detectability(table, study=study)
    >>> bool((det["mde"] > 0).all())
    True
    """
    res = results.copy()
    for c in ("dataset", "metric", "system_a", "system_b", "test"):
        res[c] = res[c].astype(str)
    if alpha is None:
        al = pd.to_numeric(res.get("alpha", pd.Series(dtype=float)), errors="coerce").dropna()
        alpha = float(al.iloc[0]) if len(al) else 0.05
    chosen = primary_tests(res, test)
    lb = leaderboard if leaderboard is not None else _default_order(res, chosen)
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
