"""The public loader :func:`read_scores`: arguments, layout detection, assembly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from multistat._validation import check_choice
from multistat.errors import InputFileError, ParameterError, ParameterTypeError
from multistat.io._layouts import (
    Raw,
    comet_layout,
    long_layout,
    looks_like_comet,
    pairs_layout,
    wide_layout,
)
from multistat.io._model import validate
from multistat.io._parsing import _read_table, column_list
from multistat.io._sources import (
    expand_paths,
    FORMATS,
    _names,
    looks_like_pairs,
    normalise_sep,
    resolve_source,
    stem,
)


# ----------------------------------------------------------------------------- public
def read_scores(path, *, format=None, system_col=None, metric_col=None, instance_col=None,
                score_col=None, dataset_col=None, metric=None, dataset=None,
                lower_is_better=(), missing="raise", systems=None, sep=None,
                run_col=None, group_col=None, dataset_from_filename=False,
                rater_col=None, rater_aggregate=None) -> pd.DataFrame:
    """Read per-instance scores into one validated long frame.

    Parameters
    ----------
    path : str or pathlib.Path, a folder, a glob pattern, a list of those, or mapping
        The score file(s). ``.csv``, ``.tsv``, ``.txt`` (whitespace-separated), ``.jsonl``,
        ``.json``, ``.parquet``, each optionally compressed (``.gz``, ``.bz2``, ``.xz``);
        any other name is read as delimited text. A folder stands for its files (sorted,
        hidden ones skipped), a pattern such as ``"scores/*.txt"`` for the files it
        matches; the rows of all files are validated together. With ``format="wide"`` a
        mapping ``{metric: path}`` reads one wide file per metric.
    format : str or None
        ``"long"``, ``"wide"``, ``"pairs"``, ``"lines"`` or ``"comet"``: the layout of
        every file, detected per file when None (see Notes). ``"inspect"``,
        ``"lm-eval"``, ``"helm"``, ``"eee"``: per-sample logs of language-model
        evaluations, read by :func:`multistat.io._llm.read_llm_logs` (``group_col``
        names a sample metadata field there, ``missing`` and ``lower_is_better`` work as
        here, the column options do not apply; :func:`multistat.load` also passes its
        ``epochs`` and ``metrics``). ``"lines"``: one
        score per line, the file is one system named after the file (``sysA.txt`` ->
        ``sysA``), instances are line numbers from 0. ``"comet"``: the output of COMET's
        ``comet-score`` (per-segment lines ``FILE<tab>Segment i<tab>score: x``; one system
        per translation file, named after it; metric ``"comet"`` unless ``metric=``; the
        final system-score lines are checked against the segment means).
    dataset_from_filename : bool
        Name each file's dataset after the file (``newstest2019.tsv`` ->
        ``newstest2019``), e.g. for one file per test set.
    system_col, instance_col : str or list of str, optional
        Column(s) naming the system / the instance (long: defaults ``"system"``,
        ``"instance"``; wide: ``instance_col`` defaults to an ``"instance"`` column if
        present, else rows are numbered from 0). Several columns are joined with ``"/"``
        into one name (e.g. ``["summary_type", "system"]`` -> ``"abs/bart_out"``).
    score_col : str, optional
        Column of the scores (long; default ``"score"``).
    metric_col, dataset_col : str, optional
        Column naming the metric / the dataset (default ``"metric"`` / ``"dataset"`` when
        the file has such a column).
    metric, dataset : str, optional
        Fixed metric / dataset name for a file without such a column. Defaults: the
        metric is the score column's name (long) or ``"score"`` (wide, pairs, lines); the
        dataset is the file name without its suffixes (``scores.csv.gz`` -> ``scores``)
        for one file, and the name of the folder holding the (first) file for a folder,
        a pattern, a list of several files or a ``{metric: path}`` mapping.
    lower_is_better : str or sequence of str
        Metrics for which a smaller score is better (e.g. TER, error counts). MQM files
        that store negated penalties (scores <= 0, as WMT's) are higher-is-better.
    missing : {"raise", "drop", "keep"}
        What to do with a NaN score or a system that lacks an instance another system
        has: ``"raise"`` a :class:`~multistat.errors.DataValidationError` (default),
        ``"drop"`` that instance of that metric for *every* system, so pairs stay paired,
        or ``"keep"`` it: the cell stays NaN (incomplete designs, e.g. human judgments
        that only some systems have; :func:`multistat.meta_evaluate` leaves such cells
        out, :func:`multistat.compare` runs paired tests on each pair's joint instances
        and unpaired tests on each system's own scores, :func:`multistat.analyze`
        refuses them). ``frame.attrs["missing"]`` records
        the choice.
    systems : pair of str or list of str, optional
        ``pairs``: the names of the two columns' systems (default ``("A", "B")``).
        ``wide``: the columns to read as systems (default every column that is not the
        instance, metric or dataset column).
    sep : str, optional
        Field separator of a text file: one character, or ``r"\\s+"`` (any whitespace).
    run_col : str, optional
        Column naming the run (training seed, sampling run...) of each score (long and
        wide tables). Rows of one (system, instance) that differ in run are then data,
        not duplicates; the frame gets a ``run`` column and the study (``cube.from_frame``)
        a ``run_score(system, metric, instance, run)`` variable, NaN where a system lacks
        a run, while ``score`` holds the run-averaged score every test uses. Every
        instance of a system must have each of that system's runs (``missing="drop"``
        drops the instances that do not).
    group_col : str, optional
        Column naming the group (document, talk, dialogue) of each instance; the frame
        gets a ``group`` column and the study a ``group`` coordinate on ``instance``. An
        instance must be in the same group for every system, metric and run.
    rater_col : str, optional
        Column naming the rater (annotator, worker) of each score: human ratings (long
        and wide tables). The frame gets a ``rater`` column and the study a
        ``rating(system, metric, instance, rater)`` variable, NaN where a rater did not
        rate that cell, while ``score`` is the mean over the raters present, so every test
        works on the item means. Raters need not rate every cell. Two ratings by one
        rater of one (system, metric, instance) are an error unless ``rater_aggregate``
        is given.
    rater_aggregate : {"mean"} or None
        ``"mean"``: several ratings by one rater of one cell are averaged into that
        rater's rating (the count is in ``attrs["rater_aggregated"]``).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, system, metric, instance`` (str) and ``score`` (float64),
        sorted by dataset, metric, system, instance, each in the order of first
        appearance in the file (so instances keep file order); then ``run`` and
        ``group`` (str) when ``run_col``/``group_col`` are given, and ``rater`` with
        ``rater_col``. ``attrs["metrics"]`` is
        ``{metric: {"higher_is_better": bool, "kind": "mean" | "binary"}}`` (``binary``
        when every score of the metric is 0 or 1); ``attrs["dropped"]`` lists every
        dropped instance; ``attrs["source"]`` records the paths and the format.

    Raises
    ------
    InputFileError
        File missing, empty, not decodable; malformed line (line number and content);
        non-numeric score (line/row, column, value); unknown column (the columns the
        file has are listed).
    DataValidationError
        Infinite or (with ``missing="raise"``) NaN score; duplicated (dataset, system,
        metric, instance); a system lacking instances of a metric; fewer than 2 systems
        in a dataset or 2 instances of a metric.
    ParameterError, ParameterTypeError
        Unknown format, unknown ``missing`` policy, unknown metric in
        ``lower_is_better``, an option that does not apply to the format.

    Notes
    -----
    Format detection (``format=None``):

    0. files that :func:`multistat.io._llm.detect_llm` recognises as language-model
       evaluation logs (``*.eval``, inspect ``.json`` logs, lm-eval's
       ``samples_<task>_<time>.jsonl``, HELM's ``per_instance_stats.json``, Every Eval
       Ever JSON lines) are read as those;
    1. a mapping ``{metric: path}`` is ``"wide"``;
    2. a text file whose first non-blank line is a ``comet-score`` segment (or system
       score) line is ``"comet"``;
    3. a delimited text file (any name but ``.json``, ``.jsonl``, ``.parquet``) whose
       first non-blank line holds one number is ``"lines"``, two or more numbers
       ``"pairs"`` (a header line is never all numbers);
    4. otherwise the table is ``"long"`` if it has the system and score columns
       (``system_col``/``score_col`` or ``"system"``/``"score"``), or if either option
       was given, and ``"wide"`` if not.

    Separator of a text file: ``sep`` if given; else ``","`` for ``.csv``, a tab for
    ``.tsv``, whitespace for anything else; if the first line does not contain the
    extension's delimiter, a tab, a comma or whitespace is used, whichever the first
    line holds first in that order (so a space-separated ``.tsv`` reads as intended).
    Cells ``""``, ``NA``, ``NaN``, ``null``, ``None``, ``N/A`` (any case) in a score
    column are missing values; identifiers are read as text verbatim (``"007"`` stays
    ``"007"``). Blank lines are skipped in tables; in ``pairs`` files they are allowed
    only at the end (NLPStatTest rejects them anywhere). Line numbers in messages count
    physical lines from 1, header included.

    ``missing="drop"`` works per (dataset, metric): an instance is dropped when any
    system has a NaN score or no row for it; each dropped instance is listed in
    ``attrs["dropped"]`` and one :class:`~multistat.errors.DroppedDataWarning` per
    (dataset, metric) gives the count. Columns a layout does not use are ignored.

    Examples
    --------
    >>> from multistat.io import read_scores  # doctest: +SKIP
    >>> read_scores("zhen.avg_seg_scores.tsv", score_col="mqm_avg_score",
    ...             instance_col="seg_id", metric="mqm")  # doctest: +SKIP
    """
    fmt = None if format is None else check_choice("format", format, FORMATS)
    # language-model evaluation logs (inspect, lm-eval, HELM, Every Eval Ever)
    from multistat.io._llm import is_llm, read_llm

    if is_llm(path, fmt):
        return read_llm(path, format=fmt, missing=missing, lower_is_better=lower_is_better,
                        group_col=group_col, system_col=system_col, metric_col=metric_col,
                        instance_col=instance_col, score_col=score_col,
                        dataset_col=dataset_col, metric=metric, dataset=dataset,
                        systems=systems, sep=sep, run_col=run_col,
                        dataset_from_filename=dataset_from_filename, rater_col=rater_col,
                        rater_aggregate=rater_aggregate)
    missing = check_choice("missing", missing, ("raise", "drop", "keep"))
    sep = normalise_sep(sep)
    if isinstance(lower_is_better, str):
        lower_is_better = (lower_is_better,)
    if lower_is_better is None:
        lower_is_better = ()
    if isinstance(lower_is_better, Iterable):
        lower_is_better = tuple(lower_is_better)
    if not isinstance(lower_is_better, tuple) or not all(
            isinstance(m, str) for m in lower_is_better):
        raise ParameterTypeError(
            f"`lower_is_better` must be a metric name or a sequence of names; got "
            f"{lower_is_better!r}")
    for name, value in (("metric", metric), ("dataset", dataset)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ParameterTypeError(f"`{name}` must be a non-empty string; got {value!r}")
    cols = {}
    explicit = {}
    for name, value, default, role in (
            ("system_col", system_col, "system", "system"),
            ("instance_col", instance_col, "instance", "instance"),
            ("score_col", score_col, "score", "score"),
            ("metric_col", metric_col, None, "metric"),
            ("dataset_col", dataset_col, None, "dataset")):
        cols[role], explicit[role] = column_list(name, value, default)
    # system, instance and score have a default column: never None
    first_system, first_score = (cols["system"] or [""])[0], (cols["score"] or [""])[0]
    extra = {}
    for role, value in (("run", run_col), ("group", group_col), ("rater", rater_col)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ParameterTypeError(f"`{role}_col` must be a column name (str); got "
                                     f"{value!r}")
        extra[role] = value
    if rater_aggregate is not None:
        rater_aggregate = check_choice("rater_aggregate", rater_aggregate, ("mean",))
        if rater_col is None:
            raise ParameterError("`rater_aggregate` needs `rater_col` (the column naming "
                                 "the rater)")
    if rater_col is not None and run_col is not None:
        raise ParameterError("`rater_col` and `run_col` cannot be combined: ratings by "
                             "rater of several runs are not supported")
    given = [c for c in (run_col, group_col, rater_col) if c is not None]
    taken = {*(cols["system"] or ()), *(cols["instance"] or ()), *(cols["score"] or ()),
             *(cols["metric"] or ()), *(cols["dataset"] or ())}
    for role, value in extra.items():
        if value is not None and (value in taken or given.count(value) > 1):
            raise ParameterError(f"`{role}_col={value!r}` names a column already used for "
                                 f"another role")
    for role in ("metric", "dataset"):
        fixed = metric if role == "metric" else dataset
        if explicit[role] and fixed is not None:
            raise ParameterError(
                f"pass either `{role}_col` (a column) or `{role}=` (one fixed name), not both")

    # ---- which files, which layout
    if not isinstance(dataset_from_filename, bool):
        raise ParameterTypeError(f"`dataset_from_filename` must be True or False; got "
                                 f"{dataset_from_filename!r}")
    if dataset_from_filename and (dataset is not None or explicit["dataset"]):
        raise ParameterError("`dataset_from_filename=True` names each file's dataset; drop "
                             "`dataset`/`dataset_col`")
    if isinstance(path, Mapping):
        if fmt not in (None, "wide"):
            raise ParameterError(
                f"a mapping {{metric: path}} is read as format='wide'; got format={fmt!r}")
        fmt = "wide"
        if metric is not None or explicit["metric"]:
            raise ParameterError(
                "with a mapping {metric: path} the metric names come from the mapping keys; "
                "drop `metric`/`metric_col`")
        if not path:
            raise ParameterError("the mapping {metric: path} is empty")
        items = []
        for key, value in path.items():
            if not isinstance(key, str) or not key:
                raise ParameterTypeError(
                    f"metric names (mapping keys) must be non-empty strings; got {key!r}")
            items.append((key, resolve_source(value, sep=sep)))
        default_dataset = items[0][1].path.resolve().parent.name or "dataset"
    else:
        files, default_dataset = expand_paths(path)
        items = [(metric, resolve_source(f, sep=sep)) for f in files]
    dataset_fixed = dataset if dataset is not None else default_dataset

    formats = []
    for _, src in items:
        f = fmt
        if f is None and (explicit["system"] or explicit["score"]):
            f = "long"
        if f is None:
            f = detect_format(src)
        formats.append(f)
    if "pairs" in formats or "lines" in formats or "comet" in formats:
        bad = [n for n in ("system_col", "instance_col", "score_col", "metric_col",
                           "dataset_col") if explicit[n.removesuffix("_col")]]
        bad += [f"{r}_col" for r, v in extra.items() if v is not None]
        if bad:
            names = ", ".join(f"`{b}`" for b in bad)
            which = next(f for f in formats if f in ("pairs", "lines", "comet"))
            raise ParameterError(f"format={which!r} has no named columns; drop {names}")
    if "lines" in formats and dataset_from_filename:
        raise ParameterError("`dataset_from_filename=True` names a dataset per file, but a "
                             "file of one score per line is one system (named after the "
                             "file); use `dataset=` to name their dataset")
    if "comet" in formats and systems is not None:
        raise ParameterError("`systems` does not apply to comet-score output (the systems "
                             "are its translation files)")
    if "lines" in formats:
        if systems is not None:
            raise ParameterError("`systems` does not apply to files of one score per line "
                                 "(each file is one system, named after the file)")
        stems = [stem(src.path) for (_, src), f in zip(items, formats) if f == "lines"]
        twice = sorted({x for x in stems if stems.count(x) > 1})
        if twice:
            paths = [str(src.path) for (_, src), f in zip(items, formats)
                     if f == "lines" and stem(src.path) == twice[0]]
            raise InputFileError(f"files {_names(paths, 3)} would all be system "
                                 f"{twice[0]!r} (one score per line, system named after the "
                                 f"file); rename one")
    pair_names = None
    if "pairs" in formats:
        pair_names = ("A", "B") if systems is None else systems
        if (isinstance(pair_names, str) or not isinstance(pair_names, Sequence)
                or len(pair_names) != 2 or not all(isinstance(s, str) and s for s in pair_names)):
            raise ParameterError(
                f"`systems` for format='pairs' must be two names, e.g. ('A', 'B'); got "
                f"{systems!r}")
        if pair_names[0] == pair_names[1]:
            raise ParameterError(f"`systems` must be two different names; got {systems!r}")
    elif systems is not None:
        if "long" in formats:
            raise ParameterError(
                "`systems` applies to format='pairs' (names) and 'wide' (columns); for "
                "long tables use system_col")
        if isinstance(systems, str) or not isinstance(systems, Sequence) or not all(
                isinstance(s, str) for s in systems):
            raise ParameterTypeError(f"`systems` must be a list of column names; got {systems!r}")

    raw = Raw()
    sources = []
    layouts = set()
    for k, ((item_metric, src), layout) in enumerate(zip(items, formats)):
        sources.append(src)
        ds_k = stem(src.path) if dataset_from_filename else dataset_fixed
        if layout in ("pairs", "lines"):
            named = tuple(pair_names or ()) if layout == "pairs" else (stem(src.path),)
            pairs_layout(src, k, raw, systems=named, metric=item_metric or "score",
                          dataset=ds_k)
            layouts.add(layout)
            continue
        if layout == "comet":
            comet_layout(src, k, raw, metric=item_metric or "comet", dataset=ds_k)
            layouts.add(layout)
            continue
        table = _read_table(src)
        table.columns = [str(c) for c in table.columns]
        if layout is None:
            has_long = (first_system in table.columns and first_score in table.columns)
            layout = "long" if has_long else "wide"
        layouts.add(layout)
        if dataset_from_filename and "dataset" in table.columns:
            raise ParameterError(
                f"`dataset_from_filename=True` names the dataset {ds_k!r}, but {src.path} "
                f"has a 'dataset' column; drop one of them")
        fixed_ds = ds_k if dataset_from_filename else dataset
        if layout == "long":
            long_layout(src, table, k, raw, system_col=cols["system"],
                         metric_col=cols["metric"], instance_col=cols["instance"],
                         score_col=first_score, dataset_col=cols["dataset"],
                         metric=item_metric, dataset=fixed_ds,
                         default_dataset=default_dataset, explicit=explicit, extra=extra)
        else:
            if explicit["system"] or explicit["score"]:
                raise ParameterError(
                    "format='wide' takes the systems from the column names; drop "
                    "`system_col`/`score_col` (or use format='long')")
            wide_layout(src, table, k, raw, metric_col=cols["metric"],
                         instance_col=cols["instance"], dataset_col=cols["dataset"],
                         metric=item_metric, dataset=fixed_ds,
                         default_dataset=default_dataset, systems=systems,
                         explicit=explicit, extra=extra)
    frame, metrics, dropped = validate(raw.long(), sources, missing=missing,
                                        lower_is_better=lower_is_better,
                                        rater_aggregate=rater_aggregate)
    frame.attrs["metrics"] = metrics
    frame.attrs["dropped"] = dropped
    frame.attrs["missing"] = missing
    frame.attrs["source"] = {"paths": [str(s.path) for s in sources],
                             "format": "/".join(sorted(layouts))}
    return frame




def detect_format(src) -> str | None:
    """comet-score output, one score per line, NLPStatTest pairs, or a table (None)."""
    if looks_like_comet(src):
        return "comet"
    if looks_like_pairs(src):
        tokens = src.first_line.split()
        return "lines" if len(tokens) == 1 else "pairs"
    return None
