"""The self-contained HTML report and the files beside it.

:func:`write_report` writes ``out_dir/report.html`` (one file, PNG figures embedded as
base64 ``data:`` URIs, no scripts, no external resources), the same figures as PNG files
under ``out_dir/figures/`` and the tables as Markdown, LaTeX (booktabs) and CSV under
``out_dir/tables/``. Every user-supplied string (dataset, metric, system and test names,
titles) goes through :func:`html.escape`; nothing from the data is ever markup.

The page is its sections in the order of the registry
(:data:`multistat.report.sections.SECTIONS`), rendered through the package's Jinja2
templates with autoescape on; each section reads the inputs it declares (the tables the
analysis stages wrote, given as ``sections={name: table or path}``) and computes no
statistic. :func:`multistat.stages.report_inputs` runs the analysis stages whose tables are
missing (``multistat report --study`` does).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from multistat import _atomic
from multistat.errors import DataValidationError, InputFileError, ParameterError, ParameterTypeError
from multistat.io import read_parquet
from multistat.report import _files, _templates
from multistat.report import decisions as _decisions
from multistat.report import detectability as _detect
from multistat.report import sections as _sections
from multistat.report import tables as _tables
from multistat.report._checks import (  # noqa: F401
    DPI_RANGE,
    check_dpi,
    check_study_matches,
    check_systems_matches,
    check_values,
)
from multistat.report._inputs import SCHEMAS, read_table
from multistat.report._markup import CSS as _CSS
from multistat.report._markup import png_size as _png_size  # noqa: F401 - for tests
from multistat.report._parts import rank_order as _rank_order  # noqa: F401 - for tests
from multistat.report.clusters import check_ranking

__all__ = ["OPTIONS", "write_report"]

#: the display options of ``write_report(options=...)`` and their defaults
OPTIONS = {"test": None, "effect": "auto", "annotate": "auto", "histogram_pairs": "top2",
           "max_power_figures": 24}

#: keywords of write_report before 0.2 (one per input or option), kept one release
_DEPRECATED_INPUTS = {"analysis": "analysis", "power": "power", "systems": "systems",
                      "ranking": "ranking", "ranking_pairs": "ranking_pairs",
                      "pooled": "pooled", "preferences": "preferences",
                      "metaeval": "metaeval", "metaeval_matrix": "metaeval_matrix"}


def _read_frame(obj, name: str) -> pd.DataFrame | None:
    if name in SCHEMAS:  # columns, types, duplicates (report/_inputs.py)
        return read_table(obj, name)
    if obj is None or isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        if not path.exists():
            raise InputFileError(f"`{name}`: {path}: no such file")

        return read_parquet(path)
    raise ParameterTypeError(f"`{name}` must be a pandas DataFrame or a path to a Parquet "
                             f"file; got {type(obj).__name__}")


def _power_tables(power) -> list[tuple[str, pd.DataFrame]]:
    if power is None:
        return []
    if isinstance(power, (pd.DataFrame, str, Path)):
        items = [(Path(power).stem if isinstance(power, (str, Path)) else "power", power)]
    elif isinstance(power, Mapping):
        items = list(power.items())
    elif isinstance(power, (list, tuple)):
        items = [(Path(p).stem if isinstance(p, (str, Path)) else f"power {i + 1}", p)
                 for i, p in enumerate(power)]
    else:
        raise ParameterTypeError(f"`power` must be a DataFrame, a path, or a list/dict of "
                                 f"them; got {type(power).__name__}")
    out = []
    for k, v in items:
        if isinstance(v, (str, Path)) and Path(v).is_dir():
            files = sorted(Path(v).glob("*.parquet"))
            if not files:
                raise InputFileError(f"`power`: {v}: no .parquet tables in this folder")
            # one table per folder: the curves of several deltas are drawn together
            out.append((f"{Path(v).name}/ ({len(files)} tables)",
                        pd.concat([_read_frame(f, "power") for f in files],
                                  ignore_index=True)))
        else:
            out.append((str(k), _read_frame(v, "power")))
    return out


def _open_study(study):
    if study is None or not isinstance(study, (str, Path)):
        return study
    # heavy: xarray, lazily
    from multistat import cube

    return cube.open_study(study)


def _options(given) -> dict:
    """The display options with their defaults, unknown names refused."""
    given = dict(given or {})
    unknown = [k for k in given if k not in OPTIONS]
    if unknown:
        raise ParameterError(f"`options`: unknown option(s) {unknown}; options: "
                             f"{', '.join(OPTIONS)}")
    return {**OPTIONS, **given}


def _split_deprecated(deprecated: dict, sections, options) -> tuple[dict, dict]:
    """The keywords of write_report before 0.2 moved into ``sections`` and ``options``
    (with one DeprecationWarning naming them)."""
    sections = dict(sections or {})
    options = dict(options or {})
    if not deprecated:
        return sections, options
    unknown = [k for k in deprecated if k not in _DEPRECATED_INPUTS and k not in OPTIONS]
    if unknown:
        raise TypeError(f"write_report() got unexpected keyword argument(s) {unknown}")
    warnings.warn("write_report's keywords " + ", ".join(sorted(deprecated)) + " are "
                  "deprecated: give the inputs as sections={name: table} and the display "
                  "options as options={name: value}; the keywords go in 0.3",
                  DeprecationWarning, stacklevel=3)
    for k, v in deprecated.items():
        if k in OPTIONS:
            options[k] = v
        elif v is not None:
            sections[_DEPRECATED_INPUTS[k]] = v
    return sections, options


def _read_inputs(given: Mapping) -> dict:
    """The section inputs read: tables from DataFrames or Parquet paths, power tables as
    ``[(title, table)]``, objects as given; None values dropped."""
    _sections.check_inputs(given)
    out = {}
    for name, value in given.items():
        if value is None:
            continue
        kind = _sections.INPUTS[name].kind
        if kind == "table":
            out[name] = _read_frame(value, name)
        elif kind == "tables":
            out[name] = _power_tables(value)
        else:
            out[name] = value
    return out


def _ranking_pairs(ranking, given):
    """The ranking's pair decisions: ``given``, else the table the ranking file names in
    its metadata (``multistat rank --out`` stores them beside it), else None."""
    if given is not None or not isinstance(ranking, (str, Path)):
        return given
    # lazily: the ranking's pair file is named in its metadata
    from multistat.report._checks import stored_pairs

    return stored_pairs(ranking)


def read_inputs(sections: Mapping) -> dict:
    """The section inputs ``{name: table or path}`` read (:data:`~multistat.report.
    sections.INPUTS`; None values dropped), with the pair decisions a ranking file
    carries.

    Parameters
    ----------
    sections : mapping
        ``{name: DataFrame, Parquet path or object}``.

    Returns
    -------
    dict
        ``{name: DataFrame, [(title, table)] for power, or object}``.

    Examples
    --------
    >>> import pandas as pd
    >>> read_inputs({"analysis": pd.DataFrame({"dataset": ["d"]}), "systems": None})
    {'analysis':   dataset
    0       d}
    """
    inputs = _read_inputs(sections)
    if "ranking" in inputs:
        inputs["ranking_pairs"] = _read_frame(_ranking_pairs(
            sections.get("ranking"), inputs.get("ranking_pairs")), "ranking_pairs")
        if inputs["ranking_pairs"] is None:
            del inputs["ranking_pairs"]
    return inputs


def decide(res: pd.DataFrame, inputs: Mapping, opts: dict):
    """The tests shown and the decisions of every pair: ``(test, chosen, ranking,
    decisions, deciding_tests, settings)`` (:mod:`multistat.report.decisions`); with
    ``analysis`` and no ``test`` option, the test it recommends for most pairs
    (``opts["test"]`` is set to it).

    Parameters
    ----------
    res : pandas.DataFrame
        The checked compare table (:func:`multistat.report.tables.check_results`).
    inputs : mapping
        The read inputs (:func:`read_inputs`).
    opts : dict
        The display options (:data:`OPTIONS` filled).

    Returns
    -------
    tuple
    """
    analysis = inputs.get("analysis")
    test = opts["test"]
    if test is None and analysis is not None:
        test = opts["test"] = _tables.recommended_tests(res, analysis) or None
    chosen = _tables.primary_tests(res, test)
    if not chosen:
        raise ParameterError(f"`test` {test!r} was not run on any dataset × metric")
    board = check_ranking(inputs["ranking"]) if inputs.get("ranking") is not None else None
    dec, dec_tests, dec_settings = _decisions.decision_rows(
        res, board, chosen, inputs.get("ranking_pairs"))
    return test, chosen, board, dec, dec_tests, dec_settings


def options_of(options: Mapping | None) -> dict:
    """The display options with their defaults (:data:`OPTIONS`), unknown names
    refused.

    Parameters
    ----------
    options : mapping or None

    Returns
    -------
    dict

    Examples
    --------
    >>> options_of({"test": "t"})["effect"]
    'auto'
    """
    return _options(options)


def write_report(results, out_dir, *, sections: Mapping | None = None, study=None,
                 title: str = "multistat significance report", dpi: int = 110,
                 options: Mapping | None = None, **deprecated) -> Path:
    """Write the HTML report, its figures and its tables; return the HTML path.

    Parameters
    ----------
    results : pandas.DataFrame or path
        The compare table (:func:`multistat.compare`; DataFrame or Parquet path).
    out_dir : path
        Directory for ``report.html``, ``figures/`` and ``tables/`` (created).
    sections : mapping, optional
        The section inputs, ``{name: table}``: a DataFrame or a Parquet path for each
        name of :data:`multistat.report.sections.INPUTS` (``analysis``, ``systems``,
        ``ranking``, ``ranking_pairs``, ``preferences``, ``metaeval``,
        ``metaeval_matrix``, ``pooled``, ``pooled_studies``, ``detectability``,
        ``detectability_curves``, ``human_design``, ``human_agreement``,
        ``human_components``, ``human_power``, ``replicability``; ``power``: one or
        several tables or a folder; ``friedman`` and ``floor_notes``: objects). A section
        is drawn when the inputs it requires are given
        (:data:`multistat.report.sections.SECTIONS`). The tables come from the analysis
        stages; :func:`multistat.stages.report_inputs` runs those that are missing. A
        ranking given as a path brings its pair decisions along (``multistat rank``
        stores them beside it); they decide every pair in every section.
    study : xarray.DataTree or path, optional
        The study the results came from: its sizes in the summary, sacrebleu signatures
        and the histograms of A, B and A − B (drawn, not tested).
    title : str
        Report title.
    dpi : int
        Resolution of the PNG figures.
    options : mapping, optional
        Display options (:data:`OPTIONS`): ``test`` (the test the leaderboards,
        heatmaps and pairwise tables show; default: with ``analysis`` the test it
        recommends for most pairs, else the first test of the run), ``effect`` (effect
        size column: ``"auto"``, ``"cohens_d"``, ...), ``annotate`` (heatmap cells:
        ``"auto"``, ``"estimate"``, ``"score_difference"``, an effect column or None),
        ``histogram_pairs`` (``"top2"``, None or a list of ``(dataset, metric,
        system_a, system_b)``; needs ``study``), ``max_power_figures`` (24).
    **deprecated
        The keywords before 0.2 (``analysis=``, ``power=``, ``systems=``,
        ``ranking=``, ``ranking_pairs=``, ``pooled=``, ``preferences=``, ``metaeval=``,
        ``metaeval_matrix=``, ``test=``, ``effect=``, ``annotate=``,
        ``histogram_pairs=``, ``max_power_figures=``) still work in this release, with
        a DeprecationWarning; they go in 0.3.

    Returns
    -------
    pathlib.Path
        ``out_dir/report.html``.

    Notes
    -----
    Sized for shared tasks of 15–150 systems: heatmaps follow the ranking's order (else
    the leaderboard's); beyond about 30 systems the page shows a compact heatmap
    (:data:`~multistat.report.plots.PAGE_WIDTH` wide, one system in m labelled) linked to
    ``figures/heatmap-full_<dataset>__<metric>.png`` with every label and number; power
    panels are drawn for the first :data:`~multistat.report.plots.MAX_POWER_PANELS` (12)
    adjacent pairs in rank order, and every adjacent pair is listed in a table.

    Examples
    --------
    >>> import tempfile, warnings, multistat
    >>> from multistat.demo import demo_frame
    >>> from multistat.report import write_report
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     table = multistat.compare(multistat.from_frame(demo_frame()), tests="t")
    >>> path = write_report(table, tempfile.mkdtemp(), options={"histogram_pairs": None})
    >>> path.name
    'report.html'
    """
    sections, options = _split_deprecated(deprecated, sections, options)
    opts = _options(options)
    res = _read_frame(results, "results")
    raw = res
    check_values(res)  # p-values in [0, 1], reject from p_adjusted and alpha
    res = _tables.check_results(res)
    inputs = read_inputs(sections)
    analysis = inputs.get("analysis")
    if analysis is not None:
        missing = [c for c in ("dataset", "metric", "system_a", "system_b")
                   if c not in analysis]
        if missing:
            raise DataValidationError(f"`analysis` lacks column(s) {missing}; has "
                                      f"{list(analysis.columns)}")
    dpi = check_dpi(dpi)
    scores = inputs.get("systems")
    check_systems_matches(res, scores)
    study = _open_study(study)
    check_study_matches(res, study)
    hist = opts["histogram_pairs"]
    if study is None and hist not in (None, "top2"):
        raise ParameterError("`histogram_pairs` needs `study` (the scores of A and B)")
    if hist is not None and hist != "top2" and not isinstance(hist, (list, tuple)):
        raise ParameterError(f"`histogram_pairs` must be 'top2', None or a list of "
                             f"(dataset, metric, system_a, system_b); got {hist!r}")
    out = Path(out_dir)
    figdir, tabdir = _files.own_folder(out, "figures"), _files.own_folder(out, "tables")

    test, chosen, board, dec, dec_tests, dec_settings = decide(res, inputs, opts)
    dec_text, dec_notes = _decisions.decision_text(dec, dec_tests, dec_settings, board,
                                                   notes=inputs.get("floor_notes"))
    lb_all = _tables.leaderboard(dec, scores=scores, test=dec_tests)
    pw_all = _tables.pairwise_table(res, test=test, effect=opts["effect"])
    ck_all = _tables.checklist(res, effect=opts["effect"])
    det_all = inputs.get("detectability")
    if det_all is None:
        det_all = pd.DataFrame(columns=list(_detect.COLUMNS))
    small = _detect.smallest_detectable(det_all)
    curves = inputs.get("detectability_curves")
    if curves is None:
        curves = pd.DataFrame(columns=["dataset", "metric", "system_a", "system_b", "pair",
                                       "n", "delta", "power", "mde"])
    _files.write_csv(tabdir / "leaderboard.csv", lb_all)
    _files.write_csv(tabdir / "pairwise.csv", pw_all)
    _files.write_csv(tabdir / "checklist.csv", ck_all)
    _files.write_csv(tabdir / "detectability.csv", det_all)
    # the full compare table for R and spreadsheet users (every test, every column)
    _files.write_csv(tabdir / "results.csv", raw)
    _files.write_dvc_files(out, dec, lb_all, det_all, curves, dec_tests)

    page = _sections.Page(
        results=res, raw=raw, inputs=inputs, study=study, out=out, figdir=figdir,
        tabdir=tabdir, dpi=dpi, options=opts, chosen=chosen, decisions=dec,
        deciding_tests=dec_tests, settings=dec_settings, ranking=board,
        leaderboard=lb_all, pairwise=pw_all, checklist=ck_all, detectability=det_all,
        smallest=small, curves=curves, meta=_tables._meta(res))
    parts: list[_sections.Part] = []
    for section in _sections.SECTIONS:
        if any(inputs.get(name) is None for name in section.requires):
            continue
        parts += section.render(page)
    meta = page.meta
    html = _templates.render(
        "page.html.j2", title=title, css=Markup(_CSS),
        version=meta.get("multistat_version", meta.get("version", "")),
        n_families=len(chosen), parts=parts, decision=dec_text, notes=dec_notes)
    path = out / "report.html"
    _atomic.write_text(path, html)
    return path
