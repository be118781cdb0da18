r"""Confidence intervals for one system's accuracy on few questions (a binomial
proportion), which keep their coverage where the bootstrap percentile interval does not.

With ``n`` questions and ``k`` correct, the percentile bootstrap of the mean is the
interval of a binomial with the observed rate: at ``k = n`` (or 0) it collapses to the
single point 1 (or 0), and for small ``n`` it covers far less than its level (Brown, Cai
& DasGupta 2001). :func:`multistat.system_scores` therefore gives binary metrics

* ``"wilson"`` (default): the score interval of Wilson (1927), the inversion of the
  score test; its coverage is close to the level on average over ``p`` even for small
  ``n`` and it is never degenerate;
* ``"exact"``: Clopper & Pearson (1934), the inversion of the two one-sided binomial
  tests: coverage at least the level for every ``p`` (conservative).

Both equal ``statsmodels.stats.proportion.proportion_confint`` (methods ``"wilson"`` and
``"beta"``; tests/test_small_n.py).

References
----------
Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
inference. JASA 22(158), 209-212. doi:10.1080/01621459.1927.10502953
Clopper, C. J., Pearson, E. S. (1934). The use of confidence or fiducial limits
illustrated in the case of the binomial. Biometrika 26(4), 404-413.
doi:10.1093/biomet/26.4.404
Brown, L. D., Cai, T. T., DasGupta, A. (2001). Interval estimation for a binomial
proportion. Statistical Science 16(2), 101-133. doi:10.1214/ss/1009213286
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["BINARY_INTERVALS", "binomial_interval", "counts_of"]

#: the intervals :func:`multistat.system_scores` offers for binary metrics
BINARY_INTERVALS = ("wilson", "exact", "bootstrap")
#: the ``ci_method`` each writes into the per-system table
METHOD_NAMES = {"wilson": "wilson", "exact": "clopper-pearson",
                "bootstrap": "bootstrap percentile"}


def binomial_interval(k, n, confidence_level=0.95, method="wilson"):
    r"""Two-sided interval for a binomial proportion from ``k`` successes in ``n`` trials.

    Parameters
    ----------
    k, n : array_like
        Successes and trials (broadcast); ``n >= 1``.
    confidence_level : float
        Level of the two-sided interval.
    method : {"wilson", "exact"}
        Wilson's score interval, or Clopper-Pearson's exact interval.

    Returns
    -------
    (low, high) : tuple of ndarray

    Notes
    -----
    Wilson, with :math:`\hat p = k/n` and :math:`z = \Phi^{-1}(1 - \alpha/2)`:

    .. math:: \frac{\hat p + z^2/2n \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    Clopper-Pearson: the :math:`\alpha/2` quantile of Beta(k, n - k + 1) and the
    :math:`1 - \alpha/2` quantile of Beta(k + 1, n - k) (0 at ``k = 0``, 1 at ``k = n``).

    Examples
    --------
    >>> from statsmodels.stats.proportion import proportion_confint
    >>> lo, hi = binomial_interval(9, 10)
    >>> ref = proportion_confint(9, 10, method="wilson")
    >>> bool(np.allclose([lo, hi], ref, rtol=1e-12))
    True
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    alpha = 1.0 - confidence_level
    if method == "wilson":
        z = special.ndtri(1.0 - alpha / 2.0)
        p = k / n
        z2n = z * z / n
        centre = (p + z2n / 2.0) / (1.0 + z2n)
        half = z * np.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
        return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
    if method == "exact":
        with np.errstate(invalid="ignore"):
            low = np.where(k > 0, special.betaincinv(k, n - k + 1.0, alpha / 2.0), 0.0)
            high = np.where(k < n, special.betaincinv(k + 1.0, n - k, 1.0 - alpha / 2.0),
                            1.0)
        return low, high
    raise ValueError(f"method must be 'wilson' or 'exact'; got {method!r}")


def counts_of(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k, n, ok)`` per system and metric of 0/1 scores ``X`` ``(S, M, n)`` (NaN: not
    scored): successes, scored instances, and whether every score is 0 or 1 (a binary
    metric averaged over runs is not a count)."""
    present = ~np.isnan(X)
    n = present.sum(-1)
    k = np.where(present, X, 0.0).sum(-1)
    ok = (np.where(present, (X == 0) | (X == 1), True).all(-1)) & (n > 0)
    return k, n, ok
