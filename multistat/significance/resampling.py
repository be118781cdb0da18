"""Paired bootstrap and permutation (approximate randomization) tests on the engine.

Everything here works on a block of systems at once: ``X`` holds scores
``(system, metric, instance)`` and ``ia``/``ib`` index the pairs ``a - b``; one
resampling plan per ``(seed, dataset, kind, block)`` serves every system, metric and pair
(:mod:`multistat.engine`). The registered per-pair functions :func:`bootstrap_test`
and :func:`permutation_test` are the same code with two "systems" ``x`` and ``y``.

p-values (``theta`` is the statistic of ``d = a - b``: mean, median or corpus metric
difference; ``delta`` is ``null_value``):

* bootstrap ("shifted", default): the bootstrap distribution of ``theta* - theta_hat``
  estimates the null distribution of ``theta_hat - delta``;
  ``p_greater = (#{theta* - theta_hat >= theta_hat - delta} + 1) / (B + 1)``,
  ``p_less`` likewise with ``<=``, two-sided ``min(1, 2 min(p_less, p_greater))``.
  ``bootstrap_pvalue="berg-kirkpatrick"`` counts ``theta* >= 2 theta_hat`` (Berg-Kirkpatrick
  et al. 2012) in the direction of the observed sign — the shifted one-sided p in the
  observed direction (with ``delta = 0``). ``"sacrebleu"`` reproduces sacrebleu's/Moses'
  ``(#{|theta*| - mean|theta*| > |theta_hat|} + 1) / (B + 1)``, which is NOT a valid
  two-sided p (about half of it near 0.05, capped near 0.4 when theta_hat is 0); it warns.
* permutation: each instance's difference ``d_i - delta`` keeps or flips its sign with
  probability 1/2 (swapping a and b); one-sided p as above on the sign-flipped
  statistic; the null is symmetric about 0 by construction, so the two-sided p counts
  ``#{|T*| >= |T|}`` (the same quantity as twice the smaller tail, with less Monte Carlo
  error); all ``2**n`` sign vectors are enumerated (exact p, no +1) when
  ``2**n <= n_resamples``. For corpus metrics the swap is of the instance statistics.

Intervals for theta (bootstrap): ``basic`` (default), the exact inversion of the shifted
p-value (:func:`multistat.significance._inversion.bootstrap_basic_interval`: order
statistics ``2 theta_hat - theta*``, same tie tolerance), so ``p <= alpha`` exactly when it
excludes ``delta``; by choice ``percentile``, ``bca`` (jackknife acceleration, Efron 1987)
and ``studentized`` (bootstrap-t, mean only), which are not inversions of this p-value (a
row may then reject while its interval covers ``delta``, or the reverse). One-sided alternatives
give
one-sided intervals (scipy's convention). The permutation test has no interval (NaN, with
a note).

Length (about 670 lines): the two resampling tests in their three faces (block kernels,
per-pair functions, registry batch entries) and the p-value, interval and jackknife rules
they share; split apart, each half would import the other's helpers.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from multistat import engine as eng
from multistat._budget import Budget
from multistat._centre import centred_means, levels, metric_centres
from multistat._typing import DEFAULT_N_RESAMPLES
from multistat._validation import check_choice, check_int, check_seed
from multistat.errors import CompatibilityWarning, TestNotApplicableError
from multistat.significance._base import TestResult, TestSpec, as_pairs, register
from multistat.significance._batch import BatchResult
from multistat.significance._common import check_hypothesis
from multistat.significance._inversion import bootstrap_basic_interval

CI_METHODS = ("basic", "bca", "percentile", "studentized")
BOOTSTRAP_PVALUES = ("shifted", "berg-kirkpatrick", "sacrebleu")
MEMORY_BUDGET = 256 * 2**20  # default bytes for one pair chunk (per-pair functions)


# ----------------------------------------------------------------------------- helpers
def _std(dist: np.ndarray) -> np.ndarray:
    """``dist.std(0, ddof=1)``, recomputed without overflow where it is not finite: those
    columns are first divided by a power of two near their largest magnitude (exact, so
    scale-free; at scores near 1e300 the squares overflowed to an infinite standard
    error). Other columns are numpy's own result, at numpy's cost."""
    with np.errstate(over="ignore", invalid="ignore"):
        sd = dist.std(0, ddof=1)
    redo = ~np.isfinite(sd)
    if redo.any():
        sub = dist[:, redo]
        big = np.max(np.abs(sub), axis=0)
        _, exp = np.frexp(np.where(np.isfinite(big) & (big > 0), big, 1.0))
        scale = np.ldexp(1.0, exp)
        sd[redo] = (sub / scale).std(0, ddof=1) * scale
    return sd


def _pair_major(dist: np.ndarray) -> np.ndarray:
    """A C-ordered ``(B, P, M)`` pair array (:func:`multistat.engine.pair_differences`)
    laid out for sums over resamples in the order numpy used on ``arr[:, ia] - arr[:, ib]``
    (pair axis outermost in memory), so that means and standard deviations keep their
    bits. The orders differ only when ``M == 1``: numpy then summed each pair's contiguous
    resamples pairwise, whereas a C-ordered ``(B, P)`` array is summed row by row; that
    case gets a pair-major copy. With ``M > 1`` both sum each column sequentially over
    the resamples (``tests/test_engine.py`` checks the cases)."""
    if dist.ndim == 3 and dist.shape[2] == 1 and dist.shape[1] > 1:
        return np.ascontiguousarray(dist[..., 0].T).T[..., None]  # strides (8, 8B, .)
    return dist


def _pair_std(dist: np.ndarray) -> np.ndarray:
    """:func:`_std` of a C-ordered pair array with the bits of the pair-major order."""
    return _std(_pair_major(dist))


def _pair_chunks(n_pairs: int, per_pair_bytes: int, budget=None) -> list[slice]:
    budget = Budget(MEMORY_BUDGET) if budget is None else budget
    return budget.chunks(n_pairs, per_pair_bytes)


def _interp_quantile(sorted_dist: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Linear-interpolated quantiles (numpy's default) with a per-element ``q``."""
    b = sorted_dist.shape[0]
    pos = np.clip(q, 0.0, 1.0) * (b - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, b - 1)
    frac = pos - lo
    v_lo = np.take_along_axis(sorted_dist, lo[None], 0)[0]
    v_hi = np.take_along_axis(sorted_dist, hi[None], 0)[0]
    return v_lo + frac * (v_hi - v_lo)


def _levels(alternative: str, confidence_level: float) -> tuple[float, float]:
    alpha = 1.0 - confidence_level
    if alternative == "two-sided":
        return alpha / 2, 1 - alpha / 2
    if alternative == "greater":
        return alpha, 1.0  # (low, +inf)
    return 0.0, 1 - alpha  # (-inf, high)


def acceleration(jack: np.ndarray) -> np.ndarray:
    """BCa acceleration from jackknife values ``(..., n)`` (Efron & Tibshirani 14.15)."""
    u = jack.mean(-1, keepdims=True) - jack
    with np.errstate(invalid="ignore", divide="ignore"):  # scale-free: u / max|u|
        m = np.max(np.abs(u), axis=-1, keepdims=True)
        u = np.where(m > 0, u / np.where(m > 0, m, 1.0), 0.0)
    num = np.sum(u**3, -1)
    den = 6.0 * np.sum(u**2, -1) ** 1.5
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, 0.0)


def bootstrap_interval(est, dist, *, alternative, confidence_level, ci_method="basic",
                       jackknife=None, studentized=None, scale=None):
    """Interval for ``theta`` from its bootstrap distribution ``dist`` ``(B, ...)``.

    ``jackknife`` (``(..., n)`` leave-one-out values) is needed for BCa;
    ``studentized`` = ``(se_hat, se_star)`` for the bootstrap-t interval.
    ``scale``: :func:`multistat.engine.null_scale` of ``dist - est`` if known.
    Returns ``(low, high, note)``; infinite ends for one-sided alternatives.
    """
    note = np.full(est.shape, "", dtype=object)
    if ci_method == "basic":
        # the exact inversion of the shifted p-value, with its tie tolerance
        tol = eng._tolerance(np.zeros(est.shape), dist - est if scale is None else None,
                             scale=scale)
        low, high = bootstrap_basic_interval(est, dist, alternative=alternative,
                                             confidence_level=confidence_level, tol=tol)
        return low, high, note
    q_lo, q_hi = _levels(alternative, confidence_level)
    srt = np.sort(dist, axis=0)
    if ci_method == "studentized":
        se_hat, se_star = studentized
        with np.errstate(invalid="ignore", divide="ignore"):
            t_star = (dist - est) / se_star
        t_star = np.where(np.isfinite(t_star), t_star, np.nan)
        t_srt = np.sort(t_star, axis=0)  # NaN (zero-variance resamples) sort last
        valid = np.sum(np.isfinite(t_star), axis=0)
        def q(level):
            return _quantile_valid(t_srt, valid, level)

        # bootstrap-t: [est - t*(1 - q_lo) se, est - t*(1 - q_hi) se]; open ends at 0 / 1
        low = np.full(est.shape, -np.inf) if q_lo == 0 else est - q(1 - q_lo) * se_hat
        high = np.full(est.shape, np.inf) if q_hi == 1 else est - q(1 - q_hi) * se_hat
        return low, high, note
    lo_q = np.full(est.shape, q_lo)
    hi_q = np.full(est.shape, q_hi)
    if ci_method == "bca":
        b = dist.shape[0]
        z0 = ndtri(np.sum(dist < est, axis=0) / b)
        a = acceleration(jackknife)
        bad = ~np.isfinite(z0)
        if bad.any():
            note = np.where(bad, "BCa undefined (bootstrap distribution on one side of the "
                                 "estimate); percentile interval", note)
            z0 = np.where(bad, 0.0, z0)
            a = np.where(bad, 0.0, a)

        def adjust(q):
            z = ndtri(q)
            with np.errstate(invalid="ignore", divide="ignore"):
                return ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))

        lo_q = np.where(q_lo > 0, adjust(np.full(est.shape, max(q_lo, 1e-300))), 0.0)
        hi_q = np.where(q_hi < 1, adjust(np.full(est.shape, min(q_hi, 1 - 1e-16))), 1.0)
    low = _interp_quantile(srt, lo_q) if q_lo > 0 else np.full(est.shape, -np.inf)
    high = _interp_quantile(srt, hi_q) if q_hi < 1 else np.full(est.shape, np.inf)
    return low, high, note


def _quantile_valid(srt, valid, level):
    """Quantile ``level`` of the first ``valid`` sorted entries along axis 0."""
    pos = level * (np.maximum(valid, 1) - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, np.maximum(valid, 1) - 1)
    frac = pos - lo
    v_lo = np.take_along_axis(srt, lo[None], 0)[0]
    v_hi = np.take_along_axis(srt, hi[None], 0)[0]
    return np.where(valid > 0, v_lo + frac * (v_hi - v_lo), np.nan)


def bootstrap_pvalues(est, dist, *, alternative, null_value, method="shifted",
                      centred=None, scale=None):
    """p-values of the bootstrap test (see module docstring). ``centred`` (``dist -
    est``) and ``scale`` (its :func:`multistat.engine.null_scale`): if known."""
    if centred is None and method != "sacrebleu":
        centred = dist - est
    if method == "shifted":
        return eng.pvalues_from_null(centred, est - null_value, alternative, scale=scale)
    b = dist.shape[0]
    if method == "berg-kirkpatrick":
        direction = np.where(est - null_value >= 0, 1.0, -1.0)
        count = np.sum(direction * centred >= direction * (est - null_value)
                       - eng._tolerance(est - null_value, centred, scale=scale), axis=0)
        return (count + 1) / (b + 1)
    # sacrebleu / Moses compatibility: strict >, absolute differences centred by mean
    warnings.warn("bootstrap_pvalue='sacrebleu' reproduces sacrebleu's paired bootstrap, "
                  "whose p-value is not the two-sided p of the bootstrap distribution and "
                  "over-rejects under the null; use it only to compare with sacrebleu",
                  CompatibilityWarning, stacklevel=3)
    absd = np.abs(dist)
    stats = absd - absd.mean(0)
    return (np.sum(stats > np.abs(est), axis=0) + 1) / (b + 1)


def jackknife_mean(d: np.ndarray) -> np.ndarray:
    """Leave-one-out means of ``d`` ``(..., n)``."""
    n = d.shape[-1]
    return (d.sum(-1, keepdims=True) - d) / (n - 1)


def jackknife_median(d: np.ndarray) -> np.ndarray:
    """Leave-one-out medians of ``d`` ``(..., n)`` from one sort (order statistics)."""
    n = d.shape[-1]
    order = np.argsort(d, -1)
    srt = np.take_along_axis(d, order, -1)
    m = n - 1
    lo, hi = (m - 1) // 2, m // 2
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(n)[None].repeat(np.prod(d.shape[:-1],
                                                                    dtype=int), 0)
                      .reshape(d.shape), -1)

    def kth(k):  # k-th order statistic of the sample without element j (rank r_j)
        return np.where(rank > k, srt[..., k:k + 1], srt[..., k + 1:k + 2])

    return 0.5 * (kth(lo) + kth(hi))


# ----------------------------------------------------------------------------- core
def _check_resampling_args(alternative, null_value, confidence_level, n_resamples, seed,
                  statistic):
    return (*check_hypothesis(alternative, null_value, confidence_level),
            check_int("n_resamples", n_resamples, minimum=1), check_seed(seed),
            check_choice("statistic", statistic, ("mean", "median")))


def _empty(shape):
    return {k: np.full(shape, np.nan) for k in ("statistic", "p_value", "estimate",
                                                  "ci_low", "ci_high")}


def bootstrap_block(X, ia, ib, *, statistic="mean", alternative="two-sided",
                    null_value=0.0, confidence_level=0.95, n_resamples=DEFAULT_N_RESAMPLES, seed=0,
                    dataset="", ci_method="basic", pvalue="shifted", scheduler="threads",
                    n_chunks=None, corpus=None, budget=None, progress=None,
                    clusters=None, centre=None, streamed=None) -> dict:
    """Bootstrap test for pairs ``(ia, ib)`` of systems in ``X`` ``(S, M, n)``.

    ``corpus=(fn, stats)`` with ``stats`` ``(S, n, K)`` tests a corpus metric instead
    (``X`` then only supplies the shape; M = 1). Returns arrays ``(P, M)``:
    ``statistic`` (theta_hat - null_value), ``p_value``, ``estimate``, ``ci_low``,
    ``ci_high``, ``note``, ``se`` (standard deviation of the bootstrap distribution),
    and the system-level bootstrap distribution ``systems`` ``(B, S, M)`` when the
    statistic is a mean or corpus metric. Pairs are taken in chunks sized by ``budget``
    (:class:`multistat._budget.Budget`). ``clusters``: group code per instance
    (:mod:`multistat._cluster`): whole groups are resampled. ``centre``: the per-metric
    constants ``(M,)`` the resampled means subtract (:mod:`multistat._centre`; computed
    from ``X`` when not given): ``systems`` then holds the resampled means of ``X -
    centre`` and ``centre`` is returned with them (levels are their sum).
    ``streamed``: ``(resampled means (B, S, M), observed means (S, M))`` of ``X -
    centre`` on this plan, computed elsewhere (a study streamed chunk by chunk,
    :mod:`multistat.significance._streamed`); ``X`` then gives only the shape, and the
    mean with the basic or percentile interval is all that runs.
    """
    # lazily: a t-only compare does not load it (first-call time)
    from multistat._cluster import jackknife_mean_groups, plan_args

    n = X.shape[-1]
    ia, ib = np.asarray(ia), np.asarray(ib)
    run = dict(n_resamples=n_resamples, seed=seed, dataset=dataset,
               scheduler=scheduler, n_chunks=n_chunks, budget=budget, progress=progress)

    def boot(kernel, data):
        kernel, n_plan = plan_args("bootstrap", kernel, clusters, n)
        return eng.resample("bootstrap", kernel, data, n=n_plan, **run)

    cluster_note = ""
    if clusters is not None:
        cluster_note = f"cluster bootstrap over {int(np.max(clusters)) + 1} groups"
        if ci_method == "studentized" or (ci_method == "bca" and (
                corpus is not None or statistic != "mean")):
            ci_method = "percentile"  # BCa's acceleration is by group for the mean only
            cluster_note += (", percentile interval (the BCa/studentized interval is "
                             "for the mean of independent instances)")
    out: dict[str, Any] = {"note": np.full((len(ia), X.shape[1]), cluster_note, dtype=object)}
    if corpus is not None:
        fn, stats = corpus
        sums = boot(eng.corpus_sums_kernel, stats)  # (B, S, K)
        sys_dist = fn(sums)[..., None]  # (B, S, 1)
        sys_obs = fn(stats.sum(1))[:, None]  # (S, 1)
        total = stats.sum(1)  # (S, K)
    elif streamed is not None:  # the same arrays, summed chunk by chunk
        k = np.asarray(centre, dtype=float)
        sys_dist, sys_obs = streamed
    elif statistic == "mean":
        # (B, S, M): linear_kernel on (X - k) / n; means of scores moved by a constant
        # would round at the constant's magnitude
        k = metric_centres(X) if centre is None else np.asarray(centre, dtype=float)
        sys_dist = boot(functools.partial(eng.mean_kernel, centre=k), X)
        sys_obs = centred_means(X, k)
    else:
        sys_dist = None
    est_all, p_all, lo_all, hi_all, se_all = [], [], [], [], []
    per_pair = X.shape[1] * 8 * (n_resamples * (5 if sys_dist is None else 4) + 3 * n)
    for sl in _pair_chunks(len(ia), per_pair, budget):
        a, b = ia[sl], ib[sl]
        if sys_dist is not None:
            est = sys_obs[a] - sys_obs[b]
            dist = eng.pair_differences(sys_dist, a, b)  # (B, p, M), C order
        else:
            d = X[a] - X[b]  # (p, M, n)
            est = np.median(d, -1)
            flat = d.reshape(-1, n)
            dist = boot(eng.median_bootstrap_kernel, flat).reshape((n_resamples,) + est.shape)
        jack = stud = None
        if ci_method == "bca":
            if corpus is not None:
                jack = (fn(total[a][:, None, :] - np.moveaxis(stats[a], 1, 1))
                        - fn(total[b][:, None, :] - stats[b]))[:, None, :]  # (p, 1, n)
            elif statistic == "mean":
                jack = (jackknife_mean(X[a] - X[b]) if clusters is None else
                        jackknife_mean_groups(X[a] - X[b], clusters))
            else:
                jack = jackknife_median(X[a] - X[b])
        elif ci_method == "studentized":
            d = X[a] - X[b]
            se_hat = d.std(-1, ddof=1) / np.sqrt(n)
            m2 = boot(eng.mean_kernel, (d**2).reshape(-1, n)).reshape(dist.shape)
            var_star = np.maximum(m2 - dist**2, 0.0) * n / (n - 1)
            stud = (se_hat, np.sqrt(var_star / n))
        # theta* - theta_hat and its largest magnitude, shared by the p-value and the
        # basic interval's tie tolerance
        centred = dist - est
        scale = eng.null_scale(centred)
        p = bootstrap_pvalues(est, dist if pvalue != "sacrebleu" or sys_dist is None
                              else _pair_major(dist), alternative=alternative,
                              null_value=null_value, method=pvalue, centred=centred,
                              scale=scale)
        del centred
        se_all.append((_pair_std(dist) if sys_dist is not None else _std(dist))
                      if dist.shape[0] > 1 else np.full(est.shape, np.nan))
        if dist.ndim == 3 and dist.shape[1] * dist.shape[2] > 1:
            # the interval sorts every column over the resamples: ~2x faster with the
            # resamples contiguous (same values, so the same order statistics)
            dist = np.moveaxis(np.ascontiguousarray(np.moveaxis(dist, 0, -1)), -1, 0)
        lo, hi, note = bootstrap_interval(est, dist, alternative=alternative,
                                          confidence_level=confidence_level,
                                          ci_method=ci_method, jackknife=jack,
                                          studentized=stud, scale=scale)
        if ci_method != "basic" or pvalue != "shifted":
            why = (ci_choice_note(ci_method, "user") if ci_method != "basic" else
                   f"basic interval with the {pvalue} p-value, chosen by the user "
                   f"(bootstrap_pvalue; the default is shifted)")
            note = np.where(note == "", why, note + "; " + why)
            note = np.asarray(note, dtype=object) + (
                ": not the inversion of the p-value, decision and interval may disagree")
        out["note"][sl] = note if not cluster_note else np.array(
            ["; ".join(t for t in (cluster_note, str(x)) if t)
             for x in np.broadcast_to(np.asarray(note, dtype=object), est.shape).ravel()],
            dtype=object).reshape(est.shape)
        est_all.append(est)
        p_all.append(p)
        lo_all.append(lo)
        hi_all.append(hi)
    est = np.concatenate(est_all)
    out.update(estimate=est, statistic=est - null_value, p_value=np.concatenate(p_all),
               ci_low=np.concatenate(lo_all), ci_high=np.concatenate(hi_all),
               se=np.concatenate(se_all),
               systems=sys_dist, systems_observed=sys_obs if sys_dist is not None else None,
               centre=k if corpus is None and statistic == "mean" else None)
    return out


def ci_choice_note(ci_method: str, by: str) -> str:
    """The note a bootstrap row carries when its interval is not the default (basic,
    the inversion of the p-value): which interval, and who chose it.

    Parameters
    ----------
    ci_method : str
        The interval (``"percentile"``, ``"bca"``, ``"studentized"``).
    by : {"user", "rank"}
        ``"user"``: the caller's ``ci_method``; ``"rank"``: :func:`multistat.rank`'s
        default (its pairs use percentile intervals, as its score and rank intervals).

    Returns
    -------
    str

    Examples
    --------
    >>> ci_choice_note("percentile", "rank")
    "percentile interval by default (rank's intervals are percentile intervals)"
    """
    if by == "rank":
        return f"{ci_method} interval by default (rank's intervals are percentile intervals)"
    return f"{ci_method} interval, chosen by the user (ci_method; the default is basic)"


def permutation_block(X, ia, ib, *, statistic="mean", alternative="two-sided",
                      null_value=0.0, n_resamples=DEFAULT_N_RESAMPLES, seed=0, dataset="",
                      scheduler="threads", n_chunks=None, corpus=None, budget=None,
                      progress=None, clusters=None, centre=None) -> dict:
    """Sign-flip permutation test for pairs of systems in ``X`` ``(S, M, n)``.

    Returns arrays ``(P, M)``: ``statistic`` (observed theta - null_value), ``p_value``,
    ``estimate``, ``ci_low``/``ci_high`` (NaN), ``note``, ``exact`` (bool) and ``se``
    (standard deviation of the null distribution), and ``resampled``: the per-system
    sign-flipped arrays every pair's null was formed from (``BatchResult.resampled``;
    None for the median). ``budget`` as in
    :func:`bootstrap_block`. ``clusters``: group code per instance; whole groups
    are flipped (exact enumeration over the 2**G group sign vectors when it fits).
    ``centre``: as in :func:`bootstrap_block` (the flipped means are those of ``X -
    centre``; a pair's difference is unchanged, as the constant is common).
    """
    # lazily: a t-only compare does not load it (first-call time)
    from multistat._cluster import plan_args

    n = X.shape[-1]
    ia, ib = np.asarray(ia), np.asarray(ib)
    n_units = n if clusters is None else int(np.max(clusters)) + 1
    exact = n_units < 63 and 2**n_units <= n_resamples
    run = dict(n_resamples=n_resamples, seed=seed, dataset=dataset,
                scheduler=scheduler, n_chunks=n_chunks, exact=exact, budget=budget,
                progress=progress)

    def flip(kernel, data):  # the sign-flip plan, over groups when clustered
        kernel, n_plan = plan_args("permutation", kernel, clusters, n)
        return eng.resample("permutation", kernel, data, n=n_plan, **run)

    se_all = []

    def record_se(null, observed, std=_std):  # standard deviation of the null (column mde)
        se_all.append(std(null) if null.shape[0] > 1 else np.full(observed.shape, np.nan))

    shape = (len(ia), X.shape[1])
    if corpus is not None:
        if null_value != 0:
            raise TestNotApplicableError(
                "the approximate-randomization test of a corpus metric tests exchangeability "
                f"(null_value 0); got null_value={null_value!r} — use the bootstrap test")
        fn, stats = corpus
        total = stats.sum(1)  # (S, K)
        swapped = flip(_swap_kernel, stats)  # (B, S, K)
        sys_obs = fn(total)
        est_all, p_all = [], []
        for sl in _pair_chunks(len(ia), swapped.shape[0] * swapped.shape[2] * 8 * 4, budget):
            a, b = ia[sl], ib[sl]
            moved = swapped[:, b] - swapped[:, a]  # (B, p, K): what a receives from b
            null = fn(total[a] + moved) - fn(total[b] - moved)
            obs = sys_obs[a] - sys_obs[b]
            record_se(null[..., None], obs[:, None])
            est_all.append(obs[:, None])
            p_all.append(eng.pvalues_from_null(null, obs, alternative, exact=exact, symmetric=True
                                               )[:, None])
        est = np.concatenate(est_all)
        p = np.concatenate(p_all)
        resampled = {"swapped": swapped, "total": total}
    elif statistic == "mean":
        # (B, S+1, M): linear_kernel on concatenate([X, ones]) / n, last row sum(s)/n
        k = metric_centres(X) if centre is None else np.asarray(centre, dtype=float)
        flips = flip(functools.partial(eng.mean_kernel, ones=True, centre=k), X)
        ssum = flips[:, -1]  # (B, M)
        obs_mean = centred_means(X, k)  # mean(x - k): shift-free
        est_all, p_all = [], []
        for sl in _pair_chunks(len(ia), flips.shape[0] * X.shape[1] * 8 * 4, budget):
            a, b = ia[sl], ib[sl]
            null = eng.pair_differences(flips, a, b)  # (B, p, M), C order
            est = obs_mean[a] - obs_mean[b]
            # the se (mde column) of the exchangeability null (null_value 0), whatever
            # null_value is tested: the mde is a property of the design (
            # it grew with null_value and overflowed at 1e308)
            record_se(null, est, _pair_std)
            if null_value != 0:  # (x - y) - 0 * s differs from x - y only in signs of 0
                null -= null_value * ssum[:, None, :]
            est_all.append(est)
            p_all.append(eng.pvalues_from_null(null, est - null_value, alternative,
                                               exact=exact, symmetric=True))
        est, p = np.concatenate(est_all), np.concatenate(p_all)
        resampled = {"flips": flips}
    else:
        est_all, p_all = [], []
        for sl in _pair_chunks(len(ia), X.shape[1] * 8 * (n_resamples * 3 + 2 * n), budget):
            d = X[ia[sl]] - X[ib[sl]] - null_value
            obs = np.median(d, -1)
            null = flip(eng.median_signflip_kernel, d.reshape(-1, n))
            null = null.reshape((null.shape[0],) + obs.shape)
            if null_value != 0:  # the se of the null at 0, as for the mean (mde column)
                d0 = X[ia[sl]] - X[ib[sl]]
                null0 = flip(eng.median_signflip_kernel, d0.reshape(-1, n))
                record_se(null0.reshape(null.shape), obs)
                del d0, null0
            else:
                record_se(null, obs)
            est_all.append(obs + null_value)
            p_all.append(eng.pvalues_from_null(null, obs, alternative, exact=exact, symmetric=True))
        est, p = np.concatenate(est_all), np.concatenate(p_all)
        resampled = None
    note = np.full(shape, "exact enumeration of all 2^n sign flips" if exact else
                   "no interval from a permutation test; see the bootstrap row",
                   dtype=object)
    if clusters is not None:
        note[:] = (f"cluster permutation: whole groups flipped ({n_units} groups"
                   + (", exact enumeration of all 2^G group sign flips)" if exact else ")"))
    return {"estimate": est, "statistic": est - null_value, "p_value": p,
            "ci_low": np.full(shape, np.nan), "ci_high": np.full(shape, np.nan),
            "note": note, "exact": np.full(shape, exact), "se": np.concatenate(se_all),
            "resampled": resampled}


def _swap_kernel(plan, stats):
    """Statistics each system gives away under a swap plan: ``W @ s`` with W = (1-S)/2."""
    return eng.corpus_sums_kernel((1.0 - plan) * 0.5, stats)


# ----------------------------------------------------------------------------- per pair
def _as_block(x, y):
    x, y = as_pairs(x, y)
    lead = x.shape[:-1]
    X = np.stack([x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])], 0)
    return X, lead


def _result(name, out, lead, alternative, null_value, confidence_level, n, kind):
    def shape(v):
        v = np.asarray(v)[0].reshape(lead)
        return v[()] if v.ndim == 0 else v

    return TestResult(
        test=name, statistic=shape(out["statistic"]), p_value=shape(out["p_value"]),
        estimate=shape(out["estimate"]), ci_low=shape(out["ci_low"]),
        ci_high=shape(out["ci_high"]), confidence_level=confidence_level, n=n,
        alternative=alternative, null_value=null_value, statistic_kind=kind,
        note=shape(out["note"]))


def bootstrap_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
                   statistic="mean", n_resamples=DEFAULT_N_RESAMPLES, seed=0, ci_method="basic",
                   bootstrap_pvalue="shifted", scheduler="synchronous") -> TestResult:
    """Paired bootstrap test of the mean or median of ``x - y``.

    Parameters
    ----------
    x, y : paired scores, instances on the last axis (leading axes are batches)
    alternative : ``"two-sided" | "less" | "greater"`` for theta(x - y) vs ``null_value``
    null_value : the margin delta of H0: theta = delta
    confidence_level : level of the interval
    statistic : ``"mean"`` or ``"median"``
    n_resamples : bootstrap resamples B
    seed : non-negative int (0 is a seed) — same seed, same numbers
    ci_method : ``"basic"`` (default: the inversion of the shifted p-value, so the
        decision and the interval agree), ``"bca"``, ``"percentile"`` or ``"studentized"``
        (mean only)
    bootstrap_pvalue : ``"shifted"`` (default), ``"berg-kirkpatrick"``, ``"sacrebleu"``
    scheduler : dask scheduler for the blocks

    Returns
    -------
    TestResult
        ``statistic`` = theta_hat - delta, ``p_value``, ``estimate`` = theta_hat and the
        interval; see the module docstring for the exact definitions.

    References
    ----------
    Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 14 and 16.
    Berg-Kirkpatrick, Burkett & Klein (2012), EMNLP, doi:10.5555/2390948.2391058.
    Phipson & Smyth (2010), doi:10.2202/1544-6115.1585.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(0.3, 1, 200); b = rng.normal(0, 1, 200)
    >>> res = bootstrap_test(a, b, n_resamples=2000, seed=0)
    >>> bool(res.p_value < 0.05), bool(res.ci_low < res.estimate < res.ci_high)
    (True, True)
    """
    (alternative, null_value, confidence_level, n_resamples, seed,
     statistic) = _check_resampling_args(alternative, null_value, confidence_level,
                                         n_resamples, seed, statistic)
    check_choice("ci_method", ci_method, CI_METHODS)
    check_choice("bootstrap_pvalue", bootstrap_pvalue, BOOTSTRAP_PVALUES)
    if ci_method == "studentized" and statistic != "mean":
        raise TestNotApplicableError("ci_method='studentized' needs statistic='mean'")
    X, lead = _as_block(x, y)
    if X.shape[-1] < 2:
        raise TestNotApplicableError(f"the bootstrap test needs at least 2 pairs; got "
                                     f"{X.shape[-1]}")
    out = bootstrap_block(X, [0], [1], statistic=statistic, alternative=alternative,
                          null_value=null_value, confidence_level=confidence_level,
                          n_resamples=n_resamples, seed=seed, ci_method=ci_method,
                          pvalue=bootstrap_pvalue, scheduler=scheduler)
    return _result("bootstrap", out, lead, alternative, null_value, confidence_level,
                   X.shape[-1], statistic)


def permutation_test(x, y, *, alternative="two-sided", null_value=0.0,
                     confidence_level=0.95, statistic="mean",
                     n_resamples=DEFAULT_N_RESAMPLES, seed=0,
                     scheduler="synchronous") -> TestResult:
    """Paired permutation (sign-flip / approximate randomization) test of ``x - y``.

    Parameters are those of :func:`bootstrap_test` (no interval options). All ``2**n``
    sign vectors are enumerated, giving the exact p-value, when ``2**n <= n_resamples``.

    Returns
    -------
    TestResult
        ``statistic`` = theta(x - y) - delta, ``p_value``, ``estimate``; the interval is
        NaN (a permutation test does not give one).

    References
    ----------
    Noreen (1989), Computer-Intensive Methods for Testing Hypotheses.
    Phipson & Smyth (2010), doi:10.2202/1544-6115.1585.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([1.2, 0.4, 2.2, 1.5, -0.3, 0.9, 1.1, 0.2])
    >>> y = np.zeros(8)
    >>> ours = permutation_test(x, y, n_resamples=10_000).p_value
    >>> ref = stats.permutation_test((x, y), lambda a, b: np.mean(a - b),
    ...                              permutation_type="samples").pvalue
    >>> bool(np.isclose(ours, ref))
    True
    """
    (alternative, null_value, confidence_level, n_resamples, seed,
     statistic) = _check_resampling_args(alternative, null_value, confidence_level,
                                         n_resamples, seed, statistic)
    X, lead = _as_block(x, y)
    if X.shape[-1] < 2:
        raise TestNotApplicableError(f"the permutation test needs at least 2 pairs; got "
                                     f"{X.shape[-1]}")
    out = permutation_block(X, [0], [1], statistic=statistic, alternative=alternative,
                            null_value=null_value, n_resamples=n_resamples, seed=seed,
                            scheduler=scheduler)
    return _result("permutation", out, lead, alternative, null_value, confidence_level,
                   X.shape[-1], statistic)


# ----------------------------------------------------------------------------- registry
#: what :func:`multistat.analyze` says of both resampling tests, by situation
_REASONS = {
    "normal": "valid, but computationally expensive and no more powerful than t here",
    "symmetric": "valid (mean), but computationally expensive",
    "skewed": "valid with the median statistic, but computationally expensive"}


def bootstrap_floor(n_resamples: int, *, alternative: str = "two-sided",
                    bootstrap_pvalue: str = "shifted", n_units=None) -> float:
    """Smallest p-value of the bootstrap test with ``n_resamples``: ``1/(B + 1)`` one-sided,
    twice that two-sided with the shifted p-value (it doubles the smaller tail)."""
    two = alternative == "two-sided"
    return (2.0 if two and bootstrap_pvalue == "shifted" else 1.0) / (n_resamples + 1)


def permutation_floor(n_resamples: int, *, alternative: str = "two-sided",
                      bootstrap_pvalue: str = "shifted", n_units=None) -> float:
    """Smallest p-value of the permutation test: ``1/(B + 1)`` (the two-sided p counts
    ``|T*| >= |T|``: one +1), or ``1/2**n`` (two-sided ``2/2**n``) when all ``2**n``
    sign vectors are enumerated (``2**n <= B``; no +1)."""
    if n_units is not None and n_units < 63 and 2**int(n_units) <= n_resamples:
        return (2.0 if alternative == "two-sided" else 1.0) / 2.0**int(n_units)
    return 1.0 / (n_resamples + 1)


# ----------------------------------------------------------------------------- batches
def _plan_kw(slab, ctx) -> dict:
    return dict(n_resamples=ctx.n_resamples, seed=ctx.seed, dataset=slab.dataset,
                scheduler=ctx.scheduler, n_chunks=ctx.n_chunks, budget=ctx.budget,
                progress=ctx.progress,
                clusters=getattr(slab, "clusters", None))


def _finish(name, out, slab, ctx, systems=None, resampled=None):
    out["n"] = slab.n
    out["statistic_kind"] = "corpus" if slab.is_corpus else ctx.statistic
    out["n_resamples"] = ctx.n_resamples
    out["seed"] = ctx.seed
    return BatchResult(name, out, systems=systems, resampled=resampled)


def bootstrap_batch(slab, ia, ib, ctx) -> BatchResult:
    """Batch entry of ``"bootstrap"``: :func:`bootstrap_block` on all pairs of a slab
    with the context's plan (seed, resamples, scheduler, budget) and options."""
    check_choice("ci_method", ctx.ci_method, CI_METHODS)
    check_choice("bootstrap_pvalue", ctx.bootstrap_pvalue, BOOTSTRAP_PVALUES)
    if ctx.ci_method == "studentized" and ctx.statistic != "mean" and not slab.is_corpus:
        raise TestNotApplicableError("ci_method='studentized' needs statistic='mean'")
    # a study streamed chunk by chunk gives its resampled means (same plan)
    means = getattr(slab, "bootstrap_means", None)
    out = bootstrap_block(slab._given() if means else slab.scores, ia, ib,
                          statistic=ctx.statistic,
                          alternative=ctx.alternative, null_value=ctx.null_value,
                          confidence_level=ctx.confidence_level, ci_method=ctx.ci_method,
                          pvalue=ctx.bootstrap_pvalue, corpus=slab.corpus,
                          centre=None if slab.is_corpus else slab.centres(),
                          streamed=means(ctx.n_resamples, ctx.seed) if means else None,
                          **_plan_kw(slab, ctx))
    systems = out.pop("systems", None)
    out.pop("systems_observed", None)
    k = out.pop("centre", None)
    # the step-down forms pairs from the centred means (shift-free); the per-system
    # table and the rank intervals read levels (``centre`` added back)
    resampled = None if systems is None else (
        {"dist": systems} if k is None or not np.any(k) else {"dist": systems, "centre": k})
    return _finish("bootstrap", out, slab, ctx,
                   None if systems is None else levels(systems, k if k is not None else 0),
                   resampled)


def permutation_batch(slab, ia, ib, ctx) -> BatchResult:
    """Batch entry of ``"permutation"``: :func:`permutation_block` on all pairs."""
    out = permutation_block(slab.scores, ia, ib, statistic=ctx.statistic,
                            alternative=ctx.alternative, null_value=ctx.null_value,
                            corpus=slab.corpus,
                            centre=None if slab.is_corpus else slab.centres(),
                            **_plan_kw(slab, ctx))
    out.pop("exact", None)
    # the sd of the null distribution (for `mde`) is not a standard error of the estimate
    out["null_sd"] = out.pop("se")
    return _finish("permutation", out, slab, ctx, resampled=out.pop("resampled", None))


register(TestSpec("bootstrap", bootstrap_test, "resampling", ("mean", "median", "corpus"),
                  assumes_symmetric=False, assumes_normal=False, resampling=True,
                  description="paired bootstrap (shifted), BCa/percentile/studentized CI",
                  batch=bootstrap_batch, supports_corpus=True, all_pairs=True,
                  joint_null=True, score_distribution=True, equivalence=True,
                  cluster_resampling=True, p_floor=bootstrap_floor, reasons=_REASONS))
register(TestSpec("permutation", permutation_test, "resampling", ("mean", "median", "corpus"),
                  assumes_symmetric=False, assumes_normal=False, resampling=True,
                  description="paired sign-flip permutation / approximate randomization",
                  batch=permutation_batch, supports_corpus=True, all_pairs=True,
                  joint_null=True, equivalence=True, cluster_resampling=True,
                  p_floor=permutation_floor, reasons=_REASONS))
