"""Machine translation outputs -> a study with sacrebleu's corpus BLEU, chrF and TER
(:func:`load_translations`, re-exported by :mod:`multistat.adapters`)."""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
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
    ticker,
)
from multistat._lazy import require_extra
from multistat._validation import check_int
from multistat.corpus import corpus_metric_name, get_corpus_metric
from multistat.errors import DataValidationError, InputFileError, ParameterError, ParameterTypeError
from multistat.io._mt_text import read_lines
from multistat.io._ter import kernels as ter_kernels
from multistat.io._ter import ter_statistics

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
        # heavy: sacrebleu, lazily
        from sacrebleu.metrics.bleu import BLEU
        tok = out["bleu"]["tokenize"]
        if tok not in BLEU.TOKENIZERS:
            raise ParameterError(f"`tokenize` must be one of "
                                 f"{', '.join(map(repr, BLEU.TOKENIZERS))}; got {tok!r}")
    return out



def _read_lines(path, what: str) -> list[str]:
    """Lines of a plain-text file (``\\n``-separated, trailing whitespace stripped as the
    sacrebleu command line does; ``.gz``, ``.bz2``, ``.xz`` read transparently); errors
    name the file and the line (:func:`multistat.io._mt_text.read_lines`)."""
    return read_lines(path, f"`{what}`")


def _text_inputs(hypotheses: Mapping, references):
    """Plain-text route: {system: file or lines} and one or more reference files."""
    texts = None
    if is_pathlike(references):
        ref_paths = [references]
    elif isinstance(references, Sequence) and references and all(
            is_pathlike(r) for r in references):
        ref_paths = list(references)
    elif isinstance(references, Sequence) and references and all(
            isinstance(r, Sequence) and not isinstance(r, str)
            and all(isinstance(x, str) for x in r) for r in references):
        # references already read (lists of lines, one list per reference)
        texts = [list(r) for r in references]
        ref_paths = [f"reference {k + 1}" for k in range(len(texts))]
    else:
        raise ParameterTypeError("with a mapping of system files, `references` must be the "
                                 "path of a plain-text reference file (one segment per line), "
                                 "a list of such paths or a list of lists of lines; got "
                                 f"{type(references).__name__}")
    refs = texts if texts is not None else [_read_lines(p, "references") for p in ref_paths]
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
        if is_pathlike(src):
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
    no_missing(ref, ref_cols, "references", "value")
    segments = seg.tolist()
    refs = [ref[c].astype(str).tolist() for c in ref_cols]
    h = pd.DataFrame({"system": hyp[system_col].astype(str),
                      "segment": hyp[segment_col].astype(str),
                      "text": hyp[text_col].astype(str)})
    no_duplicates(h, "segment", "hypotheses")
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
    # heavy: sacrebleu, lazily
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
    compiled = _JOB.get("ter")
    if compiled is not None:   # sacrebleu's TER search, compiled: the same statistics
        hyp_words = [metric._preprocess_segment(t).split() for t in texts[lo:hi]]
        ref_words = [cache[i]["ref_words"] for i in segs[lo:hi]]
        return ter_statistics(hyp_words, ref_words, compiled).tolist()
    try:
        metric._ref_cache = [cache[i] for i in segs[lo:hi]]
        return metric._extract_corpus_statistics(texts[lo:hi], None)
    finally:
        metric._ref_cache = cache


def _extract(metric, hyps: dict[str, list[str]], n: int, n_jobs: int = 1,
             tick=None, compiled_ter: bool = True) -> np.ndarray:
    """Statistics ``(system, segment, stat)``; each distinct (segment, hypothesis) once.
    ``tick(done, total)`` is called after each chunk of distinct hypotheses (progress).
    TER's statistics come from :func:`multistat.io._ter.ter_statistics` (sacrebleu's
    search compiled, equal statistics) when numba is installed and ``compiled_ter``."""
    if not hasattr(metric, "_ref_cache") or not hasattr(metric, "_extract_corpus_statistics"):
        raise ParameterError("this sacrebleu version lacks the reference cache API "
                             "(_ref_cache/_extract_corpus_statistics); sacrebleu>=2.0 needed")
    systems = list(hyps)
    index: dict[tuple[int, str], int] = {}
    where = np.empty((len(systems), n), dtype=np.int64)
    uniq_seg: list[int] = []
    uniq_hyp: list[str] = []
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
    if type(metric).__name__ == "TER" and compiled_ter:
        _JOB["ter"] = ter_kernels()   # None without numba: sacrebleu's own search
    try:
        parallel = n_jobs > 1 and m >= 200 and "fork" in mp.get_all_start_methods()
        pieces = 4 * n_jobs if parallel else (20 if tick is not None else 1)
        step = max(1, -(-m // pieces))
        chunks = [(lo, min(lo + step, m)) for lo in range(0, m, step)] or [(0, 0)]
        rows = []
        if parallel:
            with ProcessPoolExecutor(n_jobs, mp_context=mp.get_context("fork")) as pool:
                for (_, hi), part in zip(chunks, pool.map(_extract_chunk, chunks)):
                    rows.extend(part)
                    if tick is not None:
                        tick(hi, m)
        else:
            for lo, hi in chunks:  # the statistics of one hypothesis do not depend on chunks
                rows.extend(_extract_chunk((lo, hi)))
                if tick is not None:
                    tick(hi, m)
    finally:
        _JOB.clear()
    return np.asarray(rows, dtype=np.float64)[where]




def load_translations(hypotheses, references, *, metrics=("bleu", "chrf"),
                      system_col: str = "system", segment_col: str = "segment",
                      text_col: str = "hypothesis", reference_col="reference",
                      dataset: str | None = None, n_jobs: int = 1, progress=None,
                      **sacrebleu_options):
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
        of files for several references, or lists of lines already read) with as many
        lines as each system file.
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
    progress : callable, optional
        Called with one line of text (``"bleu: 1,200 of 6,000 distinct hypotheses, 4 s,
        about 16 s left"``) at most every few seconds and at the end of each metric, so a
        long TER extraction is not silent (the command line prints these to stderr).
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
    TER's shift search runs compiled when numba is installed (the ``fast`` extra): the
    same words (sacrebleu's tokenizer), the same search step for step, so the same edits
    and reference lengths, about 60 times faster than sacrebleu's pure-Python search on
    paragraphs of 160 reference words and 10 times on sentences
    (``benchmarks/ter_speed.py``); without numba, sacrebleu's own search (about 5 s per
    system of 3,000 sentences, minutes per system on paragraphs).

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
    metrics = parse_metric_list(metrics, list(TRANSLATION_METRICS), "metrics")
    unknown = [m for m in metrics if m not in TRANSLATION_METRICS]
    if unknown:
        raise ParameterError(f"unknown translation metric(s) {unknown}; choose from "
                             f"{', '.join(TRANSLATION_METRICS)}")
    require_extra("mt")  # sacrebleu: one line naming the extra if it is missing
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
        name = dataset or (Path(hypotheses).resolve().parent.name if is_pathlike(hypotheses)
                           else "translations")
    n = len(segments)
    all_stats, fns, signatures = [], [], {}
    for m in metrics:
        cls_name, family, _ = TRANSLATION_METRICS[m]
        opts = per_metric[m]
        cm = get_corpus_metric(corpus_metric_name(family, **{
            k: v for k, v in opts.items() if k in _FN_OPTIONS[cls_name]}))
        metric = _sacrebleu_metric(cls_name, opts, refs)
        stats = _extract(metric, hyps, n, n_jobs, tick=ticker(progress, m))
        if stats.shape[-1] != cm.n_stats:
            raise DataValidationError(f"sacrebleu {cls_name} returned {stats.shape[-1]} "
                                      f"statistics per segment; {cm.name!r} expects "
                                      f"{cm.n_stats}")
        all_stats.append(stats)
        fns.append(cm)
        signatures[m] = metric.get_signature().format()
    return build(name, list(hyps), metrics, segments, all_stats, fns,
                  attrs={"sacrebleu": json.dumps(signatures)})


