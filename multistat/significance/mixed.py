"""The mixed-model test of human ratings (Card et al. 2020, appendix H.3).

For two systems a and b, every rating ``y`` of an item by a rater is modelled as

.. math::

    y = \\beta_0 + \\beta_1 x + u_r + v_r x + a_i + b_i x + \\varepsilon,
    \\qquad x = +1 \\text{ (a)}, -1 \\text{ (b)}

with independent normal rater intercepts and slopes ``u, v``, item intercepts and slopes
``a, b`` and residuals (``y ~ x + (1 + x || rater) + (1 + x || item)`` in lme4's notation,
no correlation parameters, as Barr et al. 2013 and Card et al. recommend). The test's
``estimate`` is the difference of the two systems' model means, ``2 beta_1``, with its
standard error, and a **t test on Satterthwaite's degrees of freedom** (lmerTest's
default for ``lmer`` fits; Kuznetsova et al. 2017) with the matching interval. A Wald z
(statsmodels ``MixedLM``) is far too liberal with few raters: the slope's variance is
then estimated from a handful of rater slopes.

The fit is restricted maximum likelihood (REML), written here instead of one statsmodels
``MixedLM`` fit per pair because it can be made much faster for this model: it profiles
the fixed effects and the residual variance out of the likelihood (Bates et al. 2015,
lme4's penalized least squares) and keeps only the four relative standard deviations
``theta`` for the optimizer. Every quantity the criterion needs is a cross-product that
does not depend on ``theta`` and is computed once per pair; the random-effects matrix
``Lambda' Z' Z Lambda + I`` is then split into the item block (a 2 x 2 block per item,
inverted in closed form) and its Schur complement on the rater block (``2R x 2R``), so
one evaluation costs ``O(R^2 I)`` flops, whatever the number of ratings. Designs may be
unbalanced and incomplete: any rater may rate any subset of the items of either system.

References
----------
D. Card, P. Henderson, U. Khandelwal, R. Jia, K. Mahowald and D. Jurafsky (2020). With
little power comes great responsibility. EMNLP. https://doi.org/10.18653/v1/2020.emnlp-main.745
D. Bates, M. Maechler, B. Bolker and S. Walker (2015). Fitting linear mixed-effects
models using lme4. Journal of Statistical Software 67(1). https://doi.org/10.18637/jss.v067.i01
A. Kuznetsova, P. B. Brockhoff and R. H. B. Christensen (2017). lmerTest package: tests
in linear mixed effects models. Journal of Statistical Software 82(13).
https://doi.org/10.18637/jss.v082.i13
D. J. Barr, R. Levy, C. Scheepers and H. J. Tily (2013). Random effects structure for
confirmatory hypothesis testing: keep it maximal. Journal of Memory and Language 68(3).
https://doi.org/10.1016/j.jml.2012.11.001
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from multistat._lazy import lazy_module
from multistat._validation import check_alternative, check_probability, check_real
from multistat.errors import ParameterError
from multistat.significance._base import REGISTRY, TestResult, TestSpec, register
from multistat.significance._batch import BatchResult, _blas_controller, from_test_result
from multistat.significance._common import CONSTANT_RTOL
from multistat.significance.parametric import paired_t_batch

stats = lazy_module("scipy.stats")  # imported on first use (a t-only run: never)
optimize = lazy_module("scipy.optimize")

#: names of the four random-effect standard deviations, in ``theta`` order
#: the note of a mixed-model row of a study without raters
NO_RATERS_NOTE = ("mixed: no raters in the study: the model reduces to the item differences, "
                  "t on n - 1 df")
COMPONENTS = ("rater_intercept", "rater_slope", "item_intercept", "item_slope")


@dataclass(frozen=True)
class MixedFit:
    """REML fit of ``y ~ x + (1 + x || rater) + (1 + x || item)``.

    ``beta`` = (intercept, slope of x); ``cov_beta`` its 2 x 2 covariance; ``sd`` the
    standard deviations of the rater intercept, rater slope, item intercept, item slope
    and the residual (``sigma``); ``n`` ratings, ``n_raters``, ``n_items``;
    ``deviance`` the REML criterion at the optimum; ``converged``.
    """

    beta: np.ndarray
    cov_beta: np.ndarray
    sd: dict
    n: int
    n_raters: int
    n_items: int
    deviance: float
    converged: bool
    method: str = "reml"
    df: float = float("nan")


class _Crossed:
    """The cross-products of one pair's ratings; the profiled criterion of theta."""

    def __init__(self, y, x, rater, item):
        y = np.asarray(y, dtype=np.float64)
        x = np.asarray(x, dtype=np.float64)
        self.shift = float(np.mean(y))
        y = y - self.shift  # centred and scaled: shift- and scale-free sums of squares
        self.scale = float(np.max(np.abs(y))) or 1.0
        y = y / self.scale
        rater = np.asarray(rater)
        item = np.asarray(item)
        _, r = np.unique(rater, return_inverse=True)
        _, i = np.unique(item, return_inverse=True)
        R, I = int(r.max()) + 1, int(i.max()) + 1
        self.R, self.I, self.N = R, I, y.size
        z = np.stack([np.ones_like(x), x], axis=1)                 # (N, 2): [1, x]
        zz = z[:, :, None] * z[:, None, :]                         # (N, 2, 2)
        self.DR = _sum_by(r, zz.reshape(-1, 4), R).reshape(R, 2, 2)
        self.DI = _sum_by(i, zz.reshape(-1, 4), I).reshape(I, 2, 2)
        # rater x item cross-products as a (2R, 2I) matrix: row (r, k), column (i, l)
        self.C = _sum_by(r * I + i, zz.reshape(-1, 4), R * I).reshape(
            R, I, 2, 2).transpose(0, 2, 1, 3).reshape(2 * R, 2 * I)
        self.yR = _sum_by(r, z * y[:, None], R)                    # (R, 2)
        self.yI = _sum_by(i, z * y[:, None], I)                    # (I, 2)
        self.alt_r, self.alt_i = np.tile([0, 1], R), np.tile([0, 1], I)
        self.XX = z.T @ z
        self.Xy = z.T @ y
        self.yy = float(y @ y)

    def solve(self, theta, *, reml=True):
        """(criterion, beta, (R_X'R_X)^-1, sigma^2) at ``theta``."""
        R, I = self.R, self.I
        theta = np.asarray(theta, dtype=np.float64)
        tr, ti = theta[:2], theta[2:]
        lr, li = tr[self.alt_r], ti[self.alt_i]                       # (2R,), (2I,)
        # item blocks: A_I = L D_I L + I (2 x 2 each), inverted in closed form
        AI = self.DI * ti[None, :, None] * ti[None, None, :]
        AI[:, 0, 0] += 1.0
        AI[:, 1, 1] += 1.0
        det_i = AI[:, 0, 0] * AI[:, 1, 1] - AI[:, 0, 1] * AI[:, 1, 0]
        inv_i = np.empty_like(AI)
        inv_i[:, 0, 0] = AI[:, 1, 1] / det_i
        inv_i[:, 1, 1] = AI[:, 0, 0] / det_i
        inv_i[:, 0, 1] = -AI[:, 0, 1] / det_i
        inv_i[:, 1, 0] = -AI[:, 1, 0] / det_i
        # B = L_R C L_I (2R x 2I); B A_I^-1 by item blocks; Schur complement on the raters
        B = self.C * lr[:, None] * li[None, :]
        B3 = B.reshape(2 * R, I, 2)
        BA = (B3[:, :, 0, None] * inv_i[None, :, 0, :]
              + B3[:, :, 1, None] * inv_i[None, :, 1, :]).reshape(2 * R, 2 * I)
        S = -(BA @ B.T)
        AR = self.DR * tr[None, :, None] * tr[None, None, :]
        idx = np.arange(R)
        S4 = S.reshape(R, 2, R, 2)
        S4[idx, :, idx, :] += AR
        S[np.diag_indices(2 * R)] += 1.0
        try:
            cho = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            return np.inf, None, None, None
        logdet = float(np.log(det_i).sum() + 2.0 * np.log(np.diag(cho)).sum())
        # right-hand sides Lambda Z'[X, y] (X = [1, x] spans Z's columns: Z'X = D blocks)
        rhs_R = np.concatenate([self.DR, self.yR[:, :, None]], axis=2).reshape(2 * R, 3)
        rhs_R = rhs_R * lr[:, None]
        rhs_I = np.concatenate([self.DI, self.yI[:, :, None]], axis=2).reshape(2 * I, 3)
        rhs_I = rhs_I * li[:, None]
        # A^-1 rhs by blocks: s_R = S^-1 (r_R - B A_I^-1 r_I); s_I = A_I^-1 (r_I - B' s_R)
        s_R = _cho_solve(cho, rhs_R - BA @ rhs_I)
        t_I = (rhs_I - B.T @ s_R).reshape(I, 2, 3)
        s_I = (inv_i[:, :, 0, None] * t_I[:, None, 0, :]
               + inv_i[:, :, 1, None] * t_I[:, None, 1, :]).reshape(2 * I, 3)
        G = rhs_R.T @ s_R + rhs_I.T @ s_I                           # rhs' A^-1 rhs (3 x 3)
        rx = self.XX - G[:2, :2]
        rhs_beta = self.Xy - G[:2, 2]
        try:
            rx_cho = np.linalg.cholesky(rx)
        except np.linalg.LinAlgError:
            return np.inf, None, None, None
        beta = _cho_solve(rx_cho, rhs_beta)
        r2 = self.yy - G[2, 2] - rhs_beta @ beta
        if not r2 > 0:
            return np.inf, None, None, None
        df = self.N - 2 if reml else self.N
        crit = logdet + df * (1.0 + np.log(2.0 * np.pi * r2 / df))
        logdet_rx = 2.0 * np.log(np.diag(rx_cho)).sum()
        if reml:
            crit += logdet_rx
        rx_inv = _cho_solve(rx_cho, np.eye(2))
        self.last = (logdet, logdet_rx, r2)
        return float(crit), beta, rx_inv, r2 / df

    def reml_deviance(self, tau):
        """The REML deviance (-2 log restricted likelihood, constants kept) at variances
        ``tau = (sigma^2, v_1, ..., v_4)`` (in the scaled units), not profiled; and the
        variance of the slope estimate there."""
        sigma2 = tau[0]
        if not sigma2 > 0 or np.any(tau[1:] < 0):
            return np.inf, np.nan
        crit, _, rx_inv, _ = self.solve(np.sqrt(tau[1:] / sigma2))
        if not np.isfinite(crit):
            return np.inf, np.nan
        logdet, logdet_rx, r2 = self.last
        dev = (logdet + logdet_rx + (self.N - 2) * np.log(2.0 * np.pi * sigma2)
               + r2 / sigma2)
        return float(dev), float(sigma2 * rx_inv[1, 1])

    def satterthwaite(self, theta, sigma2):
        """Satterthwaite's degrees of freedom of the slope (lmerTest's method): ``2 V^2 /
        (g' C g)`` with ``V`` its variance as a function of the variance parameters,
        ``g`` its gradient and ``C = 2 H^-1`` their asymptotic covariance from the
        Hessian ``H`` of the REML deviance, both by central differences. Components at
        their boundary (0) are held fixed, as parameters not estimated."""
        tau0 = np.concatenate([[sigma2], sigma2 * np.asarray(theta) ** 2])
        active = np.flatnonzero(tau0 > 1e-10 * sigma2)
        k = active.size
        h = 1e-4 * tau0[active]

        def at(delta):
            tau = tau0.copy()
            tau[active] += delta
            return self.reml_deviance(tau)

        f0, v0 = at(np.zeros(k))
        grad = np.empty(k)
        hess = np.empty((k, k))
        fp, fm = np.empty(k), np.empty(k)
        for a in range(k):
            e = np.zeros(k)
            e[a] = h[a]
            (fp[a], vp), (fm[a], vm) = at(e), at(-e)
            grad[a] = (vp - vm) / (2.0 * h[a])
            hess[a, a] = (fp[a] - 2.0 * f0 + fm[a]) / h[a] ** 2
        for a in range(k):
            for b in range(a + 1, k):
                e = np.zeros(k)
                e[a], e[b] = h[a], h[b]
                fpp, fmm = at(e)[0], at(-e)[0]
                hess[a, b] = hess[b, a] = ((fpp - fp[a] - fp[b] + 2.0 * f0 - fm[a] - fm[b]
                                            + fmm) / (2.0 * h[a] * h[b]))
        try:
            cov = 2.0 * np.linalg.inv(hess)
        except np.linalg.LinAlgError:
            return np.nan
        spread = float(grad @ cov @ grad)
        return 2.0 * v0**2 / spread if spread > 0 else np.nan


def _sum_by(codes, values, size):
    """Sums of the rows of ``values`` (N, k) by integer ``codes`` -> (size, k)."""
    out = np.zeros((size, values.shape[1]))
    np.add.at(out, codes, values)
    return out


def _cho_solve(cho, b):
    # heavy: scipy.linalg, lazily
    from scipy.linalg import solve_triangular

    w = solve_triangular(cho, b, lower=True, check_finite=False)
    return solve_triangular(cho.T, w, lower=False, check_finite=False)


def fit_crossed(y, x, rater, item, *, reml: bool = True) -> MixedFit:
    """REML (or ML) fit of the crossed rater/item model to ratings ``y`` of systems coded
    ``x`` = +1 / -1 (see the module notes).

    The model is symmetric in raters and items; the side with more levels is the one
    eliminated by blocks, so the dense Schur complement is on the smaller side. BLAS runs
    on one thread: the products are small, and threads only contend (measured 17x
    slower on a busy 2-core machine)."""

    swap = np.unique(rater).size > np.unique(item).size
    with _blas_controller().limit(limits=1, user_api="blas"):
        fit = _fit(y, x, item if swap else rater, rater if swap else item, reml)
    if swap:
        sd = dict(fit.sd)
        sd["rater_intercept"], sd["item_intercept"] = sd["item_intercept"], sd["rater_intercept"]
        sd["rater_slope"], sd["item_slope"] = sd["item_slope"], sd["rater_slope"]
        fit = MixedFit(beta=fit.beta, cov_beta=fit.cov_beta, sd=sd, n=fit.n,
                       n_raters=fit.n_items, n_items=fit.n_raters, deviance=fit.deviance,
                       converged=fit.converged, method=fit.method, df=fit.df)
    return fit


def _fit(y, x, rater, item, reml):
    model = _Crossed(y, x, rater, item)

    def crit(log_theta):
        return model.solve(np.exp(log_theta), reml=reml)[0]

    # theta on a log scale, clipped below: a component at the boundary (0) is reached as
    # theta -> e^-12 relative to sigma, where it no longer changes the criterion
    start = np.full(4, np.log(0.5))
    bounds = [(-12.0, np.log(1e4))] * 4
    res = optimize.minimize(crit, start, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": 500, "ftol": 1e-12, "gtol": 1e-8})
    theta = np.exp(res.x)
    theta[res.x <= -11.0] = 0.0
    value, beta, rx_inv, sigma2 = model.solve(np.maximum(theta, 0.0), reml=reml)
    sigma2 *= model.scale**2  # back to the units of y
    value += (model.N - 2 if reml else model.N) * 2.0 * np.log(model.scale)
    sigma = float(np.sqrt(sigma2))
    beta = np.array([model.shift + model.scale * beta[0], model.scale * beta[1]])
    sd = {name: float(sigma * t) for name, t in zip(COMPONENTS, theta)}
    sd["sigma"] = sigma
    df = model.satterthwaite(theta, sigma2 / model.scale**2) if reml else np.nan
    return MixedFit(beta=beta, cov_beta=sigma2 * rx_inv, sd=sd, n=model.N,
                    n_raters=model.R, n_items=model.I, deviance=value,
                    converged=bool(res.success), method="reml" if reml else "ml", df=df)


def mixed_pair(ya, yb, *, alternative="two-sided", null_value=0.0, confidence_level=0.95):
    """The mixed-model test of one pair from ratings ``ya``, ``yb`` (items x raters, NaN
    where a rater did not rate); returns a dict of the result columns."""
    ya = np.asarray(ya, dtype=np.float64)
    yb = np.asarray(yb, dtype=np.float64)
    items, raters = np.indices(ya.shape)
    pa, pb = ~np.isnan(ya), ~np.isnan(yb)
    y = np.concatenate([ya[pa], yb[pb]])
    x = np.concatenate([np.ones(int(pa.sum())), -np.ones(int(pb.sum()))])
    rater = np.concatenate([raters[pa], raters[pb]])
    item = np.concatenate([items[pa], items[pb]])
    n_items = int((pa | pb).any(axis=1).sum())
    if pa.sum() < 2 or pb.sum() < 2 or n_items < 2 or np.unique(rater).size < 2:
        return {"note": "mixed: fewer than 2 ratings per system, 2 items or 2 raters"}
    fit = fit_crossed(y, x, rater, item)
    est = np.array(2.0 * fit.beta[1])
    se = np.array(2.0 * float(np.sqrt(fit.cov_beta[1, 1])))
    df = fit.df if np.isfinite(fit.df) and fit.df > 0 else np.inf
    t, p, lo, hi = _wald(est, se, alternative, null_value, confidence_level, df=df)
    note = ("mixed: REML fit of rating ~ system + (1 + system || rater) + (1 + system || "
            f"item), t on {df:.1f} Satterthwaite df"
            + ("" if fit.converged else "; the optimizer did not converge"))
    return {"estimate": float(est), "se": float(se), "statistic": float(t),
            "p_value": float(p), "ci_low": float(lo), "ci_high": float(hi), "n": n_items,
            "df": float(df), "note": note, "intercept": float(fit.beta[0]),
            **{f"sd_{k}": v for k, v in fit.sd.items()}}


def _wald(est, se, alternative, null_value, confidence_level, *, df):
    """t statistic on ``df`` degrees of freedom (``inf``: the normal), its p-value and
    interval, elementwise."""
    dist = stats.t(df)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (est - null_value) / se
    if alternative == "two-sided":
        q = dist.ppf(0.5 + confidence_level / 2.0)
        return t, 2.0 * dist.sf(np.abs(t)), est - q * se, est + q * se
    q = dist.ppf(confidence_level)
    if alternative == "greater":
        return t, dist.sf(t), est - q * se, np.full_like(est, np.inf)
    return t, dist.cdf(t), np.full_like(est, -np.inf), est + q * se


def mixed_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
               raters=False):
    """Mixed-model test of a - b for human ratings (registered as ``"mixed"``).

    Parameters
    ----------
    x, y : array_like
        With ``raters=True``: ratings ``(..., items, raters)`` of systems a and b, NaN
        where a rater did not rate an item (incomplete and unbalanced designs are
        fine); the model of the module notes is fitted by REML for every leading index.
        Without raters: item scores ``(..., items)``, one per item and system; the
        rater effects then do not exist and the item slope cannot be told from the
        residual, so the model reduces to the paired differences: ``estimate`` is their
        mean and ``se`` their standard error (the REML solution of ``y ~ x + (1 | item)``
        whenever the between-item variance is not at its boundary), tested with the
        same t test on ``n - 1`` degrees of freedom (its Satterthwaite df): the paired t.
    alternative, null_value, confidence_level
        As every test; on ``2 beta_1``, the difference of the systems' model means.

    Returns
    -------
    TestResult
        ``statistic`` is the t statistic, ``n`` the items rated for either system;
        ``extra`` holds ``se`` and, with raters, the fit's ``intercept`` (beta_0, the
        grand mean) and ``sd_rater_intercept``, ``sd_rater_slope``, ``sd_item_intercept``,
        ``sd_item_slope``, ``sd_sigma`` (what :func:`multistat.variance_components` pools).

    Examples
    --------
    >>> import numpy as np
    >>> from multistat.significance.mixed import mixed_test
    >>> rng = np.random.default_rng(0)
    >>> item = rng.normal(0, 1, (50, 1))
    >>> a = 0.3 + item + rng.normal(0, 0.5, (50, 3))
    >>> b = item + rng.normal(0, 0.5, (50, 3))
    >>> round(float(mixed_test(a, b, raters=True).estimate), 3)
    0.345
    """

    alternative = check_alternative(alternative)
    null_value = check_real("null_value", null_value)
    confidence_level = check_probability("confidence_level", confidence_level)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ParameterError(f"`x` and `y` must have the same shape; got {x.shape} and "
                             f"{y.shape}")
    if not raters:
        d = x - y
        ok = ~np.isnan(d)
        n = ok.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            big = np.nanmax(np.abs(d), axis=-1, keepdims=True)  # scale-free squares
            big = np.where(big > 0, big, 1.0)
            ds = d / big
            est_s = np.nansum(ds, axis=-1) / n
            var = np.nansum((ds - est_s[..., None]) ** 2, axis=-1) / (n - 1)
            est = est_s * big[..., 0]
            se = np.sqrt(var / n) * big[..., 0]
        se = np.where(n >= 2, se, np.nan)
        # constant differences by the paired t test's own rule (sd within CONSTANT_RTOL
        # of the scores' scale), NaN-aware: rounding leaves a tiny nonzero variance
        scale = np.fmax(np.nanmax(np.abs(x), axis=-1), np.nanmax(np.abs(y), axis=-1))
        scale = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # rows with < 2 differences
            varies = ~(np.nanstd(d / scale[..., None], axis=-1, ddof=1) <= CONSTANT_RTOL)
        varies &= se > 0
        z, p, lo, hi = _wald(est, se, alternative, null_value, confidence_level,
                             df=np.maximum(n - 1, 1))
        note = np.where(varies, NO_RATERS_NOTE, "mixed: the differences are constant (no "
                        "variance)")
        return TestResult("mixed", z, np.where(varies, p, np.nan), est, lo, hi,
                          confidence_level, n, alternative, null_value, "mean",
                          note=note, extra={"se": se, "df": np.maximum(n - 1, 1) * 1.0})
    lead = x.shape[:-2]
    cols = {k: np.full(lead, np.nan) for k in (
        "estimate", "se", "statistic", "p_value", "ci_low", "ci_high", "n", "df",
        "intercept", *(f"sd_{c}" for c in COMPONENTS), "sd_sigma")}
    notes = np.full(lead, "", dtype=object)
    for idx in np.ndindex(*lead):
        row = mixed_pair(x[idx], y[idx], alternative=alternative, null_value=null_value,
                         confidence_level=confidence_level)
        for k, v in row.items():
            if k == "note":
                notes[idx] = v
            else:
                cols[k][idx] = v
    return TestResult("mixed", cols["statistic"], cols["p_value"], cols["estimate"],
                      cols["ci_low"], cols["ci_high"], confidence_level, cols["n"],
                      alternative, null_value, "mean", note=notes,
                      extra={k: cols[k] for k in cols if k in ("se", "df", "intercept")
                             or k.startswith("sd_")})


def _rated_pairs(R, ia, ib, kw):
    """:func:`mixed_test` of pairs ``(ia, ib)`` from ratings ``R`` ``(S, M, n, raters)``,
    one pair at a time on views of the two systems' ratings: no ``pairs x instances x
    raters`` gather (``R[ia]``, ``R[ib]`` were two copies of that size, so peak memory
    grew with the number of pairs; the fits were one pair at a time anyway)."""

    P, M = len(ia), R.shape[1]
    if not P:
        return mixed_test(R[ia], R[ib], raters=True, **kw)
    cols: dict = {}
    notes = np.full((P, M), "", dtype=object)
    for p, (a, b) in enumerate(zip(np.asarray(ia).tolist(), np.asarray(ib).tolist())):
        res = mixed_test(R[a], R[b], raters=True, **kw)  # (M,) per field
        for k in ("statistic", "p_value", "estimate", "ci_low", "ci_high", "n",
                  *res.extra):
            v = res.extra[k] if k in res.extra else getattr(res, k)
            cols.setdefault(k, np.full((P, M), np.nan))[p] = v
        notes[p] = res.note
    return TestResult("mixed", cols["statistic"], cols["p_value"], cols["estimate"],
                      cols["ci_low"], cols["ci_high"], kw["confidence_level"], cols["n"],
                      kw["alternative"], kw["null_value"], "mean", note=notes,
                      extra={k: cols[k] for k in cols if k in ("se", "df", "intercept")
                             or k.startswith("sd_")})


def mixed_batch(slab, ia, ib, ctx):
    """Batch entry of ``"mixed"``: one REML fit per pair x metric from the slab's ratings
    by rater (``slab.ratings``); without ratings, the item-difference t test of every
    pair at once."""

    P, M = len(ia), slab.shape[1]
    kw = {"alternative": ctx.alternative, "null_value": ctx.null_value,
          "confidence_level": ctx.confidence_level}
    if slab.ratings is None and slab.present is None:
        # no raters, every instance paired: the model is the paired t test; its batch
        # (per-system means and Gram matrix, its constant-difference rule) serves
        res = paired_t_batch(slab, ia, ib, ctx.replace(options={}))
        out = dict(res.arrays)
        out["df"] = np.full((P, M), float(max(slab.n - 1, 1)))
        out["note"] = np.where(np.broadcast_to(out["note"], (P, M)) == "", NO_RATERS_NOTE,
                               np.broadcast_to(out["note"], (P, M))).astype(object)
        return BatchResult("mixed", out)
    if slab.ratings is None:  # an incomplete design: each pair on its own cells
        X = slab.scores
        res = mixed_test(X[ia], X[ib], **kw)
    else:
        res = _rated_pairs(slab.ratings, ia, ib, kw)
        ctx.tick(P * M)
    out = from_test_result(res, (P, M), "mean")
    out.update({k: np.broadcast_to(np.asarray(v, dtype=float), (P, M))
                for k, v in res.extra.items()})
    return BatchResult("mixed", out)


def _register():
    if "mixed" not in REGISTRY:
        register(TestSpec("mixed", mixed_test, "parametric", ("mean",),
                          assumes_symmetric=True, assumes_normal=True,
                          description="mixed-effects model of human ratings with crossed "
                                      "rater and item effects (Card et al. 2020 H.3), "
                                      "REML, Satterthwaite t",
                          batch=mixed_batch, bytes_per_value=64, advised=False,
                          missing="own"))
