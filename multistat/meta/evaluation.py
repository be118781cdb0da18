"""Metric meta-evaluation: how well automatic metrics agree with human judgments.

The WMT metrics shared task ranks metrics by their agreement with human scores (MQM) at
system and segment level and publishes significance clusters of metrics; its reference
implementation is Google's mt-metrics-eval. This module computes the same statistics on
arrays and on studies, vectorised over items and resamples:

* :func:`metric_correlation` — Pearson, Spearman, Kendall's tau_b / tau_c, Deutsch et
  al.'s tau_23 and acc_23 (with a tie threshold epsilon, or tie calibration), pairwise
  accuracy (Kocmi et al. 2021) and soft pairwise accuracy (Thompson et al. 2024), over
  the flattened scores (``average_by="none"``), per system or per item then averaged.
* :func:`compare_metrics` — every pair of metrics: PERM-BOTH (Deutsch et al. 2021), the
  pairwise permutation of comparison outcomes (mt-metrics-eval's ``perm_test="pairs"``,
  WMT23/24's test with tie calibration), a paired bootstrap over items with an interval
  for the difference, Williams' test.
* :func:`meta_evaluate` — per dataset of a study, every metric against one human metric,
  with bootstrap intervals, ranks and clusters by mt-metrics-eval's (WMT's) rule
  (:func:`wmt_clusters`) or, on request, the stricter rule :func:`multistat.rank` uses.

Conventions. ``human`` and each metric are systems x items (or 1-D); NaN in ``human`` is a
missing judgment and its cell is left out everywhere; a metric must be finite where the
human score is present. Rows are what a correlation is computed over: ``none`` one row of
all cells, ``system`` one row per system (over items), ``item`` one row per item (over
systems). Rows whose correlation is undefined (fewer than 2 cells, constant input, no
untied pair) are left out of the mean, as mt-metrics-eval does. A row of scores constant
up to :data:`CONSTANT_RTOL` of its largest magnitude counts as exactly constant (every
pair a tie; Pearson and Spearman undefined), and system scores are means about a
system's first score, so that a constant metric stays constant at system level.

Kendall counts of a row: for every pair of valid cells, the human sign ``sh`` (0 when
tied) and the metric sign ``sm`` (0 when ``|delta m| <= epsilon``). With ``A = sum sh sm``
(concordant minus discordant), ``Zh``/``Zm`` the pairs tied in human/metric, ``T`` tied
in both and ``tot`` the pairs: ``tau_b = A / sqrt((tot - Zm)(tot - Zh))``, ``tau_c = 2A /
(n^2 (c - 1) / c)`` (``c`` the smaller number of distinct values), ``tau_23 = (A + 3T -
Zh - Zm) / tot`` (concordant plus tied-in-both minus the rest), ``acc_23 = (con + T) /
tot``. Pairwise accuracy is ``acc_23`` without tie calibration: the share of system pairs
whose order (or tie) the metric gets right.

Resampling. The paired bootstrap draws items from the engine's shared bootstrap plan
(:mod:`multistat.engine`, keyed by seed and dataset) and recomputes every metric's
statistic per resample as BLAS products of the count matrix with per-item (or per-system)
sums: per metric first, pairs last. PERM-BOTH z-scores each metric over the valid cells
and swaps each cell's pair of scores with probability 1/2 (the engine's sign-flip plan over
the cells). For Pearson the swapped statistics follow from sign-weighted sums of each
metric (one product per metric, not per pair); for tau_23, acc_23 and pairwise accuracy
(and tau_b, tau_c when no two metric z-scores of a row tie, so that their denominators
cannot change with a swap) the swapped *difference* of two metrics is affine in the swap
vector (the quadratic terms of the two swapped metrics cancel), so the whole null of every
pair is one product of the sign-flip plan with per-cell coefficients. Nothing of size
pairs x items x resamples is built.

References
----------
D. Deutsch, R. Dror and D. Roth (2021), "A Statistical Analysis of Summarization
Evaluation Metrics Using Resampling Methods", TACL 9, https://doi.org/10.1162/tacl_a_00417
D. Deutsch, G. Foster and M. Freitag (2023), "Ties Matter: Meta-Evaluating Modern Metrics
with Pairwise Accuracy and Tie Calibration", EMNLP, https://doi.org/10.18653/v1/2023.emnlp-main.798
T. Kocmi et al. (2021), "To Ship or Not to Ship", WMT, https://aclanthology.org/2021.wmt-1.57
B. Thompson et al. (2024), "Improving Statistical Significance in Human Evaluation of
Automatic Metrics via Soft Pairwise Accuracy", WMT, https://aclanthology.org/2024.wmt-1.118
E. J. Williams (1959), Regression Analysis, Wiley; Y. Graham and T. Baldwin (2014),
"Testing for Significance of Increased Correlation with Human Judgment", EMNLP,
https://doi.org/10.3115/v1/D14-1020
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from multistat import engine as eng
from multistat._result import Result
from multistat._validation import (
    check_alternative,
    check_choice,
    check_int,
    check_probability,
    check_seed,
)
from multistat.correct import METHODS, adjust_groups
from multistat.errors import (
    ConstantInputWarning,
    DataValidationError,
    ParameterError,
    ParameterTypeError,
)

STATISTICS = ("pearson", "spearman", "kendall_b", "kendall_c", "kendall_23", "acc23",
              "pairwise_accuracy", "soft_pairwise_accuracy")
AVERAGES = ("none", "system", "item")
TESTS = ("perm-both", "perm-pairs", "bootstrap", "williams")
#: cluster rules of :func:`meta_evaluate`
CLUSTER_RULES = ("wmt", "strict")
#: a row of scores is constant when its spread is at most this share of its largest |score|
#: (means over different numbers of items differ in the last bits)
CONSTANT_RTOL = 1e-12
#: largest (pairs of cells) x metrics the pairwise-permutation kernel holds (float64)
PERM_PAIRS_LIMIT = 2 * 10**8
LEVELS = ("segment", "system")
KENDALL = ("kendall_b", "kendall_c", "kendall_23", "acc23", "pairwise_accuracy")
#: statistics whose per-row value is linear in the pair counts (PERM-BOTH's fast path)
LINEAR = ("kendall_23", "acc23", "pairwise_accuracy")
CALIBRATED = ("kendall_23", "acc23")
PAIR_COLUMNS = ("metric_a", "metric_b", "value_a", "value_b", "delta", "ci_low", "ci_high",
                "p_value", "p_adjusted", "reject", "p_one_sided", "test", "statistic", "average_by",
                "alternative", "n", "n_resamples", "seed")
BOARD_COLUMNS = ("dataset", "metric", "level", "statistic", "average_by", "value", "ci_low",
                 "ci_high", "rank", "cluster", "n", "note")
#: pairs of cells handled at once by the Kendall kernels (memory: ~10 arrays of this size)
PAIR_CHUNK = 2**21
#: largest pair matrices of the 1-D Kendall bootstrap (entries^2 x (4 metrics + 1) x 8 B)
PAIR_MATRIX_BYTES = 512 * 2**20
#: largest rows x cells^2 x metrics^2 the PERM-BOTH Kendall kernel accepts
PERM_KENDALL_LIMIT = 2 * 10**9


@dataclass(frozen=True)
class CorrelationResult(Result):
    """One meta-evaluation statistic.

    Attributes
    ----------
    value : the statistic (mean over rows for ``average_by`` other than ``"none"``)
    epsilon : the metric tie threshold used (the calibrated one for ``"optimal"``)
    n : pairs counted (Kendall family) or cells used (Pearson, Spearman; systems x system
        pairs for soft pairwise accuracy)
    n_rows : rows whose statistic was defined and averaged
    p_value : scipy's p-value for a single row (``pearsonr``, ``spearmanr``,
        ``kendalltau``), NaN where scipy defines none (averages, the 23 variants)
    statistic, average_by : what was computed
    note : why the value is NaN or a tie value when the metric (or the human scores) is
        constant in every row (up to :data:`CONSTANT_RTOL`), else ""
    """

    value: float
    epsilon: float
    n: int
    n_rows: int
    p_value: float
    statistic: str
    average_by: str
    note: str = ""

    def to_dict(self) -> dict:
        return {"statistic": self.statistic, "average_by": self.average_by,
                "value": self.value, "epsilon": self.epsilon, "n": self.n,
                "n_rows": self.n_rows, "p_value": self.p_value, "note": self.note}


# ----------------------------------------------------------------------------- validation
def _matrix(name: str, values) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"`{name}` must be a numeric array (systems x items or "
                                 f"1-D); {exc}") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ParameterError(f"`{name}` must be 2-D (systems x items) or 1-D; got shape "
                             f"{arr.shape}")
    return arr


def _check_pair(human: np.ndarray, metric: np.ndarray, name: str, where=None) -> None:
    """Shapes agree, no infinite human score, a finite metric score wherever there is a
    human judgment; ``where(s, i)`` names a cell (default: its indices)."""
    where = where or (lambda s, i: f"system {s}, item {i}")
    if metric.shape != human.shape:
        raise ParameterError(f"metric {name!r} has shape {metric.shape}; `human` has "
                             f"{human.shape}")
    if np.isinf(human).any():
        s, i = np.argwhere(np.isinf(human))[0]
        raise DataValidationError(f"`human` is infinite at {where(s, i)}")
    bad = ~np.isfinite(metric) & ~np.isnan(human)
    if bad.any():
        s, i = np.argwhere(bad)[0]
        raise DataValidationError(
            f"metric {name!r} is {metric[s, i]} at {where(s, i)} where the human "
            f"score is {human[s, i]} ({int(bad.sum())} such cells); a metric needs a "
            f"finite score wherever there is a human judgment")


def _epsilon(epsilon, statistic: str):
    if isinstance(epsilon, str):
        if epsilon != "optimal":
            raise ParameterError(f"`epsilon` must be a number >= 0 or 'optimal'; got "
                                 f"{epsilon!r}")
        if statistic not in CALIBRATED:
            raise ParameterError(f"epsilon='optimal' (tie calibration) is defined for "
                                 f"{', '.join(CALIBRATED)}; got statistic={statistic!r}")
        return epsilon
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.number)):
        raise ParameterTypeError(f"`epsilon` must be a number >= 0 or 'optimal'; got "
                                 f"{epsilon!r}")
    epsilon = float(epsilon)
    if not np.isfinite(epsilon) or epsilon < 0:
        raise ParameterError(f"`epsilon` must be a number >= 0 or 'optimal'; got {epsilon}")
    if epsilon > 0 and statistic not in KENDALL:
        raise ParameterError(f"`epsilon` (a tie threshold for metric differences) applies to "
                             f"the Kendall statistics {', '.join(KENDALL)}; got "
                             f"statistic={statistic!r} with epsilon={epsilon}")
    if epsilon > 0 and statistic == "kendall_c":
        raise ParameterError("kendall_c with epsilon > 0 is not defined (the number of "
                             "distinct values has no meaning with tie thresholds); use "
                             "kendall_b, kendall_23 or acc23")
    return epsilon


def _snap_layout(x: np.ndarray, v: np.ndarray, average_by: str) -> np.ndarray:
    """:func:`_snap_constant` on the rows of ``average_by``, back in ``x``'s layout."""
    out = _snap_constant(_rows(x, average_by), _rows(v, average_by))
    return out.reshape(x.shape) if average_by == "none" else (
        out if average_by == "system" else out.T)


def _rows(x: np.ndarray, average_by: str) -> np.ndarray:
    """The rows a correlation is computed over (see module docstring)."""
    if average_by == "none":
        return x.reshape(1, -1)
    if average_by == "system":
        return x
    return x.T


# ----------------------------------------------------------------------------- row kernels
def _pearson_rows(h: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson per row of ``(R, L)`` arrays over the cells where ``h`` is not NaN."""
    v = ~np.isnan(h)
    n = v.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        hc = np.where(v, h, 0.0)
        mc = np.where(v, m, 0.0)
        hc = np.where(v, hc - hc.sum(1, keepdims=True) / n[:, None], 0.0)
        mc = np.where(v, mc - mc.sum(1, keepdims=True) / n[:, None], 0.0)
        sxy = (hc * mc).sum(1)
        sxx = (hc * hc).sum(1)
        syy = (mc * mc).sum(1)
        r = sxy / np.sqrt(sxx * syy)
    # constant rows (in either) are undefined, as in mt-metrics-eval
    const = (_spread(h, v) == 0) | (_spread(m, v) == 0)
    r = np.where((n < 2) | const, np.nan, np.clip(r, -1.0, 1.0))
    return r, n


def _spread(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        hi = np.where(v, x, -np.inf).max(1)
        lo = np.where(v, x, np.inf).min(1)
        return np.where(v.any(1), hi - lo, 0.0)


def _constant_rows(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rows of ``(R, L)`` whose valid cells are constant up to :data:`CONSTANT_RTOL` of
    their largest magnitude (a relative tolerance: means of one constant over different
    numbers of items differ in the last bits)."""
    with np.errstate(invalid="ignore"):
        scale = np.where(v, np.abs(x), 0.0).max(1) if x.size else np.zeros(x.shape[0])
    return _spread(x, v) <= CONSTANT_RTOL * scale


def _snap_constant(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``x`` with every constant row (:func:`_constant_rows`) set exactly to its first
    valid value on its valid cells, so that a constant stays a constant: ties in every
    pair, an undefined correlation."""
    const = _constant_rows(x, v) & v.any(1)
    if not const.any():
        return x
    first = x[np.arange(x.shape[0]), np.argmax(v, axis=1)]
    return np.where(const[:, None] & v, first[:, None], x)


def _ranks(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy.stats import rankdata

    return rankdata(np.where(v, x, np.inf), axis=1)  # invalid cells rank last


def _spearman_rows(h, m):
    v = ~np.isnan(h)
    return _pearson_rows(np.where(v, _ranks(h, v), np.nan), _ranks(m, v))


def _kendall_counts(h: np.ndarray, m: np.ndarray, eps: float) -> dict[str, np.ndarray]:
    """``A, T, Zh, Zm, tot`` per row (module docstring), pairs in chunks."""
    R, L = h.shape
    iu, ju = np.triu_indices(L, 1)
    out = {k: np.zeros(R) for k in ("A", "T", "Zh", "Zm", "tot")}
    step = max(1, PAIR_CHUNK // max(R, 1))
    for s in range(0, len(iu), step):
        i, j = iu[s:s + step], ju[s:s + step]
        dh = h[:, i] - h[:, j]
        valid = ~np.isnan(dh)
        sh = np.sign(np.where(valid, dh, 0.0))
        dm = m[:, i] - m[:, j]
        sm = np.where(np.abs(dm) <= eps, 0.0, np.sign(dm))
        zh = valid & (sh == 0)
        zm = valid & (sm == 0)
        out["A"] += (sh * np.where(valid, sm, 0.0)).sum(1)
        out["T"] += (zh & zm).sum(1)
        out["Zh"] += zh.sum(1)
        out["Zm"] += zm.sum(1)
        out["tot"] += valid.sum(1)
    return out


def _distinct(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    srt = np.sort(np.where(v, x, np.inf), axis=1)
    new = np.ones(srt.shape, bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    return (new & np.isfinite(srt)).sum(1)


def _kendall_finish(c: dict, statistic: str, h=None, m=None) -> np.ndarray:
    A, T, Zh, Zm, tot = c["A"], c["T"], c["Zh"], c["Zm"], c["tot"]
    with np.errstate(invalid="ignore", divide="ignore"):
        if statistic == "kendall_b":
            out = A / np.sqrt((tot - Zm) * (tot - Zh))
            out = np.where((Zm == tot) | (Zh == tot), np.nan, out)
        elif statistic == "kendall_c":
            v = ~np.isnan(h)
            n = v.sum(1)
            k = np.minimum(_distinct(h, v), _distinct(m, v))
            out = 2 * A / (n.astype(float) ** 2 * (k - 1) / k)
            out = np.where((Zm == tot) | (Zh == tot), np.nan, out)
        elif statistic == "kendall_23":
            out = (A + 3 * T - Zh - Zm) / tot
        else:  # acc23, pairwise_accuracy: concordant or tied in both
            con = (tot - Zh - Zm + T + A) / 2
            out = (con + T) / tot
    return np.where(tot > 0, out, np.nan)


def _rows_stat(h: np.ndarray, m: np.ndarray, statistic: str, eps: float = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(value, n)`` per row of ``(R, L)`` arrays (NaN in ``h``: missing); rows constant
    up to rounding (:func:`_constant_rows`) count as exactly constant."""
    v = ~np.isnan(h)
    h, m = _snap_constant(h, v), _snap_constant(m, v)
    if statistic == "pearson":
        return _pearson_rows(h, m)
    if statistic == "spearman":
        return _spearman_rows(h, m)
    c = _kendall_counts(h, m, eps)
    return _kendall_finish(c, statistic, h, m), c["tot"]


def _mean_rows(values: np.ndarray) -> tuple[float, int]:
    ok = np.isfinite(values)
    return (float(values[ok].mean()) if ok.any() else float("nan")), int(ok.sum())


# ----------------------------------------------------------------------------- calibration
def _calibrate(h: np.ndarray, m: np.ndarray, statistic: str) -> float:
    """The tie threshold that maximises the row-averaged tau_23 / acc_23 (Deutsch et al.
    2023, section 4): every distinct |metric difference| of a valid pair is a candidate
    (and 0); the statistic at every candidate follows from one cumulative sum over the
    pairs sorted by |difference|, since turning a pair into a metric tie changes only its
    own row's count. The first maximising threshold is returned."""
    R, L = h.shape
    iu, ju = np.triu_indices(L, 1)
    if R * len(iu) > 5 * 10**7:
        raise ParameterError(
            f"epsilon='optimal' would enumerate {R * len(iu):,} pairs of cells; calibrate "
            f"on rows of fewer cells (average_by='item') or pass a number")
    dh = h[:, iu] - h[:, ju]
    valid = ~np.isnan(dh)
    sh = np.sign(np.where(valid, dh, 0.0))
    dm = m[:, iu] - m[:, ju]
    sm = np.sign(dm)
    tot = valid.sum(1)
    rows_ok = tot > 0
    weight = np.where(rows_ok, 1.0 / np.maximum(tot, 1), 0.0) / max(int(rows_ok.sum()), 1)
    good = (sh * sm > 0) | ((sh == 0) & (sm == 0))
    good_tie = sh == 0
    if statistic == "acc23":
        normal, tied = good.astype(float), good_tie.astype(float)
    else:
        normal, tied = 2.0 * good - 1, 2.0 * good_tie - 1
    w = np.broadcast_to(weight[:, None], dh.shape)[valid]
    base = float((normal[valid] * w).sum())
    diffs = np.abs(dm[valid])
    change = (tied[valid] - normal[valid]) * w
    order = np.argsort(diffs, kind="stable")
    diffs, change = diffs[order], change[order]
    curve = base + np.cumsum(change)
    last = np.ones(len(diffs), bool)
    last[:-1] = diffs[1:] != diffs[:-1]  # the value after all pairs of one |difference|
    thresholds = np.concatenate([[0.0], diffs[last]])
    values = np.concatenate([[base], curve[last]])
    if len(diffs) and diffs[0] == 0.0:  # zero differences are ties already
        thresholds, values = thresholds[1:], values[1:]
    return float(thresholds[int(np.nanargmax(values))])


# ----------------------------------------------------------------------------- soft PA
#: pairs whose resampled differences are held at once (B x PAIR_CHUNK floats)
PAIR_CHUNK = 4096


def _pairwise_p(x: np.ndarray, v: np.ndarray, flips: np.ndarray, *, count: bool = False
                ) -> np.ndarray:
    """One-sided p-values ``P(null >= observed)`` of system i beating system j (i < j)
    by the paired permutation test of the summed scores over the items both have
    (``count=True``: the number of sign vectors with ``null >= observed`` instead)."""
    B = 1 if count else flips.shape[0]
    S = x.shape[0]
    iu, ju = np.triu_indices(S, 1)
    if v.all():  # every system on every item: per system first, pairs last
        per, tot = flips @ x.T, x.sum(1)  # (B, S), (S,)
        out = np.empty(len(iu))
        for s in range(0, len(iu), PAIR_CHUNK):  # (B, chunk) at a time
            a, b = iu[s:s + PAIR_CHUNK], ju[s:s + PAIR_CHUNK]
            null, obs = per[:, a] - per[:, b], tot[a] - tot[b]
            tol = eng._tolerance(obs, null)
            out[s:s + PAIR_CHUNK] = np.sum(null >= obs - tol, axis=0) / B
        return out
    both = v[iu] & v[ju]  # items missing for some systems: each pair on its own items
    d = np.where(both, x[iu] - x[ju], 0.0)  # (P, N)
    obs = d.sum(1)
    null = flips @ d.T  # (B, P)
    tol = eng._tolerance(obs, null)
    return (np.sum(null >= obs - tol, axis=0)) / B


def _soft_pa(h, m, n_resamples, seed, key) -> float:
    """1 - mean |p_human - p_metric| over system pairs (Thompson et al. 2024), both
    p-values from one sign-flip plan of the engine: all ``n_resamples`` sign vectors,
    block by block (one block of the plan in memory at a time)."""
    v = ~np.isnan(h)
    hx, mx = np.where(v, h, 0.0), np.where(v, m, 0.0)
    ch: np.ndarray | float = 0.0
    cm: np.ndarray | float = 0.0
    for flips in eng.plan_blocks("permutation", h.shape[1], n_resamples, seed, key):
        ch = ch + _pairwise_p(hx, v, flips, count=True)
        cm = cm + _pairwise_p(mx, v, flips, count=True)
    return float(1.0 - np.mean(np.abs(ch / n_resamples - cm / n_resamples)))


# ----------------------------------------------------------------------------- public: one
def metric_correlation(human, metric, *, statistic="pearson", average_by="none",
                       epsilon=0.0, n_resamples=1000, seed=0) -> CorrelationResult:
    """Agreement of one metric with human judgments.

    Parameters
    ----------
    human, metric : object
        array_like, systems x items (2-D) or 1-D
        NaN in ``human`` is a missing judgment: that cell is left out. ``metric`` must be
        finite wherever ``human`` is not NaN.
    statistic : str, optional
        {"pearson", "spearman", "kendall_b", "kendall_c", "kendall_23", "acc23",
        "pairwise_accuracy", "soft_pairwise_accuracy"}
        Formulas in the module docstring. ``pairwise_accuracy`` (Kocmi et al. 2021) is the
        share of pairs ordered (or tied) alike; on system scores (1-D) it is the
        system-level pairwise accuracy. ``soft_pairwise_accuracy`` needs systems x items:
        ``1 - mean |p_h - p_m|`` over system pairs, each p the one-sided paired
        permutation p-value of the summed scores (``n_resamples`` sign flips, ``seed``).
    average_by : {"none", "system", "item"}
        ``none``: one statistic over all cells; ``system``: one per system over its items,
        then the mean; ``item``: one per item over the systems, then the mean.
    epsilon : float >= 0 or "optimal"
        Metric differences ``|delta| <= epsilon`` count as ties (Kendall statistics).
        ``"optimal"`` (tau_23, acc23): tie calibration over every candidate threshold;
        the result's ``epsilon`` gives back ``value`` when passed in.
    n_resamples, seed : int, optional
        Permutations of ``soft_pairwise_accuracy`` only (all ``n_resamples`` of them,
        drawn block by block from the engine's sign-flip plan).

    Returns
    -------
    CorrelationResult
        ``value``, ``epsilon``, ``n`` (pairs for Kendall statistics, cells otherwise),
        ``n_rows`` (rows averaged), ``p_value`` (scipy's for a single row, else NaN).

    Notes
    -----
    Vectorised over rows and pairs of cells (chunks of :data:`PAIR_CHUNK` pairs); no loop
    per item. Values equal mt-metrics-eval's ``stats.Correlation`` methods and
    ``KendallVariants`` / ``KendallWithTiesOpt(sample_rate=1)``.

    References
    ----------
    See the module docstring (Deutsch et al. 2023 for tau_23/acc_23 and tie calibration,
    https://doi.org/10.18653/v1/2023.emnlp-main.798).

    Examples
    --------
    >>> from multistat.meta.evaluation import metric_correlation
    >>> gold, metric = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]
    >>> round(metric_correlation(gold, metric, statistic="kendall_b").value, 3)
    0.316
    >>> r = metric_correlation(gold, metric, statistic="acc23", epsilon="optimal")
    >>> round(r.value, 3), metric_correlation(gold, metric, statistic="acc23",
    ...                                       epsilon=r.epsilon).value == r.value
    (0.7, True)
    """
    statistic = check_choice("statistic", statistic, STATISTICS)
    average_by = check_choice("average_by", average_by, AVERAGES)
    eps = _epsilon(epsilon, statistic)
    h, m = _matrix("human", human), _matrix("metric", metric)
    _check_pair(h, m, "metric")
    if statistic == "soft_pairwise_accuracy":
        if h.shape[0] < 2:
            raise ParameterError("soft_pairwise_accuracy needs systems x items scores "
                                 "(2-D, at least 2 systems)")
        if average_by != "none":
            raise ParameterError("soft_pairwise_accuracy is one system-level value; "
                                 "use average_by='none'")
        n_resamples = check_int("n_resamples", n_resamples, minimum=1)
        value = _soft_pa(h, m, n_resamples, check_seed(seed), "")
        S = h.shape[0]
        return CorrelationResult(value, 0.0, S * (S - 1) // 2, 1, float("nan"), statistic,
                                 average_by)
    hr, mr = _rows(h, average_by), _rows(m, average_by)
    vr = ~np.isnan(hr)
    note = ""
    for who, x in (("the human scores are", hr), ("the metric is", mr)):
        if not note and vr.any() and bool(_constant_rows(x[vr.any(1)],
                                                         vr[vr.any(1)]).all()):
            where = "over the cells" if hr.shape[0] == 1 else f"within every {average_by}"
            note = (f"{who} constant {where} (relative tolerance {CONSTANT_RTOL:g}): no "
                    f"pair is ordered")
    hr, mr = _snap_constant(hr, vr), _snap_constant(mr, vr)
    if eps == "optimal":
        eps = _calibrate(hr, np.where(np.isnan(hr), np.nan, mr), statistic)
    values, n = _rows_stat(hr, mr, statistic, eps)
    value, n_rows = _mean_rows(values)
    p = float("nan")
    if hr.shape[0] == 1 and np.isfinite(value):
        p = _scipy_p(hr[0], mr[0], statistic, eps)
    if note:
        note += (f"; {statistic} is undefined (NaN)" if not np.isfinite(value) else
                 f"; {statistic} is {value:.6g}, its value when every pair is a tie")
    return CorrelationResult(value, float(eps), int(n.sum()), n_rows, p, statistic,
                             average_by, note)


def _scipy_p(h, m, statistic, eps) -> float:
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy import stats

    v = ~np.isnan(h)
    h, m = h[v], m[v]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if statistic == "pearson":
            return float(stats.pearsonr(h, m).pvalue)
        if statistic == "spearman":
            return float(stats.spearmanr(h, m).pvalue)
        if statistic in ("kendall_b", "kendall_c") and eps == 0:
            return float(stats.kendalltau(h, m, variant=statistic[-1]).pvalue)
    return float("nan")


# ----------------------------------------------------------------------------- data
class _Data:
    """Human and metric scores, prepared once for every resampling kernel."""

    def __init__(self, human, metrics: dict, statistic, average_by, eps):
        self.h = _matrix("human", human)
        self.names = list(metrics)
        if len(self.names) < 2:
            raise ParameterError(f"`metrics` needs at least 2 metrics to compare; got "
                                 f"{self.names}")
        ms = []
        for name in self.names:
            m = _matrix(f"metrics[{name!r}]", metrics[name])
            _check_pair(self.h, m, name)
            ms.append(m)
        self.v = ~np.isnan(self.h)
        # constant rows (up to rounding) made exactly constant, in the rows' layout
        self.h = _snap_layout(self.h, self.v, average_by)
        self.m = np.stack([np.where(self.v, _snap_layout(m, self.v, average_by), 0.0)
                           for m in ms])  # (K, S, N)
        self.statistic, self.average_by = statistic, average_by
        self.eps = eps  # one float, or an array per metric
        self.S, self.N = self.h.shape
        self.K = len(self.names)
        ia, ib = np.triu_indices(self.K, 1)
        self.ia, self.ib = ia, ib

    def subset(self, keep) -> _Data:
        """The same data with the metrics ``keep`` only (their epsilons kept)."""
        out = object.__new__(_Data)
        out.__dict__.update(self.__dict__)
        out.names = [self.names[k] for k in keep]
        out.m = self.m[keep]
        out.K = len(keep)
        out.eps = self.eps[keep] if np.ndim(self.eps) else self.eps
        out.ia, out.ib = np.triu_indices(out.K, 1)
        return out

    def eps_of(self, k) -> float:
        return float(self.eps[k]) if np.ndim(self.eps) else float(self.eps)

    def observed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(value (K,), n (K,))`` of every metric."""
        hr = _rows(np.where(self.v, self.h, np.nan), self.average_by)
        vals, ns = np.empty(self.K), np.empty(self.K)
        for k in range(self.K):
            r, n = _rows_stat(hr, _rows(self.m[k], self.average_by), self.statistic,
                              self.eps_of(k))
            vals[k] = _mean_rows(r)[0]
            ns[k] = n.sum()
        return vals, ns


# ----------------------------------------------------------------------------- bootstrap
class _BootKernel:
    """Per-metric statistics ``(Bb, K)`` under a count plan over the items (picklable)."""

    #: the item x statistic columns a plan multiplies (None for the Kendall pair matrices)
    data: np.ndarray | None

    def __init__(self, d: _Data):
        self.statistic, self.average_by, self.K = d.statistic, d.average_by, d.K
        h = np.where(d.v, d.h, np.nan)
        if d.average_by == "item" and d.S > 1:
            # per-item statistics are fixed; a resample reweights the items
            vals = np.stack([_rows_stat(h.T, d.m[k].T, d.statistic, d.eps_of(k))[0]
                             for k in range(d.K)], axis=1)  # (N, K)
            self.mode = "item"
            ok = np.isfinite(vals)
            self.data = np.concatenate([np.where(ok, vals, 0.0), ok], axis=1)  # (N, 2K)
        elif d.statistic == "pearson":
            self.mode = "moments"
            v = d.v.astype(float)
            hc = np.where(d.v, d.h - d.h[d.v].mean(), 0.0)
            cols = [v, hc, hc * hc]
            for k in range(d.K):
                mk = np.where(d.v, d.m[k] - d.m[k][d.v].mean(), 0.0)
                cols += [mk, mk * mk, hc * mk]
            x = np.stack(cols, axis=-1)  # (S, N, 3 + 3K)
            if d.average_by == "none" or d.S == 1:
                x = x.sum(0, keepdims=True)
            self.rows = x.shape[0]
            self.data = np.moveaxis(x, 1, 0).reshape(d.N, -1)  # (N, rows * q)
        elif d.statistic in KENDALL and d.S == 1 and d.statistic != "kendall_c":
            # 1-D scores (e.g. systems): weighted pair counts, c^T F c over the entries
            L = d.N
            need = (4 * d.K + 1) * L * L * 8
            if need > PAIR_MATRIX_BYTES:
                raise ParameterError(
                    f"the bootstrap of {d.statistic} over {L} entries of a 1-D vector with "
                    f"{d.K} metrics needs {need / 2**20:,.0f} MiB of pair matrices (at most "
                    f"{PAIR_MATRIX_BYTES // 2**20} MiB); use fewer metrics per call")
            self.mode = "pairs1d"
            hv = h[0]
            dh = hv[:, None] - hv[None, :]
            valid = ~np.isnan(dh)
            sh = np.sign(np.where(valid, dh, 0.0))
            mats = []
            for k in range(d.K):
                dm = d.m[k][0][:, None] - d.m[k][0][None, :]
                sm = np.where(np.abs(dm) <= d.eps_of(k), 0.0, np.sign(dm))
                zh, zm = valid & (sh == 0), valid & (sm == 0)
                mats += [sh * sm * valid, (zh & zm), zh, zm]
            np.fill_diagonal(valid, False)
            mats.append(valid)
            self.mats = np.stack([np.asarray(x, float) for x in mats])  # (4K+1, L, L)
            for x in self.mats:
                np.fill_diagonal(x, 0.0)
            self.valid_entry = d.v[0].astype(float)
            self.data = None
        else:
            raise ParameterError(
                f"the bootstrap of {d.statistic} with average_by={d.average_by!r} on "
                f"systems x items scores is not supported: it is vectorised for "
                f"average_by='item' (every statistic), Pearson with any averaging, and "
                f"the Kendall statistics but kendall_c on 1-D scores")

    def __call__(self, plan, data=None):
        if self.mode == "item":
            s = plan @ self.data
            with np.errstate(invalid="ignore", divide="ignore"):
                return s[:, :self.K] / s[:, self.K:]
        if self.mode == "moments":
            s = (plan @ self.data).reshape(plan.shape[0], self.rows, -1)
            n, sh, shh = s[..., 0], s[..., 1], s[..., 2]
            out = np.empty((plan.shape[0], self.rows, self.K))
            with np.errstate(invalid="ignore", divide="ignore"):
                for k in range(self.K):
                    sm, smm, shm = s[..., 3 + 3 * k], s[..., 4 + 3 * k], s[..., 5 + 3 * k]
                    cov = shm - sh * sm / n
                    vh = shh - sh * sh / n
                    vm = smm - sm * sm / n
                    r = cov / np.sqrt(vh * vm)
                    tiny = 1e-12 * np.maximum(shh, 1e-300)
                    out[..., k] = np.where((vh > tiny) & (vm > 1e-12 * smm) & (n >= 2),
                                           np.clip(r, -1, 1), np.nan)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return np.nanmean(out, axis=1)
        # pairs1d
        c = plan * self.valid_entry  # (Bb, L)
        dup = (c * (c - 1) / 2).sum(1)  # copies of one entry: tied in both
        q = np.einsum("bl,qlm,bm->bq", c, self.mats, c, optimize=True) / 2
        tot = q[:, -1] + dup
        out = np.empty((plan.shape[0], self.K))
        for k in range(self.K):
            cnt = {"A": q[:, 4 * k], "T": q[:, 4 * k + 1] + dup,
                   "Zh": q[:, 4 * k + 2] + dup, "Zm": q[:, 4 * k + 3] + dup, "tot": tot}
            out[:, k] = _kendall_finish(cnt, self.statistic)
        return out


# ----------------------------------------------------------------------------- PERM-BOTH
class _PermKernel:
    """Null differences ``(Bb, P)`` of every metric pair under PERM-BOTH (picklable).

    The plan is a +-1 matrix over the S x N cells (cell ``s * N + i``); -1 swaps the two
    metrics' z-scored scores in that cell."""

    def __init__(self, d: _Data):
        self.statistic, self.average_by = d.statistic, d.average_by
        self.ia, self.ib, self.K, self.S, self.N = d.ia, d.ib, d.K, d.S, d.N
        v = d.v
        z = np.empty_like(d.m)
        for k in range(d.K):
            x = d.m[k][v]
            sd = x.std()
            z[k] = np.where(v, (d.m[k] - x.mean()) / (sd if sd > 0 else 1.0), 0.0)
        self.z = z
        if d.statistic == "pearson":
            self._init_pearson(d)
        elif d.statistic in LINEAR + ("kendall_b", "kendall_c"):
            self._init_linear(d)
        else:
            raise ParameterError(
                f"PERM-BOTH is vectorised for pearson and the Kendall statistics; for "
                f"{d.statistic} (ranks change with every swap) use test='bootstrap'")

    # Pearson: sign-weighted sums of every metric, pairs formed from them
    def _init_pearson(self, d):
        v = d.v
        rows = {"none": np.zeros_like(v, dtype=int),
                "system": np.broadcast_to(np.arange(d.S)[:, None], v.shape),
                "item": np.broadcast_to(np.arange(d.N)[None, :], v.shape)}[d.average_by]
        self.row = np.ascontiguousarray(rows)
        R = int(rows.max()) + 1
        self.R = R
        # h centred within each row: a row's Pearson needs no sum of h
        hs = np.bincount(rows[v], weights=d.h[v], minlength=R)
        n = np.bincount(rows[v], minlength=R).astype(float)
        hbar = np.divide(hs, n, out=np.zeros(R), where=n > 0)
        hc = np.where(v, d.h - hbar[rows], 0.0)
        self.n = n
        self.shh = np.bincount(rows[v], weights=(hc * hc)[v], minlength=R)
        z = self.z
        # per metric and row: sum z, sum z^2, sum h z (constant parts)
        self.sz = np.stack([np.bincount(rows[v], weights=z[k][v], minlength=R)
                            for k in range(d.K)])
        self.szz = np.stack([np.bincount(rows[v], weights=(z[k] ** 2)[v], minlength=R)
                             for k in range(d.K)])
        self.shz = np.stack([np.bincount(rows[v], weights=(hc * z[k])[v], minlength=R)
                             for k in range(d.K)])
        # sign-weighted columns per cell: z, z^2, h z for every metric: (cells, 3K)
        cols = np.concatenate([z, z * z, hc[None] * z], axis=0)  # (3K, S, N)
        self.cols = np.moveaxis(cols, 0, -1)  # (S, N, 3K)
        self.kind = "pearson"

    def _pearson_null(self, plan):
        Bb, K = plan.shape[0], self.K
        flips = plan.reshape(Bb, self.S, self.N)
        if self.average_by == "none":
            t = (plan @ self.cols.reshape(-1, 3 * K))[:, None, :]  # (Bb, 1, 3K)
            return self._pearson_delta(t, slice(0, 1))
        if self.average_by == "system":
            t = np.einsum("bsn,snk->bsk", flips, self.cols, optimize=True)
            return self._pearson_delta(t, slice(0, self.S))
        # item rows: chunks of items so that (P, Bb, chunk) stays small
        P = len(self.ia)
        step = max(1, (32 * 2**20) // max(1, Bb * P * 8))
        sums = np.zeros((2, P, Bb))
        counts = np.zeros((2, P, Bb))
        for s in range(0, self.N, step):
            sl = slice(s, min(s + step, self.N))
            t = np.einsum("bsn,snk->bnk", flips[:, :, sl], self.cols[:, sl], optimize=True)
            for j, r in enumerate(self._pearson_pair(t, sl)):
                ok = np.isfinite(r)
                r[~ok] = 0.0
                sums[j] += r.sum(-1)
                counts[j] += ok.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = sums / counts
        return (m[0] - m[1]).T

    def _pearson_pair(self, t, sl):
        """Swapped correlations of metric_a' and metric_b' per row, ``(P, Bb, R)`` x 2.

        With u = (a + b)/2, v = (a - b)/2 and signs s: a' = u + s v, b' = u - s v. Pairs
        lead the layout, so that gathering them copies whole contiguous rows."""
        K, ia, ib = self.K, self.ia, self.ib
        t = np.ascontiguousarray(np.moveaxis(t, -1, 0))  # (3K, Bb, R)

        def pair(x, op):  # x (K, ...) -> (P, ...)
            out = np.take(x, ia, axis=0)
            op(out, np.take(x, ib, axis=0), out=out)
            return out

        s_v = pair(t[:K], np.subtract)
        s_v *= 0.5
        s_uv = pair(t[K:2 * K], np.subtract)
        s_uv *= 0.5  # 2 * sum s u v
        s_hv = pair(t[2 * K:], np.subtract)
        s_hv *= 0.5
        n = self.n[sl][None, None, :]
        shh = self.shh[sl][None, None, :]
        su = pair(self.sz[:, sl], np.add)[:, None, :] / 2
        suu_vv = pair(self.szz[:, sl], np.add)[:, None, :] / 2  # sum u^2 + v^2
        shu = pair(self.shz[:, sl], np.add)[:, None, :] / 2
        out = []
        with np.errstate(invalid="ignore", divide="ignore"):
            for sign in (1.0, -1.0):
                sm = su + sign * s_v
                smm = suu_vv + sign * s_uv
                vm = sm
                vm *= sm
                vm /= n
                np.subtract(smm, vm, out=vm)  # sum of squares about the mean
                bad = vm <= 1e-12 * np.maximum(smm, 1e-300)
                vm *= shh
                np.sqrt(vm, out=vm)
                r = shu + sign * s_hv
                r /= vm
                np.clip(r, -1.0, 1.0, out=r)
                bad |= (n < 2) | (shh <= 0)
                r[bad] = np.nan
                out.append(r)
        return out

    def _pearson_delta(self, t, sl):
        r1, r2 = self._pearson_pair(t, sl)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return (np.nanmean(r1, axis=-1) - np.nanmean(r2, axis=-1)).T

    # tau_23 / acc_23 / pairwise accuracy: the swapped difference is affine in the signs
    def _init_linear(self, d):
        v = d.v
        hr = _rows(np.where(v, d.h, np.nan), d.average_by)  # (R, L)
        zr = np.stack([_rows(self.z[k], d.average_by) for k in range(d.K)], -1)  # (R, L, K)
        cell = _rows(np.arange(d.S * d.N).reshape(d.S, d.N), d.average_by)
        R, L = hr.shape
        K = d.K
        if R * L * L * K * K > PERM_KENDALL_LIMIT:
            raise ParameterError(
                f"PERM-BOTH for {d.statistic} with average_by={d.average_by!r} would "
                f"compare {R * L * L * K * K:,} cell-pair x metric-pair cases; use "
                f"average_by='item' (WMT's grouping by item) or fewer metrics")
        acc = d.statistic in ("acc23", "pairwise_accuracy")
        tau = d.statistic in ("kendall_b", "kendall_c")
        tot = np.zeros(R)
        zh = np.zeros(R)
        phi = np.zeros((R, L, K, K))  # Phi[x, y](cell j) = sum_k phi(sh_jk, x_j - y_k)
        step = max(1, PAIR_CHUNK // max(1, L * L * K * K))
        for s in range(0, R, step):
            sl = slice(s, min(s + step, R))
            h = hr[sl]
            dh = h[:, :, None] - h[:, None, :]  # (r, L, L)
            valid = ~np.isnan(dh)
            valid &= ~np.eye(L, dtype=bool)[None]
            sh = np.sign(np.where(valid, dh, 0.0))
            zz = zr[sl]
            zj, zk = zz[:, :, None, :, None], zz[:, None, :, None, :]
            gt, lt = zj > zk, zj < zk  # (r, L, L, K, K): x at cell j against y at cell k
            up, down = (sh > 0)[..., None, None], (sh < 0)[..., None, None]
            good = (gt & up) | (lt & down)
            if tau:  # concordant minus discordant; no metric tie can arise (checked)
                tie = ~(gt | lt) & valid[..., None, None]
                if tie.any():
                    raise ParameterError(
                        f"PERM-BOTH for {d.statistic}: the metrics' z-scores tie within a "
                        f"row (or across two metrics), so a swap can change the tie "
                        f"counts and the statistic is not linear in the swaps; use "
                        f"kendall_23 or acc23 (ties are part of them), or test='bootstrap'")
                phi[sl] = (good.sum(2, dtype=np.int32)
                           - ((lt & up) | (gt & down)).sum(2, dtype=np.int32))
            else:
                good |= ~(gt | lt) & ((sh == 0) & valid)[..., None, None]
                good &= valid[..., None, None]
                cnt = good.sum(2, dtype=np.int32)
                phi[sl] = cnt if acc else 2 * cnt - valid.sum(2)[..., None, None]
            tot[sl] = valid.sum((1, 2)) / 2
            zh[sl] = (valid & (sh == 0)).sum((1, 2)) / 2
        # a row's weight: 1 / the denominator of its statistic (fixed under swaps)
        with np.errstate(invalid="ignore", divide="ignore"):
            if d.statistic == "kendall_b":
                denom = np.sqrt(tot * (tot - zh))
            elif d.statistic == "kendall_c":
                vr = ~np.isnan(hr)
                n = vr.sum(1).astype(float)
                c = np.minimum(n, _distinct(hr, vr))  # no metric ties: n distinct values
                denom = np.where(c > 1, n ** 2 * (c - 1) / c / 2, 0.0)
            else:
                denom = tot
        ok = (tot > 0) & (denom > 0) & (zh < tot if tau else True)
        w = np.where(ok, 1.0 / np.where(ok, denom, 1.0), 0.0) / max(int(ok.sum()), 1)
        ia, ib = self.ia, self.ib
        # per cell and pair: g = w (Phi[b,a] - Phi[a,a] - Phi[a,b] + Phi[b,b])
        g = w[:, None, None] * (phi[..., ib, ia] - phi[..., ia, ia] - phi[..., ia, ib]
                                + phi[..., ib, ib])  # (R, L, P)
        const = (w[:, None, None] * (phi[..., ia, ia] - phi[..., ib, ib])).sum((0, 1)) / 2
        coef = np.zeros((d.S * d.N, len(ia)))
        coef[cell.ravel()] = g.reshape(R * L, -1)
        # delta(w) = const + sum_cells w g, w = (1 - s) / 2 (s = -1 swaps)
        self.const = const + coef.sum(0) / 2
        self.coef = -coef / 2
        self.kind = "linear"

    def __call__(self, plan, data=None):
        if self.kind == "pearson":
            return self._pearson_null(plan)
        return self.const[None, :] + plan @ self.coef


# ----------------------------------------------------------------------------- pairwise permutation
class _PairPermKernel:
    """Null differences ``(Bb, P)`` of every metric pair under the pairwise permutation
    test (mt-metrics-eval's ``PairwisePermutationSigDiff``, ``perm_test="pairs"``;
    picklable).

    The units are the pairs of valid cells within a row. A unit's outcome for metric k is
    whether the metric orders (or ties, with its own epsilon) the two cells as the human
    scores do: ``c = 1`` if so, else 0 (acc_23, pairwise accuracy), or ``2c - 1``
    (tau_23). The statistic is ``sum_u w_u c_ku`` with ``w_u = 1 / (pairs of the unit's
    row) / (rows)``. Swapping the two metrics' outcomes of unit u with probability 1/2
    gives the swapped difference ``sum_u s_u w_u (c_au - c_bu)`` (``s_u = -1`` swaps):
    per metric the product of the sign-flip plan with the weighted outcomes, pairs last."""

    def __init__(self, d: _Data):
        if d.statistic not in LINEAR:
            raise ParameterError(
                f"the pairwise permutation test (perm-pairs) swaps the outcomes of pairwise "
                f"comparisons, which defines {', '.join(LINEAR)} (a sum over pairs); for "
                f"{d.statistic} use test='perm-both' or 'bootstrap'")
        hr = _rows(np.where(d.v, d.h, np.nan), d.average_by)  # (R, L)
        R, L = hr.shape
        iu, ju = np.triu_indices(L, 1)
        tot = _PairPermKernel.units(d)
        units = int(tot.sum())
        ok = tot > 0
        w_row = np.where(ok, 1.0 / np.maximum(tot, 1), 0.0) / max(int(ok.sum()), 1)
        acc = d.statistic != "kendall_23"
        self.coef = np.empty((units, d.K))
        self.ia, self.ib = d.ia, d.ib
        step = max(1, PAIR_CHUNK // max(1, len(iu)))
        pos = 0
        for s in range(0, R, step):
            sl = slice(s, min(s + step, R))
            dh = hr[sl][:, iu] - hr[sl][:, ju]
            valid = ~np.isnan(dh)
            sh = np.sign(dh[valid])
            w = np.broadcast_to(w_row[sl, None], dh.shape)[valid]
            stop = pos + len(sh)
            for k in range(d.K):
                mr = _rows(d.m[k], d.average_by)[sl]
                dm = (mr[:, iu] - mr[:, ju])[valid]
                sm = np.where(np.abs(dm) <= d.eps_of(k), 0.0, np.sign(dm))
                good = (sh == sm).astype(float)  # concordant, or tied in both
                self.coef[pos:stop, k] = w * (good if acc else 2.0 * good - 1.0)
            pos = stop
        self.n_units = units

    @staticmethod
    def units(d: _Data) -> np.ndarray:
        """Pairs of valid cells per row; refuses (before any work) more than
        :data:`PERM_PAIRS_LIMIT` pairs x metrics."""
        n = _rows(d.v, d.average_by).sum(1).astype(np.int64)
        tot = n * (n - 1) // 2
        units = int(tot.sum())
        if units * (d.K + 2) > PERM_PAIRS_LIMIT:
            raise ParameterError(
                f"the pairwise permutation test for {d.statistic} with average_by="
                f"{d.average_by!r} would hold {units:,} pairs of cells x {d.K} metrics; use "
                f"average_by='item' (WMT's grouping by item) or fewer metrics")
        return tot

    def __call__(self, plan, data=None):
        t = plan @ self.coef  # (Bb, K): per metric first
        return t[:, self.ia] - t[:, self.ib]  # pairs last


# ----------------------------------------------------------------------------- Williams
def _williams(d: _Data, alternative: str) -> np.ndarray:
    """Williams' test of r(h, a) = r(h, b) with r(a, b) known (Pearson over the valid
    cells): t = (r_ha - r_hb) sqrt((n - 1)(1 + r_ab)) / sqrt(2 (n - 1)/(n - 3) |R| +
    rbar^2 (1 - r_ab)^3), n - 3 degrees of freedom (Graham & Baldwin 2014, eq. 1)."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy import stats

    if d.statistic != "pearson" or d.average_by != "none":
        raise ParameterError(f"Williams' test compares Pearson correlations over one set "
                             f"of cells: use statistic='pearson', average_by='none' (got "
                             f"{d.statistic!r}, {d.average_by!r})")
    v = d.v
    n = int(v.sum())
    if n < 4:
        raise DataValidationError(f"Williams' test needs at least 4 cells with human "
                                  f"judgments; got {n}")
    x = np.stack([d.h[v]] + [d.m[k][v] for k in range(d.K)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = np.corrcoef(x)
    r1, r2, r12 = r[0, 1 + d.ia], r[0, 1 + d.ib], r[1 + d.ia, 1 + d.ib]
    det = 1 - r1 ** 2 - r2 ** 2 - r12 ** 2 + 2 * r1 * r2 * r12
    rbar = (r1 + r2) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (r1 - r2) * np.sqrt((n - 1) * (1 + r12)) / np.sqrt(
            2 * (n - 1) / (n - 3) * det + rbar ** 2 * (1 - r12) ** 3)
    if alternative == "greater":
        return stats.t.sf(t, n - 3)
    if alternative == "less":
        return stats.t.cdf(t, n - 3)
    return np.minimum(1.0, 2 * stats.t.sf(np.abs(t), n - 3))


# ----------------------------------------------------------------------------- public: pairs
def _metrics_mapping(human, metrics):
    """``(human array, {name: array}, dataset name)`` from arrays or a one-dataset study."""
    if hasattr(metrics, "children") or hasattr(metrics, "data_vars"):
        # heavy: xarray, lazily
        from multistat import cube

        dsets = cube.datasets(metrics)
        if len(dsets) != 1:
            raise ParameterError(f"compare_metrics takes a study of one dataset; this one "
                                 f"has {list(dsets)}: use meta_evaluate for several")
        (name, ds), = dsets.items()
        names = [str(m) for m in ds.metric.values]
        if not isinstance(human, str) or human not in names:
            raise ParameterError(f"with a study, `human` must name one of its metrics "
                                 f"{names}; got {human!r}")
        score = np.asarray(ds["score"].values, float)
        return (score[:, names.index(human)],
                {m: score[:, j] for j, m in enumerate(names) if m != human}, name)
    if not isinstance(metrics, dict):
        raise ParameterTypeError(f"`metrics` must be a mapping name -> scores or a study; "
                                 f"got {type(metrics).__name__}")
    return human, {str(k): v for k, v in metrics.items()}, ""


def _iv(statistic, average_by, test, n_resamples, seed, alternative, correction, alpha,
        confidence_level, epsilon):
    statistic = check_choice("statistic", statistic, STATISTICS)
    if statistic == "soft_pairwise_accuracy":
        raise ParameterError("soft_pairwise_accuracy is itself built from permutation "
                             "tests; comparing metrics by it is not supported (it would "
                             "nest one permutation test in another)")
    average_by = check_choice("average_by", average_by, AVERAGES)
    test = check_choice("test", test, TESTS + ("auto",))
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    seed = check_seed(seed)
    alternative = check_alternative(alternative)
    if correction in (None, "none"):
        correction = None
    else:
        correction = check_choice("correction", correction, METHODS)
    alpha = check_probability("alpha", alpha)
    confidence_level = check_probability("confidence_level", confidence_level)
    eps = _epsilon(epsilon, statistic)
    if test == "auto":
        test = _auto_test(statistic, eps)
    if test == "perm-both" and eps != 0:
        raise ParameterError(
            "PERM-BOTH swaps z-scored scores between two metrics, so a tie threshold in "
            "one metric's units does not apply to the swapped scores: use epsilon=0 with "
            "test='perm-both', or test='perm-pairs' / 'bootstrap' (each metric keeps its "
            "own threshold)")
    if test == "perm-pairs" and statistic not in LINEAR:
        raise ParameterError(
            f"test='perm-pairs' swaps the outcomes of pairwise comparisons, which defines "
            f"{', '.join(LINEAR)}; got statistic={statistic!r}: use test='perm-both' or "
            f"'bootstrap'")
    return (statistic, average_by, test, n_resamples, seed, alternative, correction, alpha,
            confidence_level, eps)


def _auto_test(statistic: str, eps) -> str:
    """The test WMT uses: the pairwise permutation where a tie threshold is used
    (tau_23, acc_23, pairwise accuracy with epsilon != 0 or "optimal"), PERM-BOTH
    otherwise; the bootstrap for tau_b with a threshold (neither permutation applies)."""
    if eps == 0:
        return "perm-both"
    return "perm-pairs" if statistic in LINEAR else "bootstrap"


def compare_metrics(human, metrics, *, statistic="pearson", average_by="none",
                    test="auto", n_resamples=1000, seed=0, alternative="two-sided",
                    correction="holm", epsilon=0.0, alpha=0.05, confidence_level=0.95,
                    scheduler="threads") -> pd.DataFrame:
    """Every pair of metrics: does metric a agree with the humans better than metric b?

    Parameters
    ----------
    human : array_like or str
        array_like (systems x items, or 1-D), or the name of the human metric when
        ``metrics`` is a study
    metrics : mapping or xarray.DataTree
        mapping name -> array_like of ``human``'s shape, or a study of one dataset
    statistic, average_by, epsilon : str, optional
        as in :func:`metric_correlation`
        (``epsilon="optimal"``: each metric calibrated once on the observed scores and
        kept through the resamples; bootstrap only)
    test : {"auto", "perm-both", "perm-pairs", "bootstrap", "williams"}
        ``auto`` (default): what WMT23/24 use: ``perm-pairs`` where a tie threshold is
        used (tau_23, acc_23, pairwise accuracy with ``epsilon`` != 0 or "optimal"),
        ``perm-both`` otherwise (``bootstrap`` for tau_b with a threshold).
        ``perm-pairs`` (mt-metrics-eval's ``PairwisePermutationSigDiff``,
        ``perm_test="pairs"``): the units are the pairs of cells within a row; each
        pair's comparison outcome (ordered or tied as the humans do, or not, each metric
        with its own epsilon) is swapped between the two metrics with probability 1/2, so
        that each metric keeps its own (calibrated) tie threshold; for tau_23, acc_23 and
        pairwise accuracy.
        ``perm-both`` (Deutsch et al. 2021, mt-metrics-eval's ``PermutationSigDiff``):
        both metrics z-scored over the valid cells, each cell's pair of scores swapped
        with probability 1/2 (the engine's sign-flip plan over the cells); the null of
        ``delta`` is its value over the swapped scores. ``bootstrap``: items drawn with
        replacement (the engine's bootstrap plan), both metrics' statistics recomputed
        on each resample; percentile interval of ``delta`` and the p-value of the centred
        bootstrap distribution. ``williams``: Williams' t test for dependent Pearson
        correlations sharing the human scores (``statistic="pearson"``,
        ``average_by="none"``); closed form, no resampling.
    n_resamples, seed : int, optional
        the shared plans (keyed by seed; the dataset name for studies)
    alternative : {"two-sided", "greater", "less"}
        On ``delta = value_a - value_b``; ``"greater"``: metric a agrees better.
    correction : str, optional
        a :mod:`multistat.correct` method over all pairs, or "none"
    alpha, confidence_level : float, optional
        level of ``reject`` and of the bootstrap interval
    scheduler : str, optional
        As in :func:`multistat.compare` (resample blocks run concurrently).

    Returns
    -------
    pandas.DataFrame
        One row per pair (``metric_a`` before ``metric_b`` in the given order):
        ``value_a, value_b, delta``; ``ci_low, ci_high`` (bootstrap interval of ``delta``,
        NaN for the other tests); ``p_value`` ((b + 1)/(B + 1), Phipson & Smyth 2010;
        two-sided PERM-BOTH counts ``|null| >= |delta|``, its null being symmetric),
        ``p_adjusted``, ``reject``; ``p_one_sided`` (the one-sided p-value that the metric
        with the larger value agrees better, whatever ``alternative``: the entry of
        mt-metrics-eval's significance matrix, which the WMT cluster rule reads);
        ``test`` (the test run, ``auto`` resolved), ``statistic, average_by,
        alternative``; ``n``
        (pairs or cells of metric a's statistic), ``n_resamples, seed``.

    Notes
    -----
    PERM-BOTH is vectorised for Pearson (any averaging) and for the Kendall statistics
    (rows of few cells, e.g. ``average_by="item"`` or 1-D system scores; tau_b and tau_c
    only when no metric z-scores tie within a row, else a clear error); Spearman (whose
    ranks change with every swap) is compared with the bootstrap. mt-metrics-eval
    reports ``count / B`` without the +1 and only the one-sided p of metric b beating
    metric a; the difference is within Monte Carlo error. The pairwise permutation's
    null is a lattice (multiples of one over the pairs per row times the rows) with an
    atom at ``delta`` that can hold a few percent of the mass: multistat counts those
    ties as at least as extreme (within a relative 1e-12, as scipy), mt-metrics-eval
    compares two floating-point sums, so that its p lies between the strict and the
    tied tail of the same null.

    References
    ----------
    D. Deutsch, R. Dror and D. Roth (2021), TACL 9, https://doi.org/10.1162/tacl_a_00417;
    Y. Graham and T. Baldwin (2014), EMNLP, https://doi.org/10.3115/v1/D14-1020.

    Examples
    --------
    >>> import numpy as np
    >>> from multistat.meta.evaluation import compare_metrics
    >>> rng = np.random.default_rng(1)
    >>> human = rng.normal(size=(6, 200))
    >>> good, bad = human + rng.normal(size=human.shape), rng.normal(size=human.shape)
    >>> t = compare_metrics(human, {"good": good, "bad": bad}, statistic="pearson",
    ...                     n_resamples=999, alternative="greater", correction="none")
    >>> float(t["p_value"].iloc[0])
    0.001
    """
    human, metrics, key = _metrics_mapping(human, metrics)
    args = _iv(statistic, average_by, test, n_resamples, seed, alternative, correction,
               alpha, confidence_level, epsilon)
    table, _ = _compare(human, metrics, *args, key=key, scheduler=scheduler)
    return table


def _prepare(human, metrics, statistic, average_by, eps) -> _Data:
    d = _Data(human, metrics, statistic, average_by, 0.0)
    if d.S == 1 and average_by != "none":
        raise ParameterError(f"1-D scores form one row: use average_by='none' (got "
                             f"{average_by!r})")
    if eps == "optimal":
        hr = _rows(np.where(d.v, d.h, np.nan), average_by)
        d.eps = np.array([_calibrate(hr, np.where(np.isnan(hr), np.nan,
                                                  _rows(d.m[k], average_by)), statistic)
                          for k in range(d.K)])
    else:
        d.eps = eps
    return d


def _compare(human, metrics, statistic, average_by, test, n_resamples, seed, alternative,
             correction, alpha, confidence_level, eps, *, key="", scheduler="threads",
             boot=None, prepared=None):
    """The pair table and the per-metric bootstrap distribution ``(B, K)`` (if drawn);
    ``prepared``: the :func:`_prepare` of these arguments, if the caller has it (tie
    calibration is not repeated)."""

    d = prepared if prepared is not None else _prepare(human, metrics, statistic,
                                                       average_by, eps)
    if test == "perm-pairs":
        _PairPermKernel.units(d)  # its size is checked before any work
    values, ns = d.observed()
    delta = values[d.ia] - values[d.ib]
    P = len(d.ia)
    ci_low = np.full(P, np.nan)
    ci_high = np.full(P, np.nan)
    dist = None
    # the one-sided p of the metric with the larger value agreeing better: the entry of
    # mt-metrics-eval's significance matrix that the WMT cluster rule reads
    up = np.where(delta >= 0, "greater", "less")
    if test == "williams":
        p = _williams(d, alternative)
        p1 = np.where(delta >= 0, _williams(d, "greater"), _williams(d, "less"))
    elif test == "bootstrap":
        dist = boot if boot is not None else eng.resample(
            "bootstrap", _BootKernel(d), None, n=d.N, n_resamples=n_resamples, seed=seed,
            dataset=key, scheduler=scheduler)
        dd = eng.pair_differences(dist, d.ia, d.ib)  # (B, P)
        q = (1 - confidence_level) / 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ci_low, ci_high = np.nanquantile(dd, [q, 1 - q], axis=0)
        p = eng.pvalues_from_null(dd - delta, delta, alternative)
        p1 = np.where(up == "greater", eng.pvalues_from_null(dd - delta, delta, "greater"),
                      eng.pvalues_from_null(dd - delta, delta, "less"))
        ok = np.isfinite(delta) & np.isfinite(dd).all(0)
        p, p1 = np.where(ok, p, np.nan), np.where(ok, p1, np.nan)
    else:
        # metrics whose statistic is undefined (a constant metric) take no part in the
        # null: their pairs get NaN p-values, the other pairs' nulls are unchanged
        keep = np.flatnonzero(np.isfinite(values))
        null = np.full((n_resamples, P), np.nan)
        if len(keep) >= 2:
            sub = d.subset(keep) if len(keep) < d.K else d
            if test == "perm-pairs":
                kernel = _PairPermKernel(sub)
                n_units = kernel.n_units
            else:
                kernel, n_units = _PermKernel(sub), sub.S * sub.N
            part = eng.resample("permutation", kernel, None, n=n_units,
                                n_resamples=n_resamples, seed=seed, dataset=key,
                                scheduler=scheduler)
            where = {(a, b): j for j, (a, b) in enumerate(zip(d.ia, d.ib))}
            null[:, [where[keep[a], keep[b]] for a, b in zip(sub.ia, sub.ib)]] = part
        p = eng.pvalues_from_null(null, delta, alternative, symmetric=True)
        p1 = np.where(up == "greater", eng.pvalues_from_null(null, delta, "greater"),
                      eng.pvalues_from_null(null, delta, "less"))
        p, p1 = (np.where(np.isfinite(delta), x, np.nan) for x in (p, p1))
    p_adj, reject = adjust_groups(np.asarray(p, float), np.zeros(P, int),
                                  method=correction, alpha=alpha)
    names = np.asarray(d.names, dtype=object)
    table = pd.DataFrame({
        "metric_a": names[d.ia], "metric_b": names[d.ib], "value_a": values[d.ia],
        "value_b": values[d.ib], "delta": delta, "ci_low": ci_low, "ci_high": ci_high,
        "p_value": p, "p_adjusted": p_adj, "reject": reject, "p_one_sided": p1,
        "test": test,
        "statistic": statistic, "average_by": average_by, "alternative": alternative,
        "n": ns[d.ia].astype(int), "n_resamples": 0 if test == "williams" else n_resamples,
        "seed": seed if isinstance(seed, int) else str(seed)})
    table = table[list(PAIR_COLUMNS)]
    table.attrs["multistat"] = {
        "kind": "metric_comparison", "test": test, "statistic": statistic,
        "average_by": average_by, "alternative": alternative,
        "correction": correction or "none", "alpha": alpha,
        "epsilon": (list(map(float, d.eps)) if np.ndim(d.eps) else float(d.eps)),
        "n_resamples": n_resamples, "seed": seed if isinstance(seed, int) else str(seed)}
    return table, (dist, values, ns, d)


# ----------------------------------------------------------------------------- study path
class _SystemBootKernel:
    """Per-metric system-level statistics ``(Bb, K)`` under a count plan over the items:
    every system's human mean over its judged items and each metric's mean over the same
    items, then the statistic over the systems in every resample (picklable)."""

    def __init__(self, d: _Data, statistic: str, eps):
        self.statistic, self.K, self.eps = statistic, d.K, eps
        v = d.v.astype(float)
        self.data = np.concatenate([v, np.where(d.v, d.h, 0.0)] + list(d.m))  # ((2+K)S, N)
        self.S = d.S

    def __call__(self, plan, data=None):
        s = (plan @ self.data.T).reshape(plan.shape[0], 2 + self.K, self.S)
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(s[:, 0] > 0, s[:, 0], np.nan)
            h = s[:, 1] / w
            out = np.empty((plan.shape[0], self.K))
            for k in range(self.K):
                e = float(self.eps[k]) if np.ndim(self.eps) else float(self.eps)
                out[:, k] = _rows_stat(h, s[:, 2 + k] / w, self.statistic, e)[0]
        return out


def _system_scores(h: np.ndarray, ms: dict) -> tuple[np.ndarray, dict]:
    """A system's human mean over the items it has judgments for, and each metric's mean
    over the same items (NaN for a system without judgments).

    Each mean is taken about the score's first judged cell (``x0 + mean(x - x0)``), so the
    mean of a constant is that constant exactly, whatever the number of items: plain
    means over 97 and 100 copies of 0.1 differ in the last bit, and a metric constant per
    segment would get system scores ordered by rounding noise."""
    v = ~np.isnan(h)
    n = v.sum(1)
    first = np.argmax(v, axis=1)
    rows = np.arange(h.shape[0])

    def mean(x):
        x0 = x[rows, first]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, x0 + np.where(v, x - x0[:, None], 0.0).sum(1) / n,
                            np.nan)

    return mean(h), {k: mean(m) for k, m in ms.items()}


def wmt_clusters(order, ia, ib, delta, p_one_sided, alpha=0.05) -> np.ndarray:
    """Significance clusters of metrics by mt-metrics-eval's rule (WMT's rank groups).

    Metrics are taken in ``order`` (best first). Going down the list, a new cluster
    starts at metric ``i`` as soon as some metric from the first of the current cluster
    down to ``i - 1`` is significantly better than ``i``: one-sided p ``<= alpha``
    (mt-metrics-eval ``data.AssignRanks``). A metric can thus share a cluster with one
    it is not significantly worse than while a metric above that one beats it, and the
    boundary is placed where the first such decision falls. multistat's stricter rule
    (:func:`multistat.leaderboard.ranking.clusters`, ``cluster_rule="strict"`` in
    :func:`meta_evaluate`) draws a boundary only where *every* metric above beats
    *every* metric below.

    Parameters
    ----------
    order : array_like of int
        Positions of the metrics, best first (e.g. by decreasing value, ties by name).
    ia, ib : array_like of int
        The metric pairs ``(a, b)`` of ``delta`` and ``p_one_sided``.
    delta : array_like of float
        ``value_a - value_b`` per pair: its sign says which metric is the better one.
    p_one_sided : array_like of float
        Per pair, the one-sided p-value that the metric with the larger value agrees
        better (``compare_metrics``' ``p_one_sided``, corrected or not); NaN is never
        significant.
    alpha : float
        A p-value ``<= alpha`` is significant.

    Returns
    -------
    numpy.ndarray of int
        The cluster of every metric (1 = top), in the metrics' own order.

    Examples
    --------
    Three metrics in order a > b > c: a beats c (p = 0.01), no other pair is
    significant. The WMT rule starts a new cluster at c; the strict rule cannot (b does
    not beat c):

    >>> from multistat.meta.evaluation import wmt_clusters
    >>> wmt_clusters([0, 1, 2], [0, 0, 1], [1, 2, 2], [0.1, 0.2, 0.1],
    ...              [0.3, 0.01, 0.2]).tolist()
    [1, 1, 2]
    """
    order = np.asarray(order, int)
    ia, ib = np.asarray(ia, int), np.asarray(ib, int)
    delta = np.asarray(delta, float)
    p = np.asarray(p_one_sided, float)
    K = len(order)
    sig = np.zeros((K, K), bool)  # sig[x, y]: x significantly better than y
    hit = p <= alpha  # NaN is never significant
    a_up = delta >= 0
    sig[ia[hit & a_up], ib[hit & a_up]] = True
    sig[ib[hit & (delta <= 0)], ia[hit & (delta <= 0)]] = True
    ranks = np.empty(K, int)
    current, start = 1, 0
    for i in range(K):
        if sig[order[start:i], order[i]].any():
            current, start = current + 1, i
        ranks[order[i]] = current
    return ranks


def _constant_notes(h, ms, level, average_by, statistic, values) -> list[str]:
    """A note for each metric (and the human scores) constant wherever a statistic is
    computed: at system level over the system scores, at segment level in every row."""
    def constant(x, v):
        if level == "system":
            hs, xs = _system_scores(h, {"x": x})
            ok = ~np.isnan(hs)
            return bool(ok.any() and _constant_rows(xs["x"][None], ok[None])[0])
        r, vr = _rows(x, average_by), _rows(v, average_by)
        keep = vr.any(1)
        return bool(keep.any() and _constant_rows(r[keep], vr[keep]).all())

    v = ~np.isnan(h)
    where = "over the systems" if level == "system" else (
        "over the judged cells" if average_by == "none" else f"within every {average_by}")
    human_const = constant(np.where(v, h, 0.0), v)
    out = []
    for (m, x), val in zip(ms.items(), values):
        if not constant(x, v) and not human_const:
            out.append("")
            continue
        what = "the human scores are" if human_const else "the metric is"
        res = ("undefined (NaN)" if not np.isfinite(val) else
               f"{val:.6g}, its value when every pair is a metric tie")
        out.append(f"{what} constant {where} (relative tolerance {CONSTANT_RTOL:g}): "
                   f"{statistic} is {res}")
    return out


def meta_evaluate(study, human, *, metrics=None, level="segment", statistic="pearson",
                  average_by="item", epsilon=0.0, test="auto", n_resamples=1000,
                  seed=0, alpha=0.05, correction="auto", confidence_level=0.95,
                  datasets=None, scheduler="threads", cluster_rule="wmt") -> pd.DataFrame:
    """A leaderboard of metrics per dataset: agreement with the human metric, intervals,
    ranks and significance clusters.

    Parameters
    ----------
    study : xarray.DataTree or path
        A study or a path :func:`multistat.load` reads. Human judgments may be missing
        for some system x instance cells (NaN; read with ``missing="keep"``): those
        cells are left out.
    human : str
        Name of the human metric in the study; every other metric (or ``metrics``) is
        evaluated against it in every dataset that has it.
    metrics : list of str, optional
        The metrics to evaluate (default: every metric but ``human``).
    level : {"segment", "system"}
        ``segment``: the statistic over the system x instance scores with ``average_by``
        (default ``"item"``: per instance over the systems, then the mean, WMT's
        grouping). ``system``: one score per system — the human mean over the instances
        the system has judgments for, each metric's mean over the same instances — and
        the statistic over the systems (``average_by`` is not used).
    statistic, average_by, epsilon : str, optional
        As in :func:`metric_correlation`.
    test : str, optional
        The pairwise test behind the clusters (:func:`compare_metrics`; ``"auto"``:
        ``perm-pairs`` with a tie threshold, as WMT23/24, else ``perm-both``; at system
        level PERM-BOTH swaps system scores, as mt-metrics-eval does).
    n_resamples, seed : int, optional
        The shared plans of each dataset.
    alpha, correction : float, optional
        The pairwise decisions (all pairs of one dataset form a family).
        ``correction="auto"``: none with ``cluster_rule="wmt"`` (as WMT), Holm with
        ``"strict"``.
    cluster_rule : {"wmt", "strict"}
        ``"wmt"`` (default; mt-metrics-eval's ``AssignRanks``, WMT's rank groups): sort
        by value; a new cluster starts at a metric as soon as some metric from the first
        of the current cluster on beats it with a one-sided p (``p_one_sided``, after
        ``correction``) ``<= alpha`` (:func:`wmt_clusters`). ``"strict"`` (multistat's
        own, the rule of :func:`multistat.rank`): a boundary between sorted positions i
        and i + 1 only where every metric above is significantly better than every metric
        below, on the two-sided corrected decisions (``reject``); it never splits more
        than the WMT rule on the same decisions, and often less (three metrics where only
        the first beats the third: WMT [1, 1, 2], strict [1, 1, 1]).
    confidence_level : float, optional
        Of the bootstrap interval of each metric's value.
    datasets : optional
        Restrict to these datasets.
    scheduler : str, optional
        As in :func:`multistat.compare`.

    Returns
    -------
    pandas.DataFrame
        One row per dataset x metric, best first: ``value`` (the statistic), ``ci_low,
        ci_high`` (percentile interval over the shared bootstrap plan of the items; at
        system level the system means are recomputed in every resample), ``rank`` (1 =
        best, ties averaged), ``cluster`` (by ``cluster_rule``), ``n`` (pairs or
        cells), ``level, statistic, average_by``, and ``note`` (why the value is NaN or
        the tie value when the metric or the human scores are constant wherever the
        statistic is computed, up to :data:`CONSTANT_RTOL`; a
        :class:`~multistat.errors.ConstantInputWarning` says so too; else "").
        ``attrs["multistat"]`` holds the settings.

    References
    ----------
    WMT metrics shared task clusters (Freitag et al. 2023, "Results of WMT23 Metrics
    Shared Task", https://doi.org/10.18653/v1/2023.wmt-1.51); tests as in
    :func:`compare_metrics`.

    Examples
    --------
    >>> import multistat
    >>> from multistat.meta.evaluation import meta_evaluate
    >>> from multistat.demo import demo_frame
    >>> study = multistat.from_frame(demo_frame())
    >>> board = meta_evaluate(study, "likert", datasets=["newstest"], level="system",
    ...                       statistic="kendall_b", n_resamples=200)
    >>> list(board.columns[:4])
    ['dataset', 'metric', 'level', 'statistic']
    """
    board, _, _ = _meta_evaluation(
        study, human, metrics=metrics, level=level, statistic=statistic,
        average_by=average_by, epsilon=epsilon, test=test, n_resamples=n_resamples,
        seed=seed, alpha=alpha, correction=correction, confidence_level=confidence_level,
        datasets=datasets, scheduler=scheduler, cluster_rule=cluster_rule)
    return board


def _meta_evaluation(study, human, *, metrics=None, level="segment", statistic="pearson",
                    average_by="item", epsilon=0.0, test="auto", n_resamples=1000,
                    seed=0, alpha=0.05, correction="auto", confidence_level=0.95,
                    datasets=None, scheduler="threads", cluster_rule="wmt"
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`meta_evaluate`'s board, the pair table (:func:`compare_metrics` columns
    with ``dataset``) and the Pearson correlations between the metrics (and the human
    scores) over the judged cells (``dataset, metric_a, metric_b, correlation``; at system
    level over the system scores), which the report draws as a heatmap."""
    # heavy: xarray, lazily
    from multistat import cube

    # heavy: xarray, scipy.special, lazily
    from multistat.comparison import study_hash

    # heavy: xarray, lazily
    from multistat.leaderboard.ranking import better_matrix, clusters, point_ranks, score_order

    if not hasattr(study, "children"):
        study = cube.load(study)
    level = check_choice("level", level, LEVELS)
    cluster_rule = check_choice("cluster_rule", cluster_rule, CLUSTER_RULES)
    if correction == "auto":  # WMT's clusters read uncorrected p-values
        correction = "none" if cluster_rule == "wmt" else "holm"
    if level == "system":
        average_by = "none"
    args = _iv(statistic, average_by, test, n_resamples, seed, alternative="two-sided",
               correction=correction, alpha=alpha, confidence_level=confidence_level,
               epsilon=epsilon)
    statistic, average_by, test, n_resamples, seed = args[:5]
    correction = args[6]
    if not isinstance(human, str):
        raise ParameterTypeError(f"`human` must be the name of a metric; got {human!r}")
    dsets, _ = cube.select(study, datasets=datasets)
    boards, pair_tables, mats = [], [], []
    for name, ds in dsets.items():
        names = [str(m) for m in ds.metric.values]
        if human not in names:
            if datasets is not None:
                raise ParameterError(f"dataset {name!r} has no metric {human!r}; it has "
                                     f"{names}")
            continue
        chosen = [m for m in names if m != human] if metrics is None else list(metrics)
        unknown = [m for m in chosen if m not in names]
        if unknown:
            raise ParameterError(f"`metrics`: dataset {name!r} has no metric(s) {unknown}; "
                                 f"it has {names}")
        if human in chosen:
            raise ParameterError(f"`metrics` includes the human metric {human!r}")
        score = np.asarray(ds["score"].values, float)
        h = score[:, names.index(human)]
        ms = {m: score[:, names.index(m)] for m in chosen}
        for m, x in ms.items():
            _check_pair(h, x, m, where=lambda s, i, ds=ds, name=name: (
                f"dataset {name!r}, system {str(ds.system.values[s])!r}, instance "
                f"{str(ds.instance.values[i])!r}"))
        if not (~np.isnan(h)).any():
            raise DataValidationError(f"dataset {name!r}: no human judgments in {human!r}")
        boot = None
        if level == "segment":
            d = _prepare(h, ms, statistic, average_by, args[-1])
            boot = eng.resample("bootstrap", _BootKernel(d), None, n=d.N,
                                n_resamples=n_resamples, seed=seed, dataset=name,
                                scheduler=scheduler)
            table, (_, values, ns, d) = _compare(h, ms, *args, key=name, scheduler=scheduler,
                                                 boot=boot if test == "bootstrap" else None,
                                                 prepared=d)
            v = ~np.isnan(h)
            cols = [h[v]] + [ms[m][v] for m in chosen]
        else:
            eps_sys = args[-1]
            # the cells' data for the bootstrap over items; its own epsilon is unused (the
            # kernel takes eps_sys): "optimal" is calibrated on the system scores below,
            # never on the S x N cells (that enumerated every pair of cells and refused
            # ordinary studies)
            d0 = _prepare(h, ms, statistic, "none",
                          0.0 if isinstance(eps_sys, str) else eps_sys)
            hs, mss = _system_scores(h, ms)
            if eps_sys == "optimal":  # calibrated on the system scores
                d1 = _prepare(hs, mss, statistic, "none", "optimal")
                eps_sys = d1.eps
            boot = eng.resample("bootstrap", _SystemBootKernel(d0, statistic, eps_sys),
                                None, n=d0.N, n_resamples=n_resamples, seed=seed,
                                dataset=name, scheduler=scheduler)
            # epsilon="optimal" is calibrated on the system scores here too
            table, (_, values, ns, d) = _compare(hs, mss, *args, key=name,
                                                 scheduler=scheduler,
                                                 boot=boot if test == "bootstrap" else None)
            ok = ~np.isnan(hs)
            cols = [hs[ok]] + [mss[m][ok] for m in chosen]
        q = (1 - confidence_level) / 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanquantile(boot, [q, 1 - q], axis=0)
        K = len(chosen)
        order = score_order(np.nan_to_num(values, nan=-np.inf), True, chosen)
        if cluster_rule == "wmt":
            p1 = table["p_one_sided"].to_numpy(float)
            p1_adj, _ = adjust_groups(p1, np.zeros(len(p1), int), method=correction,
                                      alpha=alpha)
            cl = wmt_clusters(order, d.ia, d.ib, table["delta"].to_numpy(float), p1_adj,
                              alpha)
        else:
            better = better_matrix(K, d.ia, d.ib, table["reject"].to_numpy(bool),
                                   np.sign(table["delta"].to_numpy(float)))
            cl = clusters(order, better)
        notes = _constant_notes(h, ms, level, average_by, statistic, values)
        board = pd.DataFrame({
            "dataset": name, "metric": chosen, "level": level, "statistic": statistic,
            "average_by": average_by, "value": values, "ci_low": lo, "ci_high": hi,
            "rank": point_ranks(np.nan_to_num(values, nan=-np.inf)),
            "cluster": cl, "n": ns.astype(int), "note": notes})
        for m, note in zip(chosen, notes):
            if note:
                warnings.warn(f"dataset {name!r}, metric {m!r}: {note}",
                              ConstantInputWarning, stacklevel=3)
        boards.append(board.iloc[order].reset_index(drop=True))
        table.insert(0, "dataset", name)
        pair_tables.append(table)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = np.corrcoef(np.stack(cols))
        labels = [human] + chosen
        ii, jj = np.meshgrid(np.arange(K + 1), np.arange(K + 1), indexing="ij")
        mats.append(pd.DataFrame({"dataset": name,
                                  "metric_a": np.asarray(labels)[ii.ravel()],
                                  "metric_b": np.asarray(labels)[jj.ravel()],
                                  "correlation": r.ravel()}))
    if not boards:
        raise ParameterError(f"no dataset of the study has the human metric {human!r}")
    out = pd.concat(boards, ignore_index=True)[list(BOARD_COLUMNS)]
    pairs = pd.concat(pair_tables, ignore_index=True)
    meta = {**pairs.attrs.get("multistat", {}), **pair_tables[0].attrs["multistat"],
            "kind": "metric_meta_evaluation", "human": human, "level": level,
            "confidence_level": confidence_level,
            "cluster_rule": cluster_rule,
            "rule": (("clusters as mt-metrics-eval (WMT): sort by value; a new cluster "
                      "starts at a metric that some metric from the start of the current "
                      "cluster on beats with a one-sided p <= alpha") if cluster_rule == "wmt"
                     else ("clusters as multistat.rank: sort by value; boundary between "
                           "positions i and i+1 iff every metric at <= i is significantly "
                           "better than every metric at >= i+1 (two-sided decisions)"))
            + f" ({test}, {correction or 'no'} correction per dataset, alpha {alpha})",
            "input_sha256": study_hash(study)}
    out.attrs["multistat"] = meta
    pairs.attrs["multistat"] = meta
    return out, pairs, pd.concat(mats, ignore_index=True)
