"""Public face of the rank-based paired tests: Wilcoxon signed-rank and Hodges-Lehmann.

The pieces live in focused modules (as scipy keeps ``_wilcoxon.py`` apart from
``_morestats.py``); their public names stay importable from here:

* :mod:`multistat.significance.sign` - the exact sign test (:func:`sign_test`);
* :mod:`multistat.significance._signrank` - ranks of ``|d|`` (:func:`signed_rank_info`),
  ``W+`` and its exact null distribution (:func:`signed_rank_pmf`);
* :mod:`multistat.significance._walsh` - exact Walsh-average order statistics
  (:func:`walsh_order_statistics`);
* :mod:`multistat.significance._binomial` - the exact binomial p-value.

This module holds :func:`wilcoxon`, :func:`hodges_lehmann` and registers the ``"sign"``
and ``"wilcoxon"`` tests. There are no module-level caches: callers that need several
rank statistics of the same differences pass :func:`signed_rank_info` as ``info=``.

Length (about 600 lines): the Wilcoxon test, its interval, the tie-corrected inversion of
that interval and the Hodges-Lehmann estimate read the same checked keywords and parts;
apart, each would import the others.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from multistat._budget import as_budget
from multistat._lazy import lazy_module
from multistat._validation import check_alternative, check_choice, check_probability
from multistat.errors import ConstantInputWarning, ParameterTypeError, SmallSampleWarning
from multistat.significance._base import TestResult, TestSpec, as_pairs, get_test, register
from multistat.significance._batch import differences_batch
from multistat.significance._chunks import chunked
from multistat.significance._common import (
    add_note,
    check_paired,
    checked_diff,
    empty_notes,
    estimate_inside,
    interval_quantile,
    one_sided_ends,
    scalar,
    warn_rows,
)
from multistat.significance._inversion import scan_interval
from multistat.significance._signrank import (
    EXACT_CI_MAX_N,
    EXACT_MAX_N,
    EXACT_TIES_MAX_N,
    SignedRankInfo,
    _signed_rank_lower_rank,
    exact_signed_rank_p,
    signed_rank_info,
    signed_rank_parts,
    signed_rank_pmf,
    signed_rank_sums,
)
from multistat.significance._walsh import walsh_order_statistics
from multistat.significance.sign import SIGN_BYTES_PER_VALUE, sign_test, sign_test_rows

stats = lazy_module("scipy.stats")  # imported on first use (t path: never)

__all__ = [
    "EXACT_CI_MAX_N",
    "EXACT_MAX_N",
    "EXACT_TIES_MAX_N",
    "WILCOXON_BYTES_PER_VALUE",
    "SignedRankInfo",
    "hodges_lehmann",
    "sign_test",
    "signed_rank_info",
    "signed_rank_pmf",
    "walsh_order_statistics",
    "wilcoxon",
]


def walsh_exact_rows(diff, method="auto", info=None):
    """Rows whose Walsh interval uses the exact signed-rank critical value: no ties in
    ``|x - y|`` and no zero differences (the continuous case the exact distribution is
    for), and ``method`` "exact" with ``n <= 400`` (above, the O(n^3) distribution costs
    seconds and the continuity-corrected normal value is as good), or "auto" with
    ``n <= 50``. ``info``: :func:`signed_rank_info` of ``diff`` (saves a sort)."""
    if method == "approx" or diff.shape[-1] > (EXACT_MAX_N if method == "auto"
                                                else EXACT_CI_MAX_N):
        return np.zeros(diff.shape[:-1], dtype=bool)
    if info is None:
        absd = np.sort(np.abs(diff), axis=-1)
        untied = ~np.any(absd[..., 1:] == absd[..., :-1], axis=-1)
    else:
        _, start, end = info.abs_sort
        untied = np.all(start == end, axis=-1)  # every tie group of |d| is a singleton
    clean = untied & ~np.any(diff == 0, axis=-1)
    clean &= diff.shape[-1] <= (EXACT_MAX_N if method == "auto" else EXACT_CI_MAX_N)
    return clean


def hl_and_interval(diff, level, alternative, exact, info=None, memory_limit=None,
                     correction=False):
    """Hodges-Lehmann estimate and Walsh-average interval for each row of ``diff``.

    ``exact`` (array over rows) selects the exact or normal-approximation critical value.
    Returns ``(estimate, low, high, unbounded_mask)``. ``info``
    (:func:`signed_rank_info` of ``diff``) keeps the selected Walsh order statistics, so
    the Wilcoxon test and the Hodges-Lehmann effect size given the same ``info`` select
    them once. ``correction``: the normal-approximation rank is that of the
    continuity-corrected test (:func:`_signed_rank_lower_rank`).
    """
    n = diff.shape[-1]
    n_walsh = n * (n + 1) // 2
    tail = interval_quantile(level, alternative)
    k_exact = _signed_rank_lower_rank(n, tail, True) if np.any(exact) else None
    k_approx = (_signed_rank_lower_rank(n, tail, False, bool(correction))
                if not np.all(exact) else None)
    ranks = {(n_walsh - 1) // 2, n_walsh // 2}
    for k in (k_exact, k_approx):
        if k is not None and k >= 1:
            ranks |= {k - 1, n_walsh - k}
    wanted = sorted(ranks)
    if info is None:
        stats_ = walsh_order_statistics(np.sort(diff, axis=-1), wanted,
                                        memory_limit=memory_limit)
    else:
        stats_ = info.walsh(wanted, memory_limit=memory_limit)
    pos = {r: i for i, r in enumerate(wanted)}
    estimate = 0.5 * (stats_[..., pos[(n_walsh - 1) // 2]] + stats_[..., pos[n_walsh // 2]])
    shape = diff.shape[:-1]
    low = np.full(shape, -np.inf)
    high = np.full(shape, np.inf)
    unbounded = np.zeros(shape, dtype=bool)
    for k, mask in ((k_exact, np.asarray(exact, bool)), (k_approx, ~np.asarray(exact, bool))):
        if k is None:
            continue
        mask = np.broadcast_to(mask, shape)
        if k >= 1:
            low = np.where(mask, stats_[..., pos[k - 1]], low)
            high = np.where(mask, stats_[..., pos[n_walsh - k]], high)
        else:
            unbounded |= mask
    low, high = one_sided_ends(low, high, alternative)
    return estimate, low, high, unbounded


def hodges_lehmann(x, y, *, alternative="two-sided", confidence_level=0.95, exact=None,
                   info=None):
    r"""Hodges-Lehmann estimate of the pseudo-median of ``x - y`` with its interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis.
    alternative : {"two-sided", "less", "greater"}
        One-sided alternatives give one-sided intervals.
    confidence_level : float
    exact : bool or None
        Exact signed-rank critical value or its normal approximation; default (None):
        exact for rows with ``n <= 50`` and no ties or zeros among the differences.
    info : SignedRankInfo, optional
        :func:`signed_rank_info` of ``x - y``, shared with other rank statistics of the
        same differences (one sort; Walsh order statistics selected once).

    Returns
    -------
    estimate, ci_low, ci_high : ndarray over the leading shape

    Notes
    -----
    :math:`HL = \mathrm{median}\{(d_i + d_j)/2 : i \le j\}` over the :math:`M = n(n+1)/2`
    Walsh averages *including* :math:`i = j`: this is the estimator obtained by inverting
    the signed-rank statistic (:math:`W^+(\theta)` = number of Walsh averages of
    :math:`d - \theta` above 0), whereas the NLPStatTest manual (eq. 18) writes
    :math:`i \ne j`; the two differ by :math:`O(1/n)`. The interval is
    :math:`[W_{(k)}, W_{(M+1-k)}]` with :math:`k` the lower critical value of the
    signed-rank distribution for :math:`n` (exact, or
    :math:`\lfloor n(n+1)/4 - z_{1-\alpha/2}\sqrt{n(n+1)(2n+1)/24}\rfloor + 1`,
    the smallest integer above the normal quantile); its
    coverage is at least the nominal level for continuous symmetric distributions.

    References
    ----------
    Hodges, J. L., & Lehmann, E. L. (1963). Estimates of location based on rank tests.
    Ann. Math. Statist. 34(2), 598-611. doi:10.1214/aoms/1177704172
    """

    alternative = check_alternative(alternative)
    level = check_probability("confidence_level", confidence_level)
    x, y = as_pairs(x, y)
    diff = x - y
    if info is not None:
        info.check(diff, "hodges_lehmann")
    if exact is None:
        exact = walsh_exact_rows(diff, "auto", info)
    elif not isinstance(exact, (bool, np.bool_)):
        raise ParameterTypeError(f"`exact` must be True, False or None; got {exact!r}")
    est, low, high, _ = hl_and_interval(diff, level, alternative, exact, info)
    return scalar(est), scalar(low), scalar(high)


_WILCOXON_METHODS = ("auto", "exact", "approx", "asymptotic")
#: working memory of the Wilcoxon test per pair x instance (the differences, their sorted
#: copy, the rank sums' and the Walsh kernel's arrays); sizes chunks of pairs. Measured
#: (WAL2, numba Walsh kernel): ru_maxrss of ``compare(make_study(300, 1, 2000),
#: tests=("wilcoxon",), effect_sizes=False, memory_limit=...)`` from
#: benchmarks/bench_leaderboard.py minus the same process after a warm-up call on a tiny
#: study: 141 MiB at 64MiB, 495 MiB at 256MiB when declared 146 bytes, i.e. ~270 bytes a
#: value at the margin (282 on average at 256MiB); 300 keeps peak - baseline in budget.
#: Re-measured (WX) with the batch reading the slab's differences (no X[ia], X[ib] copies,
#: no copy of the tied rows): 73 MiB at 64MiB, 219 MiB at 256MiB (was 77 and 248 on the
#: same machine), ~230 bytes a value at the margin; 300 stays an upper bound
WILCOXON_BYTES_PER_VALUE = 300
#: working memory of compare's effect sizes per pair x metric x instance: the
#: Hodges-Lehmann interval is the Wilcoxon test's Walsh selection, so at least its measured
#: bytes (300 x 1 x 2,000, tests=("t",) with effect sizes, default 1 GiB budget: peak RSS
#: 643 MiB, whole process)
EFFECT_BYTES_PER_VALUE = max(160, WILCOXON_BYTES_PER_VALUE)


def wilcoxon(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
             zero_method="wilcox", method="auto", correction=False, info=None,
             memory_limit=None, _interval=True):
    r"""Wilcoxon signed-rank test with the Hodges-Lehmann estimate and Walsh interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    alternative : {"two-sided", "less", "greater"}
        H1 about the (pseudo-)median of ``x - y`` relative to ``null_value``;
        ``"greater"`` means ``x`` tends to exceed ``y`` (large :math:`W^+`).
    null_value : float
        :math:`\delta`: the test ranks :math:`d_i = x_i - y_i - \delta`.
    confidence_level : float
        Level of the interval for the pseudo-median.
    zero_method : {"wilcox", "pratt", "zsplit"}
        As :func:`scipy.stats.wilcoxon`: drop zero differences before ranking; rank them
        but give them no sign (Pratt); or split their ranks between both signs.
    method : {"auto", "exact", "approx"}
        ``"exact"``: the exact sign-flip distribution of :math:`W^+` given the observed
        ranks - the classical signed-rank distribution without ties, and the exact
        conditional (permutation) distribution with ties or zeros (equal to
        ``scipy.stats.wilcoxon(method=PermutationMethod())`` when that enumerates all
        :math:`2^n` flips; scipy's ``method="exact"`` instead rounds a tied statistic and
        uses the untied distribution). ``"approx"`` (alias ``"asymptotic"``): normal
        approximation with tie correction. ``"auto"`` (scipy's rule, decided per row):
        exact when :math:`n \le 50` and there are no ties or zeros; exact conditional when
        there are ties or zeros and :math:`n \le 13`; otherwise the normal approximation.
    correction : bool
        Continuity correction of 1/2 towards the mean in the normal approximation.
    info : SignedRankInfo, optional
        :func:`signed_rank_info` of ``x - y`` when the caller also needs Wilcoxon r or
        the Hodges-Lehmann effect size of the same differences: one sort of ``|d|`` and
        one Walsh selection serve all of them. (With ``null_value != 0`` the ranks are
        of ``x - y - null_value`` and are sorted here; the interval still uses ``info``.)
    memory_limit : int, str or None
        Working memory (bytes or ``"512MiB"``; None: the engine's default budget). Rows
        are tested in chunks of about ``memory_limit / (n * WILCOXON_BYTES_PER_VALUE)``
        (without ``info``); results do not depend on it.

    Returns
    -------
    TestResult
        ``statistic`` = :math:`W^+`, the sum of the ranks of the positive differences (with
        ``"zsplit"``, plus half the ranks of the zeros) for every alternative - scipy
        reports :math:`\min(W^+, W^-)` for the two-sided test and :math:`W^+` otherwise;
        ``estimate`` = Hodges-Lehmann pseudo-median of ``x - y``; ``ci_low``/``ci_high``;
        ``n`` = number of differences ranked (non-zero ones for ``"wilcox"``);
        ``extra={"z": ..., "exact": ...}`` with the signed normal score (NaN for rows
        computed exactly) and whether the exact distribution was used.

    Notes
    -----
    Normal approximation (NLPStatTest manual eq. 17; Pratt adjustments of Cureton 1967):

    .. math:: z = \frac{W^+ - n(n+1)/4}{\sqrt{n(n+1)(2n+1)/24 - \sum_t (t^3 - t)/48}}

    with :math:`t` the sizes of tied groups of :math:`|d|`; with ``correction`` the
    numerator moves 1/2 towards 0 (two-sided) or in the direction of the alternative.
    ``"greater"`` uses :math:`P(Z \ge z)`, ``"less"`` :math:`P(Z \le z)`, two-sided
    :math:`2\min`. The interval (see :func:`hodges_lehmann`) uses all :math:`n`
    differences; its critical value is exact when ``x - y`` has no ties or zeros and
    ``method`` is "exact" with :math:`n \le 400` (or "auto" with :math:`n \le 50`), the
    normal approximation otherwise. All work is vectorized over rows: for the normal
    approximation, :math:`W^+` and the tie term from one sort of sign-tagged keys of
    :math:`|d|` (:func:`~multistat.significance._signrank.signed_rank_sums`, no ranks
    formed); for exact rows, ranks from one argsort and the exact distribution by a
    dynamic program over rows; the Walsh order statistics by a selection across rows
    (:func:`walsh_order_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([0.61, 0.72, 0.55, 0.80, 0.67, 0.74, 0.59, 0.66])
    >>> y = np.array([0.58, 0.70, 0.57, 0.71, 0.60, 0.69, 0.60, 0.61])
    >>> res = wilcoxon(x, y, alternative="greater")
    >>> ref = stats.wilcoxon(x, y, alternative="greater")
    >>> bool(np.isclose(res.p_value, ref.pvalue)), bool(res.statistic == ref.statistic)
    (True, True)

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin
    1(6), 80-83. doi:10.2307/3001968
    Hollander, M., Wolfe, D. A., & Chicken, E. (2013). Nonparametric Statistical Methods
    (3rd ed.), ch. 3. doi:10.1002/9781119196037
    """
    kwargs = {"alternative": alternative, "null_value": null_value,
              "confidence_level": confidence_level, "zero_method": zero_method,
              "method": method, "correction": correction, "memory_limit": memory_limit,
              "_interval": _interval}
    if info is not None:  # the caller sized the batch (one info for all of it)
        return _wilcoxon(x, y, info=info, **kwargs)
    x, y, *_ = check_paired(x, y, alternative, null_value, confidence_level)
    return chunked(_wilcoxon, x, y, kwargs, bytes_per_value=WILCOXON_BYTES_PER_VALUE,
                   memory_limit=memory_limit)


def _wilcoxon(x, y, *, alternative, null_value, confidence_level, zero_method, method,
              correction, info=None, memory_limit=None, _interval=True, _diff=False):
    """:func:`wilcoxon` on one chunk of rows; ``_diff``: ``x`` is ``x - y`` itself, found
    finite by the caller (the spec's batch,
    :func:`~multistat.significance._batch.differences_batch`), and ``info`` describes it."""
    diff, alternative, null_value, confidence_level = checked_diff(
        x, y, alternative, null_value, confidence_level, is_diff=_diff)
    zero_method = check_choice("zero_method", zero_method, ("wilcox", "pratt", "zsplit"))
    method = check_choice("method", method, _WILCOXON_METHODS)
    if method == "asymptotic":
        method = "approx"
    if not isinstance(correction, (bool, np.bool_)):
        raise ParameterTypeError(f"`correction` must be True or False; got {correction!r}")
    d = diff if null_value == 0 else diff - null_value  # (x - 0.0 is x, bit for bit)
    shape = d.shape[:-1]
    n_all = d.shape[-1]
    notes = empty_notes(shape)
    if info is not None and not _diff:
        info.check(diff, "wilcoxon")
    # the ranks are those of d = diff - null_value: ``info`` describes them when null is 0
    own = info if null_value == 0 else None
    if (method == "approx" or (method == "auto" and n_all > EXACT_MAX_N)) and not np.isnan(
            d).any():
        # the normal approximation only (no row is exact): W+ and the ties from one sort
        # of keys, no ranks (the same integers, so the same p-values)
        parts = (own.rank_sums(zero_method) if own is not None
                 else signed_rank_sums(d, zero_method))
    else:
        parts = signed_rank_parts(d, zero_method, own)
    w_plus, mean, sd, count = parts["w_plus"], parts["mean"], parts["sd"], parts["count"]
    n_zero, has_ties = parts["n_zero"], parts["has_ties"]

    degenerate = n_zero == n_all
    if method == "auto":
        clean = ~has_ties & (n_zero == 0)
        use_exact = np.where(clean, n_all <= EXACT_MAX_N, n_all <= EXACT_TIES_MAX_N)
    else:
        use_exact = np.full(shape, method == "exact")
    use_exact = np.broadcast_to(use_exact, shape)

    with np.errstate(divide="ignore", invalid="ignore"):
        z = (w_plus - mean) / sd
        if correction:
            if alternative == "greater":
                direction = 1.0
            elif alternative == "less":
                direction = -1.0
            else:
                direction = np.sign(z)
            z = z - direction * 0.5 / sd
    if alternative == "greater":
        p = stats.norm.sf(z)
    elif alternative == "less":
        p = stats.norm.cdf(z)
    else:
        p = np.minimum(1.0, 2.0 * stats.norm.sf(np.abs(z)))
    if np.any(use_exact):
        flat_ranks = parts["ranks"].reshape(-1, n_all)
        sel = use_exact.reshape(-1) & ~np.broadcast_to(degenerate, shape).reshape(-1)
        if sel.any():
            flat_p = np.array(p, dtype=float).reshape(-1)
            w_flip = w_plus.reshape(-1)[sel]
            if zero_method == "zsplit":  # half the zero ranks: a constant, not flipped
                w_flip = w_flip - (n_zero.reshape(-1)[sel] * (n_zero.reshape(-1)[sel] + 1) / 4)
            flat_p[sel] = exact_signed_rank_p(flat_ranks[sel], w_flip, alternative)
            p = flat_p.reshape(shape)
    z_out = np.where(use_exact, np.nan, z)

    p = np.where(degenerate, np.nan, p)
    statistic = np.where(degenerate, np.nan, w_plus)
    z_out = np.where(degenerate, np.nan, z_out)
    add_note(notes, degenerate, "all differences equal the null value: W+ undefined")
    warn_rows(degenerate, ConstantInputWarning,
          "Wilcoxon test: all differences equal the null value, result is NaN")
    small = (n_all < 2)
    if small:
        warn_rows(np.ones(shape, bool), SmallSampleWarning,
              "Wilcoxon test: fewer than 2 pairs, the interval is unbounded")

    if not _interval:  # p-values only (the tied-data inversion scan below)
        nan = scalar(np.full(shape, np.nan))
        return TestResult(test="wilcoxon", statistic=scalar(statistic),
                          p_value=scalar(p), estimate=nan, ci_low=nan, ci_high=nan,
                          confidence_level=confidence_level, n=scalar(count),
                          alternative=alternative, null_value=null_value,
                          statistic_kind="median")
    ci_exact = walsh_exact_rows(diff, method, info)
    tied_rows = _tied_rows(diff if info is None else info.sorted_d, presorted=info is not None)
    test_options = {"alternative": alternative, "zero_method": zero_method,
                    "method": method, "correction": correction}

    def interval(level, notes=None):
        est, low, high, unbounded = hl_and_interval(diff, level, alternative, ci_exact,
                                                     info, memory_limit, correction)
        if notes is not None:
            add_note(notes, unbounded,
                      f"n = {n_all} is too small for a Walsh-average interval at level "
                      f"{level}: interval is unbounded")
        if tied_rows.any():  # ties: invert the tie-corrected test itself
            low, high = _tied_inversion(diff, tied_rows, low, high, level, test_options,
                                        notes, None if info is None else info.sorted_d,
                                        memory_limit)
        return est, scalar(low), scalar(high)

    estimate, low, high = interval(confidence_level, notes)
    estimate = estimate_inside(estimate, low, high, notes, "Hodges-Lehmann estimate")
    return TestResult(
        test="wilcoxon", statistic=scalar(statistic), p_value=scalar(p),
        estimate=scalar(estimate), ci_low=low, ci_high=high,
        confidence_level=confidence_level, n=scalar(count.astype(np.int64)),
        alternative=alternative, null_value=null_value, statistic_kind="median",
        note=scalar(notes),
        extra={"z": scalar(z_out), "exact": scalar(np.array(use_exact))},
        _ci_fn=lambda level: interval(check_probability("confidence_level", level))[1:],
    )


_SCAN_MAX_BREAKPOINTS = 4096
#: ``method="exact"`` on a tied row: the scan evaluates the exact conditional distribution
#: (``n(n+1) + 1`` probabilities, ``n`` update steps) at each of ``2k + 1`` candidate nulls;
#: above this many ``(2k + 1) n (n(n+1) + 1)`` (about 12 ns each on a 2-core machine, so
#: ~1 s a row) the row keeps the Walsh interval, with a note. Without a cap, n = 300 took
#: hours and 15 GB a row.
_EXACT_SCAN_MAX_OPS = 1e8
#: bytes per candidate null and instance of the scan's p-value evaluation (the shifted
#: differences and the signed-rank temporaries), plus per exact-distribution entry
_SCAN_BYTES_PER_VALUE = 64
_SCAN_BYTES_PER_PMF_ENTRY = 64


def _tied_rows(diff, presorted=False):
    """Rows of ``diff`` with repeated values (ties or several zeros)."""
    srt = diff if presorted else np.sort(diff, axis=-1)
    return np.any(srt[..., 1:] == srt[..., :-1], axis=-1)


def _subset_fractions(m):
    """``m`` fixed fractions in [0, 1), sorted: positions of the subset of distinct values
    tried first. Pseudo-random (seed 0), not evenly spaced: evenly spaced values of
    gridded data form an arithmetic progression whose averages coincide."""
    return np.sort(np.random.default_rng(0).random(m))


def _distinct_walsh(u, limit, pairs=None):
    """Sorted distinct Walsh averages ``(u_i + u_j) / 2`` (``i <= j``) of the sorted
    distinct values ``u``, or None if there are more than ``limit``.

    The averages of any subset of ``u`` are a subset of them (the same floats), so a
    subset with more than ``limit`` distinct averages decides "too many" without forming
    all ``u(u+1)/2``: first about ``sqrt(2 limit)`` values scattered over ``u`` (one try
    that decides most rows), then growing prefixes; a row with
    ``2u - 1 > limit`` (the sumset bound) forms none. ``pairs``: a dict the caller keeps
    for the ``triu_indices`` of each size (reused across rows)."""
    if 2 * u.size - 1 > limit:
        return None
    pairs = {} if pairs is None else pairs

    def averages(v):
        if v.size not in pairs:
            pairs[v.size] = np.triu_indices(v.size)
        i, j = pairs[v.size]
        return np.unique((v[i] + v[j]) / 2)

    m = int(np.ceil(np.sqrt(2.0 * limit)))  # m(m+1)/2 > limit averages
    if u.size > m and averages(u[(_subset_fractions(m) * u.size).astype(np.int64)]
                               ).size > limit:
        return None
    k = 64
    while True:
        k = min(k, u.size)
        walsh = averages(u[:k])
        if walsh.size > limit:
            return None
        if k == u.size:
            return walsh
        k *= 2


def _spread_subset_check(srt, step, n_distinct, rows, too_many):
    """:func:`_distinct_walsh`'s first try for all undecided rows at once: the averages
    of ``m`` distinct values scattered over each row (``m(m+1)/2`` just above the limit,
    then about four times it), sorted together; rows with more than the limit of
    distinct ones among them are marked ``too_many`` (exact: a subset of the row's
    averages). Rows with NaN (sorted last in ``srt``) are left to the per-row path."""
    limit = _SCAN_MAX_BREAKPOINTS
    for m in (int(np.ceil(np.sqrt(2.0 * limit))), int(np.ceil(np.sqrt(8.0 * limit)))):
        cand = np.flatnonzero(~too_many[rows] & (n_distinct > m) & ~np.isnan(srt[:, -1]))
        if not cand.size:
            return
        keep = np.ones((cand.size, srt.shape[-1]), dtype=bool)
        keep[:, 1:] = step[cand]
        c_idx = np.nonzero(keep)[1]  # positions of the distinct values, row by row
        del keep
        first = np.concatenate([[0], np.cumsum(n_distinct[cand])[:-1]])
        pick = first[:, None] + (_subset_fractions(m)[None, :]
                                 * n_distinct[cand][:, None]).astype(np.int64)
        vals = srt[cand[:, None], c_idx[pick]]
        i, j = np.triu_indices(m)
        avg = np.sort((vals[:, i] + vals[:, j]) / 2, axis=-1)
        distinct = 1 + np.count_nonzero(avg[:, 1:] != avg[:, :-1], axis=-1)
        too_many[rows[cand[distinct > limit]]] = True


def _tied_inversion(diff, tied, low, high, level, options, notes, sorted_rows=None,
                    memory_limit=None):
    """Walsh interval replaced, on rows with ties, by the exact acceptance set of the
    tie-corrected test: its p-value only changes at Walsh averages, so it is evaluated on
    each distinct Walsh average and each gap between two
    (:func:`multistat.significance._inversion.scan_interval`), in chunks of candidate
    nulls sized by the memory budget. Rows with more than ``_SCAN_MAX_BREAKPOINTS``
    distinct averages, and ``method="exact"`` rows whose scan would exceed
    ``_EXACT_SCAN_MAX_OPS``, keep the Walsh interval, with a note."""

    shape = diff.shape[:-1]
    low = np.array(np.broadcast_to(low, shape), dtype=float)
    high = np.array(np.broadcast_to(high, shape), dtype=float)
    flat = None  # diff.reshape(-1, n), made only if a row is scanned (a strided diff
    # would be copied whole)
    lo_f, hi_f = low.reshape(-1), high.reshape(-1)
    too_many = np.zeros(lo_f.size, bool)
    rows = np.flatnonzero(np.broadcast_to(tied, shape).reshape(-1))
    # the distinct Walsh averages are those of the distinct values (same set, same
    # floats); there are at least 2u - 1 of them (sumset bound), so rows with many
    # distinct values are decided from a count of the distinct values, without a sort
    if sorted_rows is None:
        srt = np.sort(diff.reshape(-1, diff.shape[-1])[rows], axis=-1)
    else:
        srt = sorted_rows.reshape(-1, diff.shape[-1])
        srt = srt if rows.size == srt.shape[0] else srt[rows]  # (every row: no copy)
    step = srt[:, 1:] != srt[:, :-1]
    if np.isnan(srt[:, -1:]).any():  # NaNs (sorted last) count once, as in np.unique
        step &= ~np.isnan(srt[:, 1:])
    n_distinct = 1 + np.count_nonzero(step, axis=-1)
    too_many[rows[2 * n_distinct - 1 > _SCAN_MAX_BREAKPOINTS]] = True
    _spread_subset_check(srt, step, n_distinct, rows, too_many)
    pairs: dict[Any, Any] = {}
    n = diff.shape[-1]
    exact = options.get("method") == "exact"  # "auto" is exact only up to 13 tied values
    pmf_size = n * (n + 1) + 1
    per_null = n * _SCAN_BYTES_PER_VALUE + (pmf_size * _SCAN_BYTES_PER_PMF_ENTRY
                                            if exact else 0)
    budget = as_budget(memory_limit)
    too_slow = np.zeros(lo_f.size, bool)
    for pos_r, (r, s_r) in enumerate(zip(rows, srt)):
        if too_many[r]:
            continue
        if flat is None:
            flat = diff.reshape(-1, diff.shape[-1])
        d = flat[r]
        keep = np.ones(s_r.size, dtype=bool)
        keep[1:] = step[pos_r]
        walsh = _distinct_walsh(s_r[keep], _SCAN_MAX_BREAKPOINTS, pairs)
        if walsh is None:
            too_many[r] = True
            continue
        if exact and (2 * walsh.size + 1) * n * pmf_size > _EXACT_SCAN_MAX_OPS:
            too_slow[r] = True
            continue

        def pvalues(deltas, d=d):
            out = np.empty(deltas.size)
            for sl in budget.chunks(deltas.size, per_null):  # each null on its own
                shifted = d[None, :] - deltas[sl, None]
                with warnings.catch_warnings():  # candidate nulls, not the user's data
                    warnings.simplefilter("ignore")
                    res = wilcoxon(shifted, np.zeros_like(shifted), _interval=False,
                                   **options)
                out[sl] = res.p_value
            return out

        lo_f[r], hi_f[r] = scan_interval(pvalues, walsh, alpha=1.0 - level)
    if notes is not None:
        add_note(notes, too_many.reshape(shape), "ties: Walsh interval, which may "
                  "disagree with the tie-corrected p-value at its ends")
        add_note(notes, too_slow.reshape(shape), f"ties with method='exact' at n = {n}: "
                  "Walsh interval (inverting the exact test would take too long), which "
                  "may disagree with the p-value at its ends")
        add_note(notes, np.isnan(low), "the test rejects every null value (ties): the "
                  "interval is empty")
    return low, high


register(TestSpec(
    name="sign", func=sign_test, family="rank",
    batch=differences_batch("sign", sign_test, sign_test_rows, get_test),
    statistic_kinds=("median",),
    assumes_symmetric=False, assumes_normal=False,
    description="exact binomial sign test; order-statistic interval for the median",
    bytes_per_value=SIGN_BYTES_PER_VALUE,
    null_statistic=lambda n: n / 2,  # positive differences expected under H0
    reasons={
        "normal": "valid without assumptions but uses only the signs: low power",
        "symmetric": "valid without assumptions but uses only the signs: low power",
        "skewed": "differences are skewed: test the median; the sign test needs neither "
                  "symmetry nor normality"},
))
register(TestSpec(
    name="wilcoxon", func=wilcoxon, family="rank",
    batch=differences_batch("wilcoxon", wilcoxon, _wilcoxon, get_test),
    statistic_kinds=("median",),
    assumes_symmetric=True, assumes_normal=False,
    description="Wilcoxon signed-rank test (exact / normal approximation); "
                "Hodges-Lehmann estimate with Walsh-average interval",
    bytes_per_value=WILCOXON_BYTES_PER_VALUE,
    equivalence=True,
    estimate_label="Hodges-Lehmann estimate of A − B", effect_size=("wilcoxon_r", "hodges_lehmann"),
    null_statistic=lambda n: n * (n + 1) / 4,  # W+ expected under H0
    reasons={
        "normal": "valid under symmetry but less powerful than t on normal data",
        "symmetric": "differences are roughly symmetric but not normal: Wilcoxon keeps "
                     "power without normality",
        "skewed": "assumes a symmetric distribution of differences, which the skewness "
                  "rejects"},
))
