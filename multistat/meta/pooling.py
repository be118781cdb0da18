"""Meta-analysis across studies: pool one effect over test sets, domains or papers.

:func:`meta_analysis` pools effects ``y_i`` with known sampling variances ``v_i`` under the
fixed-effect model or the random-effects model ``y_i ~ N(mu, v_i + tau^2)``, as R's
metafor ``rma(yi, vi, method=..., test=...)`` does, and reports the pooled effect with
its interval and p-value, the heterogeneity (``tau^2`` with its Q-profile interval,
``I^2``, ``H^2``, Cochran's Q) and the prediction interval. Given a compare table
(``multistat compare``; a DataFrame, Parquet file(s) or a folder of them) it pools every
group of rows (metric x pair x test by default) across the ``study`` column (the dataset)
and returns one tidy row per group. :func:`meta_regression` adds study-level moderators
(``rma(yi, vi, mods=...)``); :meth:`MetaResult.leave_one_out` is metafor's
``leave1out``.

Every estimator runs on a ``(groups, studies)`` array at once (studies missing from a
group carry weight 0), so thousands of groups cost a few array passes per iteration: the
REML, ML and Paule-Mandel iterations are written here (Fisher scoring and a safeguarded
Newton root of the generalized Q statistic) because ``statsmodels.stats.meta_analysis``
(``combine_effects``; DL and PM only, one group per call) has no ML/REML, no Q-profile
interval and no batch over groups; it is the cross-check of DL and PM in the tests.

References
----------
W. Viechtbauer (2010). Conducting meta-analyses in R with the metafor package. Journal
of Statistical Software 36(3). https://doi.org/10.18637/jss.v036.i03
R. DerSimonian, N. Laird (1986). Meta-analysis in clinical trials. Controlled Clinical
Trials 7(3), 177-188. https://doi.org/10.1016/0197-2456(86)90046-2
R. C. Paule, J. Mandel (1982). Consensus values and weighting factors. Journal of
Research of the National Bureau of Standards 87(5), 377-385.
https://doi.org/10.6028/jres.087.022
W. Viechtbauer (2005). Bias and efficiency of meta-analytic variance estimators in the
random-effects model. J. Educ. Behav. Stat. 30(3), 261-293.
https://doi.org/10.3102/10769986030003261
W. Viechtbauer (2007). Confidence intervals for the amount of heterogeneity in
meta-analysis. Statistics in Medicine 26(1), 37-52. https://doi.org/10.1002/sim.2514
J. Hartung, G. Knapp (2001). A refined method for the meta-analysis of controlled
clinical trials with binary outcome. Statistics in Medicine 20(24), 3875-3889.
https://doi.org/10.1002/sim.1009
J. P. T. Higgins, S. G. Thompson (2002). Quantifying heterogeneity in a meta-analysis.
Statistics in Medicine 21(11), 1539-1558. https://doi.org/10.1002/sim.1186
J. P. T. Higgins, S. G. Thompson, D. J. Spiegelhalter (2009). A re-evaluation of
random-effects meta-analysis. JRSS A 172(1), 137-159.
https://doi.org/10.1111/j.1467-985X.2008.00552.x
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats
from scipy.optimize import brentq

from multistat._result import Result
from multistat._validation import (
    CONFIDENCE_LEVEL,
    check_choice,
    check_probability,
    checked,
    choice,
    name_column_problem,
)
from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    InputFileError,
    ParameterError,
    ParameterTypeError,
    show,
)
from multistat.io import read_parquet

__all__ = [
    "METHODS",
    "POOLED_COLUMNS",
    "TESTS",
    "MetaRegressionResult",
    "MetaResult",
    "meta_analysis",
    "meta_regression",
    "study_rows",
]

METHODS = ("fixed", "dl", "pm", "ml", "reml")
TESTS = ("z", "knha")
DEFAULT_BY = ("metric", "system_a", "system_b", "test")
#: the pooled table's columns after the ``by`` columns
POOLED_COLUMNS = ("k", "estimate", "se", "ci_low", "ci_high", "statistic", "p_value",
                  "tau2", "tau2_ci_low", "tau2_ci_high", "i2", "h2", "q", "q_p_value",
                  "pi_low", "pi_high", "method", "meta_test", "confidence_level",
                  "k_dropped", "studies", "note")
#: iterations of the tau^2 solvers; relative change at which they stop
MAX_ITER = 1000
TOL = 1e-12


# ---------------------------------------------------------------------------- the core
def _moments(Y, V, M, tau2):
    """Weights ``w = 1/(v + tau^2)`` (0 where a study is missing), their sum and the
    weighted mean, per group."""
    w = np.where(M, 1.0 / (V + tau2[:, None]), 0.0)
    sw = w.sum(1)
    mu = (w * Y).sum(1) / sw
    return w, sw, mu


def _gen_q(Y, V, M, tau2):
    """Generalized Q, ``sum w (y - mu_w)^2`` with ``w = 1/(v + tau^2)``, and its
    derivative in tau^2 (``-sum w^2 (y - mu_w)^2``; mu's own derivative term vanishes)."""
    w, _, mu = _moments(Y, V, M, tau2)
    r2 = np.where(M, (Y - mu[:, None]) ** 2, 0.0)
    return (w * r2).sum(1), -(w * w * r2).sum(1)


def _q_root(Y, V, M, target):
    """tau^2 >= 0 with ``Q_gen(tau^2) = target`` per group (0 where ``Q_gen(0) <=
    target``): Newton steps from 0 kept inside a bracket that each step narrows, with a
    bisection when a step leaves it. Q_gen decreases in tau^2 (Viechtbauer 2007), so the
    root is unique."""
    G = Y.shape[0]
    tau = np.zeros(G)
    q0, _ = _gen_q(Y, V, M, tau)
    active = np.flatnonzero(q0 > target)
    lo = np.zeros(G)
    hi = np.full(G, np.inf)
    for _ in range(MAX_ITER):
        if not active.size:
            break
        a = active
        q, dq = _gen_q(Y[a], V[a], M[a], tau[a])
        f = q - target[a]
        above = f > 0
        lo[a] = np.where(above, np.maximum(lo[a], tau[a]), lo[a])
        hi[a] = np.where(above, hi[a], np.minimum(hi[a], tau[a]))
        with np.errstate(divide="ignore", invalid="ignore"):
            step = tau[a] - f / dq
        bad = ~np.isfinite(step) | (step <= lo[a]) | (step >= hi[a])
        bis = np.where(np.isfinite(hi[a]), 0.5 * (lo[a] + hi[a]),
                       np.maximum(2.0 * lo[a], 1e-8 + lo[a]))
        new = np.where(bad, bis, step)
        done = (np.abs(new - tau[a]) <= TOL * np.maximum(new, 1e-300)) | (f == 0)
        tau[a] = new
        active = a[~done]
    return tau


def _tau2_dl(Y, V, M, k):
    w, sw, mu = _moments(Y, V, M, np.zeros(Y.shape[0]))
    q = (w * np.where(M, (Y - mu[:, None]) ** 2, 0.0)).sum(1)
    c = sw - (w * w).sum(1) / sw
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(0.0, (q - (k - 1)) / c)


def _tau2_likelihood(Y, V, M, start, reml: bool):
    """ML or REML tau^2 by Fisher scoring (metafor's default algorithm), truncated at 0,
    from ``start``; stops when a step changes tau^2 by less than TOL (relative)."""
    tau = np.maximum(start.copy(), 0.0)
    active = np.arange(Y.shape[0])
    for _ in range(MAX_ITER):
        if not active.size:
            break
        a = active
        w, sw, mu = _moments(Y[a], V[a], M[a], tau[a])
        r2 = np.where(M[a], (Y[a] - mu[:, None]) ** 2, 0.0)
        w2 = w * w
        s1 = (w2 * r2).sum(1)
        sw2 = w2.sum(1)
        if reml:  # score (y'PPy - tr P)/2, information tr(PP)/2, P = W - w w'/sum w
            trp = sw - sw2 / sw
            trpp = sw2 - 2.0 * (w2 * w).sum(1) / sw + (sw2 / sw) ** 2
            step = (s1 - trp) / trpp
        else:  # score (sum w^2 r^2 - sum w)/2, information sum w^2 / 2
            step = (s1 - sw) / sw2
        new = np.maximum(tau[a] + step, 0.0)
        done = np.abs(new - tau[a]) <= TOL * np.maximum(new, 1e-10)
        tau[a] = new
        active = a[~done]
    return tau


#: points per decade of the log grid of tau^2 on which the likelihood's maximum is checked
GRID_PER_DECADE = 5


def _loglik(Y, V, M, tau2, reml: bool):
    """The log-likelihood per group at ``tau2`` (``(G,)``) with mu profiled out, as
    metafor's ``logLik``: ML ``-(k log 2 pi + sum log(v + tau^2) + Q_gen)/2``; REML
    ``-((k - 1) log 2 pi - log k + sum log(v + tau^2) + log sum w + Q_gen)/2``."""
    w, sw, mu = _moments(Y, V, M, tau2)
    k = M.sum(1)
    r2 = np.where(M, (Y - mu[:, None]) ** 2, 0.0)
    logv = np.where(M, np.log(np.where(M, V + tau2[:, None], 1.0)), 0.0).sum(1)
    if reml:
        return -0.5 * ((k - 1) * np.log(2 * np.pi) - np.log(k) + logv + np.log(sw)
                       + (w * r2).sum(1))
    return -0.5 * (k * np.log(2 * np.pi) + logv + (w * r2).sum(1))


def _tau2_grid(y_range2, v_min, v_max, points: int | None = None):
    """``(G, P)`` grid of tau^2: 0, then geometric from ``1e-3 min v`` (the likelihood
    there is that of 0 to a part in a thousand) to ``10 (y_range2 + max v)`` (past where
    it can still rise: the ML score is negative beyond ``range(y)^2``; ``y_range2`` is
    ``k range(y)^2`` or the regression's residual analogue) with at least
    :data:`GRID_PER_DECADE` points per decade."""
    hi = 10.0 * (y_range2 + v_max)
    lo = np.maximum(1e-3 * v_min, hi * 1e-16)
    decades = np.log10(hi / lo)
    if points is None:
        points = int(np.ceil(GRID_PER_DECADE * float(decades.max(initial=1.0)))) + 1
    frac = np.linspace(0.0, 1.0, points)
    return np.column_stack([np.zeros(lo.size),
                            lo[:, None] * (hi / lo)[:, None] ** frac[None, :]])


def _grid_loglik(Y, V, M, grid, reml: bool):
    """:func:`_loglik` at every column of ``grid`` ``(G, P)``: ``Q_gen`` from the
    weighted sums (after centring each group, so no cancellation) and one log per
    study and grid point."""
    Mf = M.astype(float)
    k = Mf.sum(1)
    Yc = (Y - (Mf * Y).sum(1, keepdims=True) / k[:, None]) * Mf
    Y2 = Yc * Yc
    Vm = np.where(M, V, 1.0)
    const = (k - 1) * np.log(2 * np.pi) - np.log(k) if reml else k * np.log(2 * np.pi)
    out = np.empty(grid.shape)
    for j in range(grid.shape[1]):
        d = Vm + grid[:, j:j + 1]
        w = Mf / d
        sw = w.sum(1)
        swy = (w * Yc).sum(1)
        q = np.maximum((w * Y2).sum(1) - swy * swy / sw, 0.0)
        ll = const + (Mf * np.log(d)).sum(1) + q
        if reml:
            ll += np.log(sw)
        out[:, j] = -0.5 * ll
    return out


def _golden_max(f, a, b, iters=90):
    """Vectorized golden-section search for the maximum of ``f`` on ``[a, b]``."""
    g = (np.sqrt(5.0) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        left = fc >= fd  # the maximum lies in [a, d]
        a, b = np.where(left, a, c), np.where(left, d, b)
        c_new = np.where(left, b - g * (b - a), d)
        d_new = np.where(left, c, a + g * (b - a))
        fc_new = np.where(left, np.nan, fd)
        fd_new = np.where(left, fc, np.nan)
        c, d = c_new, d_new
        need_c, need_d = np.isnan(fc_new), np.isnan(fd_new)
        fc = np.where(need_c, f(c), fc_new)
        fd = np.where(need_d, f(d), fd_new)
    return np.where(fc >= fd, c, d)


def _global_max(tau, loglik, grid, polish, grid_loglik=None):
    """The global maximum of ``loglik`` over tau^2 >= 0 given the iteration's ``tau``.

    ``loglik(t, rows)`` evaluates groups ``rows`` (None: all) at ``t``; ``grid``
    ``(G, P)`` (column 0
    is tau^2 = 0); ``polish(t, rows)`` runs the iteration from ``t``;
    ``grid_loglik(grid)``, if given, evaluates the whole grid at once. Where a grid point
    beats the iteration's log-likelihood, the best grid point's bracket is searched
    (golden section), the iteration is run again from there, and the best of the
    candidates (tau^2 = 0 exactly when that is the best) replaces ``tau``.
    Returns ``(tau, moved)`` with ``moved`` the rows that changed and the
    log-likelihoods before and after."""
    G, P = grid.shape
    ll_it = loglik(tau, None)
    if grid_loglik is not None:
        L = grid_loglik(grid)
    else:
        L = np.column_stack([loglik(grid[:, j], None) for j in range(P)])
    j = np.argmax(np.where(np.isnan(L), -np.inf, L), axis=1)
    best = L[np.arange(G), j]
    tol = 1e-9 * (1.0 + np.abs(ll_it))
    cand = np.flatnonzero((best > ll_it + tol) | (~np.isfinite(ll_it) & np.isfinite(best)))
    if not cand.size:
        return tau, cand, ll_it[cand], ll_it[cand]
    jc = j[cand]
    a = grid[cand, np.maximum(jc - 1, 0)]
    b = grid[cand, np.minimum(jc + 1, P - 1)]
    t_g = _golden_max(lambda t: loglik(t, cand), a, b)
    ll_g = loglik(t_g, cand)
    t_p = polish(t_g, cand)
    ll_p = loglik(t_p, cand)
    t_new = np.where(ll_p >= ll_g, t_p, t_g)
    ll_new = np.maximum(ll_p, ll_g)
    worse = ll_new < best[cand]  # the grid point itself (flat likelihood): keep it
    t_new = np.where(worse, grid[cand, jc], t_new)
    ll_new = np.where(worse, best[cand], ll_new)
    zero = loglik(np.zeros(cand.size), cand)
    at0 = zero >= ll_new - 1e-13 * (1.0 + np.abs(ll_new))  # the boundary, not 1e-17
    t_new = np.where(at0, 0.0, t_new)
    ll_new = np.where(at0, zero, ll_new)
    tau = tau.copy()
    tau[cand] = t_new
    return tau, cand, ll_it[cand], ll_new


def _likelihood_notes(G, moved, tau_before, tau_after, ll_before, ll_after, reml):
    notes = np.full(G, "", dtype=object)
    what = "restricted likelihood" if reml else "likelihood"
    for i, g in enumerate(moved):
        notes[g] = (f"tau2: the Fisher-scoring iteration stopped at tau2 = "
                    f"{tau_before[i]:.6g} (log-likelihood {ll_before[i]:.6g}), not the "
                    f"maximum of the {what}; its maximum, found on a profile grid of "
                    f"tau2, is at tau2 = {tau_after[i]:.6g} (log-likelihood "
                    f"{ll_after[i]:.6g})")
    return notes


def _tau2_likelihood_max(Y, V, M, k, reml: bool):
    """ML or REML tau^2 per group: Fisher scoring from DerSimonian-Laird, then checked
    against tau^2 = 0 and a log grid of the profile likelihood (:func:`_global_max`).
    Returns ``(tau2, notes)``."""
    tau = _tau2_likelihood(Y, V, M, _tau2_dl(Y, V, M, k), reml=reml)
    big = np.where(M, Y, -np.inf).max(1) - np.where(M, Y, np.inf).min(1)
    grid = _tau2_grid(M.sum(1) * big**2, np.where(M, V, np.inf).min(1),
                      np.where(M, V, 0.0).max(1))

    def loglik(t, rows):
        if rows is None:
            return _loglik(Y, V, M, t, reml)
        return _loglik(Y[rows], V[rows], M[rows], t, reml)

    def polish(t, rows):
        return _tau2_likelihood(Y[rows], V[rows], M[rows], t, reml=reml)

    new, moved, ll0, ll1 = _global_max(tau, loglik, grid, polish,
                                       lambda g: _grid_loglik(Y, V, M, g, reml))
    notes = _likelihood_notes(Y.shape[0], moved, tau[moved], new[moved], ll0, ll1, reml)
    return new, notes


def _pool(Y, V, M, method: str, test: str, level: float) -> dict:
    """Pool every row (group) of ``Y``/``V`` over the studies marked in ``M``.

    Returns a dict of arrays over groups: every field of :class:`MetaResult` but the
    per-study ones, and ``weights`` ``(G, K)`` (fractions of the group's total)."""
    G = Y.shape[0]
    notes = np.full(G, "", dtype=object)
    Y = np.where(M, Y, 0.0)
    V = np.where(M, V, 1.0)
    k = M.sum(1).astype(float)
    df = k - 1
    zero = np.zeros(G)
    w0, sw0, mu0 = _moments(Y, V, M, zero)
    q = (w0 * np.where(M, (Y - mu0[:, None]) ** 2, 0.0)).sum(1)
    if method == "fixed":
        tau2 = zero
    elif method == "dl":
        tau2 = _tau2_dl(Y, V, M, k)
    elif method == "pm":
        tau2 = _q_root(Y, V, M, df)
    else:
        tau2, notes = _tau2_likelihood_max(Y, V, M, k, reml=method == "reml")
    w, sw, mu = _moments(Y, V, M, tau2)
    alpha = 1.0 - level
    if test == "knha":  # Hartung-Knapp: the weighted residual variance scales se^2
        qw = (w * np.where(M, (Y - mu[:, None]) ** 2, 0.0)).sum(1)
        se = np.sqrt(qw / df / sw)
        crit = special.stdtrit(df, 1.0 - alpha / 2)
        stat = mu / se
        p = 2.0 * special.stdtr(df, -np.abs(stat))
    else:
        se = np.sqrt(1.0 / sw)
        crit = np.full(G, special.ndtri(1.0 - alpha / 2))
        stat = mu / se
        p = 2.0 * special.ndtr(-np.abs(stat))
    # Q-profile interval of tau^2 (Viechtbauer 2007): Q_gen(tau^2) between chi2 quantiles
    lo_t = _q_root(Y, V, M, stats.chi2.ppf(1.0 - alpha / 2, df))
    hi_t = _q_root(Y, V, M, stats.chi2.ppf(alpha / 2, df))
    # I^2 and H^2 as metafor: tau^2 against the "typical" sampling variance s^2
    # (Higgins & Thompson 2002, eq. 9); from Q for the fixed-effect model
    s2 = df * sw0 / (sw0**2 - (w0 * w0).sum(1))
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "fixed":
            i2 = np.where(q > 0, np.maximum(0.0, (q - df) / q), 0.0)
            h2 = q / df
        else:
            i2 = tau2 / (tau2 + s2)
            h2 = (tau2 + s2) / s2
    spread = crit * np.sqrt(tau2 + se**2)  # prediction interval (metafor's predict())
    return {"k": k.astype(int), "estimate": mu, "se": se, "ci_low": mu - crit * se,
            "ci_high": mu + crit * se, "statistic": stat, "p_value": np.minimum(p, 1.0),
            "tau2": tau2, "tau2_ci_low": lo_t, "tau2_ci_high": hi_t, "i2": i2, "h2": h2,
            "q": q, "q_p_value": stats.chi2.sf(q, df), "pi_low": mu - spread,
            "pi_high": mu + spread, "df": df.astype(int), "weights": w / sw[:, None],
            "note": notes}


#: pooled columns in the effects' unit, and in its square
_LOCATION = ("estimate", "se", "ci_low", "ci_high", "pi_low", "pi_high")
_SQUARED = ("tau2", "tau2_ci_low", "tau2_ci_high")


def _pool_scaled(Y, S, M, method: str, test: str, level: float, V=None) -> dict:
    """:func:`_pool` of effects ``Y`` with standard errors ``S``, scale-free: each group
    whose largest ``|y|`` or ``se`` is beyond 2^+-400 is divided by the power of two at or
    below it (exact), so
    that effects near 1e-300 or 1e300 pool as the same effects near 1 (their variances
    would underflow to 0 or overflow to infinity); the estimate, standard error and
    intervals are multiplied back, tau^2 and its interval by the square of the scale (a
    tau^2 beyond the float range is said in the note)."""
    top = np.max(np.where(M, np.maximum(np.abs(Y), S), 0.0), axis=1)
    # groups whose squares stay well inside the float range keep their own numbers
    # (bits and notes as before); only the others are scaled
    far = np.isfinite(top) & (top > 0) & ((top < 2.0 ** -400) | (top > 2.0 ** 400))
    scale = np.ldexp(1.0, np.frexp(np.where(far, top, 1.0))[1] - 1)
    scale = np.where(far, scale, 1.0)
    sc = scale[:, None]
    with np.errstate(over="ignore", under="ignore"):  # the far groups' own: not used
        own = S**2 if V is None else V  # the variances as given, where not scaled
    out = _pool(np.where(M, Y / sc, 0.0),
                np.where(M, np.where(far[:, None], (S / sc) ** 2, own), 1.0), M, method,
                test, level)
    if np.all(scale == 1.0):
        return out
    with np.errstate(over="ignore", under="ignore"):
        for c in _LOCATION:
            out[c] = out[c] * scale
        for c in _SQUARED:
            small = out[c] * scale * scale
            lost = (out[c] > 0) & ((small == 0) | ~np.isfinite(small))
            if c == "tau2" and lost.any():
                notes = out["note"]
                for i in np.flatnonzero(lost):
                    notes[i] = "; ".join(filter(None, [str(notes[i]),
                                                       "tau2 is beyond the float range at "
                                                       "the effects' scale (I2 and H2 are "
                                                       "exact)"]))
            out[c] = small
    return out


# ---------------------------------------------------------------------------- vectors
@dataclass(frozen=True)
class MetaResult(Result):
    """A pooled effect with its heterogeneity (:func:`meta_analysis` of vectors).

    Attributes
    ----------
    estimate, se : the pooled effect (weighted mean) and its standard error (the
        Hartung-Knapp-Sidik-Jonkman one with ``test="knha"``)
    ci_low, ci_high : its interval at ``confidence_level`` (normal, or t on k - 1 df)
    statistic, p_value : z (or t) and the two-sided p-value of H0: effect = 0
    tau2, tau2_ci_low, tau2_ci_high : between-study variance and its Q-profile interval
    i2 : share of the total variability due to heterogeneity, a fraction in [0, 1]
    h2 : total variability / sampling variability
    q, q_p_value : Cochran's Q (fixed-effect weights) and its chi2 p-value (k - 1 df)
    pi_low, pi_high : prediction interval of a new study's true effect
    weights : each study's share of the pooled estimate (sums to 1)
    k, df : number of studies, k - 1
    method, test, confidence_level : as given
    estimates, variances, labels : the studies
    note : what the fit says about itself (e.g. that the ML/REML maximum was found away
        from where the Fisher-scoring iteration stopped); empty when nothing to say
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    statistic: float
    p_value: float
    tau2: float
    tau2_ci_low: float
    tau2_ci_high: float
    i2: float
    h2: float
    q: float
    q_p_value: float
    pi_low: float
    pi_high: float
    weights: np.ndarray
    k: int
    df: int
    method: str
    test: str
    confidence_level: float
    estimates: np.ndarray = field(repr=False)
    variances: np.ndarray = field(repr=False)
    labels: tuple = field(repr=False, default=())
    note: str = ""

    def confidence_interval(self) -> tuple[float, float]:
        """``(ci_low, ci_high)``."""
        return self.ci_low, self.ci_high

    def prediction_interval(self) -> tuple[float, float]:
        """``(pi_low, pi_high)``."""
        return self.pi_low, self.pi_high

    def to_frame(self) -> pd.DataFrame:
        """One row per study (its effect, standard error, normal interval and weight)
        and a last ``pooled`` row (with the prediction interval); columns ``study,
        estimate, se, ci_low, ci_high, weight, pi_low, pi_high``."""
        z = special.ndtri(1.0 - (1.0 - self.confidence_level) / 2)
        se = np.sqrt(self.variances)
        studies = pd.DataFrame({
            "study": list(self.labels), "estimate": self.estimates, "se": se,
            "ci_low": self.estimates - z * se, "ci_high": self.estimates + z * se,
            "weight": self.weights, "pi_low": np.nan, "pi_high": np.nan})
        pooled = pd.DataFrame({
            "study": [f"pooled ({self.method}{', knha' if self.test == 'knha' else ''})"],
            "estimate": [self.estimate], "se": [self.se], "ci_low": [self.ci_low],
            "ci_high": [self.ci_high], "weight": [1.0], "pi_low": [self.pi_low],
            "pi_high": [self.pi_high]})
        return pd.concat([studies, pooled], ignore_index=True)

    def plot_forest(self, ax=None, *, title: str | None = None):
        """Forest plot; deprecated: use ``multistat.report.forest_plot(result)``.

        Drawing belongs to the report layer; this method is kept for one release and
        warns. Returns the matplotlib Figure."""
        warnings.warn("MetaResult.plot_forest() is deprecated and will be removed in "
                      "multistat 0.3; use multistat.report.forest_plot(result)",
                      DeprecationWarning, stacklevel=2)
        # deprecated shim: the one import of the report layer from below (tests/test_layers)
        from multistat.report.forest import forest_plot

        return forest_plot(self, ax=ax, title=title)

    def leave_one_out(self) -> pd.DataFrame:
        """The analysis again without each study in turn (metafor's ``leave1out``): one
        row per left-out study with ``study`` and every pooled column; all k fits in
        one batch."""
        k = self.k
        if k < 3:
            raise ParameterError(f"leave-one-out needs at least 3 studies (k = {k}): "
                                 "each fit keeps at least two")
        keep = ~np.eye(k, dtype=bool)
        Y = np.broadcast_to(self.estimates, (k, k))[keep].reshape(k, k - 1)
        V = np.broadcast_to(self.variances, (k, k))[keep].reshape(k, k - 1)
        out = _pool(Y, V, np.ones((k, k - 1), bool), self.method, self.test,
                    self.confidence_level)
        out.pop("weights")
        out.pop("df")
        frame = pd.DataFrame(out)
        frame.insert(0, "study", list(self.labels))
        return frame


def _vector(name, values) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError(f"`{name}` must be numbers; got {show(values)}") from None
    if arr.ndim != 1:
        raise ParameterError(f"`{name}` must be one-dimensional (one value per study); "
                             f"got shape {arr.shape}")
    return arr


#: the options of meta_analysis and meta_regression, checked once on entry
OPTIONS = {"method": choice(METHODS), "test": choice(TESTS),
           "confidence_level": CONFIDENCE_LEVEL}


def _meta_iv(estimates, variances, se, method, test, confidence_level, labels):
    """Checked ``(y, v, labels, method, test, level)`` (the options are checked on
    entry, by :data:`OPTIONS`)."""
    level = confidence_level
    y = _vector("estimates", estimates)
    if (variances is None) == (se is None):
        raise ParameterError("give the studies' sampling `variances` or their standard "
                             "errors `se=`, not both")
    if se is not None:
        s = _vector("se", se)
        name = "se"
    else:
        s = _vector("variances", variances)
        name = "variances"
    if len(s) != len(y):
        raise ParameterError(f"`estimates` has {len(y)} values but `{name}` has {len(s)}: "
                             "give one per study")
    if len(y) < 2:
        raise ParameterError(f"a meta-analysis needs at least two studies; got {len(y)}")
    for what, arr in (("estimates", y), (name, s)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise DataValidationError(
                f"`{what}` has NaN or infinite values at position(s) "
                f"{show(bad.tolist())}; give a finite value per study")
    bad = np.flatnonzero(s <= 0)
    if bad.size:
        raise DataValidationError(
            f"`{name}` must be positive; position(s) {show(bad.tolist())} are "
            f"{show(s[bad].tolist())}")
    with np.errstate(over="ignore", under="ignore"):  # pooled scale-free (_pool_scaled)
        v = s**2 if se is not None else s
    if labels is None:
        labels = tuple(f"study {i + 1}" for i in range(len(y)))
    else:
        labels = tuple(str(x) for x in labels)
        if len(labels) != len(y):
            raise ParameterError(f"`labels` has {len(labels)} names for {len(y)} studies")
    return y, v, labels, method, test, level


def _is_table(obj) -> bool:
    if isinstance(obj, (pd.DataFrame, str, Path)):
        return True
    return (isinstance(obj, Sequence) and len(obj) > 0
            and all(isinstance(x, (str, Path)) for x in obj))


@checked(**OPTIONS)
def meta_analysis(estimates, variances=None, *, se=None, method="reml", test="z",
                  confidence_level=0.95, labels=None, study="dataset", by=DEFAULT_BY,
                  effect="estimate"):
    r"""Pool effects across studies: fixed- or random-effects meta-analysis.

    Parameters
    ----------
    estimates : array_like, or DataFrame / path(s)
        The studies' effects ``y_i`` (e.g. a - b on each test set). Or a compare table
        (:func:`multistat.compare`; a DataFrame, a Parquet file, several, or a folder
        whose ``*.parquet`` files are read): every group of rows with the same ``by``
        values is pooled across ``study`` (see Returns).
    variances : array_like, optional
        Sampling variances ``v_i`` (give these or ``se``).
    se : array_like, optional
        Standard errors; ``v_i = se_i^2``.
    method : {"reml", "ml", "pm", "dl", "fixed"}
        tau^2 estimator: restricted or full maximum likelihood (Fisher scoring, checked
        against the likelihood at tau^2 = 0 and on a log grid; see Notes),
        Paule-Mandel, DerSimonian-Laird, or the fixed-effect model (tau^2 = 0).
    test : {"z", "knha"}
        Normal inference, or the Hartung-Knapp-Sidik-Jonkman adjustment with t on
        k - 1 degrees of freedom (metafor's ``test="knha"``).
    confidence_level : float
        Level of the confidence, tau^2 and prediction intervals.
    labels : sequence of str, optional
        Study names (vectors only).
    study : str
        Table only: the column naming the study (default ``"dataset"``; ``"source"`` is
        the file each row came from when several files are read).
    by : sequence of str
        Table only: the columns that define one pooled effect (default ``metric,
        system_a, system_b, test``).
    effect : str
        Table only: the column pooled (default ``"estimate"``, with standard errors from
        ``se``; any other column ``X`` takes them from ``X_se``, e.g. ``cohens_d``).

    Returns
    -------
    MetaResult
        For vectors: ``estimate, se, ci_low, ci_high, statistic, p_value, tau2,
        tau2_ci_low, tau2_ci_high, i2, h2, q, q_p_value, pi_low, pi_high, weights, k``;
        ``to_frame()``, ``plot_forest()``, ``leave_one_out()``.
    pandas.DataFrame
        For a table: the ``by`` columns and :data:`POOLED_COLUMNS` (``k`` studies used;
        ``k_dropped`` rows of the group left out for lacking a standard error;
        ``studies`` their names; ``meta_test`` z or knha), one row per group. Rows
        without a standard error (tests that define none, such as the Wilcoxon, sign
        and permutation tests) are left out with a :class:`DroppedDataWarning` that
        counts them; groups left with one study get NaN and a note.

    Notes
    -----
    With weights :math:`w_i = 1/(v_i + \hat\tau^2)`:
    :math:`\hat\mu = \sum w_i y_i / \sum w_i`, :math:`SE = (\sum w_i)^{-1/2}`. DL:
    :math:`\hat\tau^2 = \max(0, (Q - (k-1)) / (\sum w_i - \sum w_i^2/\sum w_i))` with
    fixed-effect weights; PM solves :math:`Q_{gen}(\tau^2) = k - 1`; ML and REML maximise
    the (restricted) likelihood: Fisher scoring from DL finds a stationary point, which
    can be a local maximum (or 0 where the likelihood rises further out); its
    log-likelihood is compared with tau^2 = 0 and a log grid of :data:`GRID_PER_DECADE`
    points per decade up to ten times ``k range(y)^2 + max v``, and where one is higher
    the best grid bracket is refined and the iteration rerun from it; the result is the
    best of these (``note`` gives both log-likelihoods when tau^2 moved). Knapp-Hartung:
    :math:`SE^2 = \sum w_i (y_i - \hat\mu)^2 / ((k-1) \sum w_i)`, t on k - 1 df.
    Q-profile interval: the :math:`\tau^2` where :math:`Q_{gen}` equals the
    :math:`1-\alpha/2` and :math:`\alpha/2` chi-square quantiles (0 when
    :math:`Q_{gen}(0)` is below them). :math:`I^2 = \hat\tau^2/(\hat\tau^2 + s^2)`,
    :math:`H^2 = (\hat\tau^2 + s^2)/s^2` with :math:`s^2 = (k-1)\sum w_i / ((\sum
    w_i)^2 - \sum w_i^2)` (fixed-effect weights; metafor's definition; for the fixed
    model :math:`I^2 = \max(0, (Q - (k-1))/Q)`, :math:`H^2 = Q/(k-1)`). Prediction
    interval: :math:`\hat\mu \pm c \sqrt{\hat\tau^2 + SE^2}`, c the normal (or t)
    quantile, as metafor's ``predict()``.

    In a table, a pair compared as (b, a) in one study and (a, b) in another is turned
    to the orientation of its first row (the effect's sign flipped), so it pools as one.

    References
    ----------
    Viechtbauer (2010), doi:10.18637/jss.v036.i03; DerSimonian & Laird (1986),
    doi:10.1016/0197-2456(86)90046-2; Hartung & Knapp (2001), doi:10.1002/sim.1009;
    Viechtbauer (2007), doi:10.1002/sim.2514 (module docstring: all references).

    Examples
    --------
    The first three BCG vaccine trials of Colditz et al. (1994) (metafor's ``dat.bcg``),
    log risk ratios. Their Q (0.93) is below k - 1, so DerSimonian-Laird's tau^2 is 0 (as
    in metafor) and the pooled effect is the fixed-effect one of statsmodels'
    ``combine_effects`` (whose DL leaves tau^2 negative, -0.159, unlike metafor). The
    README runs all 13 trials against metafor's printed results.

    >>> import numpy as np
    >>> from statsmodels.stats.meta_analysis import combine_effects
    >>> from multistat.meta.pooling import meta_analysis
    >>> tpos, tneg = np.array([4, 6, 3]), np.array([119, 300, 228])
    >>> cpos, cneg = np.array([11, 29, 11]), np.array([128, 274, 209])
    >>> yi = np.log(tpos / (tpos + tneg)) - np.log(cpos / (cpos + cneg))
    >>> vi = 1 / tpos - 1 / (tpos + tneg) + 1 / cpos - 1 / (cpos + cneg)
    >>> res = meta_analysis(yi, vi, method="dl")
    >>> ref = combine_effects(yi, vi, method_re="dl")
    >>> res.tau2, bool(np.isclose(res.estimate, ref.mean_effect_fe)), res.k
    (0.0, True, 3)
    """
    if _is_table(estimates):
        warnings.warn("meta_analysis(table) is deprecated and will be removed in multistat "
                      "0.3: it returns a DataFrame, not a MetaResult; use "
                      "multistat.pool_studies(table)", DeprecationWarning, stacklevel=3)
        if variances is not None or se is not None or labels is not None:
            raise ParameterError("a table carries its own standard errors and study names: "
                                 "give `variances`, `se` and `labels` only with vectors")
        return _meta_table(estimates, study=study, by=by, effect=effect, method=method,
                           test=test, confidence_level=confidence_level)
    y, v, labels, method, test, level = _meta_iv(estimates, variances, se, method, test,
                                                 confidence_level, labels)
    s = _vector("se", se) if se is not None else np.sqrt(v)
    out = _pool_scaled(y[None], s[None], np.ones((1, len(y)), bool), method, test, level,
                       V=v[None])
    scalars = {k: (float(a[0]) if a.dtype.kind == "f" else int(a[0]))
               for k, a in out.items() if k not in ("weights", "note")}
    return MetaResult(**scalars, weights=out["weights"][0], method=method, test=test,
                      confidence_level=level, estimates=y, variances=v, labels=labels,
                      note=str(out["note"][0]))


# ---------------------------------------------------------------------------- tables
def read_tables(table) -> pd.DataFrame:
    """A compare table from a DataFrame, a Parquet file, several, or a folder of them;
    with several files a ``source`` column names each row's file."""
    if isinstance(table, pd.DataFrame):
        return table

    paths = [Path(table)] if isinstance(table, (str, Path)) else [Path(p) for p in table]
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(p.rglob("*.parquet"))
            if not found:
                raise InputFileError(f"{p}: a folder with no *.parquet file")
            files.extend(found)
        elif not p.exists():
            raise InputFileError(f"{p}: no such file")
        else:
            files.append(p)
    frames = []
    for f in files:
        frame = read_parquet(f)
        if len(files) > 1:
            frame = frame.assign(source=str(f))
        frames.append(frame)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _orient_pairs(frame, by, effect):
    """Rows of a pair compared as (b, a) after (a, b) was seen: names swapped and the
    effect negated, so both orientations pool as one effect."""
    if not {"system_a", "system_b"} <= set(by):
        return frame
    n = len(frame)
    codes, names = pd.factorize(np.concatenate([frame["system_a"].astype(str).to_numpy(),
                                                frame["system_b"].astype(str).to_numpy()]))
    a, b = codes[:n].astype(np.int64), codes[n:].astype(np.int64)
    key = np.minimum(a, b) * len(names) + np.maximum(a, b)  # the unordered pair
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    flip = a != a[first][inverse]  # not the orientation of the pair's first row
    if not flip.any():
        return frame
    frame = frame.copy()
    frame.loc[flip, ["system_a", "system_b"]] = frame.loc[flip, ["system_b",
                                                                 "system_a"]].to_numpy()
    frame.loc[flip, effect] = -frame.loc[flip, effect].to_numpy(float)
    return frame


def _meta_table(table, *, study, by, effect, method, test, confidence_level):
    method = check_choice("method", method, METHODS)
    test = check_choice("test", test, TESTS)
    level = check_probability("confidence_level", confidence_level)
    frame = read_tables(table)
    by = [by] if isinstance(by, str) else list(by)
    se_col = "se" if effect == "estimate" else f"{effect}_se"
    need = [study, *by, effect, se_col]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        hint = (" (a compare table written before multistat had the `se` column: run "
                "compare again)" if se_col in missing else "")
        raise DataValidationError(f"the table lacks column(s) {show(missing)}{hint}; it has "
                                  f"{show(list(frame.columns))}")
    if study in by:
        raise ParameterError(f"`study` {study!r} is also in `by`: pooling is across the "
                             "study column, so leave it out of `by`")
    for col in (study, *by):  # the identifier checks of every table a command reads
        problem = name_column_problem(frame[col].tolist(), col)
        if problem is not None:
            raise DataValidationError(f"the compare table's {problem}")
    frame = _orient_pairs(frame[need].reset_index(drop=True), by, effect)
    sizes = frame.groupby([*by, study], sort=False, dropna=False).size()
    if (sizes > 1).any():
        key = sizes[sizes > 1].index[0]
        row = dict(zip([*by, study], key if isinstance(key, tuple) else (key,)))
        raise DataValidationError(
            f"study {show(row[study])} has {int(sizes[key])} rows for "
            f"{', '.join(f'{c}={show(row[c])}' for c in by)}: add the column that tells "
            "them apart to `by`" + (" or use study='source' (one file, one study)"
                                    if "source" in frame else ""))
    y, s = (_numeric_column(frame, c) for c in (effect, se_col))
    usable = np.isfinite(y) & np.isfinite(s) & (s > 0)
    gid = frame.groupby(by, sort=False, dropna=False).ngroup().to_numpy()
    n_groups = int(gid.max()) + 1 if len(gid) else 0
    dropped = np.bincount(gid[~usable], minlength=n_groups)
    if (~usable).any():
        lost = frame.loc[~usable]
        why = (lost[by[-1]].astype(str).value_counts().sort_index() if by else
               pd.Series({"rows": len(lost)}))
        warnings.warn(
            f"{int((~usable).sum())} of {len(frame)} rows have no standard error "
            f"(`{se_col}` NaN or not positive) or no `{effect}` and are left out of the "
            f"meta-analysis ({by[-1] if by else 'rows'}: "
            f"{', '.join(f'{k} {v}' for k, v in why.items())}); the `k_dropped` column "
            "counts them per group", DroppedDataWarning, stacklevel=3)
    keep_groups = np.flatnonzero(np.bincount(gid[usable], minlength=n_groups) > 0)
    if not keep_groups.size:
        raise DataValidationError(f"no row of the table has a standard error (`{se_col}`) "
                                  "and an effect: nothing to pool")
    rows = np.flatnonzero(usable)
    g_new = np.full(n_groups, -1)
    g_new[keep_groups] = np.arange(keep_groups.size)
    g = g_new[gid[rows]]
    order = np.argsort(g, kind="stable")
    rows, g = rows[order], g[order]
    counts = np.bincount(g, minlength=keep_groups.size)
    pos = np.arange(len(g)) - np.repeat(np.cumsum(counts) - counts, counts)
    K = int(counts.max())
    G = keep_groups.size
    Y = np.zeros((G, K))
    S = np.ones((G, K))
    M = np.zeros((G, K), bool)
    Y[g, pos] = y[rows]
    S[g, pos] = s[rows]
    M[g, pos] = True
    ok = counts >= 2
    out = _pool_scaled(Y[ok], S[ok], M[ok], method, test, level) if ok.any() else None
    first = frame.iloc[rows[np.cumsum(counts) - counts]][by].reset_index(drop=True)
    res = {c: np.full(G, np.nan) for c in POOLED_COLUMNS}
    res["k"] = counts
    if out is not None:
        for c in POOLED_COLUMNS:
            if c in out and c not in ("k", "note"):
                res[c][ok] = out[c]
    names = frame[study].astype(str).to_numpy()[rows]
    starts = np.cumsum(counts) - counts
    res["studies"] = np.array([", ".join(names[a:a + n]) for a, n in zip(starts, counts)],
                              dtype=object)
    res["method"] = method
    res["meta_test"] = test
    res["confidence_level"] = level
    res["k_dropped"] = dropped[keep_groups]
    res["note"] = np.where(ok, "", "fewer than two studies with a standard error: not "
                                   "pooled").astype(object)
    if out is not None:
        res["note"][ok] = out["note"]
    pooled = pd.concat([first, pd.DataFrame({c: res[c] for c in POOLED_COLUMNS})], axis=1)
    pooled["k"] = pooled["k"].astype(int)
    pooled["k_dropped"] = pooled["k_dropped"].astype(int)
    pooled.attrs["multistat"] = {"stage": "meta", "method": method, "meta_test": test,
                                 "confidence_level": level, "study": study,
                                 "by": list(by), "effect": effect,
                                 "rows_dropped": int((~usable).sum())}
    return pooled


def study_rows(table, pooled: pd.DataFrame) -> pd.DataFrame:
    """The studies behind each row of a pooled table (:func:`meta_analysis` of a table),
    for forest plots: the ``by`` columns, ``study``, ``estimate``, ``se``, ``ci_low``,
    ``ci_high`` (normal, at the pooled ``confidence_level``) and ``weight`` (share of the
    pooled estimate, ``1/(se^2 + tau2)`` normalised), oriented and filtered as the
    pooling was. ``study``, ``by`` and ``effect`` come from ``pooled.attrs`` (the
    metadata :func:`meta_analysis` sets and ``multistat meta`` stores)."""
    meta = pooled.attrs.get("multistat", {})
    study = meta.get("study", "dataset")
    by = list(meta.get("by", DEFAULT_BY))
    effect = meta.get("effect", "estimate")
    se_col = "se" if effect == "estimate" else f"{effect}_se"
    frame = read_tables(table)
    missing = [c for c in (study, *by, effect, se_col) if c not in frame.columns]
    if missing:
        raise DataValidationError(f"the compare table lacks column(s) {show(missing)} "
                                  "that the pooled table was made with")
    frame = _orient_pairs(frame[[study, *by, effect, se_col]].reset_index(drop=True), by,
                          effect)
    frame = frame[np.isfinite(frame[effect].to_numpy(float))
                  & (frame[se_col].to_numpy(float) > 0)]
    keys = pooled[by + ["tau2", "confidence_level"]]
    out = frame.merge(keys, on=by, how="inner")
    se = out[se_col].to_numpy(float)
    z = special.ndtri(1.0 - (1.0 - out["confidence_level"].to_numpy(float)) / 2)
    y = out[effect].to_numpy(float)
    w = 1.0 / (se**2 + np.nan_to_num(out["tau2"].to_numpy(float)))
    total = out.assign(_w=w).groupby(by, sort=False, dropna=False)["_w"].transform("sum")
    return pd.DataFrame({**{c: out[c] for c in by}, "study": out[study].astype(str),
                         "estimate": y, "se": se, "ci_low": y - z * se,
                         "ci_high": y + z * se, "weight": w / total.to_numpy()})


# ---------------------------------------------------------------------- meta-regression
@dataclass(frozen=True)
class MetaRegressionResult(Result):
    """A mixed-effects meta-regression (:func:`meta_regression`).

    Attributes
    ----------
    coefficients : DataFrame, one row per term (``intercept`` first): ``term, estimate,
        se, statistic, p_value, ci_low, ci_high``
    tau2 : residual between-study variance
    i2, h2 : residual heterogeneity as in :class:`MetaResult`
    r2 : share of the heterogeneity the moderators account for (``1 - tau2 /
        tau2_without_moderators``, at least 0; NaN for the fixed model)
    qe, qe_p_value : test of residual heterogeneity (k - p df)
    qm, qm_p_value : omnibus test of the moderators (chi2 on m df, or F on (m, k - p)
        with knha)
    k, method, test
    note : what the fit says about itself (e.g. that the ML/REML maximum was found away
        from where the Fisher-scoring iteration stopped); empty when nothing to say
    """

    coefficients: pd.DataFrame
    tau2: float
    i2: float
    h2: float
    r2: float
    qe: float
    qe_p_value: float
    qm: float
    qm_p_value: float
    k: int
    method: str
    test: str
    note: str = ""

    def to_frame(self) -> pd.DataFrame:
        """The coefficients table (one row per moderator and the intercept)."""
        return self.coefficients


def _wls(y, v, X, tau2):
    w = 1.0 / (v + tau2)
    XtW = X.T * w
    cov = np.linalg.inv(XtW @ X)
    beta = cov @ (XtW @ y)
    return w, beta, cov



def _numeric_column(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A column as float64, or a one-line error naming the column and its first cell
    that is not a number (text such as ``"0.1 (approx)"`` in a hand-edited table)."""
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataValidationError(
            f"column `{column}` must hold numbers; row {i} has {show(frame[column].iloc[i])}"
            f" ({int(bad.sum())} such cell(s))")
    return values.to_numpy(float)

@checked(**OPTIONS)
def pool_studies(tables, *, study="dataset", by=DEFAULT_BY, effect="estimate",
                 method="reml", test="z", confidence_level=0.95) -> pd.DataFrame:
    """Meta-analysis of compare tables: every group of rows with the same ``by`` values
    pooled across ``study``, in one vectorized pass.

    Parameters
    ----------
    tables : DataFrame, path, list of paths, or folder
        Compare tables (:func:`multistat.compare`): a DataFrame, a Parquet file, several,
        or a folder whose ``*.parquet`` files are read.
    study : str
        The column naming the studies pooled (``"dataset"``: the test sets of one study;
        ``"source"``: the files given).
    by : tuple of str
        The columns that define one pooled effect (default: metric, pair and test).
    effect : str
        The column pooled: ``"estimate"`` (with ``se``) or an effect size with its
        ``<effect>_se`` column (``"cohens_d"``, ``"hedges_g"``).
    method, test, confidence_level
        As in :func:`meta_analysis`.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns and :data:`POOLED_COLUMNS` (``k`` studies used; ``k_dropped``
        rows of the group left out for lacking a standard error; ``studies`` their names;
        ``meta_test`` z or knha), one row per group. Rows without a standard error (tests
        that define none, such as the Wilcoxon, sign and permutation tests) are left out
        with a :class:`~multistat.errors.DroppedDataWarning` that counts them; groups
        left with one study get NaN and a note.

    See Also
    --------
    meta_analysis : the same pooling for one effect given as vectors.

    Examples
    --------
    >>> import multistat
    >>> from multistat.demo import demo_frame
    >>> table = multistat.compare(multistat.from_frame(demo_frame()), tests=("t",))
    >>> pooled = multistat.pool_studies(table)
    >>> int(pooled["k"].max())
    2
    """
    return _meta_table(tables, study=study, by=by, effect=effect, method=method, test=test,
                       confidence_level=confidence_level)


@checked(**OPTIONS)
def meta_regression(estimates, variances=None, *, mods, se=None, method="reml", test="z",
                    confidence_level=0.95) -> MetaRegressionResult:
    r"""Mixed-effects meta-regression on study-level moderators, as metafor's
    ``rma(yi, vi, mods=~ ...)``: weighted least squares with weights
    :math:`1/(v_i + \hat\tau^2)`, :math:`\hat\tau^2` the residual heterogeneity.

    Parameters
    ----------
    estimates, variances, se, method, test, confidence_level : as :func:`meta_analysis`
        (``method="pm"`` solves the generalized residual Q = k - p).
    mods : array_like (k,) or (k, m), or DataFrame
        Moderators; an intercept is added. Column names of a DataFrame name the terms.

    Returns
    -------
    MetaRegressionResult
        The coefficients with their standard errors, tests and intervals, the residual
        heterogeneity (``tau2``, ``i2``, ``qe``) and the omnibus test of the moderators
        (``qm``).

    Notes
    -----
    REML/ML by Fisher scoring with :math:`P = W - W X (X'WX)^{-1} X'W`, checked against
    tau^2 = 0 and a log grid of the profile likelihood as in :func:`meta_analysis`
    (``note`` says when tau^2 moved); DL uses the
    residual :math:`Q_E` with the fixed-effect weights and
    :math:`\mathrm{tr}(P_0)` (metafor's generalization). Knapp-Hartung scales the
    covariance by :math:`\sum w_i e_i^2/(k - p)` and uses t (F) on k - p df.

    References
    ----------
    Viechtbauer (2010), doi:10.18637/jss.v036.i03; Knapp & Hartung (2003), Improved
    tests for a random effects meta-regression with a single covariate, Statistics in
    Medicine 22(17), 2693-2710, doi:10.1002/sim.1482.

    Examples
    --------
    >>> import numpy as np
    >>> from multistat.meta.pooling import meta_regression
    >>> y = np.array([0.1, 0.3, 0.35, 0.6, 0.7]); v = np.full(5, 0.01)
    >>> fit = meta_regression(y, v, mods=[1, 2, 3, 4, 5], method="fixed")
    >>> round(float(fit.coefficients.loc[1, "estimate"]), 3)
    0.15
    """
    y, v, _, method, test, level = _meta_iv(estimates, variances, se, method, test,
                                            confidence_level, None)
    names = None
    if isinstance(mods, pd.DataFrame):
        names = [str(c) for c in mods.columns]
        mods = mods.to_numpy(float)
    Z = np.asarray(mods, dtype=float)
    Z = Z[:, None] if Z.ndim == 1 else Z
    if Z.ndim != 2 or Z.shape[0] != len(y):
        raise ParameterError(f"`mods` must have one row per study ({len(y)}); got shape "
                             f"{Z.shape}")
    if not np.isfinite(Z).all():
        raise DataValidationError("`mods` has NaN or infinite values")
    names = names or [f"mod{i + 1}" if Z.shape[1] > 1 else "mod" for i in range(Z.shape[1])]
    X = np.column_stack([np.ones(len(y)), Z])
    k, p = X.shape
    if k <= p:
        raise ParameterError(f"{p} coefficients need more than {p} studies; got {k}")
    if np.linalg.matrix_rank(X) < p:
        raise DataValidationError("`mods` are collinear (with the intercept): drop a "
                                  "moderator")

    def resid_q(tau2):
        w, beta, _ = _wls(y, v, X, tau2)
        e = y - X @ beta
        return float((w * e * e).sum()), w, e

    qe, w0, _ = resid_q(0.0)
    P0 = np.diag(w0) - (w0[:, None] * X) @ np.linalg.inv((X.T * w0) @ X) @ (X.T * w0)
    tau2 = 0.0
    if method == "dl":
        tau2 = max(0.0, (qe - (k - p)) / np.trace(P0))
    elif method == "pm":
        if qe > k - p:
            tau2 = _scalar_root(lambda t: resid_q(t)[0] - (k - p))
    note = ""
    if method in ("ml", "reml"):
        tau2, note = _regression_likelihood_max(
            y, v, X, max(0.0, (qe - (k - p)) / np.trace(P0)), method == "reml")
    w, beta, cov = _wls(y, v, X, tau2)
    e = y - X @ beta
    alpha = 1.0 - level
    m = p - 1
    if test == "knha":
        cov = cov * float((w * e * e).sum()) / (k - p)
        se = np.sqrt(np.diag(cov))
        stat = beta / se
        pv = 2.0 * stats.t.sf(np.abs(stat), k - p)
        crit = stats.t.ppf(1.0 - alpha / 2, k - p)
    else:
        se = np.sqrt(np.diag(cov))
        stat = beta / se
        pv = 2.0 * stats.norm.sf(np.abs(stat))
        crit = stats.norm.ppf(1.0 - alpha / 2)
    b1 = beta[1:]
    qm = float(b1 @ np.linalg.solve(cov[1:, 1:], b1))
    if test == "knha":
        qm /= m
        qm_p = float(stats.f.sf(qm, m, k - p))
    else:
        qm_p = float(stats.chi2.sf(qm, m))
    s2 = (k - p) / np.trace(P0)
    if method == "fixed":
        i2 = max(0.0, (qe - (k - p)) / qe) if qe > 0 else 0.0
        h2 = qe / (k - p)
        r2 = np.nan
    else:
        i2 = tau2 / (tau2 + s2)
        h2 = (tau2 + s2) / s2
        tau2_0 = meta_analysis(y, v, method=method).tau2
        r2 = max(0.0, 1.0 - tau2 / tau2_0) if tau2_0 > 0 else 0.0
    coef = pd.DataFrame({"term": ["intercept", *names], "estimate": beta, "se": se,
                         "statistic": stat, "p_value": pv, "ci_low": beta - crit * se,
                         "ci_high": beta + crit * se})
    return MetaRegressionResult(coef, float(tau2), float(i2), float(h2), float(r2),
                                float(qe), float(stats.chi2.sf(qe, k - p)), qm, qm_p, k,
                                method, test, note)


def _regression_fisher(y, v, X, tau2: float, reml: bool) -> float:
    """ML or REML tau^2 of a meta-regression by Fisher scoring from ``tau2``, truncated
    at 0; stops when a step changes tau^2 by less than TOL (relative)."""
    for _ in range(MAX_ITER):
        w, beta, cov = _wls(y, v, X, tau2)
        W = np.diag(w)
        P = W - (w[:, None] * X) @ cov @ (X.T * w)
        Py = P @ y
        if reml:
            step = (Py @ Py - np.trace(P)) / np.trace(P @ P)
        else:
            e = y - X @ beta
            step = ((w * w * e * e).sum() - w.sum()) / (w * w).sum()
        new = max(0.0, tau2 + step)
        if abs(new - tau2) <= TOL * max(new, 1e-10):
            return new
        tau2 = new
    return tau2


def _regression_loglik(y, v, X, tau2, reml: bool):
    """Log-likelihood of a meta-regression at each ``tau2`` (1-d), coefficients
    profiled out, as metafor's ``logLik`` (REML with ``+ log|X'X|/2``)."""
    k, p = X.shape
    out = np.empty(np.size(tau2))
    for i, t in enumerate(np.atleast_1d(tau2)):
        w, beta, cov = _wls(y, v, X, t)
        e = y - X @ beta
        ll = -0.5 * (np.log(v + t).sum() + (w * e * e).sum())
        if reml:
            ll += -0.5 * (k - p) * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(X.T @ X)[1]
            ll += 0.5 * np.linalg.slogdet(cov)[1]  # -log|X'WX|/2
        else:
            ll += -0.5 * k * np.log(2 * np.pi)
        out[i] = ll
    return out


def _regression_likelihood_max(y, v, X, start: float, reml: bool):
    """Fisher scoring from ``start``, checked against tau^2 = 0 and a log grid of the
    profile likelihood (:func:`_global_max`). Returns ``(tau2, note)``."""
    tau = np.array([_regression_fisher(y, v, X, start, reml)])
    # the residual scale bounds where the likelihood can still rise: k times the
    # largest squared unweighted least-squares residual (or range of y)
    e = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    scale = len(y) * max(float(np.max(e * e)), float(np.ptp(y)) ** 2)
    grid = _tau2_grid(np.array([scale]), np.array([v.min()]), np.array([v.max()]))

    def loglik(t, rows):
        return _regression_loglik(y, v, X, t, reml)

    def polish(t, rows):
        return np.array([_regression_fisher(y, v, X, float(t[0]), reml)])

    new, moved, ll0, ll1 = _global_max(tau, loglik, grid, polish)
    note = _likelihood_notes(1, moved, tau[moved], new[moved], ll0, ll1, reml)[0]
    return float(new[0]), note


def _scalar_root(f) -> float:
    """Root of a decreasing f with f(0) > 0 (the residual generalized Q - (k - p))."""

    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-14))
