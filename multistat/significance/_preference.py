"""The sign-flip null of a preference test: each unit's (item's, rater's) centred share of
wins, and the p-values of ``sum = 0`` over units (binomial when every unit's share has
one magnitude, an exact enumeration or a Monte Carlo sign-flip plan otherwise).

Used by :func:`multistat.preference_test` and by the power scenarios of preferences
(:mod:`multistat.power.scenarios`), which therefore compute the same p-value the same way.
"""

from __future__ import annotations

import numpy as np

from multistat.engine import pvalues_from_null, sign_flips
from multistat.significance._binomial import binom_half_pvalue

__all__ = ["sign_flip_pvalues", "unit_shares"]


def unit_shares(wins, losses, ties, tie_rule="exclude"):
    """Each unit's centred share of a: ``wins / (wins + losses) - 1/2`` with
    ``ties="exclude"`` (NaN where a unit has only ties), ``(wins + ties / 2) / n - 1/2``
    with ``ties="split"``. Arrays of any shape."""
    wins, losses, ties = (np.asarray(v, float) for v in (wins, losses, ties))
    with np.errstate(invalid="ignore", divide="ignore"):
        if tie_rule == "exclude":
            return wins / (wins + losses) - 0.5
        return (wins + 0.5 * ties) / (wins + losses + ties) - 0.5


def _equal_magnitude(x):
    """Rows whose non-zero values all have the same magnitude (the sign-flip null is then
    binomial)."""
    ax = np.abs(x)
    top = ax.max(-1, keepdims=True)
    return np.all((ax == 0) | (np.abs(ax - top) <= 1e-12 * top), axis=-1)


def sign_flip_pvalues(x, *, alternative="two-sided", n_resamples=9999, rng=None):
    """p-values of the sign-flip test of ``sum(x) = 0`` for each row of ``x`` ``(R, G)``
    (units with ``x = 0`` change nothing). Rows whose non-zero values share one magnitude
    get the exact binomial p (:func:`scipy.stats.binomtest`'s two-sided p for 1/2); the
    others an exact enumeration when ``2**G <= n_resamples``, else ``(b + 1) / (B + 1)``
    from ``n_resamples`` random sign vectors of ``rng`` (one plan for the rows).
    Returns ``(p, how)`` with ``how`` per row: ``"binomial"``, ``"exact"``,
    ``"monte carlo"``."""
    x = np.atleast_2d(np.asarray(x, float))
    R, G = x.shape
    p = np.empty(R)
    how = np.empty(R, dtype=object)
    eq = _equal_magnitude(x)
    if eq.any():
        k = (x[eq] > 0).sum(1)
        m = (x[eq] != 0).sum(1)
        p[eq] = np.where(m > 0, binom_half_pvalue(k, m, alternative), 1.0)
        how[eq] = "binomial"
    rest = ~eq
    if rest.any():
        xr = x[rest]
        exact = G <= 30 and 2 ** G <= n_resamples
        if exact:
            grid = np.array(np.meshgrid(*([[1.0, -1.0]] * G), indexing="ij"))
            flips = grid.reshape(G, -1).T
        else:
            flips = sign_flips(rng, n_resamples, G)
        null = flips @ xr.T  # (B, R)
        obs = xr.sum(1)
        p[rest] = pvalues_from_null(null, obs, alternative, exact=exact,
                                    symmetric=True)
        how[rest] = "exact" if exact else "monte carlo"
    return p, how
