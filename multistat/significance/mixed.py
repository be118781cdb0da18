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
from dataclasses import dataclass, replace

import numpy as np

from multistat._lazy import lazy_module
from multistat._validation import check_alternative, check_probability, check_real
from multistat.errors import LowDegreesOfFreedomWarning, ParameterError
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
#: the same components with raters and items exchanged
_SWAPPED = {"rater_intercept": "item_intercept", "rater_slope": "item_slope",
            "item_intercept": "rater_intercept", "item_slope": "rater_slope"}
#: Satterthwaite df below this flag a row ``low_df``: a t on fewer than 2 df has infinite
#: variance, its 97.5 % quantile is 4.30 at 2 df, 12.7 at 1 and above 1,000 at 0.3 (the
#: normal's is 1.96), so the interval is several times as wide as the standard error says
#: and grows without bound as df -> 0 (real MQM fits with 4 raters reach df 0.27 and
#: intervals of +-3,580 MQM points). Such a df means the rater (or item) slope variance,
#: estimated from a handful of raters, dominates the standard error: more raters, not more
#: items, fix it.
LOW_DF = 2.0
#: the sentence added to the note of a low-df row
LOW_DF_NOTE = (f"low df: Satterthwaite df below {LOW_DF:g}, a t with infinite variance; the "
               "interval and p-value are unreliable (the rater slope variance rests on too "
               "few raters)")
#: the note of a fit whose ratings the fixed effects explain exactly
DEGENERATE_NOTE = ("the ratings do not vary beyond the two systems' means: no variance to "
                   "estimate")


@dataclass(frozen=True)
class MixedFit:
    """REML fit of ``y ~ x + (1 + x || rater) + (1 + x || item)``.

    ``beta`` = (intercept, slope of x); ``cov_beta`` its 2 x 2 covariance; ``sd`` the
    standard deviations of the rater intercept, rater slope, item intercept, item slope
    and the residual (``sigma``); ``n`` ratings, ``n_raters``, ``n_items``;
    ``deviance`` the REML criterion at the optimum; ``converged`` whether the optimum
    found satisfies the bounded problem's optimality conditions; ``df`` the slope's
    Satterthwaite degrees of freedom; ``boundary`` the components estimated at exactly 0
    (a singular fit) and ``note`` what a user should know ("boundary (singular) fit",
    no convergence, or ratings without variance, where every SD is 0 and ``df`` NaN).
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
    boundary: tuple = ()
    note: str = ""


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
        self._raw = (y, x, r, i)
        # ratings the fixed effects explain exactly (all equal, or equal within each
        # system) leave no variance: least squares on [1, x], residual against the
        # rounding of the (scaled) ratings
        self.ols = np.linalg.lstsq(z, y, rcond=None)[0]
        resid = y - z @ self.ols
        self.degenerate = bool(np.sqrt(resid @ resid / y.size) <= 2.0**-40)

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
        # what the derivatives need (:meth:`parts`)
        self._state = (lr, li, inv_i, B, BA, cho, rhs_R, rhs_I, s_R, s_I, beta, rx_inv, r2)
        return float(crit), beta, rx_inv, r2 / df

    def _times_m(self, vR, vI):
        """``Z'Z v`` for ``v = [vR; vI]`` (rows: rater columns, then item columns)."""
        R, I = self.R, self.I
        k = vR.shape[1]
        oR = np.einsum("rab,rbk->rak", self.DR, vR.reshape(R, 2, k)).reshape(2 * R, k)
        oI = np.einsum("iab,ibk->iak", self.DI, vI.reshape(I, 2, k)).reshape(2 * I, k)
        return oR + self.C @ vI, oI + self.C.T @ vR

    def parts(self, theta, *, reml=True):
        """The pieces of the derivatives at ``theta`` (relative SDs), in the scaled units
        with ``sigma^2`` factored out (``V = sigma^2 V1``, ``V1 = I + Z Lambda^2 Z'``,
        ``P1`` the REML projection of ``V1``; ``P1`` -> ``W1 = V1^-1`` for ML):

        ``crit``, ``r2`` (penalized residual sum of squares), ``trace`` (4,):
        ``tr(Z_k' P1 Z_k)`` per component; ``zr2`` (4,): ``|Z_k' r|^2`` with ``r = P1 y``
        the residual; ``rr`` = ``|r|^2``; ``rx_inv`` = ``(X' W1 X)^-1``; ``dvar`` (4,):
        ``d Var(beta_1) / d tau_k`` (``tau_k = sigma^2 theta_k^2``, it does not depend on
        sigma^2) and ``dvar0`` the same for ``tau_0 = sigma^2``.

        Every product is by blocks (item blocks of 2 x 2 and the Schur complement on the
        raters), ``O(R^2 I)`` flops like one evaluation of the criterion."""
        # heavy: scipy.linalg, lazily
        from scipy.linalg import solve_triangular

        crit, beta, rx_inv, _ = self.solve(theta, reml=reml)
        if not np.isfinite(crit):
            return None
        R, I = self.R, self.I
        lr, li, inv_i, _, BA, cho, rhs_R, rhs_I, s_R, s_I, beta, rx_inv, r2 = self._state

        def inv_items(v):  # A_I^-1 v by 2 x 2 item blocks, v (2I, k)
            v3 = v.reshape(I, 2, -1)
            return np.einsum("iab,ibk->iak", inv_i, v3).reshape(2 * I, -1)

        # m_j' A^-1 m_j for every column m_j of Lambda Z'Z, with
        # A^-1 = blockdiag(0, A_I^-1) + [I; -A_I^-1 B'] S^-1 [I, -B A_I^-1]
        # rater columns: m = [lr * D_R e_j; li * C' e_j]
        mR = lr[:, None] * _block_diag(self.DR)                     # (2R, 2R)
        mI = li[:, None] * self.C.T                                  # (2I, 2R)
        quad_r = np.einsum("ij,ij->j", mI, inv_items(mI))
        w = solve_triangular(cho, mR - BA @ mI, lower=True, check_finite=False)
        quad_r += np.einsum("ij,ij->j", w, w)
        # item columns: m = [lr * C e_j; li * D_I e_j] (D_I block diagonal)
        dI = li.reshape(I, 2)[:, :, None] * self.DI                  # (I, 2, 2): column c
        quad_i = np.einsum("iac,iab,ibc->ic", dI, inv_i, dI).reshape(2 * I)
        BAd = np.einsum("rib,ibc->ric", BA.reshape(2 * R, I, 2), dI).reshape(2 * R, 2 * I)
        w = solve_triangular(cho, lr[:, None] * self.C - BAd, lower=True, check_finite=False)
        quad_i += np.einsum("ij,ij->j", w, w)
        diag_r = np.stack([self.DR[:, 0, 0], self.DR[:, 1, 1]], axis=1).reshape(-1)
        diag_i = np.stack([self.DI[:, 0, 0], self.DI[:, 1, 1]], axis=1).reshape(-1)
        # Z' W1 X = Z'X - Z'Z Lambda A^-1 Lambda Z'X
        sx_R, sx_I = s_R[:, :2], s_I[:, :2]
        mR_x, mI_x = self._times_m(lr[:, None] * sx_R, li[:, None] * sx_I)
        zwx_R = self.DR.reshape(2 * R, 2) - mR_x
        zwx_I = self.DI.reshape(2 * I, 2) - mI_x
        tr_r = diag_r - quad_r
        tr_i = diag_i - quad_i
        if reml:
            tr_r = tr_r - np.einsum("ja,ab,jb->j", zwx_R, rx_inv, zwx_R)
            tr_i = tr_i - np.einsum("ja,ab,jb->j", zwx_I, rx_inv, zwx_I)
        # the residual r = y - X beta - Z Lambda u, u = A^-1 Lambda Z'(y - X beta)
        u_R = s_R[:, 2] - s_R[:, :2] @ beta
        u_I = s_I[:, 2] - s_I[:, :2] @ beta
        zy_R = self.yR.reshape(-1) - self.DR.reshape(2 * R, 2) @ beta
        zy_I = self.yI.reshape(-1) - self.DI.reshape(2 * I, 2) @ beta
        mu_R, mu_I = self._times_m((lr * u_R)[:, None], (li * u_I)[:, None])
        zr_R, zr_I = zy_R - mu_R[:, 0], zy_I - mu_I[:, 0]
        rr = r2 - float(u_R @ u_R + u_I @ u_I)
        trace = np.array([tr_r[0::2].sum(), tr_r[1::2].sum(), tr_i[0::2].sum(),
                          tr_i[1::2].sum()])
        zr2 = np.array([(zr_R[0::2] ** 2).sum(), (zr_R[1::2] ** 2).sum(),
                        (zr_I[0::2] ** 2).sum(), (zr_I[1::2] ** 2).sum()])
        c = rx_inv[:, 1]
        gR, gI = zwx_R @ c, zwx_I @ c
        dvar = np.array([(gR[0::2] ** 2).sum(), (gR[1::2] ** 2).sum(),
                         (gI[0::2] ** 2).sum(), (gI[1::2] ** 2).sum()])
        # X' W1^2 X = X'X - rhs_X' s_X - s_X' s_X (A s_X = rhs_X)
        xw2x = (self.XX - rhs_R[:, :2].T @ sx_R - rhs_I[:, :2].T @ sx_I
                - sx_R.T @ sx_R - sx_I.T @ sx_I)
        return {"crit": crit, "r2": r2, "trace": trace, "zr2": zr2, "rr": rr,
                "rx_inv": rx_inv, "beta": beta, "dvar": dvar, "dvar0": float(c @ xw2x @ c)}

    def gradient(self, psi, *, reml=True):
        """The profiled criterion and its gradient in ``psi = theta^2`` (the variance
        ratios): ``d/d psi_k = tr(Z_k' P1 Z_k) - |Z_k' r|^2 / sigma_hat^2`` (the
        derivative of the deviance in ``tau_k = sigma^2 psi_k``, times ``sigma^2``, at
        the profiled ``sigma^2``)."""
        p = self.parts(np.sqrt(np.maximum(psi, 0.0)), reml=reml)
        if p is None:
            return np.inf, np.zeros(4)
        s2 = p["r2"] / (self.N - 2 if reml else self.N)
        return p["crit"], p["trace"] - p["zr2"] / s2

    def tau_gradient(self, tau, *, reml=True):
        """Gradient of the (unprofiled) deviance in the variances ``tau = (sigma^2, v_1,
        ..., v_4)`` (scaled units), and ``Var(beta_1)`` with its gradient there."""
        s2 = tau[0]
        psi = np.asarray(tau[1:]) / s2
        p = self.parts(np.sqrt(np.maximum(psi, 0.0)), reml=reml)
        if p is None:
            return None
        g = np.empty(5)
        g[1:] = (p["trace"] - p["zr2"] / s2) / s2
        n_eff = self.N - 2 if reml else self.N
        g[0] = (n_eff - psi @ p["trace"]) / s2 - p["rr"] / s2**2
        var = s2 * p["rx_inv"][1, 1]
        dvar = np.concatenate([[p["dvar0"]], p["dvar"]])
        return g, var, dvar

    def satterthwaite(self, theta, sigma2):
        """Satterthwaite's degrees of freedom of the slope (lmerTest's method): ``2 V^2 /
        (g' C g)`` with ``V`` its variance as a function of the variance parameters
        ``tau = (sigma^2, v_1, ..., v_4)``, ``g`` its gradient and ``C = 2 H^-1`` their
        asymptotic covariance from the Hessian ``H`` of the REML deviance. ``g`` is
        analytic; ``H`` is the central difference of the analytic gradient with a step
        relative to each variance (1e-5 of it), so that tiny variances are
        differentiated as accurately as large ones. Components at their boundary
        (exactly 0) are not estimated and are left out, as lmerTest's Hessian separates
        them (the deviance is even in their standard deviation)."""
        tau0 = np.concatenate([[sigma2], sigma2 * np.asarray(theta, dtype=float) ** 2])
        active = np.flatnonzero(tau0 > 0)
        k = active.size
        base = self.tau_gradient(tau0)
        if base is None:
            return np.nan
        _, v0, dvar = base
        hess = np.empty((k, k))
        for a, j in enumerate(active):
            h = 1e-5 * tau0[j]
            up, down = tau0.copy(), tau0.copy()
            up[j] += h
            down[j] -= h
            gp, gm = self.tau_gradient(up), self.tau_gradient(down)
            if gp is None or gm is None:
                return np.nan
            hess[:, a] = (gp[0][active] - gm[0][active]) / (2.0 * h)
        hess = (hess + hess.T) / 2.0
        grad = dvar[active]
        try:
            spread = float(grad @ np.linalg.solve(hess, grad))
        except np.linalg.LinAlgError:
            return np.nan
        return v0**2 / spread if spread > 0 else np.nan

    def moment_start(self):
        """A moment (ANOVA-type) estimate of ``psi = theta^2``: on each system's ratings,
        additive rater and item effects by a few sweeps of alternating means; the
        residual variance from their residuals; each component's variance from the spread
        of the half sums (intercepts) and half differences (slopes) of the two systems'
        effects, less their sampling noise, floored at 0."""
        y, x, r, i = self._raw
        R, I = self.R, self.I
        effects = {"r": np.zeros((R, 2)), "i": np.zeros((I, 2))}
        counts = {"r": np.zeros((R, 2)), "i": np.zeros((I, 2))}
        ss = dof = 0.0
        for side, sign in enumerate((1.0, -1.0)):
            m = x == sign
            if not m.any():
                continue
            ys, rs, is_ = y[m] - y[m].mean(), r[m], i[m]
            nr = np.bincount(rs, minlength=R).astype(float)
            ni = np.bincount(is_, minlength=I).astype(float)
            a, b = np.zeros(R), np.zeros(I)
            for _ in range(8):
                a = np.bincount(rs, ys - b[is_], R) / np.maximum(nr, 1.0)
                b = np.bincount(is_, ys - a[rs], I) / np.maximum(ni, 1.0)
            res = ys - a[rs] - b[is_]
            ss += float(res @ res)
            dof += m.sum() - (nr > 0).sum() - (ni > 0).sum() + 1
            effects["r"][:, side], effects["i"][:, side] = a, b
            counts["r"][:, side], counts["i"][:, side] = nr, ni
        s2 = ss / dof if dof > 0 and ss > 0 else float(np.var(y)) or 1.0
        psi = np.zeros(4)
        for j, key in enumerate(("r", "i")):
            both = (counts[key] > 0).all(axis=1)
            if both.sum() < 2:
                continue
            e, n = effects[key][both], counts[key][both]
            noise = s2 * float(np.mean(1.0 / n[:, 0] + 1.0 / n[:, 1])) / 4.0
            for c, half in enumerate(((e[:, 0] + e[:, 1]) / 2, (e[:, 0] - e[:, 1]) / 2)):
                psi[2 * j + c] = max(float(np.var(half, ddof=1)) - noise, 0.0) / s2
        return np.minimum(psi, _PSI_MAX)


#: upper bound of the variance ratios psi = theta^2 searched (the data are scaled to
#: max |y| = 1, so a ratio this large means a residual variance of ~1e-20 of the data's)
_PSI_MAX = 1e20
#: a face whose screening optimum (stopped early) is more than this above the best
#: criterion is not optimized to the end (its optimum would not come within _FACE_TOL)
_FACE_SCREEN = 1e-2
#: a boundary face is taken when its criterion is within this of the interior optimum
#: (a component set to exactly 0 changes the REML deviance by less)
_FACE_TOL = 1e-9


def _sum_by(codes, values, size):
    """Sums of the rows of ``values`` (N, k) by integer ``codes`` -> (size, k)."""
    out = np.zeros((size, values.shape[1]))
    np.add.at(out, codes, values)
    return out


def _block_diag(blocks):
    """``(K, 2, 2)`` blocks -> the ``(2K, 2K)`` block-diagonal matrix."""
    K = blocks.shape[0]
    out = np.zeros((K, 2, K, 2))
    idx = np.arange(K)
    out[idx, :, idx, :] = blocks
    return out.reshape(2 * K, 2 * K)


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
                       converged=fit.converged, method=fit.method, df=fit.df,
                       boundary=tuple(_SWAPPED[c] for c in fit.boundary), note=fit.note)
    if not fit.note:
        notes = []
        if fit.boundary:
            names = [c for c in COMPONENTS if c in fit.boundary]
            notes.append("boundary (singular) fit: " + ", ".join(names) + " variance 0")
        if not fit.converged:
            notes.append("the optimizer did not converge")
        fit = replace(fit, note="; ".join(notes))
    return fit


def _fit(y, x, rater, item, reml):
    model = _Crossed(y, x, rater, item)
    if model.degenerate:
        return _degenerate_fit(model, reml)
    psi, converged = _optimize(model, reml)
    theta = np.sqrt(psi)
    value, beta, rx_inv, sigma2 = model.solve(theta, reml=reml)
    sigma2 *= model.scale**2  # back to the units of y
    value += (model.N - 2 if reml else model.N) * 2.0 * np.log(model.scale)
    sigma = float(np.sqrt(sigma2))
    beta = np.array([model.shift + model.scale * beta[0], model.scale * beta[1]])
    sd = {name: float(sigma * t) for name, t in zip(COMPONENTS, theta)}
    sd["sigma"] = sigma
    df = model.satterthwaite(theta, sigma2 / model.scale**2) if reml else np.nan
    zero = tuple(c for c, p in zip(COMPONENTS, psi) if p == 0.0)
    return MixedFit(beta=beta, cov_beta=sigma2 * rx_inv, sd=sd, n=model.N,
                    n_raters=model.R, n_items=model.I, deviance=value,
                    converged=converged, method="reml" if reml else "ml", df=df,
                    boundary=zero)


def _degenerate_fit(model, reml):
    """The fit of ratings that the fixed effects explain exactly (all equal, or equal
    within each system): every variance is 0, the difference is known exactly, and
    nothing is left to test."""
    beta = np.array([model.shift + model.scale * model.ols[0], model.scale * model.ols[1]])
    sd = {name: 0.0 for name in COMPONENTS}
    sd["sigma"] = 0.0
    return MixedFit(beta=beta, cov_beta=np.zeros((2, 2)), sd=sd, n=model.N,
                    n_raters=model.R, n_items=model.I, deviance=-np.inf,
                    converged=False, method="reml" if reml else "ml", df=np.nan,
                    boundary=COMPONENTS, note=DEGENERATE_NOTE)


def _lbfgsb(model, reml, start, free, *, loose=False):
    """L-BFGS-B over the free components of ``psi`` (bounds [0, _PSI_MAX]); the others
    stay at ``start``'s values (``loose``: stop early, to screen a face). Returns
    (criterion, psi, success)."""
    free = np.asarray(free)
    base = np.asarray(start, dtype=float).copy()

    def fun(v):
        psi = base.copy()
        psi[free] = v
        f, g = model.gradient(psi, reml=reml)
        if not np.isfinite(f):
            return 1e300, np.zeros(free.size)
        return f, g[free]

    if free.size == 0:
        return model.solve(np.sqrt(base), reml=reml)[0], base, True
    res = optimize.minimize(fun, np.clip(base[free], 0.0, _PSI_MAX), jac=True,
                            method="L-BFGS-B", bounds=[(0.0, _PSI_MAX)] * free.size,
                            options={"maxiter": 1000, "ftol": 1e-9 if loose else 1e-15,
                                     "gtol": 1e-4 if loose else 1e-10})
    psi = base.copy()
    psi[free] = res.x
    return float(res.fun), psi, bool(res.success) or _stationary(model, reml, psi)


def _stationary(model, reml, psi):
    """Whether ``psi`` satisfies the optimality conditions of the bounded problem: zero
    gradient in the components above 0, a gradient >= 0 (pointing into the box) at 0,
    to a tolerance relative to the gradient's terms."""
    p = model.parts(np.sqrt(psi), reml=reml)
    if p is None:
        return False
    s2 = p["r2"] / (model.N - 2 if reml else model.N)
    terms = np.abs(p["trace"]) + p["zr2"] / s2
    g = p["trace"] - p["zr2"] / s2
    tol = 1e-6 * np.maximum(terms, 1.0)
    inside = psi > 0
    return bool(np.all(np.abs(g[inside]) * np.maximum(psi[inside], 1.0) <= tol[inside])
                and np.all(g[~inside] >= -tol[~inside]))


def _optimize(model, reml):
    """The REML (ML) optimum over the variance ratios ``psi = theta^2 >= 0``.

    L-BFGS-B with the analytic gradient from two starts (the moment estimate and all
    components 0.25), then the optimum on each face where one component is exactly 0:
    the others optimized from the best point so far, within their bounds, so that the
    faces where several components are 0 are searched as these faces' own boundaries
    (a face is screened by a run stopped early and run to the end when it comes within
    ``_FACE_SCREEN`` of the best; a face the best point already lies on is skipped).
    The best criterion wins, and a face wins whenever it is within ``_FACE_TOL`` of a
    point with more nonzero components (those components are then exactly 0). Returns
    ``psi`` and whether the winner satisfies the bounded optimality conditions."""
    moment = model.moment_start()
    runs = [_lbfgsb(model, reml, s, np.arange(4)) for s in (moment, np.full(4, 0.25))]
    best = min(runs, key=lambda r: r[0])
    for k in range(4):
        if best[1][k] == 0.0:
            continue  # the best point lies on this face (and is optimal there)
        start = best[1].copy()
        start[k] = 0.0
        face = np.delete(np.arange(4), k)
        screen = _lbfgsb(model, reml, start, face, loose=True)
        if screen[0] <= best[0] + _FACE_SCREEN:  # close enough to matter: to the end
            runs.append(_lbfgsb(model, reml, screen[1], face))
            best = min(runs, key=lambda r: r[0])
    # among the points within _FACE_TOL of the best criterion, the one with most zeros
    near = [r for r in runs if r[0] <= best[0] + _FACE_TOL]
    _, psi, ok = max(near, key=lambda r: (int(np.sum(r[1] == 0.0)), -r[0]))
    return psi, bool(ok and _stationary(model, reml, psi))


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
    if fit.note == DEGENERATE_NOTE:  # the difference is exact; nothing to test
        return {"estimate": float(est), "se": 0.0, "n": n_items, "note": "mixed: " + fit.note,
                "intercept": float(fit.beta[0]), **{f"sd_{k}": v for k, v in fit.sd.items()}}
    se = np.array(2.0 * float(np.sqrt(fit.cov_beta[1, 1])))
    df = fit.df if np.isfinite(fit.df) and fit.df > 0 else np.inf
    t, p, lo, hi = _wald(est, se, alternative, null_value, confidence_level, df=df)
    note = ("mixed: REML fit of rating ~ system + (1 + system || rater) + (1 + system || "
            f"item), t on {df:.1f} Satterthwaite df" + (f"; {fit.note}" if fit.note else ""))
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
        return BatchResult("mixed", flag_low_df(out, slab, ia, ib))
    if slab.ratings is None:  # an incomplete design: each pair on its own cells
        X = slab.scores
        res = mixed_test(X[ia], X[ib], **kw)
    else:
        res = _rated_pairs(slab.ratings, ia, ib, kw)
        ctx.tick(P * M)
    out = from_test_result(res, (P, M), "mean")
    out.update({k: np.broadcast_to(np.asarray(v, dtype=float), (P, M))
                for k, v in res.extra.items()})
    return BatchResult("mixed", flag_low_df(out, slab, ia, ib))


def flag_low_df(out: dict, slab, ia, ib) -> dict:
    """``out`` (a mixed batch's columns ``(P, M)``) with the boolean column ``low_df``
    (Satterthwaite df below :data:`LOW_DF`), :data:`LOW_DF_NOTE` added to those rows'
    notes, and one :class:`~multistat.errors.LowDegreesOfFreedomWarning` naming how many
    rows and the worst pair."""
    df = np.asarray(out["df"], dtype=float)
    low = np.isfinite(df) & (df < LOW_DF) & np.isfinite(np.asarray(out["p_value"], float))
    out["low_df"] = low
    if low.any():
        note = np.broadcast_to(np.asarray(out["note"], dtype=object), low.shape).copy()
        note[low] = [f"{n}; {LOW_DF_NOTE}" if n else f"mixed: {LOW_DF_NOTE}"
                     for n in note[low]]
        out["note"] = note
        p, m = np.unravel_index(np.where(low, df, np.inf).argmin(), low.shape)
        a, b = int(np.asarray(ia)[p]), int(np.asarray(ib)[p])
        a, b = (slab.systems[a], slab.systems[b]) if slab.systems else (a, b)
        metric = slab.metrics[m] if len(slab.metrics) > m else m
        warnings.warn(
            f"mixed: {int(low.sum())} of {low.size} fit(s) of dataset {slab.dataset!r} have "
            f"Satterthwaite df below {LOW_DF:g} (smallest {df[p, m]:.2g}: {a} vs {b}, metric "
            f"{metric}): a t on so few df has infinite variance and their intervals are "
            "unreliable; flagged in the low_df column", LowDegreesOfFreedomWarning,
            stacklevel=2)
    return out


def _register():
    if "mixed" not in REGISTRY:
        register(TestSpec("mixed", mixed_test, "parametric", ("mean",),
                          assumes_symmetric=True, assumes_normal=True,
                          description="mixed-effects model of human ratings with crossed "
                                      "rater and item effects (Card et al. 2020 H.3), "
                                      "REML, Satterthwaite t",
                          batch=mixed_batch, bytes_per_value=64, advised=False,
                          missing="own"))
