"""The exact Wilcoxon-Mann-Whitney null distribution and the exact Hodges-Lehmann
interval that inverts the exact test.

Without ties, ``U = #{(i, j): x_i > y_j}`` of two independent samples of sizes ``m`` and
``n`` has under H0 the distribution ``P(U = u) = c(u) / C(m + n, m)``, where ``c(u)`` are
the coefficients of the Gaussian binomial coefficient

.. math:: \\sum_u c(u) q^u = \\prod_{i=1}^{m} \\frac{1 - q^{n + i}}{1 - q^i}

(computed here in exact integer arithmetic). Shifting ``x`` by ``delta`` changes ``U``
only where ``delta`` crosses one of the ``m n`` differences ``d = x_i - y_j``: between
them ``U = #{d > delta}``. The test at level ``alpha`` therefore accepts ``delta``
exactly between two order statistics of the sorted differences ``d_(1) <= ... <=
d_(mn)``:

* two-sided: ``[d_(k), d_(mn + 1 - k)]`` with ``k = mn + 1 - c``, ``c`` the smallest
  ``u`` with ``2 P(U >= u) <= alpha``;
* ``"greater"``: ``[d_(k), inf)`` with ``c`` the smallest ``u`` with
  ``P(U >= u) <= alpha``; ``"less"``: ``(-inf, d_(mn + 1 - k)]``;

and an infinite end where the test can never reject on that side. The ends are closed, as
R's ``wilcox.test(conf.int = TRUE)`` reports them (Bauer 1972; Hollander, Wolfe and
Chicken 2013, section 4.3).

References
----------
D. F. Bauer (1972). Constructing confidence sets using rank statistics. Journal of the
American Statistical Association 67(339), 687-690. https://doi.org/10.1080/01621459.1972.10481279
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=64)
def rank_sum_null_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of the ``C(m + n, m)`` equally likely arrangements that give each value
    ``u = 0 .. m n`` of the Mann-Whitney ``U`` (no ties), as exact integers.

    Parameters
    ----------
    m, n : int
        The two sample sizes (non-negative).

    Returns
    -------
    tuple of int
        ``c(0), ..., c(m n)``; they sum to ``C(m + n, m)`` and are symmetric.

    Examples
    --------
    >>> from multistat.significance._rank_sum_exact import rank_sum_null_counts
    >>> rank_sum_null_counts(2, 3)
    (1, 1, 2, 2, 2, 1, 1)
    """
    m, n = sorted((int(m), int(n)))
    size = m * n + 1
    c = np.zeros(size, dtype=object)
    c[:] = 0
    c[0] = 1
    for i in range(1, m + 1):
        # multiply by (1 - q^(n + i)), then divide by (1 - q^i) (a running sum of step i);
        # the quotient is a polynomial, so the truncation at degree m n is exact
        c[n + i:] = c[n + i:] - c[:size - n - i]
        for r in range(i):
            c[r::i] = np.cumsum(c[r::i])
    return tuple(int(x) for x in c)


def rank_sum_sf(m: int, n: int) -> np.ndarray:
    """``P(U >= u)`` for ``u = 0 .. m n`` under H0 (no ties): exact integer tails, each
    divided once (Python's int division rounds correctly)."""
    counts = np.array(rank_sum_null_counts(m, n), dtype=object)
    tails = np.cumsum(counts[::-1])[::-1]
    total = tails[0]
    return np.array([t / total for t in tails], dtype=float)


def _critical(sf: np.ndarray, level: float) -> int | None:
    """Smallest ``u`` with ``sf[u] <= level`` (the same slack as the decision
    ``p <= alpha``), or None when no ``u`` rejects."""
    ok = np.flatnonzero(sf <= level * (1 + 1e-12))
    return int(ok[0]) if ok.size else None


def exact_shift_interval(a, b, *, alternative: str, confidence_level: float):
    """The shifts ``delta`` of ``a - b`` that the exact Mann-Whitney test does not reject
    (see the module docstring): order statistics of the ``a_i - b_j``.

    Parameters
    ----------
    a, b : array_like
        The two samples (1-d, finite; the exact test assumes no ties within or between
        them at the shifts tested).
    alternative : {"two-sided", "greater", "less"}
        Of the test whose acceptance set is returned.
    confidence_level : float
        ``1 - alpha``.

    Returns
    -------
    (float, float)
        ``(low, high)``, closed; an end is infinite where the test never rejects.

    Notes
    -----
    R computes the same order statistics (``c(diffs[qu], diffs[ql + 1])`` with
    ``qu = qwilcox(alpha / 2, m, n)``) with two differences: where ``2 P(U >= c)`` equals
    ``alpha`` exactly R keeps the value that p-value belongs to (here ``p <= alpha``
    rejects, as every decision in multistat), and where the test can never reject R
    reports the range of the differences (here the whole line).

    Examples
    --------
    The permeability constants of R's ``?wilcox.test`` (Hollander and Wolfe), 90%:

    >>> import numpy as np
    >>> from multistat.significance._rank_sum_exact import exact_shift_interval
    >>> x = np.array([0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46])
    >>> y = np.array([1.15, 0.88, 0.90, 0.74, 1.21])
    >>> low, high = exact_shift_interval(x, y, alternative="two-sided",
    ...                                  confidence_level=0.9)
    >>> round(low, 2), round(high, 2)
    (-0.08, 0.72)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    m, n = a.size, b.size
    N = m * n
    d = np.sort(np.subtract.outer(a, b), axis=None)
    alpha = 1.0 - confidence_level
    sf = rank_sum_sf(m, n)
    low, high = -np.inf, np.inf
    if alternative == "two-sided":
        c = _critical(np.minimum(2.0 * sf, 1.0), alpha)
        if c is not None:  # accept #{d < delta} in [N - c + 1, c - 1]
            low, high = float(d[N - c]), float(d[c - 1])
    else:
        c = _critical(sf, alpha)
        if c is not None:
            if alternative == "greater":  # reject U = #{d > delta} >= c
                low = float(d[N - c])
            else:  # "less": reject #{d < delta} >= c
                high = float(d[c - 1])
    return low, high
