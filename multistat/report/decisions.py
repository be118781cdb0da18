"""One decision per pair in a report: which rows of which table say "A beats B".

A report shows "beats" counts (overview, leaderboard), heatmap stars, WMT clusters and rank
ranges. They must all come from one test, one correction and one alpha: otherwise the
overview can say the leader beats 57 of 59 systems (Wilcoxon, Holm) while the cluster
table puts everyone in one cluster (bootstrap, Holm at its resampling floor).

:func:`decision_rows` picks those rows. With a ranking (:func:`multistat.rank`), the
ranking's own decisions rule every dataset x metric it covers: its pair table
(:func:`multistat.leaderboard.ranking.rank_with_pairs`, ``multistat rank --pairs-out``), or else the
rows of the compare table with the ranking's test, correction and alpha; a compare table
without them is an error naming what is missing, never a silent mix. Without a ranking,
the test the report shows for each dataset x metric decides (its corrected ``reject``).
:func:`decision_text` is the sentence stated once at the top of the report, with the
resampling-floor notes (:mod:`multistat.pfloor`) of the deciding configuration.

Draws nothing and computes no test: it selects rows and writes sentences.
"""

from __future__ import annotations

import math

import pandas as pd

from multistat.errors import DataValidationError, ParameterError
from multistat.report import tables as _tables


def _norm(correction) -> str:
    return "none" if correction is None or str(correction) in ("", "nan", "None") \
        else str(correction)


def _keys(frame: pd.DataFrame) -> pd.Series:
    return pd.Series(list(zip(frame["dataset"].astype(str), frame["metric"].astype(str))),
                     index=frame.index)


def _settings(rows: pd.DataFrame) -> tuple[str, str, float]:
    """``(test, correction, alpha)`` of decision rows (one of each, else an error)."""
    tests = pd.unique(rows["test"].astype(str))
    corr = pd.unique(rows["correction"].map(_norm)) if "correction" in rows else \
        [_norm(_tables._meta(rows).get("correction"))]
    alphas = pd.unique(rows["alpha"].astype(float))
    if len(tests) != 1 or len(corr) != 1 or len(alphas) != 1:
        raise DataValidationError(
            f"the ranking's pair table mixes tests {list(tests)}, corrections {list(corr)} "
            f"or alphas {list(alphas)}; write it with `multistat rank --pairs-out`")
    return str(tests[0]), str(corr[0]), float(alphas[0])


def decision_rows(results: pd.DataFrame, ranking: pd.DataFrame | None, chosen: dict,
                  ranking_pairs: pd.DataFrame | None = None
                  ) -> tuple[pd.DataFrame, dict, dict]:
    """``(rows, tests, settings)``: the compare rows whose ``reject`` every section shows,
    the deciding test per ``(dataset, metric)`` (a mapping for
    :func:`multistat.report.tables.primary_tests`) and the ranking's
    ``{"test", "correction", "alpha"}`` (empty without a ranking).

    ``results`` is the checked compare table (:func:`~multistat.report.tables.
    check_results`); ``chosen`` the test shown per dataset x metric without a ranking.
    """
    if ranking is None:
        return results, dict(chosen), {}
    meta = ranking.attrs.get("multistat", {})
    if "test" not in meta:
        raise DataValidationError("the ranking table has no run metadata (test, correction, "
                                  "alpha); write it with `multistat rank` / multistat.rank")
    want: dict = {"test": str(meta["test"]), "correction": _norm(meta.get("correction")),
            "alpha": float(meta.get("alpha", 0.05))}
    ranked = set(_keys(ranking))
    in_ranking = _keys(results).isin(ranked)
    if ranking_pairs is not None:
        pairs = _tables.check_results(ranking_pairs)
        got: dict = dict(zip(("test", "correction", "alpha"), _settings(pairs)))
        if (got["test"], got["correction"]) != (want["test"], want["correction"]) or \
                not math.isclose(got["alpha"], want["alpha"]):
            raise DataValidationError(
                f"the ranking pair table decides with {_describe(got)}, the ranking with "
                f"{_describe(want)}: pass the pair table written by the same `multistat "
                "rank` run (--pairs-out)")
        missing = sorted(ranked - set(_keys(pairs)))
        if missing:
            raise DataValidationError(f"the ranking pair table has no rows for "
                                      f"{missing[0][0]} / {missing[0][1]}, which the "
                                      "ranking ranks")
        source = pairs[_keys(pairs).isin(ranked)]
    else:
        corr = results["correction"].map(_norm) if "correction" in results else \
            pd.Series(_norm(_tables._meta(results).get("correction")), index=results.index)
        match = (in_ranking & (results["test"] == want["test"]) & (corr == want["correction"])
                 & (results["alpha"].astype(float) - want["alpha"]).abs().lt(1e-12))
        have = set(_keys(results[match]))
        missing = sorted(ranked - have)
        if missing:
            run = results[in_ranking & (results["test"] == want["test"])]
            ran = ("ran it with " + _describe({"test": want["test"],
                                               "correction": corr[run.index].iloc[0],
                                               "alpha": float(run["alpha"].iloc[0])})
                   if len(run) else f"did not run the {want['test']} test")
            raise ParameterError(
                f"the ranking decides pairs with {_describe(want)}, but the compare table "
                f"{ran} (first: {missing[0][0]} / {missing[0][1]}); for one decision per "
                "pair in every section pass the ranking's pair table (`multistat rank "
                "--pairs-out P`, then `multistat report --ranking-pairs P`; "
                "write_report(..., ranking_pairs=...))")
        source = results[match]
    rows = pd.concat([source, results[~in_ranking]], ignore_index=True)
    # the run metadata of the decisions (metrics.json "run"): the ranking's
    rows.attrs = {"multistat": {**_tables._meta(results), **{
        k: meta[k] for k in ("test", "correction", "alpha", "seed", "n_resamples")
        if k in meta}}}
    tests = {k: (want["test"] if k in ranked else t) for k, t in chosen.items()}
    return rows, tests, want


def _describe(s: dict) -> str:
    return (f"the {s['test']} test, {s['correction']} correction, "
            f"α = {float(s['alpha']):g}")


def deciding_configurations(rows: pd.DataFrame, tests: dict) -> dict[tuple, list]:
    """``{(test, correction, alpha): [(dataset, metric), ...]}``: the configurations that
    decide the pairs of the report (one sentence each at the top)."""
    parts: dict[tuple, list] = {}
    for key, t in tests.items():
        sel = rows[(rows["dataset"] == key[0]) & (rows["metric"] == key[1])
                   & (rows["test"] == t)]
        if not len(sel):
            continue
        corr = _norm(sel["correction"].iloc[0]) if "correction" in sel else \
            _norm(_tables._meta(rows).get("correction"))
        parts.setdefault((t, corr, float(sel["alpha"].iloc[0])), []).append(key)
    return parts


def configuration_rows(rows: pd.DataFrame, test: str, keys) -> pd.DataFrame:
    """The rows of one deciding configuration (``test`` on the ``(dataset, metric)``
    ``keys``)."""
    return rows[(rows["test"] == test) & _keys(rows).isin(set(keys))]


def decision_text(rows: pd.DataFrame, tests: dict, settings: dict, ranking=None,
                  notes=None) -> tuple[str, list[str]]:
    """The sentence stated once at the top of the report (plain text) and the
    resampling-floor notes of the deciding configurations: the ranking's own (its
    metadata) and ``notes`` (those of the other deciding configurations,
    :func:`multistat.stages.report_inputs`), else the compare table's (its metadata's
    ``floor_notes``)."""
    parts = deciding_configurations(rows, tests)
    said = []
    for (t, corr, alpha), keys in parts.items():
        where = "" if len(parts) == 1 else " for " + ", ".join(f"{d} / {m}"
                                                             for d, m in keys)
        said.append(f"the {_tables.test_label(t)} test, {corr} correction per dataset × "
                    f"metric, α = {alpha:g}{_resampled(rows, t, keys)}{where}")
    source = " (the ranking's decisions)" if settings else ""
    text = ("One decision per pair: every “beats” count, heatmap star"
            + (", cluster and rank range" if settings else "")
            + f" in this report comes from {'; '.join(said)}{source}. Tables of other "
            "tests are labelled as such.")
    out = list(ranking.attrs.get("multistat", {}).get("floor_notes", [])) \
        if ranking is not None else []
    if notes is None and not settings:
        notes = _tables._meta(rows).get("floor_notes", [])
    out += [str(n) for n in (notes or ()) if str(n) not in out]
    return text, out


def _resampled(rows: pd.DataFrame, test: str, keys) -> str:
    """``", 10,000 resamples (seed 0)"``: how many resamples decided (the rows' own
    ``n_resamples``/``seed``; nothing for a closed-form test, whose rows have none)."""
    if "n_resamples" not in rows:
        return ""
    sel = rows[(rows["test"] == test) & _keys(rows).isin(set(keys))]
    nres = pd.unique(pd.to_numeric(sel["n_resamples"], errors="coerce").dropna())
    if not len(nres):
        return ""
    text = ", ".join(f"{int(n):,}" for n in sorted(nres))
    seeds = pd.unique(pd.to_numeric(sel["seed"], errors="coerce").dropna()) \
        if "seed" in sel else []
    seed = f" (seed {int(seeds[0])})" if len(seeds) == 1 else ""
    return f", {text} resamples{seed}"


def other_label(shown: str, deciding: str, from_pairs: bool) -> str:
    """What a table of the compare run adds to its caption: nothing when its rows are the
    decisions, else that they are another test (or the same test of another run)."""
    if shown != deciding:
        return " — another test, not the decisions stated at the top"
    if from_pairs:
        return (" — this compare run; the decisions stated at the top come from the "
                "ranking's pair table")
    return ""
