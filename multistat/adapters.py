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

Why one module of ~670 lines (over the ~600-line guide): the three loaders share every
helper (table reading through :mod:`multistat.io`, column, missing-value and duplicate
checks, ``_build``) and differ only in how they turn inputs into statistics; the
translation part is more than half of it and is mostly sacrebleu's option mapping and the
forked statistics extraction, which belong next to ``load_translations``.
"""

from __future__ import annotations

import json
import lzma
import multiprocessing as mp
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from multistat import cube
from multistat._validation import check_int
from multistat.corpus import CorpusMetric, corpus_metric_name, get_corpus_metric
from multistat.errors import DataValidationError, InputFileError, ParameterError, ParameterTypeError
from multistat.io._parsing import read_table
from multistat.io._sources import _COMPRESSIONS, _split_suffix

__all__ = [
    "LABEL_METRICS",
    "TRANSLATION_METRICS",
    "from_statistics",
    "load_labels",
    "load_translations",
]

# --------------------------------------------------------------------------- translation
# metric label -> (sacrebleu class name, corpus-metric family, fixed options)
TRANSLATION_METRICS: dict[str, tuple[str, str, dict]] = {
    "bleu": ("BLEU", "bleu", {}),
    "chrf": ("CHRF", "chrf", {}),
    "chrf++": ("CHRF", "chrf", {"word_order": 2}),
    "ter": ("TER", "ter", {}),
}

# options each sacrebleu metric accepts (constructor keywords) and which of them change
# the function of the summed statistics (the rest change only the statistics)
_SACREBLEU_OPTIONS = {
    "BLEU": ("lowercase", "force", "tokenize", "smooth_method", "smooth_value",
             "max_ngram_order", "effective_order", "trg_lang"),
    "CHRF": ("char_order", "word_order", "beta", "lowercase", "whitespace", "eps_smoothing"),
    "TER": ("normalized", "no_punct", "asian_support", "case_sensitive"),
}
_FN_OPTIONS = {
    "BLEU": ("smooth_method", "smooth_value", "max_ngram_order", "effective_order"),
    "CHRF": ("char_order", "word_order", "beta", "eps_smoothing"),
    "TER": (),
}
_PREFIX = {"bleu": "BLEU", "chrf": "CHRF", "ter": "TER"}


def _parse_metric_list(metrics, allowed, what: str) -> list[str]:
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    elif not isinstance(metrics, Sequence):
        raise ParameterTypeError(f"`metrics` must be a string or a sequence of metric "
                                 f"names; got {type(metrics).__name__}")
    metrics = [str(m).strip().lower() if str(m).strip().lower() in allowed else str(m).strip()
               for m in metrics]
    if not metrics:
        raise ParameterError(f"`metrics` is empty; choose from {', '.join(allowed)}")
    dup = sorted({m for m in metrics if metrics.count(m) > 1})
    if dup:
        raise ParameterError(f"`metrics` lists {dup} more than once")
    return metrics


def _split_sacrebleu_options(metrics: list[str], options: dict) -> dict[str, dict]:
    """Options per metric label: prefixed keys (``bleu_tokenize``) win over plain ones."""
    known_plain = {k for opts in _SACREBLEU_OPTIONS.values() for k in opts}
    per_class: dict[str, dict] = {c: {} for c in _SACREBLEU_OPTIONS}
    prefixed: dict[str, dict] = {c: {} for c in _SACREBLEU_OPTIONS}
    for key, value in options.items():
        head, _, rest = key.partition("_")
        cls = _PREFIX.get(head)
        if cls is not None and rest in _SACREBLEU_OPTIONS[cls]:
            prefixed[cls][rest] = value
        elif key in known_plain:
            for c, opts in _SACREBLEU_OPTIONS.items():
                if key in opts:
                    per_class[c][key] = value
        else:
            allowed = sorted(known_plain) + [f"{p}_<option>" for p in _PREFIX]
            raise ParameterError(f"unknown sacrebleu option {key!r}; allowed: "
                                 f"{', '.join(allowed)}")
    out = {}
    for m in metrics:
        cls, _, fixed = TRANSLATION_METRICS[m]
        out[m] = {**per_class[cls], **fixed, **prefixed[cls]}
    if "tokenize" in out.get("bleu", {}):
        from sacrebleu.metrics.bleu import BLEU
        tok = out["bleu"]["tokenize"]
        if tok not in BLEU.TOKENIZERS:
            raise ParameterError(f"`tokenize` must be one of "
                                 f"{', '.join(map(repr, BLEU.TOKENIZERS))}; got {tok!r}")
    return out


def _is_pathlike(obj) -> bool:
    return isinstance(obj, (str, Path))


def _read_table(obj, what: str) -> pd.DataFrame:
    """A DataFrame as is, or a table file read by multistat's one table reader
    (:func:`multistat.io._parsing.read_table`: same suffixes, separator sniffing,
    compression and line-numbered errors as :func:`multistat.read_scores`). Empty text
    cells stay ``""`` (an empty hypothesis is a translation)."""
    if isinstance(obj, pd.DataFrame):
        return obj
    if not _is_pathlike(obj):
        raise ParameterTypeError(f"`{what}` must be a path or a pandas DataFrame; got "
                                 f"{type(obj).__name__}")
    return read_table(obj, keep_empty=True)


def _need_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        src = frame.attrs.get("source")
        where = f" ({src})" if src else ""
        raise DataValidationError(f"`{what}`{where} lacks column(s) {missing}; it has "
                                  f"{list(map(str, frame.columns))} (set the *_col "
                                  f"arguments to map your column names)")


def _read_lines(path, what: str) -> list[str]:
    """Lines of a plain-text file (``\\n``-separated, trailing whitespace stripped as the
    sacrebleu command line does; ``.gz``, ``.bz2``, ``.xz`` read transparently)."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"`{what}`: {path}: no such file")
    opener = _COMPRESSIONS.get(_split_suffix(path)[1], open)
    try:
        with opener(path, "rt", encoding="utf-8", newline="\n") as fh:
            return [line.rstrip() for line in fh]
    except (OSError, EOFError, UnicodeDecodeError, zlib.error, lzma.LZMAError) as exc:
        raise InputFileError(f"`{what}`: {path}: cannot read text: {exc}") from None


def _text_inputs(hypotheses: Mapping, references):
    """Plain-text route: {system: file or lines} and one or more reference files."""
    if _is_pathlike(references):
        ref_paths = [references]
    elif isinstance(references, Sequence) and references and all(
            _is_pathlike(r) for r in references):
        ref_paths = list(references)
    else:
        raise ParameterTypeError("with a mapping of system files, `references` must be the "
                                 "path of a plain-text reference file (one segment per line) "
                                 f"or a list of such paths; got {type(references).__name__}")
    refs = [_read_lines(p, "references") for p in ref_paths]
    n = len(refs[0])
    for p, r in zip(ref_paths[1:], refs[1:]):
        if len(r) != n:
            raise InputFileError(f"reference file {p} has {len(r)} lines but reference file "
                                 f"{ref_paths[0]} has {n}")
    if n == 0:
        raise DataValidationError(f"reference file {ref_paths[0]} is empty")
    if not hypotheses:
        raise DataValidationError("`hypotheses` is empty: no system outputs given")
    hyps = {}
    for system, src in hypotheses.items():
        if _is_pathlike(src):
            lines = _read_lines(src, f"hypotheses[{system!r}]")
            where = f"system file {src}"
        elif isinstance(src, Sequence) and all(isinstance(x, str) for x in src):
            lines = [str(x) for x in src]
            where = f"system {system!r}"
        else:
            raise ParameterTypeError(f"`hypotheses[{system!r}]` must be a file path or a list "
                                     f"of strings; got {type(src).__name__}")
        if len(lines) != n:
            raise InputFileError(f"{where} ({system!r}) has {len(lines)} lines but the "
                                 f"reference file {ref_paths[0]} has {n}")
        hyps[str(system)] = lines
    segments = [str(i) for i in range(n)]
    return hyps, segments, refs


def _table_inputs(hypotheses, references, system_col, segment_col, text_col, reference_col):
    hyp = _read_table(hypotheses, "hypotheses")
    ref = _read_table(references, "references")
    ref_cols = [reference_col] if isinstance(reference_col, str) else list(reference_col)
    _need_columns(hyp, [system_col, segment_col, text_col], "hypotheses")
    _need_columns(ref, [segment_col] + ref_cols, "references")
    if len(hyp) == 0:
        raise DataValidationError("`hypotheses` is empty: no system outputs given")
    if len(ref) == 0:
        raise DataValidationError("`references` is empty: no reference segments given")
    seg = ref[segment_col].astype(str)
    if seg.duplicated().any():
        raise DataValidationError(f"`references`: duplicated segment(s) "
                                  f"{seg[seg.duplicated()].unique()[:5].tolist()}")
    for c in [text_col]:
        if hyp[c].isna().any():
            raise DataValidationError(f"`hypotheses`: column {c!r} has "
                                      f"{int(hyp[c].isna().sum())} missing value(s)")
    _no_missing(ref, ref_cols, "references", "value")
    segments = seg.tolist()
    refs = [ref[c].astype(str).tolist() for c in ref_cols]
    h = pd.DataFrame({"system": hyp[system_col].astype(str),
                      "segment": hyp[segment_col].astype(str),
                      "text": hyp[text_col].astype(str)})
    _no_duplicates(h, "segment", "hypotheses")
    seg_set = set(segments)
    extra = sorted(set(h["segment"]) - seg_set)
    if extra:
        raise DataValidationError(
            f"segment sets do not match: {len(extra)} segment(s) of `hypotheses` are not in "
            f"`references` (e.g. {extra[:5]}); references have {len(segments)} segments")
    untranslated = sorted(seg_set - set(h["segment"]))
    if untranslated:
        raise DataValidationError(
            f"segment sets do not match: {len(untranslated)} segment(s) of `references` "
            f"have no hypothesis from any system (e.g. {untranslated[:5]})")
    pos = pd.Series(np.arange(len(segments)), index=segments)
    hyps = {}
    for system, part in h.groupby("system", sort=False):
        if len(part) != len(segments):
            lacking = sorted(seg_set - set(part["segment"]))
            raise DataValidationError(
                f"system {system!r} lacks {len(lacking)} of {len(segments)} segments "
                f"(e.g. {lacking[:5]}); every system must translate every segment")
        text = np.empty(len(segments), dtype=object)
        text[pos[part["segment"]].to_numpy()] = part["text"].to_numpy()
        hyps[str(system)] = list(text)
    return hyps, segments, refs


def _sacrebleu_metric(cls_name: str, options: dict, refs: list[list[str]]):
    import sacrebleu.metrics as sm
    cls = getattr(sm, cls_name)
    try:
        return cls(references=refs, **options)
    except (TypeError, AssertionError, ValueError, KeyError) as exc:
        raise ParameterError(f"sacrebleu {cls_name} rejected options {options}: {exc}"
                             ) from None


_JOB: dict = {}   # (metric, segment indices, hypotheses) inherited by forked workers


def _extract_chunk(bounds):
    metric, segs, texts = _JOB["job"]
    lo, hi = bounds
    cache = metric._ref_cache
    try:
        metric._ref_cache = [cache[i] for i in segs[lo:hi]]
        return metric._extract_corpus_statistics(texts[lo:hi], None)
    finally:
        metric._ref_cache = cache


def _extract(metric, hyps: dict[str, list[str]], n: int, n_jobs: int = 1) -> np.ndarray:
    """Statistics ``(system, segment, stat)``; each distinct (segment, hypothesis) once."""
    if not hasattr(metric, "_ref_cache") or not hasattr(metric, "_extract_corpus_statistics"):
        raise ParameterError("this sacrebleu version lacks the reference cache API "
                             "(_ref_cache/_extract_corpus_statistics); sacrebleu>=2.0 needed")
    systems = list(hyps)
    index: dict[tuple[int, str], int] = {}
    where = np.empty((len(systems), n), dtype=np.int64)
    uniq_seg, uniq_hyp = [], []
    for s, system in enumerate(systems):
        for i, text in enumerate(hyps[system]):
            key = (i, text)
            j = index.get(key)
            if j is None:
                j = index[key] = len(uniq_hyp)
                uniq_seg.append(i)
                uniq_hyp.append(text)
            where[s, i] = j
    m = len(uniq_hyp)
    _JOB["job"] = (metric, uniq_seg, uniq_hyp)
    try:
        if n_jobs > 1 and m >= 200 and "fork" in mp.get_all_start_methods():
            step = -(-m // (4 * n_jobs))
            chunks = [(lo, min(lo + step, m)) for lo in range(0, m, step)]
            with ProcessPoolExecutor(n_jobs, mp_context=mp.get_context("fork")) as pool:
                rows = [r for part in pool.map(_extract_chunk, chunks) for r in part]
        else:
            rows = _extract_chunk((0, m))
    finally:
        _JOB.clear()
    return np.asarray(rows, dtype=np.float64)[where]



def _no_missing(frame: pd.DataFrame, cols, what: str, noun: str) -> None:
    """Refuse missing values in ``cols`` of the input named ``what``."""
    for col in cols:
        if frame[col].isna().any():
            raise DataValidationError(f"`{what}`: column {col!r} has "
                                      f"{int(frame[col].isna().sum())} missing {noun}(s)")


def _no_duplicates(frame: pd.DataFrame, key: str, what: str) -> None:
    """Refuse duplicated ``(system, key)`` rows of the input named ``what``."""
    dup = frame.duplicated(["system", key])
    if dup.any():
        first = frame[dup].iloc[0]
        raise DataValidationError(f"`{what}`: {int(dup.sum())} duplicated (system, {key}) "
                                  f"row(s), e.g. ({first.system!r}, {first[key]!r})")


def load_translations(hypotheses, references, *, metrics=("bleu", "chrf"),
                      system_col: str = "system", segment_col: str = "segment",
                      text_col: str = "hypothesis", reference_col="reference",
                      dataset: str | None = None, n_jobs: int = 1, **sacrebleu_options):
    """Study of MT system outputs with corpus BLEU / chrF / TER via sacrebleu.

    Parameters
    ----------
    hypotheses : path, DataFrame or mapping
        A table with columns ``system_col, segment_col, text_col`` (``.tsv``/``.csv``/
        ``.jsonl``/``.parquet``, ``.gz`` allowed; TSV/CSV read with pandas' default
        quoting and ``keep_default_na=False``), or a mapping ``{system: path}`` of
        plain-text files with one segment per line (values may also be lists of strings).
    references : path, DataFrame, or path(s) of plain-text files
        A table with ``segment_col`` and ``reference_col`` (a list of columns for several
        references), or — with a mapping of system files — one reference file (or a list
        of files for several references) with as many lines as each system file.
    metrics : str or sequence of str, default ``("bleu", "chrf")``
        Any of ``"bleu"``, ``"chrf"``, ``"chrf++"``, ``"ter"`` (comma-separated string ok).
    system_col, segment_col, text_col, reference_col : str
        Column names of the tables.
    dataset : str, optional
        Dataset (node) name; default: the folder of the hypotheses file, or
        ``"translations"``.
    n_jobs : int, default 1
        Worker processes for the statistics extraction (forked; sacrebleu is pure Python,
        so threads would not help). Worth it for TER on a machine with idle cores.
    **sacrebleu_options
        Constructor options of sacrebleu's metrics: ``tokenize``, ``lowercase``,
        ``smooth_method``, ``smooth_value``, ``max_ngram_order``, ``effective_order``,
        ``force``, ``trg_lang`` (BLEU); ``char_order``, ``word_order``, ``beta``,
        ``whitespace``, ``eps_smoothing``, ``lowercase`` (chrF); ``normalized``,
        ``no_punct``, ``asian_support``, ``case_sensitive`` (TER). A plain option applies
        to every metric that has it; prefix it to target one (``chrf_lowercase=True``).

    Returns
    -------
    xarray.DataTree
        One dataset: systems in input order, instances = segments in reference order,
        metrics as listed with ``kind="corpus"``, ``corpus_fn`` the registry name of the
        metric's function (e.g. ``"bleu"``, ``"bleu(smooth_method=floor,...)"``), ``stats``
        the sacrebleu sufficient statistics per segment, attribute ``sacrebleu`` a JSON
        object ``{metric: signature}``.

    Notes
    -----
    Statistics come from sacrebleu's own metric objects with a reference cache built once
    per metric; each distinct (segment, hypothesis) pair is processed once across systems.
    The corpus score is ``f(sum_i s_i)`` (:mod:`multistat.corpus`) and equals
    ``sacrebleu.metrics.BLEU(...).corpus_score(hyps, [refs]).score`` to rounding.
    TER extraction is the slow part (about 5 s per system of 3,000 segments).

    References
    ----------
    Post, M. (2018). A Call for Clarity in Reporting BLEU Scores. WMT.
    https://doi.org/10.18653/v1/W18-6319

    Examples
    --------
    >>> import pandas as pd
    >>> hyp = pd.DataFrame({"system": ["a", "a", "b", "b"], "segment": [0, 1, 0, 1],
    ...                     "hypothesis": ["the cat sat", "a dog", "the cat", "dog"]})
    >>> ref = pd.DataFrame({"segment": [0, 1], "reference": ["the cat sat", "a dog"]})
    >>> study = load_translations(hyp, ref, metrics="bleu,ter")
    >>> ds = study["translations"].to_dataset()
    >>> ds.corpus_fn.values.tolist()
    ['bleu', 'ter']
    """
    n_jobs = check_int("n_jobs", n_jobs, minimum=1)
    metrics = _parse_metric_list(metrics, list(TRANSLATION_METRICS), "metrics")
    unknown = [m for m in metrics if m not in TRANSLATION_METRICS]
    if unknown:
        raise ParameterError(f"unknown translation metric(s) {unknown}; choose from "
                             f"{', '.join(TRANSLATION_METRICS)}")
    per_metric = _split_sacrebleu_options(metrics, sacrebleu_options)
    for m in metrics:                      # fail fast on bad options, before reading
        cls_name, family, _ = TRANSLATION_METRICS[m]
        corpus_metric_name(family, **{k: v for k, v in per_metric[m].items()
                                      if k in _FN_OPTIONS[cls_name]})
    if isinstance(hypotheses, Mapping):
        hyps, segments, refs = _text_inputs(hypotheses, references)
        name = dataset or "translations"
    else:
        hyps, segments, refs = _table_inputs(hypotheses, references, system_col,
                                             segment_col, text_col, reference_col)
        name = dataset or (Path(hypotheses).resolve().parent.name if _is_pathlike(hypotheses)
                           else "translations")
    n = len(segments)
    all_stats, fns, signatures = [], [], {}
    for m in metrics:
        cls_name, family, _ = TRANSLATION_METRICS[m]
        opts = per_metric[m]
        cm = get_corpus_metric(corpus_metric_name(family, **{
            k: v for k, v in opts.items() if k in _FN_OPTIONS[cls_name]}))
        metric = _sacrebleu_metric(cls_name, opts, refs)
        stats = _extract(metric, hyps, n, n_jobs)
        if stats.shape[-1] != cm.n_stats:
            raise DataValidationError(f"sacrebleu {cls_name} returned {stats.shape[-1]} "
                                      f"statistics per segment; {cm.name!r} expects "
                                      f"{cm.n_stats}")
        all_stats.append(stats)
        fns.append(cm)
        signatures[m] = metric.get_signature().format()
    return _build(name, list(hyps), metrics, segments, all_stats, fns,
                  attrs={"sacrebleu": json.dumps(signatures)})


def _build(name, systems, labels, instances, stats_list, fns: list[CorpusMetric],
           attrs=None):
    """One dataset node: stats zero-padded to the largest statistic count."""
    width = max(s.shape[-1] for s in stats_list)
    n_sys, n = len(systems), len(instances)
    stats = np.zeros((n_sys, len(labels), n, width))
    score = np.empty((n_sys, len(labels), n))
    for j, (s, cm) in enumerate(zip(stats_list, fns)):
        stats[:, j, :, :s.shape[-1]] = s
        score[:, j] = cm.instance_scores(s)
    ds = cube.make_dataset(name, score, systems=systems, metrics=labels, instances=instances,
                           higher_is_better=[cm.higher_is_better for cm in fns],
                           kind=["corpus"] * len(labels), corpus_fn=[cm.name for cm in fns],
                           stats=stats)
    ds.attrs.update(attrs or {})
    return cube.make_study({name: ds})


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
    _no_missing(frame, (gold_col, pred_col), "path_or_frame", "label")
    df = pd.DataFrame({"system": frame[system_col].astype(str),
                       "instance": frame[instance_col].astype(str),
                       "gold": frame[gold_col].astype(str),
                       "pred": frame[pred_col].astype(str)})
    _no_duplicates(df, "instance", "path_or_frame")
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
    specs = _parse_metric_list(metrics, list(LABEL_METRICS), "metrics")
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
    for label, family, opts, cls in expanded:
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
    name = dataset or (Path(path_or_frame).name.split(".")[0] if _is_pathlike(path_or_frame)
                       else "labels")
    return _build(name, systems, labels, instances, stats_list, fns,
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
    return _build(name, systems, [label], instances, [stats], [cm])
