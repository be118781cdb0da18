"""The analysis stages a report draws, run for the inputs that were not given.

The report (:func:`multistat.report.write_report`) draws tables and computes nothing.
:func:`report_inputs` runs, for each section input that is missing, the analysis that
writes it: per-system scores with intervals (:func:`multistat.system_scores`), the
smallest detectable differences and the adjacent pairs' power curves
(:mod:`multistat.power.detectability`), Friedman tests and replicability across test sets
(:func:`multistat.leaderboard.across.across_results`), the studies behind a pooled table
(:func:`multistat.meta.pooling.study_rows`), the numbers of a study with ratings by rater
(:func:`multistat.human.pilot.rating_tables`) and the resampling-floor notes of the
deciding tests (:func:`multistat.pfloor.floor_notes`). ``multistat report --study`` runs
it. It sits above the report because it reads the report's decisions (which pairs are
adjacent in its leaderboard, which configuration decides); it draws nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from multistat import cube
from multistat._typing import DEFAULT_N_RESAMPLES
from multistat.comparison import system_scores
from multistat.human.pilot import rating_tables
from multistat.io import read_parquet
from multistat.leaderboard.across import across_results
from multistat.meta.pooling import study_rows
from multistat.pfloor import floor_notes
from multistat.power.detectability import detectability, power_curves
from multistat.report import decisions as _decisions
from multistat.report import html as _html
from multistat.report import tables as _tables
from multistat.report._checks import check_study_matches

__all__ = ["report_inputs"]


def _finite(v) -> bool:
    try:
        return bool(np.isfinite(float(v)))
    except (TypeError, ValueError):
        return False


def _scores(results: pd.DataFrame, study, level: float) -> pd.DataFrame | None:
    """:func:`multistat.system_scores` of the results' datasets and metrics with the
    results' seed and resamples (compare's ``--systems-out`` table)."""
    meta = _tables._meta(results)
    nres = meta.get("n_resamples")
    if not _finite(nres) and "n_resamples" in results:
        nres = pd.to_numeric(results["n_resamples"], errors="coerce").max()
    nres = int(nres) if nres is not None and _finite(nres) and nres > 0 \
        else DEFAULT_N_RESAMPLES
    seed = meta.get("seed", 0)
    seed = int(seed) if _finite(seed) else 0
    names = set(results["dataset"].astype(str))
    have = [d for d in cube.datasets(study) if d in names]
    if not have:
        return None
    sc = system_scores(study, n_resamples=nres, seed=seed, confidence_level=level,
                       datasets=have, metrics=set(results["metric"].astype(str)))
    if "ci_method" not in sc:  # (binary metrics: the interval of their count)
        sc = sc.assign(ci_method="bootstrap percentile")
    return sc


def _notes(dec, dec_tests, settings) -> list[str]:
    """The resampling-floor notes of the deciding configurations other than the
    ranking's (whose notes the ranking carries)."""
    meta = _tables._meta(dec)
    notes: list[str] = []
    for (t, corr, alpha), keys in _decisions.deciding_configurations(dec, dec_tests).items():
        if settings and t == settings["test"]:
            continue  # the ranking's own notes
        sel = _decisions.configuration_rows(dec, t, keys)
        nres = pd.to_numeric(sel["n_resamples"], errors="coerce").max() \
            if "n_resamples" in sel else None
        if nres is None or pd.isna(nres):
            nres = meta.get("n_resamples")
        if nres is None or pd.isna(nres):
            continue
        notes += floor_notes(sel, test=t, correction=None if corr == "none" else corr,
                             alpha=alpha, n_resamples=int(nres))
    return notes


def report_inputs(results, *, study=None, sections: Mapping | None = None,
                  options: Mapping | None = None) -> dict:
    """The report's section inputs: those given, and the analysis stages' tables for those
    missing.

    Parameters
    ----------
    results : pandas.DataFrame or path
        The compare table.
    study : xarray.DataTree or path, optional
        The study the results came from: per-system scores with intervals, the standard
        deviation of each pair's differences (detectability) and the human-ratings
        tables need it.
    sections : mapping, optional
        Inputs already at hand (``{name: table or path}``, as for
        :func:`multistat.report.write_report`); they are kept, never recomputed.
    options : mapping, optional
        The report's display options (``test`` decides which rows the detectability
        table reads).

    Returns
    -------
    dict
        ``sections`` with the computed inputs added: ``systems`` (with a study),
        ``detectability`` and ``detectability_curves``, ``friedman`` and
        ``replicability`` (two test sets or more), ``pooled_studies`` (with
        ``pooled``), the ``human_*`` tables (a study with ratings by rater) and
        ``floor_notes``. Pass it as ``write_report(..., sections=...)``.

    Examples
    --------
    >>> import tempfile, warnings, multistat
    >>> from multistat import cube
    >>> from multistat.demo import demo_frame
    >>> from multistat.report import write_report
    >>> study = cube.from_frame(demo_frame())
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     table = multistat.compare(study, tests="t")
    ...     inputs = report_inputs(table, study=study)
    >>> sorted(k for k in inputs if k.startswith("detect"))
    ['detectability', 'detectability_curves']
    >>> path = write_report(table, tempfile.mkdtemp(), sections=inputs, study=study,
    ...                     options={"histogram_pairs": None})
    """
    given = {k: v for k, v in dict(sections or {}).items() if v is not None}
    out = dict(given)
    raw = results if isinstance(results, pd.DataFrame) else read_parquet(Path(results))
    res = _tables.check_results(raw)
    if isinstance(study, (str, Path)):
        study = cube.open_study(study)
    check_study_matches(res, study)
    opts = _html.options_of(options)
    inputs = _html.read_inputs(given)
    if study is not None and "systems" not in inputs:
        cl = pd.to_numeric(res.get("confidence_level", pd.Series(dtype=float)),
                           errors="coerce").dropna()
        scores = _scores(raw, study, float(cl.iloc[0]) if len(cl) else 0.95)
        if scores is not None:
            out["systems"] = inputs["systems"] = scores
    if "friedman" not in inputs:
        test = opts["test"]
        frs, rep = across_results(res, test=test if isinstance(test, str) else None)
        if frs:
            out["friedman"] = frs
            if rep is not None and "replicability" not in inputs:
                out["replicability"] = rep
    if "pooled" in inputs and "pooled_studies" not in inputs:
        out["pooled_studies"] = study_rows(raw, inputs["pooled"])
    human = ("human_design", "human_agreement", "human_components", "human_power")
    if study is not None and any(k not in inputs for k in human):
        for k, v in rating_tables(study, raw).items():
            out.setdefault(k, v)  # a table given (`multistat agreement`, ...) is kept
    test, chosen, board, dec, dec_tests, settings = _html.decide(res, inputs, dict(opts))
    if "detectability" not in inputs:
        lb = _tables.leaderboard(dec, scores=inputs.get("systems"), test=dec_tests)
        det = detectability(res, study=study, leaderboard=lb, test=test)
        out["detectability"] = det
        if "detectability_curves" not in inputs:
            out["detectability_curves"] = power_curves(det[det["adjacent"].astype(bool)])
    if "floor_notes" not in inputs:
        out["floor_notes"] = _notes(dec, dec_tests, settings)
    return out
