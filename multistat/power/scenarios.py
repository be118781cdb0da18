"""Built-in simulation scenarios of Card et al. (2020).

* :func:`simulate_mcnemar` -- two classifiers on one test set (section 3, appendix C);
* :func:`simulate_bleu` -- corpus BLEU through the Delta-Laplace process (section 4,
  appendix G) tested with the randomization test on the sum of swap effects;
* :func:`simulate_likert` -- Likert ratings with crossed worker and item random
  intercepts and slopes, tested with a linear mixed model (section 5, appendix H.3);
* :func:`simulate_preference` -- head-to-head preferences with a binomial test
  (Figure 1, appendices A and H.4).

All return a :class:`~multistat.power.simulation.SimulationResult`. The first, second and
fourth are vectorized over simulations; the Likert scenario fits one statsmodels mixed
model per simulation (seconds each), so its default number of simulations is small.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from multistat._lazy import lazy_module
from multistat.engine import block_bounds, sign_flips
from multistat.errors import PowerParameterError
from multistat.power import _common as c
from multistat.power.analytic import _check_delta_agreement
from multistat.power.simulation import SimulationResult, simulate_power
from multistat.significance._binomial import binom_half_pvalue
from multistat.significance._preference import sign_flip_pvalues, unit_shares

stats = lazy_module("scipy.stats")  # imported on first use

__all__ = [
    "simulate_mcnemar", "simulate_bleu", "simulate_likert", "simulate_preference",
    "BLEU_TABLE3", "BLEU_P_ZERO", "BLEU_B_ZERO", "LikertVariance", "LIKERT_PRESETS",
    "mcnemar_p_values", "binomial_p_values",
]


# ======================================================================== exact p-values
def binomial_p_values(k, n) -> np.ndarray:
    """Two-sided exact binomial (sign) test of p = 1/2, vectorized.

    ``p = min(1, 2 min(P(X <= k), P(X >= k)))``, ``X ~ Bin(n, 1/2)``; ``n = 0`` gives 1.
    Equal to scipy ``binomtest(k, n).pvalue`` and statsmodels ``mcnemar(exact=True)``.
    """
    n = np.asarray(n)
    return np.where(n > 0, binom_half_pvalue(k, n), 1.0)


def mcnemar_p_values(b, c_, *, test: str = "exact") -> np.ndarray:
    """McNemar p-values from the discordant counts ``b`` (only a right), ``c_`` (only b).

    ``test="exact"``: conditional binomial test (statsmodels ``mcnemar`` default).
    ``test="asymptotic"``: chi-square with continuity correction,
    ``(|b - c| - 1)^2 / (b + c)`` on 1 df (statsmodels ``exact=False``).
    """
    b = np.asarray(b)
    c_ = np.asarray(c_)
    if test == "exact":
        return binomial_p_values(b, b + c_)
    k = b + c_
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = (np.abs(b - c_) - 1.0) ** 2 / k
    return np.where(k > 0, stats.chi2.sf(stat, 1), 1.0)


# ================================================================================ McNemar
def simulate_mcnemar(*, n, delta, agreement, n_simulations, alpha=0.05, seed=0,
                     test="exact") -> SimulationResult:
    """Simulation power of McNemar's test (Card et al. 2020, section 3 and appendix C).

    Parameters
    ----------
    n : int
        Test-set size.
    delta : float
        True accuracy difference ``acc(a) - acc(b)``.
    agreement : float in [0, 1]
        Share of items where both models are right or both wrong (P_a);
        ``|delta| <= 1 - P_a``.
    n_simulations : int
    alpha : float in (0, 1)
    seed : int >= 0
    test : {"exact", "asymptotic"}
        Exact conditional McNemar test (default, as Card et al.'s notebook with
        statsmodels) or the continuity-corrected chi-square.

    Returns
    -------
    SimulationResult
        Observed effect per simulation: ``(B - C) / n`` with ``B``, ``C`` the discordant
        counts.

    Notes
    -----
    Each simulation draws ``(B, C, concordant) ~ Multinomial(n; p01, p10, P_a)`` with
    ``p01 = (1 - P_a + delta)/2``, ``p10 = (1 - P_a - delta)/2``; all simulations of a block
    are one multinomial call and one vectorized binomial p-value. The exact power, Type-M
    and Type-S are also available without Monte Carlo error from
    :func:`~multistat.power.mcnemar_exact_errors`.
    """
    n = c.integer("n", n, minimum=1)
    agreement = c.closed_unit("agreement", agreement)
    delta = c.real("delta", delta)
    _check_delta_agreement(delta, agreement)
    test = c.choice("test", test, ("exact", "asymptotic"))
    disc = 1.0 - agreement
    probs = np.array([(disc + delta) / 2, (disc - delta) / 2, agreement])
    probs = np.clip(probs, 0.0, 1.0)
    probs = probs / probs.sum()

    def generator(rng, size, n_):
        return rng.multinomial(n_, probs, size=size)

    def tester(counts, rng):
        b, c_ = counts[:, 0], counts[:, 1]
        return (b - c_) / n, mcnemar_p_values(b, c_, test=test)

    return simulate_power(generator, tester, n=n, true_effect=delta,
                          n_simulations=n_simulations, alpha=alpha, seed=seed,
                          scenario="mcnemar",
                          params={"delta": delta, "agreement": agreement, "test": test})


# =================================================================================== BLEU
#: Card et al. (2020) Table 3: fitted (Delta BLEU, P0, b0) for four WMT En-De comparisons.
BLEU_TABLE3 = {
    "TF19-TF18 (2019, 2K)": {"delta": 4.3, "p_zero": 0.19, "b_zero": 23.7},
    "TF18-TF16 (2018, 3K)": {"delta": 4.2, "p_zero": 0.09, "b_zero": 29.4},
    "TF16-Conv17 (2017, 3K)": {"delta": 1.3, "p_zero": 0.12, "b_zero": 22.5},
    "TF16-Conv14 (2016, 3K)": {"delta": 7.6, "p_zero": 0.10, "b_zero": 27.6},
}
#: Average of Table 3 (0.125; Figure 17 and the authors' notebook use 0.13).
BLEU_P_ZERO = 0.13
#: Average of Table 3's b0 (25.8, as in Figure 17's caption).
BLEU_B_ZERO = 25.8


def simulate_bleu(*, n, delta, p_zero, b_zero, n_simulations, n_permutations, alpha=0.05,
                  seed=0, block_size=100) -> SimulationResult:
    """Simulation power for a corpus-BLEU difference (Card et al. 2020, section 4).

    Parameters
    ----------
    n : int
        Number of test sentences (N).
    delta : float
        True BLEU difference between the systems (Delta, in BLEU points).
    p_zero : float in [0, 1)
        Share of sentences whose swap leaves the BLEU difference unchanged (P0).
    b_zero : float > 0
        Laplace scale at one sentence; the per-sentence scale is ``b = b_zero / n``.
    n_simulations, n_permutations : int
        Simulated test sets, and random swap patterns per randomization test.
    alpha : float in (0, 1)
    seed : int >= 0
    block_size : int
        Simulations that share one sign-flip plan (a fresh plan per block).

    Returns
    -------
    SimulationResult
        Observed effect: the simulated BLEU difference ``d = -sum(delta_i)/2``.

    Notes
    -----
    Delta-Laplace process: the effect ``delta_i`` of swapping the two outputs of sentence
    ``i`` is 0 with probability ``P0``, else ``Laplace(mu, b)`` with
    ``mu = -2 Delta / (N (1 - P0))`` and ``b = b0 / N``, so swapping everything changes the
    difference by ``-2 Delta`` on average. Swapping a subset ``S`` gives
    ``d + sum_{i in S} delta_i = sum_i s_i c_i`` with ``c_i = -delta_i / 2`` and
    ``s_i = -1`` on ``S`` (+1 elsewhere): the randomization test is a sign-flip test on
    ``c`` -- one matrix product ``C @ S.T`` per block of simulations, with plans from
    :func:`multistat.engine.sign_flips`. Two-sided p-value
    ``(1 + #{|null| >= |d|}) / (B + 1)``.
    """
    n = c.integer("n", n, minimum=1)
    delta = c.real("delta", delta)
    p_zero = c.closed_unit("p_zero", p_zero)
    if p_zero >= 1:
        raise PowerParameterError(f"`p_zero` must be < 1 (some swaps must matter); got {p_zero!r}")
    b_zero = c.positive("b_zero", b_zero)
    n_permutations = c.integer("n_permutations", n_permutations, minimum=1)
    block_size = c.integer("block_size", block_size, minimum=1)
    mu = -2.0 * delta / (n * (1.0 - p_zero))
    scale = b_zero / n

    def generator(rng, size, n_):
        keep = rng.random((size, n_)) >= p_zero
        lap = rng.laplace(mu, scale, size=(size, n_))
        return np.where(keep, -0.5 * lap, 0.0)  # c_i = -delta_i / 2

    def tester(contrib, rng):
        # rng is this block's multistat.engine.block_rng stream: the sign-flip plan
        # is drawn from it after the data, so every block has its own plan
        d = contrib.sum(axis=1)
        thresh = np.abs(d) * (1 - 1e-12)
        exceed = np.zeros(d.shape, dtype=np.int64)
        for start, stop in block_bounds(n_permutations):
            flips = sign_flips(rng, stop - start, contrib.shape[1])
            null = contrib @ flips.T
            exceed += (np.abs(null) >= thresh[:, None]).sum(axis=1)
        return d, (1.0 + exceed) / (n_permutations + 1.0)

    return simulate_power(generator, tester, n=n, true_effect=delta,
                          n_simulations=n_simulations, alpha=alpha, seed=seed,
                          scenario="bleu", block_size=block_size,
                          cost_per_simulation=float(n) * (n_permutations + 1),
                          params={"delta": delta, "p_zero": p_zero, "b_zero": b_zero,
                                  "n_permutations": n_permutations})


# ============================================================================ preferences
def simulate_preference(*, n, p_a, p_tie=0.0, n_simulations=10_000, alpha=0.05, seed=0,
                        n_raters=1, item_sd=0.0, rater_sd=0.0, n_permutations=999
                        ) -> SimulationResult:
    """Head-to-head preference study: one judgment per item tested with the exact
    binomial (sign) test, or several raters per item tested as
    :func:`multistat.preference_test` does (sign-flip over items).

    Parameters
    ----------
    n : int
        Number of judgements (people / items); with ``n_raters > 1`` the number of
        items, each judged by every rater.
    p_a : float in [0, 1]
        Probability that a judgement prefers system a (for a typical item and rater when
        ``item_sd`` or ``rater_sd`` > 0).
    p_tie : float in [0, 1]
        Probability of "neither"; ties are dropped before the test (``p_a + p_tie <= 1``).
    n_raters : int
        Raters per item (every rater judges every item, as :func:`simulate_likert`'s
        workers).
    item_sd, rater_sd : float >= 0
        Standard deviations of item and rater random effects on the logit of
        ``P(a | not a tie)``: items differ in which system they favour, raters in their
        leaning.
    n_permutations : int
        Random sign vectors of the sign-flip test (when it is not binomial).

    Returns
    -------
    SimulationResult
        Observed effect: share preferring a among non-tied judgements minus 1/2 (several
        raters: the mean over items of each item's share, as ``preference_test``); the
        true effect is ``p_a / (1 - p_tie) - 1/2``, or with random effects
        ``E[expit(logit(p_a / (1 - p_tie)) + u + v)] - 1/2`` (Gauss-Hermite quadrature).

    Notes
    -----
    Card et al. (2020) Figure 1 and appendix A: counts ``~ Multinomial(n; p_a, p_b, p_tie)``,
    two-sided binomial test of 1/2 on the non-tied judgements. The exact power is
    :func:`~multistat.power.power_sign_test` when ``p_tie = 0``. With several raters or random
    effects each judgment of rater ``r`` on item ``i`` is a tie with probability
    ``p_tie``, else prefers a with probability ``expit(logit(q) + u_i + v_r)``,
    ``u_i ~ N(0, item_sd^2)``, ``v_r ~ N(0, rater_sd^2)``, ``q = p_a / (1 - p_tie)``;
    the test is :func:`multistat.significance._preference.sign_flip_pvalues` on the items' centred
    win shares (binomial when every item's judgments agree). The raters are the same
    for all items, so the test is conditional on them: with ``rater_sd > 0`` their
    leanings do not average out and the rejection rate at ``p_a = (1 - p_tie) / 2``
    exceeds alpha for the population of raters.
    """
    n = c.integer("n", n, minimum=1)
    p_a = c.closed_unit("p_a", p_a)
    p_tie = c.closed_unit("p_tie", p_tie)
    if p_a + p_tie > 1 + 1e-12:
        raise PowerParameterError(f"`p_a` + `p_tie` = {p_a + p_tie:.6g} must be <= 1")
    if p_tie >= 1:
        raise PowerParameterError("`p_tie` must be < 1")
    n_raters = c.integer("n_raters", n_raters, minimum=1)
    item_sd = _nonnegative("item_sd", item_sd)
    rater_sd = _nonnegative("rater_sd", rater_sd)
    if n_raters > 1 or item_sd > 0 or rater_sd > 0:
        return _simulate_rated_preference(
            n=n, p_a=p_a, p_tie=p_tie, n_simulations=n_simulations, alpha=alpha,
            seed=seed, n_raters=n_raters, item_sd=item_sd, rater_sd=rater_sd,
            n_permutations=c.integer("n_permutations", n_permutations, minimum=1))
    probs = np.clip(np.array([p_a, 1 - p_a - p_tie, p_tie]), 0, 1)

    def generator(rng, size, n_):
        return rng.multinomial(n_, probs / probs.sum(), size=size)

    def tester(counts, rng):
        a, b = counts[:, 0], counts[:, 1]
        m = a + b
        with np.errstate(invalid="ignore", divide="ignore"):
            est = np.where(m > 0, a / np.maximum(m, 1) - 0.5, 0.0)
        return est, binomial_p_values(a, m)

    return simulate_power(generator, tester, n=n, true_effect=p_a / (1 - p_tie) - 0.5,
                          n_simulations=n_simulations, alpha=alpha, seed=seed,
                          scenario="preference", params={"p_a": p_a, "p_tie": p_tie})


def _nonnegative(name, value) -> float:
    value = c.real(name, value)
    if value < 0:
        raise PowerParameterError(f"`{name}` must be >= 0; got {value!r}")
    return value


def _simulate_rated_preference(*, n, p_a, p_tie, n_simulations, alpha, seed, n_raters,
                               item_sd, rater_sd, n_permutations) -> SimulationResult:
    """:func:`simulate_preference` with raters and item/rater random effects."""


    q = p_a / (1 - p_tie)
    if not 0 < q < 1:
        raise PowerParameterError(
            f"with several raters or random effects, P(a | not a tie) = p_a / (1 - "
            f"p_tie) = {q:.6g} must lie strictly between 0 and 1")
    sd = math.hypot(item_sd, rater_sd)
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)  # N(0, 1) quadrature
    true = float(np.sum(weights * expit(logit(q) + sd * nodes)) / np.sqrt(2 * np.pi)) - 0.5

    def generator(rng, size, n_):
        u = rng.normal(0.0, item_sd, (size, n_, 1))
        v = rng.normal(0.0, rater_sd, (size, 1, n_raters))
        pa = expit(logit(q) + u + v)  # (size, items, raters)
        tie = rng.random(pa.shape) < p_tie
        a = ~tie & (rng.random(pa.shape) < pa)
        return np.stack([a.sum(2), (~tie & ~a).sum(2), tie.sum(2)], axis=-1)

    def tester(counts, rng):
        share = unit_shares(counts[..., 0], counts[..., 1], counts[..., 2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a simulation of all ties
            est = np.nan_to_num(np.nanmean(share, axis=1))
        p, _ = sign_flip_pvalues(np.nan_to_num(share), n_resamples=n_permutations,
                                 rng=rng)
        return est, p

    return simulate_power(generator, tester, n=n, true_effect=true,
                          n_simulations=n_simulations, alpha=alpha, seed=seed,
                          scenario="preference-raters", block_size=200,
                          cost_per_simulation=float(n) * n_raters * (n_permutations + 1),
                          params={"p_a": p_a, "p_tie": p_tie, "n_raters": n_raters,
                                  "item_sd": item_sd, "rater_sd": rater_sd,
                                  "n_permutations": n_permutations})


# ================================================================================= Likert
@dataclass(frozen=True)
class LikertVariance:
    """Standard deviations of the crossed random effects (ratings on a [0, 1] scale)."""

    worker_intercept: float
    worker_slope: float
    item_intercept: float
    item_slope: float
    sigma: float


#: how each simulated Likert study is analysed: a vectorized ANOVA or statsmodels' MixedLM
LIKERT_METHODS = ("anova", "mixedlm")

#: Card et al. (2020) Table 16 (worker intercept, worker slope, item intercept, item
#: slope, sigma); the same values as ``power_sim.R`` of the authors' repository.
LIKERT_PRESETS = {
    "low": LikertVariance(0.01, 0.04, 0.01, 0.13, 0.16),
    "high": LikertVariance(0.01, 0.11, 0.04, 0.14, 0.26),
}


def _likert_fit(y, x, worker, item):
    """statsmodels ``MixedLM`` of ``y ~ x + (1 + x || worker) + (1 + x || item)`` by ML.

    Crossed random intercepts and slopes as variance components of one group; returns the
    coefficient of ``x`` and its Wald-test p-value. Slow (seconds per fit).
    """
    # heavy: statsmodels, lazily
    import statsmodels.formula.api as smf

    df = pd.DataFrame({"y": y, "x": x, "worker": worker, "item": item, "g": 0})
    vc = {"worker": "0 + C(worker)", "item": "0 + C(item)",
          "worker_x": "0 + C(worker):x", "item_x": "0 + C(item):x"}
    model = smf.mixedlm("y ~ x", df, groups="g", re_formula="0", vc_formula=vc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary / convergence chatter of statsmodels
        fit = model.fit(reml=False, method=["powell", "lbfgs"])
    return float(fit.fe_params["x"]), float(fit.pvalues["x"])


def _likert_anova(ys, n_workers, n_items, components="ml"):
    """Balanced crossed design in closed form, vectorized over simulations.

    ``z_wi = (y_wi(+1) - y_wi(-1)) / 2 = beta_1 + W1_w + I1_i + e_wi`` (intercept effects
    cancel); the GLS estimate of ``beta_1`` in a balanced two-way random design is the
    grand mean of ``z``, with ``Var = s_W^2 / W + s_I^2 / I + s_e^2 / (W I)`` estimated
    from the mean squares: between-worker and between-item sums of squares divided by
    ``W`` and ``I`` (ML-type, as lme4 ``REML=FALSE`` in Card et al.) or by ``W - 1`` and
    ``I - 1`` (REML/ANOVA), components truncated at 0; Wald z test as ``MixedLM``.
    """
    z = ys.reshape(ys.shape[0], n_workers, n_items, 2)
    z = (z[..., 1] - z[..., 0]) / 2.0
    grand = z.mean(axis=(1, 2))
    mw = z.mean(axis=2)
    mi = z.mean(axis=1)
    k = 0 if components == "ml" else 1
    msw = n_items * ((mw - grand[:, None]) ** 2).sum(1) / (n_workers - k)
    msi = n_workers * ((mi - grand[:, None]) ** 2).sum(1) / (n_items - k)
    res = z - mw[:, :, None] - mi[:, None, :] + grand[:, None, None]
    mse = (res ** 2).sum(axis=(1, 2)) / ((n_workers - 1) * (n_items - 1))
    s_w = np.maximum(msw - mse, 0.0) / n_items
    s_i = np.maximum(msi - mse, 0.0) / n_workers
    var = s_w / n_workers + s_i / n_items + mse / (n_workers * n_items)
    zstat = grand / np.sqrt(var)
    return grand, 2 * stats.norm.sf(np.abs(zstat))


def simulate_likert(*, n_items, n_workers, effect, preset="high", variance=None,
                    intercept=0.5, n_simulations=None, alpha=0.05, seed=0,
                    method="anova", components="ml") -> SimulationResult:
    """Likert-rating study with crossed worker and item effects, mixed-model test.

    Parameters
    ----------
    n_items, n_workers : int
        Every worker rates every item under both systems (as in Card et al.'s
        simulations).
    effect : float
        The system coefficient ``beta_1`` with the system coded -1/+1, which is the
        "mean difference" axis of Card et al.'s Figure 6 and ``power_sim.R``; the two
        systems' mean ratings differ by ``2 * effect``.
    preset : {"high", "low"} or None
        Variance setting of Card et al. Table 16; ignored when ``variance`` is given.
    variance : LikertVariance or None
    intercept : float
        Grand mean rating (0.5 as in the paper's simulations).
    n_simulations : int or None
        Default 2000 for ``method="anova"`` and only 10 for ``method="mixedlm"``, which
        fits one statsmodels ``MixedLM`` per simulation (several seconds each for 3
        workers x 100 items); Card et al. used 200.
    method : {"anova", "mixedlm"}
        ``"mixedlm"``: statsmodels ``MixedLM`` (ML) with crossed variance components for
        worker and item intercepts and slopes, Wald z test -- loops over simulations.
        ``"anova"`` (default): the same model solved in closed form for this balanced
        design (every worker rates every item under both systems), vectorized over
        simulations; same estimate, variance components from mean squares, Wald z test.
    components : {"ml", "reml"}
        ``"anova"`` only: ML-type divisors (``W``, ``I``; default, like the ML fits of
        Card et al. and of ``"mixedlm"``) or REML/ANOVA divisors (``W - 1``, ``I - 1``,
        more conservative with few workers).

    Returns
    -------
    SimulationResult
        Observed effect: the fitted coefficient of the system indicator.

    Notes
    -----
    ``y_wim = beta_0 + W0_w + I0_i + (beta_1 + W1_w + I1_i) x_m + e`` with independent
    normal effects of the preset standard deviations (Card et al. appendix H.3, eqs. 5-10,
    no correlation parameters). The test is the Wald z test of ``beta_1`` from a maximum
    likelihood ``MixedLM`` fit with crossed variance components. Card et al. count only
    significant positive effects (``power_correct_sign``); ``power`` counts both signs.
    This scenario loops over simulations (one model fit each).
    """
    method = c.choice("method", method, LIKERT_METHODS)
    components = c.choice("components", components, ("ml", "reml"))
    if n_simulations is None:
        n_simulations = 2000 if method == "anova" else 10
    n_items = c.integer("n_items", n_items, minimum=2)
    n_workers = c.integer("n_workers", n_workers, minimum=2)
    effect = c.real("effect", effect)
    intercept = c.real("intercept", intercept)
    if variance is None:
        preset = c.choice("preset", preset, tuple(LIKERT_PRESETS))
        variance = LIKERT_PRESETS[preset]
    elif not isinstance(variance, LikertVariance):
        raise PowerParameterError(f"`variance` must be a LikertVariance; got {variance!r}")
    else:
        preset = "custom"
    for name in ("worker_intercept", "worker_slope", "item_intercept", "item_slope", "sigma"):
        value = getattr(variance, name)
        if not (isinstance(value, (int, float, np.floating, np.integer))
                and math.isfinite(value) and value >= 0):  # NaN < 0 is False: say so
            raise PowerParameterError(f"variance `{name}` must be a finite number >= 0; "
                                      f"got {value!r}")
    worker, item, xm = (a.ravel() for a in np.meshgrid(
        np.arange(n_workers), np.arange(n_items), np.array([-1.0, 1.0]), indexing="ij"))
    v = variance

    def generator(rng, size, n_):
        w0 = rng.normal(0, v.worker_intercept, (size, n_workers))
        w1 = rng.normal(0, v.worker_slope, (size, n_workers))
        i0 = rng.normal(0, v.item_intercept, (size, n_items))
        i1 = rng.normal(0, v.item_slope, (size, n_items))
        e = rng.normal(0, v.sigma, (size, worker.size))
        return (intercept + w0[:, worker] + i0[:, item]
                + (effect + w1[:, worker] + i1[:, item]) * xm + e)

    def tester(ys, rng):
        if method == "anova":
            return _likert_anova(ys, n_workers, n_items, components)
        out = np.array([_likert_fit(y, xm, worker, item) for y in ys])
        return out[:, 0], out[:, 1]

    params = {"n_items": n_items, "n_workers": n_workers, "effect": effect, "method": method,
              "components": components, "preset": preset,
              "intercept": intercept, **{k: getattr(v, k) for k in v.__dataclass_fields__}}
    return simulate_power(generator, tester, n=n_items * n_workers, true_effect=effect,
                          n_simulations=n_simulations, alpha=alpha, seed=seed,
                          scenario="likert", params=params,
                          cost_per_simulation=2.0 * n_items * n_workers,
                          block_size=200 if method == "anova" else 50)

