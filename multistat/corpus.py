"""Corpus-level metrics: functions of *summed* per-instance sufficient statistics.

Many NLP metrics are not means of per-instance scores. Corpus BLEU, chrF, TER, accuracy,
precision, recall and F1 are all a function ``f`` of the **sum over instances** of a small
vector of per-instance statistics ``s_i`` (n-gram matches and totals, edits and reference
length, true/false positives and false negatives per class)::

    metric(corpus) = f(sum_i s_i)

That makes resampling cheap: a bootstrap resample is ``f(C @ S)`` with ``C`` the count
matrix of the resampling plan, and an approximate-randomization trial swaps rows of the
statistics of two systems, ``f(T_a - M @ (S_a - S_b))`` with ``M`` the 0/1 swap mask.

This module is the registry of such functions. A :class:`CorpusMetric` holds ``fn``,
which maps an array ``(..., n_stats)`` of summed statistics to the metric, vectorized
over the leading axes (pure numpy, no Python loop), so the engine can call it once on a
``(resamples, systems or pairs, n_stats)`` block.

Metrics with options are *families*: a canonical name such as ``"bleu"`` (sacrebleu's
defaults) or ``"bleu(smooth_method=floor,smooth_value=0.1)"`` names one configuration
(options at their defaults are left out; :func:`corpus_metric_name` builds it); the registry builds
and caches it on first use (:func:`get_corpus_metric`), so a study saved to NetCDF, whose
``corpus_fn`` coordinate stores the name, finds the same function when reopened.

Built-in families (statistics layout in brackets):

* ``bleu`` — sacrebleu's corpus BLEU, 0-100 [hyp_len, ref_len, matches_1..N, totals_1..N]
  with options ``smooth_method`` (``exp`` default, ``floor``, ``add-k``, ``none``),
  ``smooth_value``, ``max_ngram_order`` (4), ``effective_order`` (False);
* ``chrf`` — sacrebleu's chrF, 0-100 [hyp, ref, match per order; char orders then word
  orders] with ``char_order`` (6), ``word_order`` (0; 2 is chrF++), ``beta`` (2),
  ``eps_smoothing`` (False, sacrebleu's default);
* ``ter`` — sacrebleu's TER, 0-100, lower is better [edits, ref_len];
* ``accuracy`` — fraction correct [correct, total];
* ``precision``, ``recall``, ``f1`` — one class [tp, fp, fn]; ``micro_precision``,
  ``micro_recall``, ``micro_f1`` — pooled over classes [tp, fp, fn];
* ``macro_precision``, ``macro_recall``, ``macro_f1`` — unweighted mean over classes,
  option ``n_classes`` [tp, fp, fn of class 1, then of class 2, ...].

Formulas (sums over the corpus or resample; sacrebleu's code followed operation by
operation so scores agree to rounding):

* BLEU: ``BP = exp(1 - r/c)`` if ``c < r`` (0 if ``c = 0``) else 1, with ``c``, ``r`` the
  hypothesis and closest-reference lengths; ``p_n = 100 m_n / t_n``; ``exp`` smoothing
  replaces a zero ``m_n`` by ``100 / (2^k t_n)`` for the k-th zero order, ``floor`` by
  ``100 v / t_n``, ``add-k`` adds ``v`` to ``m_n`` and ``t_n`` for n >= 2; orders from the
  first ``t_n = 0`` on contribute ``log 0 := -9999999999`` (sacrebleu's ``my_log``);
  ``BLEU = BP exp(sum_n log p_n / N)`` (``N`` the effective order if ``effective_order``),
  and 0 when no n-gram matches at all.
* chrF (sacrebleu default, effective-order averaging): per order ``P_n = m_n / h_n``,
  ``R_n = m_n / r_n``, averaged over the orders with ``h_n > 0`` and ``r_n > 0``;
  ``chrF = 100 (1 + b^2) P R / (b^2 P + R)``. With ``eps_smoothing=True`` the per-order
  F-scores (``eps = 1e-16`` for undefined P, R, F) are averaged instead.
* TER: ``100 edits / ref_len`` (100 if ``ref_len = 0 < edits``, 0 if both are 0).
* ``P = tp/(tp+fp)``, ``R = tp/(tp+fn)``, ``F1 = 2tp/(2tp+fp+fn)``, 0 for 0/0
  (scikit-learn's ``zero_division=0``); macro averages run over classes with
  ``tp + fp + fn > 0`` in the (re)sample, as scikit-learn's default labels do.

Tokenization and lowercasing do not change the function (they change the statistics);
the adapters record them in the dataset attributes (sacrebleu signature).

References
----------
Papineni, K., Roukos, S., Ward, T., Zhu, W.-J. (2002). BLEU: a method for automatic
evaluation of machine translation. ACL. https://doi.org/10.3115/1073083.1073135

Popović, M. (2015). chrF: character n-gram F-score for automatic MT evaluation. WMT.
https://doi.org/10.18653/v1/W15-3049

Snover, M. et al. (2006). A study of translation edit rate with targeted human
annotation. AMTA.

Post, M. (2018). A call for clarity in reporting BLEU scores. WMT.
https://doi.org/10.18653/v1/W18-6319
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from multistat.errors import ParameterError, ParameterTypeError

__all__ = [
    "CORPUS_METRICS",
    "CorpusMetric",
    "corpus_metric_name",
    "corpus_score",
    "get_corpus_metric",
    "register_corpus_metric",
    "sum_stats_by_unit",
]

# sacrebleu's floor for log(0) (``sacrebleu.utils.my_log``)
_LOG_ZERO = -9999999999.0


@dataclass(frozen=True)
class CorpusMetric:
    """A metric computed from summed per-instance sufficient statistics.

    Attributes
    ----------
    name : str
        Registry name (canonical, includes non-default options, e.g.
        ``"bleu(smooth_method=floor)"``).
    n_stats : int
        Number of statistics per instance; ``fn`` reads the first ``n_stats`` entries of
        the last axis (the cube zero-pads metrics with fewer statistics).
    fn : callable
        ``fn(summed)`` with ``summed`` of shape ``(..., n_stats)`` -> array ``(...)``.
    higher_is_better : bool
    stat_names : tuple of str
        One name per statistic.
    description : str
    params : dict
        Options of the family member (empty for plain metrics).
    """

    name: str
    n_stats: int
    fn: Callable[[np.ndarray], np.ndarray]
    higher_is_better: bool = True
    stat_names: tuple[str, ...] = ()
    description: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, summed) -> np.ndarray:
        """Apply the metric to summed statistics ``(..., >= n_stats)`` (extra padding ignored)."""
        summed = np.asarray(summed, dtype=np.float64)
        if summed.ndim == 0 or summed.shape[-1] < self.n_stats:
            raise ParameterError(
                f"corpus metric {self.name!r} needs {self.n_stats} statistics on the last "
                f"axis; got an array of shape {summed.shape}")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.asarray(self.fn(summed[..., :self.n_stats]), dtype=np.float64)

    def score(self, stats, axis: int = -2) -> np.ndarray:
        """Corpus score from per-instance statistics: ``fn(stats.sum(axis))``."""
        stats = np.asarray(stats, dtype=np.float64)
        return self(stats.sum(axis=axis))

    def instance_scores(self, stats) -> np.ndarray:
        """The metric applied to each instance's own statistics (``(..., n_stats)``)."""
        return self(stats)


CORPUS_METRICS: dict[str, CorpusMetric] = {}

# family name -> (factory(**params) -> CorpusMetric, defaults)
_FAMILIES: dict[str, tuple[Callable[..., CorpusMetric], dict[str, Any]]] = {}

_NAME_RE = re.compile(r"^\s*([A-Za-z_][\w\-+.]*)\s*(?:\((.*)\))?\s*$")


class _Quiet:
    """Wrap ``fn`` so 0/0 and x/0 inside ``np.where`` branches do not warn (picklable when
    ``fn`` is, so metric functions can travel to process or cluster workers)."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, summed):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self.fn(np.asarray(summed, dtype=np.float64))


_quiet = _Quiet


def register_corpus_metric(name: str, fn: Callable[[np.ndarray], np.ndarray], n_stats: int,
                           *, higher_is_better: bool = True, stat_names=None,
                           description: str = "", overwrite: bool = False) -> CorpusMetric:
    """Register a user corpus metric (the generic route).

    Parameters
    ----------
    name : str
        Registry name, stored in a study's ``corpus_fn`` coordinate. Letters, digits and
        ``_-+.``; no parentheses (reserved for family options).
    fn : callable
        ``fn(summed)`` mapping an array ``(..., n_stats)`` of *summed* statistics to the
        metric, vectorized over leading axes (it is called on ``(resamples, systems,
        n_stats)`` blocks; use numpy, no loop over rows).
    n_stats : int
        Number of per-instance statistics (>= 1).
    higher_is_better : bool, optional
        bool, default True
    stat_names : sequence of str, optional
        Names of the statistics (default ``stat0, stat1, ...``).
    description : str, optional
        str, optional
    overwrite : bool, default False
        Replace an existing registration of ``name`` (otherwise an error).

    Returns
    -------
    CorpusMetric
        The registered metric (its name, statistics count and scoring function).

    Notes
    -----
    ``fn`` is checked once on a small array of ones: it must return an array of the
    leading shape ``(2, 3)`` for input ``(2, 3, n_stats)``.

    Examples
    --------
    >>> import numpy as np
    >>> m = register_corpus_metric("ratio_demo", lambda s: s[..., 0] / s[..., 1], 2,
    ...                            overwrite=True)
    >>> float(m.score(np.array([[1.0, 2.0], [3.0, 2.0]])))
    1.0
    """
    if not isinstance(name, str) or not name:
        raise ParameterTypeError(f"`name` must be a non-empty string; got {name!r}")
    m = _NAME_RE.match(name)
    if m is None or m.group(2) is not None:
        raise ParameterError(f"`name` {name!r} may contain only letters, digits and "
                             f"'_-+.' (parentheses are reserved for family options)")
    if name in _FAMILIES:
        raise ParameterError(f"`name` {name!r} is a built-in corpus-metric family; choose "
                             f"another name")
    if name in CORPUS_METRICS and not overwrite:
        raise ParameterError(f"corpus metric {name!r} is already registered; pass "
                             f"overwrite=True to replace it")
    if not callable(fn):
        raise ParameterTypeError(f"`fn` must be callable; got {type(fn).__name__}")
    if isinstance(n_stats, bool) or not isinstance(n_stats, (int, np.integer)) or n_stats < 1:
        raise ParameterError(f"`n_stats` must be an integer >= 1; got {n_stats!r}")
    n_stats = int(n_stats)
    if stat_names is None:
        stat_names = tuple(f"stat{i}" for i in range(n_stats))
    else:
        stat_names = tuple(str(s) for s in stat_names)
        if len(stat_names) != n_stats:
            raise ParameterError(f"`stat_names` must have {n_stats} entries (n_stats); got "
                                 f"{len(stat_names)}")
    metric = CorpusMetric(name, n_stats, _quiet(fn), bool(higher_is_better), stat_names,
                          str(description))
    try:
        probe = metric(np.ones((2, 3, n_stats)))
    except ParameterError:
        raise
    except Exception as exc:  # user code: report what failed
        raise ParameterError(f"`fn` of corpus metric {name!r} failed on summed statistics "
                             f"of shape (2, 3, {n_stats}): {type(exc).__name__}: {exc}"
                             ) from exc
    if probe.shape != (2, 3):
        raise ParameterError(f"`fn` of corpus metric {name!r} must be vectorized over "
                             f"leading axes: input (2, 3, {n_stats}) gave shape "
                             f"{probe.shape}, expected (2, 3)")
    CORPUS_METRICS[name] = metric
    return metric


def _register_family(family: str, factory: Callable[..., CorpusMetric],
                     defaults: dict[str, Any]) -> None:
    _FAMILIES[family] = (factory, dict(defaults))
    CORPUS_METRICS[family] = factory(**defaults)


def _format_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return repr(v)
    return str(v)


def parse_value(text: str):
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text.strip("'\"")


def corpus_metric_name(family: str, **params) -> str:
    """Canonical registry name of a family member (options equal to defaults dropped).

    >>> corpus_metric_name("bleu", smooth_method="floor", max_ngram_order=4)
    'bleu(smooth_method=floor,smooth_value=0.1)'
    >>> corpus_metric_name("chrf")
    'chrf'
    """
    if family not in _FAMILIES:
        raise ParameterError(f"unknown corpus-metric family {family!r}; families: "
                             f"{', '.join(sorted(_FAMILIES))}")
    factory, defaults = _FAMILIES[family]
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ParameterError(f"corpus metric {family!r} has no option(s) {unknown}; options: "
                             f"{', '.join(sorted(defaults)) or '(none)'}")
    built = factory(**{**defaults, **params}).params
    base = CORPUS_METRICS[family].params
    extra = {k: v for k, v in built.items() if not _same(v, base.get(k))}
    if not extra:
        return family
    inner = ",".join(f"{k}={_format_value(extra[k])}" for k in sorted(extra))
    return f"{family}({inner})"


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def get_corpus_metric(name) -> CorpusMetric:
    """Look up a corpus metric by registry name, building family members on first use.

    Parameters
    ----------
    name : str or CorpusMetric
        A registered name (``"bleu"``, ``"macro_f1(n_classes=3)"``, a user metric).

    Returns
    -------
    CorpusMetric
    """
    if isinstance(name, CorpusMetric):
        return name
    if not isinstance(name, str):
        raise ParameterTypeError(f"corpus metric name must be a string; got {name!r}")
    if name in CORPUS_METRICS:
        return CORPUS_METRICS[name]
    m = _NAME_RE.match(name)
    if m is None or m.group(1) not in _FAMILIES or m.group(2) is None:
        raise ParameterError(f"unknown corpus metric {name!r}; registered: "
                             f"{', '.join(sorted(CORPUS_METRICS))} (register your own with "
                             f"multistat.register_corpus_metric)")
    family, inner = m.group(1), m.group(2)
    params = {}
    for part in filter(None, (p.strip() for p in inner.split(","))):
        if "=" not in part:
            raise ParameterError(f"corpus metric {name!r}: option {part!r} is not "
                                 f"key=value")
        k, v = part.split("=", 1)
        params[k.strip()] = parse_value(v)
    canonical = corpus_metric_name(family, **params)
    if canonical in CORPUS_METRICS:
        metric = CORPUS_METRICS[canonical]
    else:
        factory, defaults = _FAMILIES[family]
        metric = factory(**{**defaults, **params})
        metric = CorpusMetric(canonical, metric.n_stats, metric.fn, metric.higher_is_better,
                              metric.stat_names, metric.description, metric.params)
        CORPUS_METRICS[canonical] = metric
    if name != canonical:
        CORPUS_METRICS.setdefault(name, metric)
    return metric


def corpus_score(stats, name, axis: int = -2) -> np.ndarray:
    """Corpus metric ``name`` of per-instance ``stats`` summed over ``axis``."""
    return get_corpus_metric(name).score(stats, axis=axis)


def sum_stats_by_unit(stats, units) -> tuple[np.ndarray, np.ndarray]:
    """Sum per-instance statistics within evaluation units.

    Parameters
    ----------
    stats : array ``(..., instance, stat)``
    units : array ``(instance,)`` of unit labels

    Returns
    -------
    unit_stats : array ``(..., unit, stat)``
        Sums over the instances of each unit, units in order of first appearance.
    labels : array ``(unit,)``

    Notes
    -----
    A corpus metric of a unit is the metric of the unit's concatenated instances, so the
    corpus score over all units equals the corpus score over all instances; resampling
    units is then a block bootstrap of instances.
    """
    stats = np.asarray(stats, dtype=np.float64)
    units = np.asarray(units)
    if stats.ndim < 2 or units.shape != (stats.shape[-2],):
        raise ParameterError(f"`units` must have one label per instance ({stats.shape[-2:-1]}"
                             f"); got shape {units.shape}")
    labels, first, inverse = np.unique(units, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    group = rank[inverse]
    onehot = np.zeros((order.size, units.size))
    onehot[group, np.arange(units.size)] = 1.0
    return np.einsum("ui,...is->...us", onehot, stats), labels[order]


# ----------------------------------------------------------------------------- BLEU
_BLEU_SMOOTH = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}


def _bleu_fn(summed, *, max_ngram_order, smooth_method, smooth_value, effective_order):
    n = max_ngram_order
    sys_len, ref_len = summed[..., 0], summed[..., 1]
    correct = summed[..., 2:2 + n].copy()
    total = summed[..., 2 + n:2 + 2 * n].copy()
    bp = np.where(sys_len < ref_len,
                  np.where(sys_len > 0, np.exp(1.0 - ref_len / sys_len), 0.0), 1.0)
    no_match = ~(correct != 0).any(axis=-1)          # sacrebleu's early stop (#141)
    if smooth_method == "add-k":                      # orders >= 2 only
        correct[..., 1:] += smooth_value
        total[..., 1:] += smooth_value
    # sacrebleu stops at the first order without any n-gram: later precisions stay 0
    active = np.cumprod(total > 0, axis=-1).astype(bool)
    zero = correct == 0
    prec = 100.0 * correct / total
    if smooth_method == "exp":
        k = np.cumsum(zero & active, axis=-1)
        prec = np.where(zero, 100.0 / (2.0 ** k * total), prec)
    elif smooth_method == "floor":
        prec = np.where(zero, 100.0 * smooth_value / total, prec)
    else:
        prec = np.where(zero, 0.0, prec)
    prec = np.where(active, prec, 0.0)
    logp = np.where(prec > 0, np.log(np.where(prec > 0, prec, 1.0)), _LOG_ZERO)
    if effective_order:
        eff = active.sum(axis=-1)
        mean_log = np.where(active, logp, 0.0).sum(axis=-1) / np.where(eff > 0, eff, n)
        mean_log = np.where(eff > 0, mean_log, _LOG_ZERO)
    else:
        mean_log = logp.sum(axis=-1) / n
    return np.where(no_match, 0.0, bp * np.exp(mean_log))


def _make_bleu(*, smooth_method="exp", smooth_value=None, max_ngram_order=4,
               effective_order=False) -> CorpusMetric:
    if smooth_method not in _BLEU_SMOOTH:
        raise ParameterError(f"`smooth_method` must be one of "
                             f"{', '.join(map(repr, _BLEU_SMOOTH))}; got {smooth_method!r}")
    if isinstance(max_ngram_order, bool) or not isinstance(max_ngram_order, int) \
            or max_ngram_order < 1:
        raise ParameterError(f"`max_ngram_order` must be an integer >= 1; got "
                             f"{max_ngram_order!r}")
    if smooth_value is not None and (isinstance(smooth_value, bool) or not isinstance(
            smooth_value, (int, float)) or not np.isfinite(smooth_value)):
        raise ParameterError(f"`smooth_value` must be a finite number or None; got "
                             f"{smooth_value!r}")
    value = _BLEU_SMOOTH[smooth_method] if smooth_value is None else float(smooth_value)
    if smooth_method in ("exp", "none"):
        value = None                                  # sacrebleu ignores it
    n = max_ngram_order
    params = {"smooth_method": smooth_method, "smooth_value": value,
                  "max_ngram_order": n, "effective_order": bool(effective_order)}

    fn = functools.partial(_bleu_fn, max_ngram_order=n, smooth_method=smooth_method,
                           smooth_value=value, effective_order=bool(effective_order))

    names = ("hyp_len", "ref_len") + tuple(f"matches_{i}" for i in range(1, n + 1)) + \
        tuple(f"totals_{i}" for i in range(1, n + 1))
    return CorpusMetric("bleu", 2 + 2 * n, _quiet(fn), True, names,
                        "corpus BLEU (0-100) as sacrebleu's BLEU.corpus_score", params)


# ----------------------------------------------------------------------------- chrF
def _chrf_fn(summed, *, order, beta, eps_smoothing):
    s = summed.reshape(summed.shape[:-1] + (order, 3))
    hyp, ref, match = s[..., 0], s[..., 1], s[..., 2]
    eps = 1e-16
    factor = float(beta) ** 2
    prec = np.where(hyp > 0, match / hyp, eps)
    rec = np.where(ref > 0, match / ref, eps)
    if eps_smoothing:
        denom = factor * prec + rec
        f = np.where(denom > 0, (1 + factor) * prec * rec / denom, eps)
        return 100.0 * f.sum(axis=-1) / order
    eff = (hyp > 0) & (ref > 0)
    n_eff = eff.sum(axis=-1)
    safe = np.where(n_eff > 0, n_eff, 1)
    avg_prec = np.where(n_eff > 0, np.where(eff, prec, 0.0).sum(axis=-1) / safe, 0.0)
    avg_rec = np.where(n_eff > 0, np.where(eff, rec, 0.0).sum(axis=-1) / safe, 0.0)
    num = (1 + factor) * avg_prec * avg_rec
    den = factor * avg_prec + avg_rec
    return np.where(avg_prec + avg_rec != 0, 100.0 * (num / den), 0.0)


def _make_chrf(*, char_order=6, word_order=0, beta=2, eps_smoothing=False) -> CorpusMetric:
    for key, val, low in (("char_order", char_order, 0), ("word_order", word_order, 0)):
        if isinstance(val, bool) or not isinstance(val, int) or val < low:
            raise ParameterError(f"`{key}` must be an integer >= {low}; got {val!r}")
    order = char_order + word_order
    if order < 1:
        raise ParameterError("chrF needs char_order + word_order >= 1; got 0")
    params = {"char_order": char_order, "word_order": word_order, "beta": beta,
                  "eps_smoothing": bool(eps_smoothing)}

    fn = functools.partial(_chrf_fn, order=order, beta=beta,
                           eps_smoothing=bool(eps_smoothing))

    names = tuple(f"{w}_{kind}{i}" for kind, orders in (("char", char_order),
                                                         ("word", word_order))
                  for i in range(1, orders + 1) for w in ("hyp", "ref", "match"))
    return CorpusMetric("chrf", 3 * order, _quiet(fn), True, names,
                        "chrF / chrF++ (0-100) as sacrebleu's CHRF.corpus_score", params)


# ----------------------------------------------------------------------------- TER
def _ter_fn(summed):
    edits, ref_len = summed[..., 0], summed[..., 1]
    return 100.0 * np.where(ref_len > 0, edits / np.where(ref_len > 0, ref_len, 1.0),
                            np.where(edits > 0, 1.0, 0.0))


def _make_ter() -> CorpusMetric:
    return CorpusMetric("ter", 2, _quiet(_ter_fn), False, ("edits", "ref_len"),
                        "translation edit rate (0-100, lower is better) as sacrebleu's "
                        "TER.corpus_score")


# ----------------------------------------------------------------------------- classification
def _ratio(num, den, zero_division=0.0):
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), zero_division)


def _accuracy_fn(summed):
    return _ratio(summed[..., 0], summed[..., 1])


def _precision_fn(s):
    return _ratio(s[..., 0], s[..., 0] + s[..., 1])


def _recall_fn(s):
    return _ratio(s[..., 0], s[..., 0] + s[..., 2])


def _f1_fn(s):
    return _ratio(2.0 * s[..., 0], 2.0 * s[..., 0] + s[..., 1] + s[..., 2])


_CLASS_FNS = {"precision": _precision_fn, "recall": _recall_fn, "f1": _f1_fn}


def _macro_fn(summed, *, k, per_class):
    s = summed.reshape(summed.shape[:-1] + (k, 3))
    # classes absent from gold and predictions of the (re)sample are left out, as
    # scikit-learn's default labels (unique_labels(y_true, y_pred)) do
    present = s.sum(axis=-1) > 0
    value = np.where(present, per_class(s), 0.0).sum(axis=-1)
    count = present.sum(axis=-1)
    return np.where(count > 0, value / np.where(count > 0, count, 1), 0.0)


def _make_macro(kind: str):
    per_class = _CLASS_FNS[kind]

    def factory(*, n_classes=2) -> CorpusMetric:
        if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1:
            raise ParameterError(f"`n_classes` must be an integer >= 1; got {n_classes!r}")
        k = n_classes
        fn = functools.partial(_macro_fn, k=k, per_class=per_class)
        names = tuple(f"{w}_{c}" for c in range(k) for w in ("tp", "fp", "fn"))
        return CorpusMetric(f"macro_{kind}", 3 * k, _quiet(fn), True, names,
                            f"macro-averaged {kind} over classes (scikit-learn's "
                            f"average='macro')", {"n_classes": k})

    return factory


def _register_builtins() -> None:
    _register_family("bleu", _make_bleu, {"smooth_method": "exp", "smooth_value": None,
                                                "max_ngram_order": 4, "effective_order": False})
    _register_family("chrf", _make_chrf, {"char_order": 6, "word_order": 0, "beta": 2,
                                                "eps_smoothing": False})
    _register_family("ter", _make_ter, {})
    _register_family("accuracy", lambda: CorpusMetric(
        "accuracy", 2, _quiet(_accuracy_fn), True, ("correct", "total"),
        "fraction of correct instances"), {})
    for kind, fn in _CLASS_FNS.items():
        _register_family(kind, lambda kind=kind, fn=fn: CorpusMetric(
            kind, 3, _quiet(fn), True, ("tp", "fp", "fn"), f"{kind} of one class"), {})
        _register_family(f"micro_{kind}", lambda kind=kind, fn=fn: CorpusMetric(
            f"micro_{kind}", 3, _quiet(fn), True, ("tp", "fp", "fn"),
            f"micro-averaged {kind} (tp, fp, fn pooled over classes)"), {})
        _register_family(f"macro_{kind}", _make_macro(kind), {"n_classes": 2})


_register_builtins()
