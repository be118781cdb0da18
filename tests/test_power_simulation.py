"""Simulation power, Type-M/Type-S and the Card et al. (2020) scenarios."""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pytest

import multistat.power as P
import multistat.power.scenarios as S
from multistat.errors import PowerError


def _within(est, se, ref, k=4.0, ref_se=0.0):
    return abs(est - ref) <= k * math.sqrt(se**2 + ref_se**2)


# ============================================================== McNemar (section 3, app. C)
def test_simulate_mcnemar_matches_exact_enumeration_and_appendix_c():
    # 10,000 simulations: MC s.e. of power ~0.004 (n=500) / 0.004 (n=2000), of Type-M
    # ~0.007 / 0.003; references: exact enumeration (mcnemar_exact_errors) and Card et al.
    # appendix C (n = 500: badly underpowered, Type-M ~ 1.9; n = 2000: nearly 80 % power,
    # Type-M ~ 1.1)
    for n, claim_m in [(500, 1.9), (2000, 1.1)]:
        r = P.simulate_mcnemar(n=n, delta=0.02, agreement=0.9, n_simulations=10_000)
        ex = P.mcnemar_exact_errors(n=n, delta=0.02, agreement=0.9)
        assert _within(r.power, r.power_se, ex.power)
        assert _within(r.type_m, r.type_m_se, ex.type_m)
        assert _within(r.power_correct_sign, r.power_correct_sign_se, ex.power_correct_sign)
        assert abs(r.type_m - claim_m) < 0.05
        assert abs(r.mean_effect - 0.02) < 4 * math.sqrt(0.1 / n / 10_000)
        if n == 500:
            assert r.power < 0.3
            assert r.mean_significant_effect == pytest.approx(0.038, abs=0.002)  # "~0.04"
        else:
            assert abs(r.power - 0.8) < 0.02  # "nearly 80 %"


def test_simulate_mcnemar_reproducible_and_seeded():
    a = P.simulate_mcnemar(n=300, delta=0.03, agreement=0.85, n_simulations=2500, seed=0)
    b = P.simulate_mcnemar(n=300, delta=0.03, agreement=0.85, n_simulations=2500, seed=0)
    c = P.simulate_mcnemar(n=300, delta=0.03, agreement=0.85, n_simulations=2500, seed=1)
    assert a == b
    assert a.power != c.power or a.type_m != c.type_m
    assert dataclasses.is_dataclass(a)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.power = 1.0  # frozen
    row = a.to_frame()
    assert row.loc[0, "power"] == a.power and row.loc[0, "param_agreement"] == 0.85


def test_simulate_mcnemar_asymptotic_test_close_to_normal_formula():
    # the continuity-corrected chi-square test behaves like the Connett normal formula
    r = P.simulate_mcnemar(n=2000, delta=0.02, agreement=0.9, n_simulations=10_000,
                           test="asymptotic")
    assert abs(r.power - P.power_mcnemar(n=2000, delta=0.02, agreement=0.9)) < 0.03


def test_type_s_grows_when_underpowered():
    # appendix B: tiny effect, small n -> many significant results have the wrong sign;
    # reference: exact enumeration of the same design
    r = P.simulate_mcnemar(n=200, delta=0.005, agreement=0.8, n_simulations=20_000)
    ex = P.mcnemar_exact_errors(n=200, delta=0.005, agreement=0.8)
    assert ex.type_s > 0.15
    assert _within(r.type_s, r.type_s_se, ex.type_s)
    assert r.type_m > 3


# =============================================================== BLEU (section 4, app. G)
def _bleu_normal_power(n, delta, p0, b0, alpha=0.05):
    """Independent normal approximation of the sign-flip test on c_i = -delta_i / 2."""
    mu, b = -2 * delta / (n * (1 - p0)), b0 / n
    e_c2 = (1 - p0) * (mu**2 + 2 * b**2) / 4  # E c^2 of the Delta-Laplace mixture
    var_c = e_c2 - (delta / n) ** 2
    z = NormalDist().inv_cdf(1 - alpha / 2)
    nd = NormalDist(delta, math.sqrt(n * var_c))
    thr = z * math.sqrt(n * e_c2)
    return 1 - nd.cdf(thr) + nd.cdf(-thr)


def test_simulate_bleu_section4_claim():
    # Card et al. section 4: ~75 % power for 1 BLEU with 2000 sentences and the average
    # fitted P0 = 0.13, b0 = 25.8 (Table 3 / Figure 17). 500 simulations x 1000
    # permutations: MC s.e. ~0.02 -> the claim is checked within 3 s.e.
    r = P.simulate_bleu(n=2000, delta=1.0, p_zero=P.BLEU_P_ZERO, b_zero=P.BLEU_B_ZERO,
                        n_simulations=500, n_permutations=1000)
    assert abs(r.power - 0.75) < 3 * r.power_se
    assert _within(r.power, r.power_se, _bleu_normal_power(2000, 1.0, 0.13, 25.8))
    assert r.type_s == 0.0
    assert 1.0 < r.type_m < 1.4
    # the generator is unbiased: mean simulated BLEU difference = Delta
    sd_d = math.sqrt(2000 * (0.87 * 2 * (25.8 / 2000) ** 2 / 4))
    assert abs(r.mean_effect - 1.0) < 4 * sd_d / math.sqrt(500)


def test_simulate_bleu_size_under_null_and_seed():
    # Delta = 0: rejection rate is alpha (randomization test is exact in expectation);
    # 2000 simulations -> s.e. 0.005
    r = P.simulate_bleu(n=300, delta=0.0, p_zero=0.2, b_zero=20.0, n_simulations=2000,
                        n_permutations=199)
    assert _within(r.power, math.sqrt(0.05 * 0.95 / 2000), 0.05)
    assert math.isnan(r.type_m)
    again = P.simulate_bleu(n=300, delta=0.0, p_zero=0.2, b_zero=20.0, n_simulations=2000,
                            n_permutations=199)
    assert (again.power, again.mean_effect, again.n_significant) == (
        r.power, r.mean_effect, r.n_significant)  # (NaN Type-M fields compare unequal)


def test_simulate_bleu_other_sizes_follow_normal_approximation():
    for n, delta in [(1000, 1.0), (3000, 0.7)]:
        r = P.simulate_bleu(n=n, delta=delta, p_zero=0.13, b_zero=25.8, n_simulations=400,
                            n_permutations=500)
        assert _within(r.power, r.power_se, _bleu_normal_power(n, delta, 0.13, 25.8))


# ============================================================ preferences and generic loop
def test_simulate_preference_matches_exact_sign_power():
    r = P.simulate_preference(n=100, p_a=0.6, n_simulations=20_000)
    assert _within(r.power, r.power_se, P.power_sign_test(n=100, p=0.6))
    t = P.simulate_preference(n=120, p_a=0.5, p_tie=0.2, n_simulations=20_000)
    assert t.true_effect == pytest.approx(0.125)  # 0.5 / 0.8 - 0.5
    with pytest.raises(PowerError, match=r"`p_a` \+ `p_tie` = 1\.1 must be <= 1"):
        P.simulate_preference(n=10, p_a=0.6, p_tie=0.5)


def test_generic_simulate_power_with_registered_t_test():
    # one generator + one registry test, vectorized over the block of simulations;
    # reference: exact noncentral-t power (statsmodels-equivalent, see analytic tests)
    def gen(rng, size, n):
        return rng.normal(0.4, 1.0, size=(size, n))

    r = P.simulate_power(gen, P.registry_test("t"), n=40, true_effect=0.4,
                         n_simulations=4000, seed=3)
    assert _within(r.power, r.power_se, P.power_paired_t(n=40, effect_size=0.4))
    assert r.type_m > 1  # significant estimates exaggerate


# ============================================================ Likert (section 5, app. H.3)
# Card et al.'s own simulations (lme4, ML, t > 1.96, 200 simulations each), file
# data/human_eval/highvar_lowmer_lmer.csv of github.com/dallascard/NLP-power-analysis:
# (preset, beta, items, workers, published power)
CARD_LIKERT = [
    ("high", 0.10, 100, 3, 0.555), ("high", 0.20, 100, 3, 0.885),
    ("high", 0.10, 100, 10, 0.795), ("high", 0.05, 50, 3, 0.235),
    ("low", 0.05, 50, 3, 0.455), ("low", 0.05, 100, 10, 0.835),
    ("low", 0.10, 50, 3, 0.94),
]


@pytest.mark.parametrize("preset,beta,items,workers,published", CARD_LIKERT)
def test_simulate_likert_reproduces_card_power(preset, beta, items, workers, published):
    r = P.simulate_likert(n_items=items, n_workers=workers, effect=beta, preset=preset,
                          n_simulations=2000)
    pub_se = math.sqrt(published * (1 - published) / 200)
    # Card et al. count significant positive effects only
    assert _within(r.power_correct_sign, r.power_correct_sign_se, published, k=3,
                   ref_se=pub_se)


def test_likert_closed_form_agrees_with_statsmodels_mixedlm():
    rng = np.random.default_rng(7)
    w_, i_ = 3, 15
    worker, item, xm = (a.ravel() for a in np.meshgrid(
        np.arange(w_), np.arange(i_), np.array([-1.0, 1.0]), indexing="ij"))
    v = P.LIKERT_PRESETS["high"]
    y = (0.5 + rng.normal(0, v.worker_intercept, w_)[worker]
         + rng.normal(0, v.item_intercept, i_)[item]
         + (0.1 + rng.normal(0, v.worker_slope, w_)[worker]
            + rng.normal(0, v.item_slope, i_)[item]) * xm + rng.normal(0, v.sigma, xm.size))
    beta_sm, p_sm = S._likert_fit(y, xm, worker, item)
    beta_ml, p_ml = S._likert_anova(y[None], w_, i_, "ml")
    _beta_re, p_re = S._likert_anova(y[None], w_, i_, "reml")
    assert beta_ml[0] == pytest.approx(beta_sm, abs=1e-6)  # balanced: GLS = grand mean
    z = [NormalDist().inv_cdf(1 - p / 2) for p in (p_sm, p_ml[0], p_re[0])]
    assert abs(z[1] - z[0]) / z[0] < 0.25  # ML-type standard error close to MixedLM's ML
    assert z[2] <= z[1]  # REML components are more conservative


def test_simulate_likert_mixedlm_runs_and_errors():
    r = P.simulate_likert(n_items=8, n_workers=2, effect=0.2, preset="low",
                          method="mixedlm", n_simulations=2)
    assert r.n_simulations == 2 and r.params["method"] == "mixedlm"
    with pytest.raises(PowerError, match=r"`preset` must be one of 'low', 'high'"):
        P.simulate_likert(n_items=10, n_workers=3, effect=0.1, preset="medium")


# ================================================================ errors
def test_simulation_parameter_errors():
    with pytest.raises(PowerError, match=r"`p_zero` must be < 1"):
        P.simulate_bleu(n=10, delta=1, p_zero=1.0, b_zero=5, n_simulations=10,
                        n_permutations=10)
    with pytest.raises(PowerError, match=r"`b_zero` must be > 0; got -1"):
        P.simulate_bleu(n=10, delta=1, p_zero=0.1, b_zero=-1, n_simulations=10,
                        n_permutations=10)
    with pytest.raises(PowerError, match=r"`n_permutations` must be an integer >= 1"):
        P.simulate_bleu(n=10, delta=1, p_zero=0.1, b_zero=5, n_simulations=10,
                        n_permutations=0)
    with pytest.raises(PowerError, match=r"`alpha` must be in \(0, 1\); got 1\.0"):
        P.simulate_mcnemar(n=100, delta=0.01, agreement=0.9, n_simulations=10, alpha=1.0)
    with pytest.raises(PowerError, match=r"`agreement` must be a probability in \[0, 1\]"):
        P.simulate_mcnemar(n=100, delta=0.01, agreement=1.2, n_simulations=10)
    with pytest.raises(PowerError, match=r"`n_simulations` must be an integer >= 2"):
        P.simulate_mcnemar(n=100, delta=0.01, agreement=0.9, n_simulations=1)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1])
def test_simulate_likert_refuses_a_standard_deviation_that_is_not_a_number(bad):
    # a NaN sd passed the `< 0` check and the study had power 0
    v = dataclasses.replace(P.LIKERT_PRESETS["high"], sigma=bad)
    with pytest.raises(PowerError, match=r"variance `sigma` must be a finite number >= 0"):
        P.simulate_likert(n_items=20, n_workers=3, effect=0.1, variance=v,
                          n_simulations=10)


def test_simulations_beyond_the_cost_limit_are_refused_before_any_work():
    # a request for 1e12 simulations reached 16 GiB before anything said no
    from multistat.errors import CostLimitError

    with pytest.raises(CostLimitError, match=r"1,000,000,000,000 simulations of the mcnemar "
                                             r"scenario would take about"):
        P.simulate_mcnemar(n=500, delta=0.02, agreement=0.9, n_simulations=10**12)
    with pytest.raises(CostLimitError, match="bleu scenario"):
        P.simulate_bleu(n=2000, delta=1, p_zero=0.13, b_zero=25.8, n_simulations=10**7,
                        n_permutations=10**4)
    # the limit can be lifted (here: a small study under a tiny explicit limit refused)
    gen = lambda rng, size, n: rng.normal(size=(size, n))  # noqa: E731
    test = lambda d, rng: (d.mean(1), np.full(len(d), 0.5))  # noqa: E731
    with pytest.raises(CostLimitError):
        P.simulate_power(gen, test, n=10, true_effect=0.0, n_simulations=100, max_cost=10)
    res = P.simulate_power(gen, test, n=10, true_effect=0.0, n_simulations=100,
                           max_cost=None)
    assert res.n_simulations == 100
