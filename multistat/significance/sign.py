"""The exact sign test of the median difference, with its order-statistic interval."""

from __future__ import annotations

import numpy as np

from multistat._validation import check_choice, check_probability
from multistat.errors import ConstantInputWarning
from multistat.significance._base import TestResult
from multistat.significance._binomial import binom_half_pvalue
from multistat.significance._chunks import chunked
from multistat.significance._common import (
    add_note,
    check_paired,
    checked_diff,
    empty_notes,
    estimate_inside,
    scalar,
    warn_rows,
)
from multistat.significance._inversion import sign_interval_rows

__all__ = ["SIGN_BYTES_PER_VALUE", "sign_test"]

#: working memory of the sign test per pair x instance, sizes chunks of pairs: the pair
#: slab ``X[ia], X[ib]`` the batch forms (16 bytes), the differences and their sort (16),
#: the interval's int32 tie-run positions and one-byte masks. Measured with tracemalloc
#: on 200 pairs x 2 metrics x 10,000 instances (4 decimals) through sign_test(X[ia],
#: X[ib]): peak 50 bytes a value (133 before the int32 / table-lookup interval)
SIGN_BYTES_PER_VALUE = 56


def sign_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
              zero_method="drop", memory_limit=None):
    r"""Exact (binomial) sign test on the median difference, with an order-statistic interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    alternative : {"two-sided", "less", "greater"}
        H1 about the median of ``x - y`` relative to ``null_value``
        (``"greater"``: :math:`P(x - y > \delta) > 1/2`).
    null_value : float
        The null median :math:`\delta`; signs are those of :math:`d_i = x_i - y_i - \delta`.
    confidence_level : float
        Level of the distribution-free interval for the median of ``x - y``.
    zero_method : {"drop", "split"}
        Differences equal to :math:`\delta` carry no sign. ``"drop"`` (default, Hollander et
        al.) removes them, so ``n`` counts only non-zero differences. ``"split"`` gives half
        of them to each sign; with an odd number of zeros one zero is dropped first so the
        counts stay integers (Conover 1999, sec. 3.4).
    memory_limit : int, str or None
        Working memory (bytes or ``"512MiB"``; None: the engine's default budget): rows
        are tested in chunks of about ``memory_limit / (n * SIGN_BYTES_PER_VALUE)``;
        results do not depend on it.

    Returns
    -------
    TestResult
        ``statistic`` = number of positive differences (with the split share), ``n`` = number
        of signs used, ``estimate`` = median of ``x - y``, ``ci_low``/``ci_high``,
        ``extra={"n_zero": ...}``.

    Notes
    -----
    With :math:`S` positives among :math:`m` signs, :math:`S \sim \mathrm{Bin}(m, 1/2)` under
    H0. ``"greater"``: :math:`p = P(S' \ge S)`; ``"less"``: :math:`p = P(S' \le S)`;
    two-sided: :math:`p = \min(1, 2 P(S' \le \min(S, m - S)))`, which equals
    :func:`scipy.stats.binomtest` for :math:`p_0 = 1/2`.

    The interval is the inversion of this test: the set of null values :math:`\delta` it
    does not reject at level :math:`1 - \text{confidence\_level}` (same sidedness, same
    zero handling), so ``p <= alpha`` exactly when the interval excludes ``null_value``.
    For distinct differences it is the order-statistic interval
    :math:`[d_{(k)}, d_{(n-k+1)}]`, :math:`k` the largest integer with
    :math:`P(B \le k-1) \le \alpha/2`, :math:`B \sim \mathrm{Bin}(n, 1/2)` (Hollander,
    Wolfe & Chicken 2013, sec. 3.6), whose coverage is at least the level for every
    continuous distribution; an end where the data value itself is rejected (it is dropped
    as a zero there) is moved to the nearest float inside. With ties it is computed exactly
    by evaluating the p-value on every distinct value and every gap
    (:func:`multistat.significance._inversion.sign_interval_rows`). One-sided alternatives
    give :math:`[\text{low}, \infty)` / :math:`(-\infty, \text{high}]`. When :math:`n` is
    too small for the test to ever reject, the interval is :math:`(-\infty, \infty)` with a
    note.

    References
    ----------
    Hollander, M., Wolfe, D. A., & Chicken, E. (2013). Nonparametric Statistical Methods
    (3rd ed.), ch. 3. Wiley. doi:10.1002/9781119196037

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([3.0, 4.5, 2.0, 5.0, 4.0, 3.5, 6.0, 4.0])
    >>> y = np.array([2.5, 4.0, 2.0, 4.0, 4.5, 3.0, 5.0, 3.0])
    >>> res = sign_test(x, y)  # one zero difference dropped: 6 positives among 7
    >>> int(res.statistic), int(res.n), bool(np.isclose(res.p_value, stats.binomtest(6, 7).pvalue))
    (6, 7, True)
    """
    kwargs = {"alternative": alternative, "null_value": null_value,
              "confidence_level": confidence_level, "zero_method": zero_method}
    x, y, *_ = check_paired(x, y, alternative, null_value, confidence_level)
    return chunked(sign_test_rows, x, y, kwargs, bytes_per_value=SIGN_BYTES_PER_VALUE,
                   memory_limit=memory_limit)


def sign_test_rows(x, y, *, alternative, null_value, confidence_level, zero_method,
               info=None, _diff=False):
    """:func:`sign_test` on one chunk of rows; ``_diff``: ``x`` is ``x - y`` itself, found
    finite by the caller (the spec's batch,
    :func:`~multistat.significance._batch.differences_batch`), ``info`` its
    :class:`~multistat.significance.rank.SignedRankInfo` (whose sorted rows are shared)."""
    diff, alternative, null_value, confidence_level = checked_diff(
        x, y, alternative, null_value, confidence_level, is_diff=_diff)
    zero_method = check_choice("zero_method", zero_method, ("drop", "split"))
    d = diff - null_value if null_value else diff
    shape = d.shape[:-1]
    notes = empty_notes(shape)
    pos = np.count_nonzero(d > 0, axis=-1)
    neg = np.count_nonzero(d < 0, axis=-1)
    zeros = d.shape[-1] - pos - neg
    if zero_method == "drop":
        k, m = pos, pos + neg
    else:
        half = zeros // 2
        k, m = pos + half, pos + neg + 2 * half
    empty = m == 0
    add_note(notes, empty, "all differences equal the null value: no signs to test")
    warn_rows(empty, ConstantInputWarning,
          "sign test: all differences equal the null value, result is NaN")
    p = np.where(empty, np.nan, binom_half_pvalue(k, m, alternative))
    statistic = np.where(empty, np.nan, k.astype(float))

    sorted_diff = np.sort(diff, axis=-1) if info is None else info.sorted_d
    del d
    n_all = diff.shape[-1]
    # the median from the sorted copy (np.median would partition another copy); for even
    # n the mean of the two middle values, as np.median computes it
    half_n = n_all // 2
    estimate = (sorted_diff[..., half_n] if n_all % 2 else
                (sorted_diff[..., half_n - 1] + sorted_diff[..., half_n]) / 2.0)

    def interval(level, notes=None):
        # the exact inversion of this very test (same zero handling): reject <=> the
        # interval excludes null_value
        low, high = sign_interval_rows(sorted_diff, alternative=alternative,
                                       confidence_level=level, zero_method=zero_method)
        if notes is not None and alternative == "two-sided":
            add_note(notes, np.isneginf(low) & np.isposinf(high),
                      f"n = {n_all} is too small for the sign test to reject at level "
                      f"{level}: interval is unbounded")
        if notes is not None:
            add_note(notes, np.isnan(low), "the sign test rejects every null value (ties "
                      "are dropped at each): the interval is empty")
        return scalar(low), scalar(high)

    low, high = interval(confidence_level, notes)
    estimate = estimate_inside(estimate, low, high, notes, "median")
    return TestResult(
        test="sign", statistic=scalar(statistic), p_value=scalar(p),
        estimate=scalar(estimate), ci_low=low, ci_high=high,
        confidence_level=confidence_level, n=scalar(m.astype(np.int64)),
        alternative=alternative, null_value=null_value, statistic_kind="median",
        note=scalar(notes), extra={"n_zero": scalar(zeros.astype(np.int64))},
        _ci_fn=lambda level: interval(check_probability("confidence_level", level)),
    )

