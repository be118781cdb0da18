"""Per-sample logs of language-model evaluation tools read into the long score frame.

Four formats (``format=``):

``"inspect"``
    inspect_ai logs, ``.eval`` archives or ``.json`` logs (:mod:`._llm_inspect`).
``"lm-eval"``
    lm-evaluation-harness ``--log_samples`` output, ``samples_<task>_<time>.jsonl``
    beside ``results_<time>.json`` (:mod:`._llm_lmeval`).
``"helm"``
    HELM run folders with ``run_spec.json`` and ``per_instance_stats.json``
    (:mod:`._llm_helm`).
``"eee"``
    Every Eval Ever instance-level JSON lines (:mod:`._llm_eee`).

Each reader turns one log file into a :class:`LogRows` (one row per score: dataset,
system, metric, instance, run, group, score, and where in the file it came from);
:func:`read_llm_logs` puts them through the same checks as every other score file
(:func:`multistat.io._model.validate`: duplicates, completeness, the missing policy, at
least two systems and two instances) and returns the same long frame as
:func:`multistat.io.read_scores`, which :func:`multistat.cube.from_frame` turns into a
study. Nothing here imports an evaluation framework: the formats are read with the
standard library (and ``zstandard`` for the members of ``.eval`` archives).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from multistat._validation import check_choice
from multistat.errors import DroppedDataWarning, InputFileError, ParameterError, ParameterTypeError
from multistat.io._layouts import Raw
from multistat.io._llm_common import EPOCHS, LLM_FORMATS, LogRows, LogSource, detect_llm, expand
from multistat.io._llm_eee import read_eee
from multistat.io._llm_helm import read_helm
from multistat.io._llm_inspect import read_inspect
from multistat.io._llm_lmeval import read_lmeval
from multistat.io._model import validate
from multistat.io._sources import _names

__all__ = ["LLM_FORMATS", "detect_llm", "is_llm", "read_llm", "read_llm_logs"]
_READERS = {"inspect": read_inspect, "lm-eval": read_lmeval, "helm": read_helm,
            "eee": read_eee}


# ----------------------------------------------------------------------------- public
def read_llm_logs(path, *, format=None, group_col=None, epochs="runs", missing="raise",
                  lower_is_better=(), metrics=None) -> pd.DataFrame:
    """Read per-sample logs of language-model evaluations into the long score frame.

    Models become systems, tasks (evaluations) datasets, scorers (metrics) metrics and
    sample ids instances, each named as the log names it (a ``/`` in a dataset name
    becomes ``_``). Repeated samples -- inspect's epochs, several lm-evaluation-harness
    runs of one model and task, HELM's train trials -- become runs (the study's
    ``run_score``, with ``score`` their mean) unless ``epochs="mean"``.

    Parameters
    ----------
    path : str or pathlib.Path, folder, glob pattern, or list of those
        Log files, or folders searched recursively for them.
    format : {"inspect", "lm-eval", "helm", "eee"} or None
        The tool that wrote the logs; detected from the file names and first bytes when
        None (:func:`detect_llm`).
    group_col : str, optional
        A sample metadata field naming each instance's group (the passage, image or
        document the question shares with others), for the cluster bootstrap and
        clustered tests: inspect's sample ``metadata``, a field of lm-evaluation-
        harness's ``doc``, Every Eval Ever's ``metadata``. HELM's per-instance stats
        carry no metadata. The frame gets a ``group`` column (the study a ``group``
        coordinate).
    epochs : {"runs", "mean"}
        ``"runs"``: each repeat is a run; ``"mean"``: the mean over a sample's repeats
        is its one score (no run axis).
    missing : {"raise", "drop", "keep"}
        A sample without a score (or with a null one) is a one-line error naming the file
        and the sample unless ``"keep"`` (the cell stays NaN) or ``"drop"`` (the
        instance is dropped for every system, listed in ``attrs["dropped"]``). Systems
        with different sample sets are an error unless ``"keep"`` (an incomplete design,
        compared on each pair's joint instances) or ``"drop"``.
    lower_is_better : str or sequence of str
        Metrics for which smaller is better, in addition to those the logs mark so
        (lm-evaluation-harness's ``higher_is_better``).
    metrics : sequence of str, optional
        Keep only these metrics (HELM logs many statistics per instance).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, system, metric, instance, score`` as from
        :func:`multistat.io.read_scores`, then ``run`` (with repeated samples and
        ``epochs="runs"``) and ``group`` (with ``group_col``); ``attrs`` as there, with
        ``attrs["source"]["format"]`` the tool and ``attrs["dropped"]`` every score the
        reader left out (non-numeric per-sample values of corpus-level metrics, HELM's
        perturbed instances).

    Raises
    ------
    InputFileError
        A log that is not of the format (not JSON, not a zip archive, a field missing or
        of the wrong type), a score that no convention turns into a number; the message
        names the file and the sample.
    DataValidationError
        A sample without a score (``missing="raise"``), systems with different samples,
        duplicated samples, fewer than 2 systems or instances.

    Examples
    --------
    Two mock models, 6 questions in 3 passages, 2 scorers, 2 epochs (the test data):

    >>> from pathlib import Path
    >>> import multistat
    >>> from multistat.io._llm import read_llm_logs
    >>> logs = Path(multistat.__file__).parents[1] / "tests" / "data" / "llm" / "inspect"
    >>> frame = read_llm_logs(logs / "eval", group_col="passage")
    >>> frame.attrs["source"]["format"], sorted(frame.system.unique())
    ('inspect', ['mockllm/alpha', 'mockllm/beta'])
    >>> frame.iloc[0].to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'dataset': 'arith_capitals', 'system': 'mockllm/alpha', 'metric': 'match',
     'instance': 'q1', 'score': 1.0, 'run': '1', 'group': 'p1'}
    """
    if format is not None:
        format = check_choice("format", format, LLM_FORMATS)
    epochs = check_choice("epochs", epochs, EPOCHS)
    missing = check_choice("missing", missing, ("raise", "drop", "keep"))
    if group_col is not None and (not isinstance(group_col, str) or not group_col):
        raise ParameterTypeError(f"`group_col` must be a metadata field name (str); got "
                                 f"{group_col!r}")
    if isinstance(lower_is_better, str):
        lower_is_better = (lower_is_better,)
    lower_is_better = tuple(lower_is_better or ())
    if not all(isinstance(m, str) for m in lower_is_better):
        raise ParameterTypeError(f"`lower_is_better` must be a metric name or a sequence of "
                                 f"names; got {lower_is_better!r}")
    if metrics is not None:
        if isinstance(metrics, str):
            metrics = (metrics,)
        metrics = tuple(metrics)
        if not metrics or not all(isinstance(m, str) for m in metrics):
            raise ParameterTypeError(f"`metrics` must be a non-empty sequence of metric "
                                     f"names; got {metrics!r}")
    files = expand(path)
    if format is None:
        format = detect_llm(files)
        if format is None:
            raise InputFileError(f"{_names(map(str, files), 3)}: not a log of inspect, "
                                 f"lm-eval, HELM or Every Eval Ever; pass format=")
    reader = _READERS[format]
    logs = reader(files, group_col=group_col, missing=missing)
    return assemble(logs, format=format, epochs=epochs, missing=missing,
                    lower_is_better=lower_is_better, metrics=metrics,
                    grouped=group_col is not None)


def assemble(logs: list[LogRows], *, format, epochs, missing, lower_is_better, metrics,
             grouped) -> pd.DataFrame:
    """The validated long frame of the rows of every log."""
    logs = [log for log in logs if log.score or log.notes]
    notes = [n for log in logs for n in log.notes]
    if metrics is not None:
        have = {m for log in logs for m in log.metric}
        unknown = [m for m in metrics if m not in have]
        if unknown:
            raise ParameterError(f"`metrics` names unknown metric(s) {_names(unknown)}; the "
                                 f"logs have {_names(sorted(have), 20)}")
        keep = set(metrics)
        logs = [_subset(log, [k for k, m in enumerate(log.metric) if m in keep])
                for log in logs]
    logs = [log for log in logs if log.score]
    if not logs:
        raise InputFileError("the logs hold no scores")
    repeated = _has_repeats(logs)
    if epochs == "mean" and repeated:
        logs = [log for log in _mean_over_runs(logs) if log.score]
        repeated = False
    raw = Raw()
    sources = []
    for k, log in enumerate(logs):
        sources.append(LogSource(log.path, [log.where(j) for j in range(len(log.score))]))
        ids = {role: _coded(getattr(log, role)) for role in ("dataset", "system", "metric",
                                                             "instance")}
        if repeated:
            ids["run"] = _coded([r if r is not None else "1" for r in log.run])
        if grouped:
            ids["group"] = _coded(log.group)
        raw.add(k, np.asarray(log.score, dtype=np.float64), np.arange(len(log.score)),
                **ids)
    lower = set(lower_is_better)
    for log in logs:
        lower.update(m for m, hib in log.higher_is_better.items() if hib is False)
    present = {m for log in logs for m in log.metric}
    unknown = [m for m in lower_is_better if m not in present]
    if unknown:
        raise ParameterError(f"`lower_is_better` names unknown metric(s) {_names(unknown)}; "
                             f"the metrics are {_names(sorted(present), 20)}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DroppedDataWarning)
        frame, meta, dropped = validate(raw.long(), sources, missing=missing,
                                        lower_is_better=tuple(m for m in lower
                                                              if m in present))
    if notes:
        more = f" and {len(notes) - 1} more" if len(notes) > 1 else ""
        warnings.warn(f"left out of the logs: {notes[0]}{more} (the list is in "
                      f"frame.attrs['dropped'])", DroppedDataWarning, stacklevel=3)
    for w in caught:  # validate's own warnings, re-issued from here
        warnings.warn(w.message, w.category, stacklevel=3)
    frame.attrs["metrics"] = meta
    frame.attrs["dropped"] = notes + dropped
    frame.attrs["missing"] = missing
    frame.attrs["source"] = {"paths": [str(s.path) for s in sources], "format": format,
                             "epochs": epochs}
    return frame


def _coded(values: list) -> tuple[np.ndarray, list[str]]:
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), sort=False)
    return codes.astype(np.int64), [str(u) for u in uniq]


def _subset(log: LogRows, keep: list[int]) -> LogRows:
    out = LogRows(log.path, higher_is_better=log.higher_is_better, notes=log.notes,
                  run_word=log.run_word)
    for k in keep:
        out.add(dataset=log.dataset[k], system=log.system[k], metric=log.metric[k],
                instance=log.instance[k], run=log.run[k], group=log.group[k],
                score=log.score[k], place=log.place[k])
    return out


def _has_repeats(logs: list[LogRows]) -> bool:
    """Whether some (dataset, system, metric, instance) has two runs."""
    runs: dict = {}
    for log in logs:
        for key in zip(log.dataset, log.system, log.metric, log.instance, log.run):
            runs.setdefault(key[:4], set()).add(key[4])
    return any(len(r) > 1 for r in runs.values())


def _mean_over_runs(logs: list[LogRows]) -> list[LogRows]:
    """One row per (dataset, system, metric, instance) over all logs: the mean of its
    runs' scores (NaN scores left out; NaN when every run's is), in the log and at the
    place of its first run."""
    first: dict = {}
    values: dict = {}
    for i, log in enumerate(logs):
        for k, key in enumerate(zip(log.dataset, log.system, log.metric, log.instance)):
            if key not in first:
                first[key] = (i, k)
                values[key] = []
            if not np.isnan(log.score[k]):
                values[key].append(log.score[k])
    out = [LogRows(log.path, higher_is_better=log.higher_is_better, notes=log.notes)
           for log in logs]
    for key, (i, k) in first.items():
        v = values[key]
        out[i].add(dataset=key[0], system=key[1], metric=key[2], instance=key[3], run=None,
                   group=logs[i].group[k], score=float(np.mean(v)) if v else np.nan,
                   place=logs[i].place[k])
    return out




#: options of :func:`multistat.io.read_scores` that describe tables, with their
#: defaults; a log has no columns to name, so any other value is refused
_TABLE_OPTIONS = {"system_col": None, "metric_col": None, "instance_col": None,
                  "score_col": None, "dataset_col": None, "metric": None, "dataset": None,
                  "sep": None, "systems": None, "run_col": None, "rater_col": None,
                  "rater_aggregate": None, "dataset_from_filename": False}
_LLM_OPTIONS = ("format", "group_col", "epochs", "missing", "lower_is_better", "metrics")


def is_llm(path, format) -> bool:
    """Whether ``path`` is read as language-model evaluation logs: ``format`` names a log
    format, or is None and :func:`detect_llm` recognises the files."""
    if format is not None:
        return format in LLM_FORMATS
    return detect_llm(path) is not None


def read_llm(path, **options) -> pd.DataFrame:
    """:func:`read_llm_logs` with the keywords of :func:`multistat.io.read_scores`:
    table options left at their defaults are ignored, any other value is an error."""
    llm = {k: options.pop(k) for k in _LLM_OPTIONS if k in options}
    fmt = llm.get("format")
    for key, value in options.items():
        if key not in _TABLE_OPTIONS:
            raise ParameterError(f"unknown option `{key}` for language-model evaluation "
                                 f"logs; they take {', '.join(_LLM_OPTIONS)}")
        if value is not None and value != _TABLE_OPTIONS[key] and value != ():
            what = f"format={fmt!r}" if fmt else "detected as evaluation logs"
            raise ParameterError(f"`{key}` does not apply to language-model evaluation logs "
                                 f"({what}): systems, datasets, metrics and instances come "
                                 f"from the logs")
    return read_llm_logs(path, **llm)
