"""Westfall-Young step-down adjustment (max-T and min-P) over a shared resampling plan.

Every pair of a family is resampled with the *same* plan (:mod:`multistat.resampling`),
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

The successive maxima (minima) are accumulated over slabs of pairs taken from the least
significant end, carrying one ``(B,)`` vector between slabs: memory is ``B x slab``
whatever the number of pairs (``null_of`` produces one slab at a time).

References: Westfall, P. H. & Young, S. S. (1993), *Resampling-Based Multiple Testing*,
Wiley. Romano, J. P. & Wolf, M. (2005), Exact and approximate stepdown methods for
multiple hypothesis testing, JASA 100, 94-108, doi:10.1198/016214504000000539.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from multistat._validation import check_alternative, check_choice, check_probability

METHODS = ("maxT", "minP")
SLAB_BYTES = 64 * 2**20


def _orient(x: np.ndarray, alternative: str) -> np.ndarray:
    if alternative == "two-sided":
        return np.abs(x)
    return x if alternative == "greater" else -x


def _slabs(order: np.ndarray, n_resamples: int) -> list[np.ndarray]:
    step = max(1, SLAB_BYTES // (8 * max(1, n_resamples)))
    return [order[s:s + step] for s in range(0, len(order), step)]


def _tol(x):
    return 1e-12 * np.maximum(1.0, np.abs(x))


def _own_pvalues(null_o: np.ndarray) -> np.ndarray:
    """``p*_{bj} = #{b' : T*_{b'j} >= T*_{bj}} / B`` within each column (oriented)."""
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
        called with slabs of pair indices, twice per slab.
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
    for sl in _slabs(np.arange(len(ok)), B):
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
    for sl in reversed(_slabs(order, B)):
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
