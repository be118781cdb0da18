"""Loaders that turn raw system outputs into studies with corpus metrics.

* :func:`load_translations` — machine translation: hypotheses and references through
  **sacrebleu**'s own metric objects (tokenizers, n-gram statistics, TER alignment), so
  the corpus BLEU, chrF and TER of the study equal sacrebleu's ``corpus_score``;
* :func:`load_labels` — classification from per-instance gold and predicted labels
  (accuracy; per-class, micro and macro precision/recall/F1 from per-class counts);
* :func:`from_statistics` — any user metric given as per-instance statistics plus a
  registered function (:func:`multistat.corpus.register_corpus_metric`).

Each returns a study (:class:`xarray.DataTree`, one dataset) whose corpus metrics carry
per-instance sufficient statistics (``stats``) and the registry name of the function of
their sums (``corpus_fn``); ``score`` holds the metric of each instance's own statistics
(e.g. sentence BLEU without smoothing of the effective order) and is informative only:
resampling and the corpus score use the statistics.

The MT loader lives in :mod:`multistat._translations`, the helpers the three share in
:mod:`multistat._adapters_common`; this module is their public face.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from multistat._adapters_common import (
    _need_columns,
    _read_table,
    build,
    is_pathlike,
    no_duplicates,
    no_missing,
    parse_metric_list,
)
from multistat._translations import TRANSLATION_METRICS, load_translations
from multistat.corpus import corpus_metric_name, get_corpus_metric
from multistat.errors import DataValidationError, ParameterError

__all__ = [
    "LABEL_METRICS",
    "TRANSLATION_METRICS",
    "from_statistics",
    "load_labels",
    "load_translations",
]


# --------------------------------------------------------------------------- labels
LABEL_METRICS = ("accuracy", "micro_precision", "micro_recall", "micro_f1",
                 "macro_precision", "macro_recall", "macro_f1", "precision", "recall", "f1")


def _label_metric(spec: str, classes: list[str]):
    """``(label, registry family, options, class or None)`` for one requested metric."""
    base, _, cls = spec.partition("[")
    if cls:
        if not cls.endswith("]") or base not in ("precision", "recall", "f1"):
            raise ParameterError(f"metric {spec!r}: per-class metrics are written "
                                 f"precision[<class>], recall[<class>] or f1[<class>]")
        cls = cls[:-1]
        if cls not in classes:
            raise ParameterError(f"metric {spec!r}: class {cls!r} is not among the labels "
                                 f"{classes[:10]}")
        return [(spec, base, {}, cls)]
    if base in ("precision", "recall", "f1"):
        return [(f"{base}[{c}]", base, {}, c) for c in classes]
    if base.startswith("macro_"):
        return [(base, base, {"n_classes": len(classes)}, None)]
    return [(base, base, {}, None)]


def load_labels(path_or_frame, *, gold_col: str = "gold", pred_col: str = "prediction",
                system_col: str = "system", instance_col: str = "instance",
                metrics=("accuracy", "macro_f1"), dataset: str | None = None):
    """Study of classification outputs with accuracy, precision, recall and F1.

    Parameters
    ----------
    path_or_frame : path or DataFrame
        One row per (system, instance) with the gold and the predicted label (table file
        as in :func:`load_translations`). The gold label may be repeated on every row but
        must agree across systems.
    gold_col, pred_col, system_col, instance_col : str
        Column names.
    metrics : str or sequence of str, default ``("accuracy", "macro_f1")``
        ``accuracy``; ``micro_precision|recall|f1``; ``macro_precision|recall|f1``;
        ``precision``, ``recall``, ``f1`` (one metric per class, named ``f1[<class>]``)
        or ``f1[<class>]`` for one class.
    dataset : str, optional
        Dataset name; default the file stem, or ``"labels"``.

    Returns
    -------
    xarray.DataTree
        One dataset, ``kind="corpus"`` metrics with statistics
        ``[correct, 1]`` (accuracy), ``[tp, fp, fn]`` (per class and micro, pooled over
        classes) or ``[tp_1, fp_1, fn_1, ..., tp_K, fp_K, fn_K]`` (macro, classes sorted).
        Attribute ``classes`` lists the classes (JSON).

    Notes
    -----
    Labels are compared as strings. For class ``c``: ``tp = [pred = c][gold = c]``,
    ``fp = [pred = c][gold != c]``, ``fn = [pred != c][gold = c]``;
    ``P = tp/(tp+fp)``, ``R = tp/(tp+fn)``, ``F1 = 2tp/(2tp+fp+fn)``, 0 when a
    denominator is 0 (scikit-learn's ``zero_division=0``). Macro averages run over the
    classes present in the gold or predicted labels of the (re)sample, as scikit-learn's
    default ``labels`` do; micro averages pool the counts (for single-label data micro
    precision = recall = F1 = accuracy). Values are fractions in [0, 1].
    """
    frame = _read_table(path_or_frame, "path_or_frame")
    _need_columns(frame, [system_col, instance_col, gold_col, pred_col], "path_or_frame")
    if len(frame) == 0:
        raise DataValidationError("`path_or_frame` is empty: no labels given")
    no_missing(frame, (gold_col, pred_col), "path_or_frame", "label")
    df = pd.DataFrame({"system": frame[system_col].astype(str),
                       "instance": frame[instance_col].astype(str),
                       "gold": frame[gold_col].astype(str),
                       "pred": frame[pred_col].astype(str)})
    no_duplicates(df, "instance", "path_or_frame")
    gold_n = df.groupby("instance", sort=False)["gold"].nunique()
    if (gold_n > 1).any():
        bad = gold_n[gold_n > 1].index[:5].tolist()
        raise DataValidationError(f"gold labels disagree across systems for "
                                  f"{int((gold_n > 1).sum())} instance(s), e.g. {bad}")
    systems = pd.unique(df["system"]).tolist()
    instances = pd.unique(df["instance"]).tolist()
    wide = df.pivot(index="instance", columns="system", values="pred").reindex(
        index=instances, columns=systems)
    if wide.isna().any().any():
        counts = wide.isna().sum()
        s = counts[counts > 0].index[0]
        lacking = wide.index[wide[s].isna()][:5].tolist()
        raise DataValidationError(f"system {s!r} lacks predictions for {int(counts[s])} of "
                                  f"{len(instances)} instances (e.g. {lacking})")
    pred = wide.to_numpy().T.astype(str)                                 # (S, n)
    gold = df.drop_duplicates("instance").set_index("instance")["gold"].reindex(
        instances).to_numpy().astype(str)                                 # (n,)
    classes = sorted(set(gold) | set(np.unique(pred)))
    specs = parse_metric_list(metrics, list(LABEL_METRICS), "metrics")
    unknown = [m for m in specs if m.partition("[")[0] not in LABEL_METRICS]
    if unknown:
        raise ParameterError(f"unknown classification metric(s) {unknown}; choose from "
                             f"{', '.join(LABEL_METRICS)} (or f1[<class>] ...)")
    expanded = [e for m in specs for e in _label_metric(m, classes)]
    labels = [e[0] for e in expanded]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ParameterError(f"`metrics` yields {dup} more than once")
    # per-class indicator counts, (S, n, K)
    onehot_p = pred[..., None] == np.asarray(classes)
    onehot_g = (gold[:, None] == np.asarray(classes))[None]
    tp = (onehot_p & onehot_g).astype(float)
    fp = (onehot_p & ~onehot_g).astype(float)
    fn = (~onehot_p & onehot_g).astype(float)
    correct = (pred == gold[None]).astype(float)
    stats_list, fns = [], []
    for _label, family, opts, cls in expanded:
        if family == "accuracy":
            s = np.stack([correct, np.ones_like(correct)], axis=-1)
        elif family.startswith("micro_"):
            s = np.stack([tp.sum(-1), fp.sum(-1), fn.sum(-1)], axis=-1)
        elif family.startswith("macro_"):
            s = np.stack([tp, fp, fn], axis=-1).reshape(pred.shape + (3 * len(classes),))
        else:
            k = classes.index(cls)
            s = np.stack([tp[..., k], fp[..., k], fn[..., k]], axis=-1)
        stats_list.append(s)
        fns.append(get_corpus_metric(corpus_metric_name(family, **opts)))
    name = dataset or (Path(path_or_frame).name.split(".")[0] if is_pathlike(path_or_frame)
                       else "labels")
    return build(name, systems, labels, instances, stats_list, fns,
                  attrs={"classes": json.dumps(classes)})


# --------------------------------------------------------------------------- generic
def from_statistics(frame_or_array, fn_name, *, metric: str | None = None,
                    system_col: str = "system", instance_col: str = "instance",
                    stat_cols=None, systems=None, instances=None,
                    dataset: str | None = None):
    """Study of one corpus metric from per-instance statistics (the generic route).

    Parameters
    ----------
    frame_or_array : DataFrame, path or array
        A wide table with one row per (system, instance) and one column per statistic, or
        an array ``(system, instance, n_stats)``.
    fn_name : str or CorpusMetric
        Registered corpus metric (:func:`multistat.corpus.register_corpus_metric`) or a
        built-in family name such as ``"bleu"`` or ``"macro_f1(n_classes=4)"``.
    metric : str, optional
        Metric label in the study (default: ``fn_name``).
    system_col, instance_col : str
        Columns of the table.
    stat_cols : sequence of str, optional
        Statistic columns in the order ``fn`` expects; default the metric's
        ``stat_names`` if the table has them all, else every other column in order.
    systems, instances : sequences, optional
        Labels for an array (default ``"0", "1", ...``).
    dataset : str, optional
        Dataset name (default ``"statistics"``).

    Returns
    -------
    xarray.DataTree
        One dataset with one ``kind="corpus"`` metric.

    Examples
    --------
    >>> import numpy as np
    >>> from multistat.corpus import register_corpus_metric
    >>> _ = register_corpus_metric("hit_rate_demo", lambda s: s[..., 0] / s[..., 1], 2,
    ...                            overwrite=True)
    >>> st = from_statistics(np.array([[[1, 2], [1, 2]], [[2, 2], [0, 2]]]),
    ...                      "hit_rate_demo", systems=["a", "b"])
    >>> st["statistics"].to_dataset().corpus_fn.values.tolist()
    ['hit_rate_demo']
    """
    cm = get_corpus_metric(fn_name)
    label = str(metric) if metric is not None else cm.name
    name = dataset or "statistics"
    if isinstance(frame_or_array, (pd.DataFrame, str, Path)):
        frame = _read_table(frame_or_array, "frame_or_array")
        _need_columns(frame, [system_col, instance_col], "frame_or_array")
        if stat_cols is None:
            if all(s in frame.columns for s in cm.stat_names):
                stat_cols = list(cm.stat_names)
            else:
                stat_cols = [c for c in frame.columns if c not in (system_col, instance_col)]
        stat_cols = [stat_cols] if isinstance(stat_cols, str) else list(stat_cols)
        _need_columns(frame, stat_cols, "frame_or_array")
        if len(stat_cols) != cm.n_stats:
            raise DataValidationError(f"corpus metric {cm.name!r} needs {cm.n_stats} "
                                      f"statistic column(s); got {len(stat_cols)}: "
                                      f"{stat_cols} (pass stat_cols=...)")
        df = frame[[system_col, instance_col] + stat_cols].copy()
        df[system_col] = df[system_col].astype(str)
        df[instance_col] = df[instance_col].astype(str)
        try:
            values = df[stat_cols].to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            raise DataValidationError(f"statistic columns {stat_cols} must be numeric"
                                      ) from None
        if df.duplicated([system_col, instance_col]).any():
            raise DataValidationError("`frame_or_array`: duplicated (system, instance) rows")
        systems = pd.unique(df[system_col]).tolist()
        instances = pd.unique(df[instance_col]).tolist()
        idx = pd.MultiIndex.from_product([systems, instances])
        full = pd.DataFrame(values, index=pd.MultiIndex.from_frame(
            df[[system_col, instance_col]])).reindex(idx)
        if full.isna().any().any():
            missing = full.index[full.isna().any(axis=1)][0]
            raise DataValidationError(f"statistics missing or NaN for (system, instance) "
                                      f"{missing} ({int(full.isna().any(axis=1).sum())} "
                                      f"row(s)); every system needs every instance")
        stats = full.to_numpy().reshape(len(systems), len(instances), cm.n_stats)
    else:
        stats = np.asarray(frame_or_array, dtype=np.float64)
        if stats.ndim != 3 or stats.shape[-1] != cm.n_stats:
            raise DataValidationError(f"statistics array must have shape (system, instance, "
                                      f"{cm.n_stats}) for {cm.name!r}; got {stats.shape}")
        systems = [str(s) for s in (systems if systems is not None
                                    else range(stats.shape[0]))]
        instances = [str(i) for i in (instances if instances is not None
                                      else range(stats.shape[1]))]
        if len(systems) != stats.shape[0] or len(instances) != stats.shape[1]:
            raise DataValidationError(f"{len(systems)} system and {len(instances)} instance "
                                      f"labels for a statistics array of shape {stats.shape}")
    if not np.isfinite(stats).all():
        raise DataValidationError("statistics must be finite (no NaN or inf)")
    return build(name, systems, [label], instances, [stats], [cm])

