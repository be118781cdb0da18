"""Report tables built from the compare table: leaderboards, pairwise tables, checklists.

Everything here is plain pandas (no plotting). The input is the tidy table of
:func:`multistat.compare` (one row per dataset × metric × pair × test, DESIGN.md); square
matrices for drawing are made here and never stored.

Who "wins" a comparison is decided by the metric's ``higher_is_better`` (a column of the
compare table, or the study's metric metadata), never by the sign convention of the test:
``estimate`` is always ``a − b``.

References
----------
Zhu, H., Mak, D., Gioannini, J., Xia, F. (2020). NLPStatTest: A Toolkit for Comparing NLP
System Performance. AACL-IJCNLP 2020 System Demonstrations, ACL Anthology
2020.aacl-demo.7 (§2.3 "Reporting Test Results": the items of :func:`checklist`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from multistat._table import primary_tests, run_metadata
from multistat.errors import DataValidationError, ParameterError, ParameterTypeError
from multistat.report.formatting import (  # noqa: F401 - re-exported (public API)
    _EFFECT_LABEL,
    _finite,
    _fmt,
    _fmt_p,
    _numeric_col,
    _with_ci,
    effect_label,
    latex_escape,
    leaderboard_display,
    markdown_escape,
    pairwise_display,
    to_latex,
    to_markdown,
)
from multistat.significance import REGISTRY

#: Columns the report cannot work without.
REQUIRED = ("dataset", "metric", "system_a", "system_b", "test", "estimate", "p_value")

#: Effect-size columns of the compare table (each with ``_ci_low``/``_ci_high``).
EFFECTS = ("cohens_d", "hedges_g", "wilcoxon_r", "hodges_lehmann")



# ----------------------------------------------------------------------------- checks
def check_results(results) -> pd.DataFrame:
    """Validate a compare table and return a copy with the report's helper columns.

    Added columns: ``significant`` (bool; ``reject`` if present, else ``p_adjusted < alpha``,
    else ``p_value < alpha``; NaN p-values are never significant), ``higher_is_better``
    (True when absent) and ``winner`` (``system_a``, ``system_b`` or ``""``: the
    significantly better system in the sense of ``higher_is_better``; the direction comes
    from the estimate, or from the test statistic when the estimate is 0, see
    :func:`_direction`).
    """
    if not isinstance(results, pd.DataFrame):
        raise ParameterTypeError(f"`results` must be a pandas DataFrame (the compare table); "
                                 f"got {type(results).__name__}")
    missing = [c for c in REQUIRED if c not in results.columns]
    if missing:
        raise DataValidationError(f"`results` lacks compare-table column(s) {missing}; has "
                                  f"{list(results.columns)}")
    if len(results) == 0:
        raise DataValidationError("`results` is empty: no comparisons to report")
    df = results.copy()
    df.attrs = dict(results.attrs)
    for c in ("dataset", "metric", "system_a", "system_b", "test"):
        df[c] = df[c].astype(str)
    key = ["dataset", "metric", "system_a", "system_b", "test"]
    twice = df.duplicated(key, keep=False)
    if twice.any():  # a repeated row would be counted twice ("beats", clusters, overview)
        row = df.loc[twice, key].iloc[0]
        raise DataValidationError(
            f"`results` has {int(twice.sum())} rows that repeat a dataset x metric x pair x "
            f"test, e.g. {row['system_a']!r} vs {row['system_b']!r} ({row['test']}, "
            f"{row['dataset']} / {row['metric']}); each comparison once")
    alpha = pd.to_numeric(df["alpha"], errors="coerce") if "alpha" in df else \
        pd.Series(_meta(results).get("alpha", 0.05), index=df.index, dtype=float)
    df["alpha"] = alpha.fillna(0.05).astype(float)
    if "reject" in df:
        sig = df["reject"].astype("boolean").fillna(False).astype(bool)
    elif "p_adjusted" in df:
        sig = (pd.to_numeric(df["p_adjusted"], errors="coerce") < df["alpha"]).fillna(False)
    else:
        sig = (pd.to_numeric(df["p_value"], errors="coerce") < df["alpha"]).fillna(False)
    df["significant"] = sig.astype(bool)
    if "higher_is_better" not in df:
        df["higher_is_better"] = True
    df["higher_is_better"] = df["higher_is_better"].astype("boolean").fillna(True).astype(bool)
    direction = _direction(df)
    a_better = np.where(df["higher_is_better"], direction > 0, direction < 0)
    b_better = np.where(df["higher_is_better"], direction < 0, direction > 0)
    df["winner"] = np.where(df["significant"] & a_better, df["system_a"],
                            np.where(df["significant"] & b_better, df["system_b"], ""))
    return df


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)


def test_label(name) -> str:
    """The report's name of a test: its registry spec's ``label``, else its name."""

    spec = REGISTRY.get(str(name))
    return spec.label if spec is not None and spec.label else str(name)


def _direction(df: pd.DataFrame) -> np.ndarray:
    """Sign of the difference a − b that a significant result points to (+1, −1, 0).

    The estimate minus ``null_value`` where it is not zero. A median or Hodges-Lehmann
    estimate is often exactly 0 on discrete scores (binary, Likert) while the test is
    significant; then the test's own statistic decides, against its value when A and B do
    not differ (the spec's ``null_statistic``: the sign test's n/2 positive differences,
    Wilcoxon's W+ against n(n+1)/4); then the signed Wilcoxon r, then the difference of
    the systems' scores.
    """

    est = _num(df, "estimate") - np.nan_to_num(_num(df, "null_value"))
    out = np.sign(est)
    out[~np.isfinite(out)] = 0
    test = df["test"].astype(str).to_numpy()
    stat, n = _num(df, "statistic"), _num(df, "n")
    by_statistic = np.full(len(df), np.nan)
    for name in np.unique(test):
        spec = REGISTRY.get(name)
        if spec is not None and spec.null_statistic is not None:
            rows = test == name
            by_statistic[rows] = np.sign(stat[rows] - spec.null_statistic(n[rows]))
    fallbacks = [by_statistic,
                 np.sign(_num(df, "wilcoxon_r")),
                 np.sign(_num(df, "score_a") - _num(df, "score_b"))]
    for fb in fallbacks:
        todo = (out == 0) & np.isfinite(fb) & (fb != 0)
        out[todo] = fb[todo]
    return out


_meta = run_metadata  # the compare table's run metadata (multistat._table)


def recommended_tests(results: pd.DataFrame, analysis: pd.DataFrame) -> dict[tuple, str]:
    """Per ``(dataset, metric)``, the test the data analysis recommends for most pairs.

    Counts, over the pairs of :func:`multistat.analyze`'s table, every test named in the
    ``recommended`` column (comma-separated) that was also run in ``results``; the most
    frequent wins, ties going to the run's test order. Dataset × metric combinations
    without a recommended test that was run are left out (the default applies).
    """
    if "recommended" not in analysis:
        return {}
    order = [str(t) for t in _meta(results).get("tests", [])]
    order += [t for t in pd.unique(results["test"].astype(str)) if t not in order]
    run = {k: set(g["test"].astype(str))
           for k, g in results.groupby(["dataset", "metric"], sort=False)}
    out = {}
    an = analysis.assign(dataset=analysis["dataset"].astype(str),
                         metric=analysis["metric"].astype(str))
    for key, g in an.groupby(["dataset", "metric"], sort=False):
        counts: dict[str, int] = {}
        for rec in g["recommended"].dropna().astype(str):
            for t in (x.strip() for x in rec.split(",")):
                if t in run.get(key, ()):
                    counts[t] = counts.get(t, 0) + 1
        if counts:
            out[key] = max(counts, key=lambda t: (counts[t], -order.index(t)))
    return out


# ----------------------------------------------------------------------------- scores
def leaderboard_scores(results: pd.DataFrame, *, study=None,
                       scores: pd.DataFrame | None = None,
                       confidence_level: float | None = None) -> pd.DataFrame:
    """One score per ``dataset × metric × system``, with a confidence interval if possible.

    Parameters
    ----------
    results : compare table
    study : no longer used (deprecated): the report computes no score; pass
        ``scores=multistat.system_scores(study, ...)`` (compare's ``--systems-out``)
    scores : optional per-system table with columns ``dataset, metric, system, score`` and
        optionally ``ci_low, ci_high, confidence_level`` (e.g. compare's per-system
        bootstrap table); used first when given.
    confidence_level : level of the intervals computed here (default: the results'
        ``confidence_level``, else 0.95)

    Returns
    -------
    DataFrame with columns ``dataset, metric, system, score, ci_low, ci_high,
    confidence_level, ci_method``.

    Notes
    -----
    Sources, first that applies: ``scores`` (:func:`multistat.system_scores`: each
    system's mean or corpus score with the bootstrap percentile interval of compare's own
    plans, or for a binary metric the Wilson interval of its count;
    :func:`multistat.stages.report_inputs` runs it with the results' seed and number of
    resamples); the ``score_a``/``score_b`` columns of the compare table (no interval).
    Without any of these the score is NaN and systems are ordered by their mean signed
    difference against the others. The report computes no interval of its own.
    """
    level = confidence_level
    if level is None:
        cl = pd.to_numeric(results.get("confidence_level", pd.Series(dtype=float)),
                           errors="coerce").dropna()
        level = float(cl.iloc[0]) if len(cl) else 0.95
    cols = ["dataset", "metric", "system", "score", "ci_low", "ci_high", "confidence_level",
            "ci_method"]
    keys = _systems_per_group(results)
    rows = []
    given = None
    if scores is not None:
        need = [c for c in ("dataset", "metric", "system", "score") if c not in scores]
        if need:
            raise DataValidationError(f"`scores` lacks column(s) {need}; has "
                                      f"{list(scores.columns)}")
        given = scores.assign(dataset=scores["dataset"].astype(str),
                              metric=scores["metric"].astype(str),
                              system=scores["system"].astype(str)
                              ).set_index(["dataset", "metric", "system"])
        given = given[~given.index.duplicated()]
        given = dict(zip(given.index, given.to_dict("records")))
    if study is not None and scores is None:
        warnings.warn("`study` no longer gives the leaderboard's scores (the report "
                      "computes none): pass scores=multistat.system_scores(study, ...); "
                      "the scores come from the score_a/score_b columns", DeprecationWarning,
                      stacklevel=2)
    from_cols = _scores_from_columns(results)
    for (ds, metric), systems in keys.items():
        for system in systems:
            row = {"dataset": ds, "metric": metric, "system": system, "score": np.nan,
                   "ci_low": np.nan, "ci_high": np.nan, "confidence_level": level,
                   "ci_method": ""}
            key = (ds, metric, system)
            if given is not None and key in given:
                g = given[key]
                row.update(score=float(g["score"]), ci_low=float(g.get("ci_low", np.nan)),
                           ci_high=float(g.get("ci_high", np.nan)),
                           confidence_level=float(g.get("confidence_level", level)),
                           ci_method=str(g.get("ci_method", "bootstrap percentile"
                                              if "n_resamples" in g else "given")))
            elif key in from_cols:
                row.update(score=from_cols[key], ci_method="none")
            rows.append(row)
    out = pd.DataFrame(rows, columns=cols)
    return out


def _systems_per_group(results) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for key, part in results.groupby(["dataset", "metric"], sort=False):
        out[key] = list(pd.unique(pd.concat([part["system_a"], part["system_b"]])
                                  .astype(str)))
    return out


def _scores_from_columns(results) -> dict[tuple, float]:
    if "score_a" not in results or "score_b" not in results:
        return {}
    out: dict = {}
    for side in ("a", "b"):
        sub = results[["dataset", "metric", f"system_{side}", f"score_{side}"]].dropna()
        for d, m, s, v in sub.itertuples(index=False):
            out.setdefault((d, m, s), float(v))
    return out


# ----------------------------------------------------------------------------- leaderboard
def leaderboard(results: pd.DataFrame, *, study=None, scores: pd.DataFrame | None = None,
                test: str | Mapping[tuple, str] | None = None) -> pd.DataFrame:
    """Leaderboard per dataset × metric.

    Parameters
    ----------
    results : compare table
    study, scores : where per-system scores and intervals come from (see
        :func:`leaderboard_scores`)
    test : the test whose corrected decisions count as wins (default: see
        :func:`primary_tests`)

    Returns
    -------
    DataFrame, best system first within each ``dataset, metric``, columns
    ``dataset, metric, rank, system, score, ci_low, ci_high, confidence_level, ci_method,
    wins`` (number of systems it significantly beats after correction), ``losses``
    (number that significantly beat it), ``compared`` (number of comparisons it is in),
    ``test``, ``higher_is_better``.

    Notes
    -----
    Rank is by score (``higher_is_better`` decides the direction), ties share the smallest
    rank. When no score is available, systems are ordered by wins − losses, then by the
    mean signed difference against the others (rank then refers to that order).
    """
    df = check_results(results)
    chosen = primary_tests(df, test)
    sc = leaderboard_scores(df, study=study, scores=scores)
    out = []
    for (ds, metric), t in chosen.items():
        part = df[(df["dataset"] == ds) & (df["metric"] == metric) & (df["test"] == t)]
        hib = bool(part["higher_is_better"].iloc[0])
        lb = sc[(sc["dataset"] == ds) & (sc["metric"] == metric)].copy()
        lb["wins"] = [int((part["winner"] == s).sum()) for s in lb["system"]]
        involved = {s: (part["system_a"] == s) | (part["system_b"] == s) for s in lb["system"]}
        lb["losses"] = [int((involved[s] & (part["winner"] != "") & (part["winner"] != s))
                            .sum()) for s in lb["system"]]
        lb["compared"] = [int(involved[s].sum()) for s in lb["system"]]
        lb["test"] = t
        lb["higher_is_better"] = hib
        lb["_signed"] = [_mean_signed(part, s, hib) for s in lb["system"]]
        if lb["score"].notna().all():
            key = lb["score"] if hib else -lb["score"]
            lb = lb.assign(_key=key).sort_values(["_key", "wins"], ascending=[False, False],
                                                 kind="mergesort")
            lb["rank"] = lb["_key"].rank(ascending=False, method="min").astype(int)
        else:
            lb = lb.assign(_key=lb["wins"] - lb["losses"]).sort_values(
                ["_key", "_signed"], ascending=[False, False], kind="mergesort")
            lb["rank"] = np.arange(1, len(lb) + 1)
        out.append(lb.drop(columns=["_key", "_signed"]))
    cols = ["dataset", "metric", "rank", "system", "score", "ci_low", "ci_high",
            "confidence_level", "ci_method", "wins", "losses", "compared", "test",
            "higher_is_better"]
    return pd.concat(out, ignore_index=True)[cols]


def _mean_signed(part, system, hib) -> float:
    """Mean of (system − other) over the comparisons it is in, oriented to "better"."""
    est = pd.to_numeric(part["estimate"], errors="coerce")
    vals = pd.concat([est[part["system_a"] == system], -est[part["system_b"] == system]])
    if vals.notna().sum() == 0:
        return -np.inf
    return float(vals.mean()) * (1 if hib else -1)


# ----------------------------------------------------------------------------- pairwise
def pairwise_matrix(results: pd.DataFrame, dataset: str, metric: str, *, test: str,
                    value: str = "estimate", order: Iterable[str] | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Square views for a heatmap: ``(effect, decision, p_adjusted)``.

    ``effect.loc[r, c]`` is ``value`` for row − column (antisymmetric: the mirrored cell is
    the negated value; ``"score_difference"`` is ``score_a − score_b``); ``decision.loc[r, c]`` is
    +1 when the row system is significantly
    better (after correction, in the sense of ``higher_is_better``), −1 when significantly
    worse, 0 when not significant, NaN when the pair was not compared (and on the
    diagonal); ``p_adjusted`` (or ``p_value`` if uncorrected) is symmetric.
    """
    df = check_results(results)
    part = df[(df["dataset"] == dataset) & (df["metric"] == metric) & (df["test"] == test)]
    if part.empty:
        raise ParameterError(f"no rows for dataset {dataset!r}, metric {metric!r}, test "
                             f"{test!r} in `results`")
    if value == "score_difference" and {"score_a", "score_b"} <= set(part.columns):
        part = part.assign(score_difference=_num(part, "score_a") - _num(part, "score_b"))
    if value not in part:
        raise ParameterError(f"`value` {value!r} is not a column of the results; use "
                             f"'estimate', 'score_difference' or one of "
                             f"{[e for e in EFFECTS if e in part]}")
    systems = list(order) if order is not None else list(
        pd.unique(pd.concat([part["system_a"], part["system_b"]])))
    pos = {s: i for i, s in enumerate(systems)}
    k = len(systems)
    eff, dec, pad = (np.full((k, k), np.nan) for _ in range(3))
    ia = part["system_a"].map(pos)
    ib = part["system_b"].map(pos)
    ok = (ia.notna() & ib.notna()).to_numpy()
    ia = ia.to_numpy()[ok].astype(int)
    ib = ib.to_numpy()[ok].astype(int)
    v = pd.to_numeric(part[value], errors="coerce").to_numpy(dtype=float)[ok]
    pcol = "p_adjusted" if "p_adjusted" in part else "p_value"
    p = pd.to_numeric(part[pcol], errors="coerce").to_numpy(dtype=float)[ok]
    w = part["winner"].to_numpy()[ok]
    d = np.where(w == part["system_a"].to_numpy()[ok], 1.0,
                 np.where(w == part["system_b"].to_numpy()[ok], -1.0, 0.0))
    eff[ia, ib], eff[ib, ia] = v, -v
    dec[ia, ib], dec[ib, ia] = d, -d
    pad[ia, ib] = pad[ib, ia] = p
    eff, dec, pad = (pd.DataFrame(m, index=systems, columns=systems) for m in (eff, dec, pad))
    return eff, dec, pad


def pairwise_table(results: pd.DataFrame, *, test: str | None = None,
                   effect: str = "auto") -> pd.DataFrame:
    """The pairwise results of the chosen test per dataset × metric, in reading order.

    Returns
    -------
    DataFrame with columns ``dataset, metric, system_a, system_b, test, n, estimate,
    ci_low, ci_high, effect, effect_value, effect_ci_low, effect_ci_high, p_value,
    p_adjusted, significant, winner, power`` (missing inputs give NaN).
    """
    df = check_results(results)
    chosen = primary_tests(df, test)
    keep = pd.Series(False, index=df.index)
    for (ds, metric), t in chosen.items():
        keep |= (df["dataset"] == ds) & (df["metric"] == metric) & (df["test"] == t)
    part = df[keep]
    rows = []
    for r in part.to_dict("records"):
        name = choose_effect(r, effect)
        rows.append({
            "dataset": r["dataset"], "metric": r["metric"], "system_a": r["system_a"],
            "system_b": r["system_b"], "test": r["test"], "n": r.get("n", np.nan),
            "estimate": r["estimate"], "ci_low": r.get("ci_low", np.nan),
            "ci_high": r.get("ci_high", np.nan), "effect": name,
            "effect_value": r.get(name, np.nan) if name else np.nan,
            "effect_ci_low": r.get(f"{name}_ci_low", np.nan) if name else np.nan,
            "effect_ci_high": r.get(f"{name}_ci_high", np.nan) if name else np.nan,
            "p_value": r["p_value"], "p_adjusted": r.get("p_adjusted", np.nan),
            "significant": r["significant"], "winner": r["winner"],
            "power": r.get("power", np.nan)})
    return pd.DataFrame(rows)


def choose_effect(row: Mapping, effect: str = "auto") -> str:
    """Name of the effect-size column to report for one row ("" if none available).

    ``"auto"``: the effect that matches the test's statistic — Wilcoxon r for the Wilcoxon
    test, Hodges-Lehmann for median statistics, Cohen's d_z otherwise (then the other
    effect columns in order) — the first one that is not NaN.
    """
    if effect != "auto":
        if effect not in EFFECTS:
            raise ParameterError(f"`effect` must be 'auto' or one of {list(EFFECTS)}; got "
                                 f"{effect!r}")
        return effect if effect in row else ""

    prefs = list(EFFECTS)
    spec = REGISTRY.get(str(row.get("test", "")))
    if spec is not None and spec.effect_size:  # the test's own effects first
        own = [e for e in spec.effect_size if e in prefs]
        prefs = own + [e for e in prefs if e not in own]
    elif str(row.get("statistic_kind", "mean")) == "median":
        prefs = ["hodges_lehmann", "wilcoxon_r", "cohens_d", "hedges_g"]
    for e in prefs:
        v = row.get(e, np.nan)
        if v is not None and not (isinstance(v, float) and np.isnan(v)):
            return e
    return ""


def checklist(results: pd.DataFrame, *, test: str | None = None, effect: str = "auto"
              ) -> pd.DataFrame:
    """A reporting checklist per comparison, as strings ready to paste.

    The items the NLPStatTest paper (Zhu et al. 2020, §2.3 "Reporting Test Results") asks
    for: the test, the significance level α, the sample size n, the estimate with its
    confidence interval, the effect size with its interval, the statistical power, plus the
    p-value before and after the multiple-comparison correction and the correction itself.

    Returns
    -------
    DataFrame with string columns ``dataset, metric, comparison, test, alpha, n,
    estimate_ci, effect_size_ci, p_value, p_adjusted, correction, significant, power,
    resamples_seed``. Missing items say "not computed" rather than being left blank.
    """
    df = check_results(results)
    meta = _meta(df)
    chosen = primary_tests(df, test) if test is not None else None
    rows = []
    for r in df.to_dict("records"):
        if chosen is not None and chosen.get((r["dataset"], r["metric"])) != r["test"]:
            continue
        name = choose_effect(r, effect)
        level = r.get("confidence_level", np.nan)
        pct = f"{100 * level:g}% CI" if _finite(level) else "CI"
        alt = str(r.get("alternative", "two-sided"))
        corr = r.get("correction", meta.get("correction"))
        corr = "none" if corr is None or (isinstance(corr, float) and np.isnan(corr)) \
            else str(corr)
        fam = r.get("family", "")
        fam = "" if fam is None or (isinstance(fam, float) and np.isnan(fam)) else str(fam)
        nres = r.get("n_resamples", meta.get("n_resamples"))
        seed = r.get("seed", meta.get("seed"))
        rs = "not resampled" if not _finite(nres) or not _is_resampling(r["test"], nres) \
            else f"B = {int(nres)}, seed {seed}"
        rows.append({
            "dataset": r["dataset"], "metric": r["metric"],
            "comparison": f"{r['system_a']} − {r['system_b']}",
            "test": f"{r['test']} ({alt})",
            "alpha": f"{float(r['alpha']):g}",
            "n": "not computed" if not _finite(r.get("n")) else str(int(r["n"])),
            "estimate_ci": _with_ci(r.get("estimate"), r.get("ci_low"), r.get("ci_high"),
                                    pct),
            "effect_size_ci": "not computed" if not name else
            f"{_EFFECT_LABEL[name]} " + _with_ci(r.get(name), r.get(f"{name}_ci_low"),
                                                 r.get(f"{name}_ci_high"), pct),
            "p_value": _fmt_p(r["p_value"]),
            "p_adjusted": _fmt_p(r.get("p_adjusted")),
            "correction": corr + (f" over {fam}" if fam else ""),
            "significant": "yes" if r["significant"] else "no",
            "power": _fmt(r["power"]) if _finite(r.get("power")) else "not computed",
            "resamples_seed": rs})
    return pd.DataFrame(rows)


def _is_resampling(test, nres) -> bool:
    try:
        # optional: only when available
        from multistat.significance._base import REGISTRY
    except ImportError:  # pragma: no cover
        REGISTRY = {}
    spec = REGISTRY.get(str(test))
    if spec is not None:
        return bool(spec.resampling)
    return str(test) in ("bootstrap", "permutation") and _finite(nres)
