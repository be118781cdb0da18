"""Westfall-Young step-down adjustment (max-T and min-P) over a shared resampling plan.

Every pair of a family is resampled with the *same* plan (:mod:`multistat.engine`),
so the resampled statistics of all pairs come from one joint null distribution: the
dependence between pairs that share systems and instances is the real one, not an
inequality (Holm, Bonferroni) that ignores it.

Let ``T_j`` be pair ``j``'s observed statistic, centred so that it has the null
distribution of its resampled ``T*_{bj}`` (``b = 1..B``). Order the pairs from most to
least significant, ``j_1, ..., j_P``. The step-down adjusted p-value of ``j_k`` is

* **max-T**: ``(#{b : max_{l >= k} t*_{b, j_l} >= t_{j_k}} + 1) / (B + 1)``, with
  ``t = |T| / sd(T*)`` (two-sided; ``T`` or ``-T`` one-sided): every pair's statistic is
  put on one scale by the standard deviation of its own null distribution;
* **min-P**: ``(#{b : min_{l >= k} p*_{b, j_l} <= p_{j_k}} + 1) / (B + 1)``, where
  ``p*_{bj}`` is the p-value of draw ``b`` within pair ``j``'s own null distribution —
  the statistic's scale and shape may differ across pairs,

then made monotone along the order (cumulative maximum; Westfall & Young 1993,
Algorithms 2.8 and 4.1) and never below the pair's own p-value.

The successive maxima (minima) are accumulated over chunks of pairs taken from the least
significant end, carrying one ``(B,)`` vector between chunks: memory is ``B x chunk``
whatever the number of pairs (``null_of`` produces one slab at a time).

References: Westfall, P. H. & Young, S. S. (1993), *Resampling-Based Multiple Testing*,
Wiley. Romano, J. P. & Wolf, M. (2005), Exact and approximate stepdown methods for
multiple hypothesis testing, JASA 100, 94-108, doi:10.1198/016214504000000539.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from multistat._validation import check_alternative, check_choice, check_probability
from multistat.correct import family_columns, family_keys
from multistat.errors import ParameterError

METHODS = ("maxT", "minP")
CHUNK_BYTES = 64 * 2**20


def _orient(x: np.ndarray, alternative: str) -> np.ndarray:
    if alternative == "two-sided":
        return np.abs(x)
    return x if alternative == "greater" else -x


def _chunks(order: np.ndarray, n_resamples: int) -> list[np.ndarray]:
    step = max(1, CHUNK_BYTES // (8 * max(1, n_resamples)))
    return [order[s:s + step] for s in range(0, len(order), step)]


def _tol(x):
    return 1e-12 * np.maximum(1.0, np.abs(x))


def _own_pvalues(null_o: np.ndarray) -> np.ndarray:
    """``p*_{bj} = #{b' : T*_{b'j} >= T*_{bj}} / B`` within each column (oriented)."""
    # heavy: scipy.stats, lazily (only the min-P step-down ranks)
    from scipy.stats import rankdata

    b = null_o.shape[0]
    # rank of -T* with method "max" = #{b' : -T*_{b'} <= -T*_b} = #{T*_{b'} >= T*_b}
    return rankdata(-null_o, method="max", axis=0) / b


def westfall_young(null_of: Callable[[np.ndarray], np.ndarray], observed, *,
                   alternative: str = "two-sided", method: str = "maxT",
                   alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Step-down adjusted p-values and decisions for one family of ``P`` hypotheses.

    Parameters
    ----------
    null_of : callable ``idx -> (B, len(idx))`` — the resampled null statistics of the
        pairs ``idx`` under the *shared* plan (row ``b`` the same resample for every pair);
        called with chunks of pair indices, twice per chunk.
    observed : ``(P,)`` observed statistics on the null's scale (NaN: not tested, NaN out)
    alternative : ``"two-sided"`` (``|T|``), ``"greater"`` (``T``), ``"less"`` (``-T``)
    method : ``"maxT"`` (statistics studentized by their null sd) or ``"minP"``
    alpha : level of the returned decisions (``p_adjusted <= alpha``)

    Returns
    -------
    (reject, p_adjusted) : ``(P,)`` arrays
    """
    alternative = check_alternative(alternative)
    method = check_choice("method", method, METHODS)
    alpha = check_probability("alpha", alpha)
    obs = np.asarray(observed, float).ravel()
    P = len(obs)
    p_adj = np.full(P, np.nan)
    ok = np.flatnonzero(np.isfinite(obs))
    if not len(ok):
        return np.zeros(P, bool), p_adj
    probe = np.asarray(null_of(ok[:1]), float)
    B = probe.shape[0]
    # pass 1: each pair's own scale (max-T) or own p-value (min-P) -> the step-down order
    key = np.empty(len(ok))  # larger = more significant
    scale = np.ones(len(ok))
    raw = np.empty(len(ok))
    for sl in _chunks(np.arange(len(ok)), B):
        null = _orient(np.asarray(null_of(ok[sl]), float), alternative)
        o = _orient(obs[ok[sl]], alternative)
        raw[sl] = (np.sum(null >= o - _tol(o), axis=0) + 1) / (B + 1)
        if method == "maxT":
            sd = null.std(axis=0, ddof=1) if B > 1 else np.ones(len(sl))
            scale[sl] = np.where(sd > 0, sd, 1.0)
            key[sl] = o / scale[sl]
        else:
            key[sl] = -raw[sl]
    order = np.lexsort((np.arange(len(ok)), -key))  # most significant first
    # pass 2: successive maxima (minima) from the least significant end, slab by slab
    carry = np.full(B, -np.inf)
    counts = np.empty(len(ok))
    for sl in reversed(_chunks(order, B)):
        null = _orient(np.asarray(null_of(ok[sl]), float), alternative)
        if method == "maxT":
            stat = null / scale[sl]
            thresh = key[sl]
        else:
            stat = -_own_pvalues(null)  # max of -p* = -(min p*)
            thresh = -raw[sl]
        # reverse cumulative max along the slab (positions k..end), then with the carry
        succ = np.maximum(np.maximum.accumulate(stat[:, ::-1], axis=1)[:, ::-1],
                          carry[:, None])
        if method == "maxT":
            counts[sl] = np.sum(succ >= thresh - _tol(thresh), axis=0)
        else:
            counts[sl] = np.sum(succ >= thresh - 1e-12, axis=0)
        carry = succ[:, 0]
    adj_sorted = np.maximum.accumulate((counts[order] + 1) / (B + 1))
    adj = np.empty(len(ok))
    adj[order] = adj_sorted
    p_adj[ok] = np.minimum(1.0, np.maximum(adj, raw))
    reject = np.zeros(P, bool)
    reject[ok] = p_adj[ok] <= alpha
    return reject, p_adj


def from_matrix(null: np.ndarray, observed, **kwargs):
    """:func:`westfall_young` for a null matrix ``(B, P)`` held in memory."""
    null = np.asarray(null, float)
    return westfall_young(lambda idx: null[:, idx], observed, **kwargs)


# ----------------------------------------------------------------------------- compare
class GroupArrays(NamedTuple):
    """A resampling test's per-system arrays on one metric group's shared plan
    (:attr:`~multistat.significance.BatchResult.resampled`), as :func:`metric_nulls`
    files them under each metric of the group (the same arrays, not copied)."""

    #: the group's metric names: the arrays' metric axis (corpus: one metric)
    metrics: tuple
    #: the system names: the arrays' system axis
    systems: tuple
    #: bootstrap ``{"dist": (B, S, M)}``; permutation ``{"flips": (B, S + 1, M)}`` (last
    #: row the flipped sum of ones) or, for a corpus metric, ``{"swapped": (B, S, K),
    #: "total": (S, K)}``
    arrays: dict
    #: the corpus metric's function of summed statistics, None for per-instance means
    corpus_fn: Callable | None


def metric_nulls(test: str, res, slab) -> dict[tuple, GroupArrays]:
    """``{(dataset, test, metric): GroupArrays}`` for every metric of one group
    (a :class:`~multistat.significance.Slab`) from that test's
    :class:`~multistat.significance.BatchResult`: the per-system arrays the test itself
    resampled, from which every pair's resampled statistic is formed. Empty when the
    test kept none (closed-form tests, medians)."""
    arrays = getattr(res, "resampled", None)
    if arrays is None:
        return {}
    entry = GroupArrays(tuple(str(m) for m in slab.metrics), tuple(slab.systems), arrays,
                        slab.corpus[0] if slab.is_corpus else None)
    return {(slab.dataset, test, m): entry for m in entry.metrics}


def _null_of(arrays, fn, a, b, m, est, null_value):
    """``idx -> (B, len(idx))`` null statistics of rows ``idx`` (pairs a - b, metric m:
    the position on the arrays' metric axis), on the scale of ``est - null_value`` (what
    compare's test counts against)."""
    def null_of(idx):
        ai, bi, mi = a[idx], b[idx], m[idx]
        if "dist" in arrays:  # bootstrap: theta* - theta_hat
            d = arrays["dist"]
            return d[:, ai, mi] - d[:, bi, mi] - est[idx]
        if "flips" in arrays:  # sign flips of d - null_value
            f = arrays["flips"]
            return f[:, ai, mi] - f[:, bi, mi] - null_value * f[:, -1, mi]
        sw, tot = arrays["swapped"], arrays["total"]  # corpus: swapped statistics
        moved = sw[:, bi] - sw[:, ai]
        return fn(tot[ai] + moved) - fn(tot[bi] - moved)
    return null_of


def adjust_table(table, nulls: dict, *, method="westfall-young", alpha=0.05, family=None):
    """``p_adjusted``/``reject`` of a compare table by the Westfall-Young step-down.

    Each family must lie within one dataset, one test and one metric group (metrics
    scored on the same instances): its joint null distribution is then the shared plan
    that test used. ``nulls`` (:func:`metric_nulls`, gathered by ``compare``) holds, per
    ``(dataset, test, metric)``, the per-system arrays the test resampled (means,
    sign-flipped sums or corpus sufficient statistics): no plan is drawn again, and pairs
    are formed last, in chunks of :data:`CHUNK_BYTES`.

    Memory: ``compare`` keeps those arrays for every metric group of the run until this
    step-down — ``(B, S, M)`` per group and test (``(B, S + 1, M)`` for sign flips,
    ``(B, S, K)`` for a corpus metric's K statistics), per system, never per pair or per
    instance; what grows with the pairs here is the table and ``B x slab``.
    Returns a copy.
    """

    out = table.copy()
    cols = family_columns(out, family)
    keys = (family_keys(out, cols).to_numpy(dtype=object) if cols
            else np.full(len(out), "all", dtype=object))
    out["family"] = keys
    out["correction"] = method
    out["alpha"] = alpha
    p_adj = np.full(len(out), np.nan)
    reject = np.zeros(len(out), bool)
    for fam, idx in _indices(keys).items():
        rows = out.iloc[idx]
        where = set(zip(rows["dataset"], rows["test"], rows["metric"]))
        missing = sorted(w for w in where if w not in nulls)
        if missing:
            d, t, mt = missing[0]
            raise ParameterError(
                f"correction={method!r}: test {t!r} kept no resampled arrays for metric "
                f"{mt!r} of dataset {d!r} (only the mean or corpus-metric bootstrap and "
                "permutation tests have a joint null on a shared plan)")
        ident = {(d, t, nulls[(d, t, mt)].metrics) for d, t, mt in where}
        if len(ident) > 1:
            raise ParameterError(
                f"correction={method!r}: family {fam!r} spans several datasets, tests or "
                "instance sets; its joint null must come from one shared plan — use the "
                "default family (dataset x metric x test) or family=['dataset', 'test'] "
                "over metrics scored on the same instances")
        (name, test, group), = ident
        entry = nulls[(name, test, group[0])]
        sysidx = {str(s): i for i, s in enumerate(entry.systems)}
        a = rows["system_a"].map(sysidx).to_numpy(int)
        b = rows["system_b"].map(sysidx).to_numpy(int)
        m = rows["metric"].map({mt: j for j, mt in enumerate(group)}).to_numpy(int)
        est = rows["estimate"].to_numpy(float)
        null_value = float(rows["null_value"].iloc[0])
        alternative = str(rows["alternative"].iloc[0])
        how = method.rsplit("-", 1)[1] if method != "westfall-young" else (
            "minP" if entry.corpus_fn is not None else "maxT")
        obs = np.where(np.isfinite(rows["p_value"].to_numpy(float)), est - null_value,
                       np.nan)
        _, p = westfall_young(_null_of(entry.arrays, entry.corpus_fn, a, b, m, est,
                                       null_value), obs,
                              alternative=alternative, method=how, alpha=alpha)
        # never below the test's own p-value (its two-sided bootstrap p doubles the
        # smaller tail; the step-down counts |T|)
        p = np.fmax(p, rows["p_value"].to_numpy(float))
        p_adj[idx], reject[idx] = p, p <= alpha
    out["p_adjusted"] = p_adj
    out["reject"] = reject
    return out


def _indices(keys) -> dict:

    return pd.Series(range(len(keys))).groupby(keys, sort=False).indices
