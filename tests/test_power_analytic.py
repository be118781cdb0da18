"""Analytic power solvers, MDEs and their errors (multistat.power.analytic)."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.power import NormalIndPower, TTestPower
from statsmodels.stats.proportion import proportion_effectsize

import multistat.power as P
from multistat.errors import InfeasibleError, ParameterError, PowerError

SM_ALT = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}


# ================================================================ paired t vs statsmodels
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_paired_t_power_matches_statsmodels(alternative):
    # reference: statsmodels TTestPower (exact noncentral t, df = n - 1)
    sign = -1 if alternative == "less" else 1
    for n, d, a in itertools.product([5, 12.5, 40, 300], [0.1, 0.35, 0.8], [0.01, 0.05, 0.2]):
        ours = P.power_paired_t(n=n, effect_size=sign * d, alpha=a, alternative=alternative)
        ref = TTestPower().power(sign * d, n, a, alternative=SM_ALT[alternative])
        assert np.isfinite(ours) and 0 <= ours <= 1
        if np.isfinite(ref):  # statsmodels/scipy give NaN far in the noncentral-t tail
            assert abs(ours - ref) < 1e-8
        else:
            assert ours == pytest.approx(1.0, abs=1e-12)  # n = 300, d = 0.8: certain


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_paired_t_solvers_match_statsmodels(alternative):
    sign = -1 if alternative == "less" else 1
    tp = TTestPower()
    for d, target in [(0.2, 0.8), (0.5, 0.9), (1.0, 0.7)]:
        n = P.power_paired_t(effect_size=sign * d, power=target, alternative=alternative)
        ref_n = tp.solve_power(sign * d, None, 0.05, target, alternative=SM_ALT[alternative])
        # statsmodels' own root finder stops near 1e-7 relative; the power at our n is
        # the target to 1e-8 by statsmodels' power function
        assert n == pytest.approx(ref_n, rel=1e-6)
        assert abs(tp.power(sign * d, n, 0.05, alternative=SM_ALT[alternative]) - target) < 1e-8
        es = P.power_paired_t(n=n, power=target, alternative=alternative)
        assert es == pytest.approx(sign * d, abs=1e-8)
    # alpha solved back
    a = P.power_paired_t(n=30, effect_size=0.5, power=0.8, alpha=None, alternative=alternative
                   ) if alternative != "less" else P.power_paired_t(
        n=30, effect_size=-0.5, power=0.8, alpha=None, alternative=alternative)
    assert abs(tp.power(sign * 0.5, 30, a, alternative=SM_ALT[alternative]) - 0.8) < 1e-8


def test_mde_paired_t_is_the_effect_size_solution_times_sd():
    d = P.power_paired_t(n=200, power=0.8)
    assert P.mde_paired_t(n=200) == d
    assert P.mde_paired_t(n=200, sd=4.0) == pytest.approx(4.0 * d, rel=1e-15)
    # manual Figure 1 reports integers: ceil of the solved n
    n = P.power_paired_t(effect_size=d, power=0.8)
    assert math.ceil(n - 1e-6) == 200


# ================================================================ two proportions
def _r_power_prop(n, p1, p2, alpha, strict=False):
    """Independent transcription of R's power.prop.test (two-sided) with NormalDist."""
    nd = NormalDist()
    q1, q2 = 1 - p1, 1 - p2
    qu = nd.inv_cdf(1 - alpha / 2)
    num = math.sqrt(n) * abs(p1 - p2)
    s0 = math.sqrt((p1 + p2) * (q1 + q2) / 2)
    s1 = math.sqrt(p1 * q1 + p2 * q2)
    pw = nd.cdf((num - qu * s0) / s1)
    if strict:
        pw += 1 - nd.cdf((num + qu * s0) / s1)
    return pw


def test_two_proportions_matches_r_formula():
    for n, p1, p2, a in itertools.product([20, 147, 1000], [0.3, 0.7, 0.945],
                                          [0.5, 0.8, 0.99], [0.01, 0.05]):
        if p1 == p2:
            continue
        assert abs(P.power_two_proportions(n=n, p1=p1, p2=p2, alpha=a) -
                   _r_power_prop(n, p1, p2, a)) < 1e-8
        assert abs(P.power_two_proportions(n=n, p1=p1, p2=p2, alpha=a, strict=True) -
                   _r_power_prop(n, p1, p2, a, strict=True)) < 1e-8


def test_two_proportions_r_help_examples():
    # reference values printed in R's ?power.prop.test examples
    assert P.power_two_proportions(n=50, p1=0.5, p2=0.75) == pytest.approx(0.740, abs=5e-4)
    assert P.power_two_proportions(p1=0.5, p2=0.75, power=0.9) == pytest.approx(76.7, abs=0.05)
    assert P.power_two_proportions(n=50, p1=0.5, power=0.9) == pytest.approx(0.8026, abs=5e-5)
    a = P.power_two_proportions(n=50, p1=0.5, p2=0.9, power=0.9, alpha=None)
    assert abs(_r_power_prop(50, 0.5, 0.9, a) - 0.9) < 1e-10


def test_two_proportions_solvers_invert_power():
    n = P.power_two_proportions(p1=0.8, p2=0.85, power=0.8)
    assert abs(_r_power_prop(n, 0.8, 0.85, 0.05) - 0.8) < 1e-9
    p1 = P.power_two_proportions(n=500, p2=0.9, power=0.8)
    assert p1 < 0.9 and abs(_r_power_prop(500, p1, 0.9, 0.05) - 0.8) < 1e-9
    p2 = P.power_two_proportions(n=500, p1=0.9, power=0.8, alternative="less")
    assert p2 < 0.9


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_two_proportions_arcsine_matches_normal_ind_power(alternative):
    # reference: statsmodels NormalIndPower with Cohen's h (proportion_effectsize(p2, p1))
    for n, p1, p2 in [(100, 0.5, 0.6), (30, 0.2, 0.45), (1000, 0.9, 0.92)]:
        if alternative == "less":
            p1, p2 = p2, p1
        h = proportion_effectsize(p2, p1)
        ref = NormalIndPower().power(h, n, 0.05, ratio=1, alternative=SM_ALT[alternative])
        ours = P.power_two_proportions(n=n, p1=p1, p2=p2, method="arcsine", alternative=alternative)
        assert abs(ours - ref) < 1e-8
        n_ours = P.power_two_proportions(p1=p1, p2=p2, power=0.8, method="arcsine",
                                   alternative=alternative)
        n_ref = NormalIndPower().solve_power(h, None, 0.05, 0.8, ratio=1,
                                             alternative=SM_ALT[alternative])
        assert n_ours == pytest.approx(n_ref, rel=1e-6)


# Card et al. (2020) Table 9, column "MDE Binomial" (power.prop.test, power 0.8, alpha 0.05,
# p1 = SOTA accuracy, n = test-set size): (dataset, n, SOTA, published MDE in %)
TABLE9_BINOMIAL = [
    ("WNLI", 147, 0.945, 5.38), ("MRPC", 1725, 0.920, 2.40), ("SST-2", 1821, 0.972, 1.34),
    ("RTE", 3000, 0.917, 1.89), ("QNLI", 5463, 0.975, 0.77), ("MNLI-m", 9796, 0.916, 1.08),
    ("MNLI-mm", 9847, 0.913, 1.09), ("QQP", 390965, 0.910, 0.18),
    ("SQuAD 2.0", 8862, 0.90724, 1.18),
]


@pytest.mark.parametrize("name,n,sota,published", TABLE9_BINOMIAL)
def test_card_table9_binomial_mde(name, n, sota, published):
    mde = (P.power_two_proportions(n=n, p1=sota, power=0.8) - sota) * 100
    assert abs(mde - published) <= 0.005 + 1e-3, name  # published to 2 decimals


# ================================================================ McNemar
def _mess_normal(n, paid, psi, alpha=0.05):
    """R MESS power_mcnemar_test(method="normal") transcribed (two-sided)."""
    nd = NormalDist()
    z = nd.inv_cdf(1 - alpha / 2)
    return nd.cdf((math.sqrt(n * paid) * (psi - 1) - z * math.sqrt(psi + 1))
                  / math.sqrt((psi + 1) - paid * (psi - 1) ** 2))


def test_mcnemar_normal_is_mess_formula_in_both_parameterisations():
    for n, paid, psi in itertools.product([100, 1725, 9796], [0.01, 0.05, 0.2], [1.5, 2, 4]):
        if paid * (1 + psi) >= 1:
            continue
        ref = _mess_normal(n, paid, psi)
        assert abs(P.power_mcnemar_discordant(n=n, paid=paid, psi=psi) - ref) < 1e-12
        delta, agreement = paid * (psi - 1), 1 - paid * (1 + psi)
        assert abs(P.power_mcnemar(n=n, delta=delta, agreement=agreement) - ref) < 1e-12
    # solving back each parameter
    n = P.power_mcnemar_discordant(paid=0.1, psi=2, power=0.8)
    assert abs(_mess_normal(n, 0.1, 2) - 0.8) < 1e-10
    assert P.power_mcnemar_discordant(n=n, psi=2, power=0.8) == pytest.approx(0.1, abs=1e-9)
    assert P.power_mcnemar_discordant(n=n, paid=0.1, power=0.8) == pytest.approx(2.0, abs=1e-8)
    d = P.power_mcnemar(n=2000, agreement=0.9, power=0.8)
    assert abs(P.power_mcnemar(n=2000, delta=d, agreement=0.9) - 0.8) < 1e-10
    pa = P.power_mcnemar(n=2000, delta=0.02, power=0.8)
    assert abs(P.power_mcnemar(n=2000, delta=0.02, agreement=pa) - 0.8) < 1e-10


def _brute_mcnemar(n, delta, agreement, alpha=0.05):
    """Enumerate every (B, C) table; p-values from statsmodels mcnemar(exact=True)."""
    disc = 1 - agreement
    p01, p10 = (disc + delta) / 2, (disc - delta) / 2
    p_sig = p_wrong = m_abs = 0.0
    for b in range(n + 1):
        for c_ in range(n + 1 - b):
            pr = stats.multinomial.pmf([b, c_, n - b - c_], n, [p01, p10, agreement])
            pv = sm_mcnemar([[0, b], [c_, 0]], exact=True).pvalue
            if pv <= alpha:
                eff = (b - c_) / n
                p_sig += pr
                p_wrong += pr * (np.sign(eff) != np.sign(delta))
                m_abs += pr * abs(eff)
    return p_sig, m_abs / p_sig / abs(delta), p_wrong / p_sig


def test_mcnemar_exact_power_and_errors_by_enumeration():
    n, delta, agreement = 40, 0.1, 0.7
    p_sig, type_m, type_s = _brute_mcnemar(n, delta, agreement)
    assert P.power_mcnemar(n=n, delta=delta, agreement=agreement, method="exact") == pytest.approx(
        p_sig, abs=1e-10)
    ex = P.mcnemar_exact_errors(n=n, delta=delta, agreement=agreement)
    assert ex.power == pytest.approx(p_sig, abs=1e-10)
    assert ex.type_m == pytest.approx(type_m, abs=1e-9)
    assert ex.type_s == pytest.approx(type_s, abs=1e-9)


def test_mcnemar_exact_n_is_first_crossing():
    n = P.power_mcnemar(delta=0.02, agreement=0.9, power=0.8, method="exact")
    assert n == int(n)
    assert P.power_mcnemar(n=n, delta=0.02, agreement=0.9, method="exact") >= 0.8
    assert P.power_mcnemar(n=n - 1, delta=0.02, agreement=0.9, method="exact") < 0.8


def test_sign_test_exact_power_matches_binomtest_enumeration():
    for n, p in [(25, 0.7), (60, 0.4), (13, 0.9)]:
        ref = sum(stats.binom.pmf(k, n, p) for k in range(n + 1)
                  if stats.binomtest(k, n, 0.5).pvalue <= 0.05)
        assert P.power_sign_test(n=n, p=p) == pytest.approx(ref, abs=1e-12)
        ref_g = sum(stats.binom.pmf(k, n, p) for k in range(n + 1)
                    if stats.binomtest(k, n, 0.5, alternative="greater").pvalue <= 0.05)
        assert P.power_sign_test(n=n, p=p, alternative="greater") == pytest.approx(ref_g, abs=1e-12)
    n = P.power_sign_test(p=0.6, power=0.8)
    assert P.power_sign_test(n=n, p=0.6) >= 0.8 > P.power_sign_test(n=n - 1, p=0.6)


# ====================================================== Card et al. Table 2 (McNemar MDE)
# Card et al. (2020) Table 2 "Est. MDE (%)": MESS normal power, 80 %, alpha 0.05, agreement
# from the GLUE regression (Table 5) or the SQuAD 2.0 regression (Table 6) at baseline =
# SOTA and delta = the MDE itself. Reproduced rows (published to 2 decimals):
TABLE2 = [
    ("MRPC", 1725, 0.920, 1.62, P.GLUE_AGREEMENT_MODEL),
    ("RTE", 3000, 0.917, 1.23, P.GLUE_AGREEMENT_MODEL),
    ("QNLI", 5463, 0.975, 0.55, P.GLUE_AGREEMENT_MODEL),
    ("MNLI-m", 9796, 0.916, 0.67, P.GLUE_AGREEMENT_MODEL),
    ("MNLI-mm", 9847, 0.913, 0.68, P.GLUE_AGREEMENT_MODEL),
    ("QQP", 390965, 0.910, 0.11, P.GLUE_AGREEMENT_MODEL),
    ("SQuAD 2.0", 8862, 0.90724, 0.56, P.SQUAD_AGREEMENT_MODEL),
]
# Not reproduced: SST-2 (published 1.02; with the listed SOTA 97.2 % this formula gives
# 1.04 -- 1.02 corresponds to a baseline of about 97.33 %, so the table's SOTA or size
# probably differs from what the MDE was computed with) and WNLI (published 5.26; with 147
# items no improvement that keeps the 2x2 table valid reaches 80 % under the normal
# approximation, nor under MESS's exact variants -- see the infeasibility test).


@pytest.mark.parametrize("name,n,sota,published,model", TABLE2)
def test_card_table2_mcnemar_mde(name, n, sota, published, model):
    mde = P.mde_accuracy(n=n, baseline=sota, agreement_model=model) * 100
    assert abs(mde - published) <= 0.005 + 1e-3, (name, mde)


def test_card_table2_wnli_is_infeasible_with_normal_approximation():
    with pytest.raises(InfeasibleError, match=r"no accuracy improvement within the feasible "
                                              r"range \(0, 0\.0505\d*\] reaches power = 0\.8"):
        P.mde_accuracy(n=147, baseline=0.945, agreement_model=P.GLUE_AGREEMENT_MODEL)


def test_mde_with_fixed_agreement_equals_mcnemar_delta_solution():
    assert P.mde_accuracy(n=2000, agreement=0.9) == pytest.approx(
        P.power_mcnemar(n=2000, agreement=0.9, power=0.8), abs=1e-10)
    lin = P.LinearAgreementModel(0.9, 0.0, 0.0)  # a constant "model"
    assert P.mde_accuracy(n=2000, baseline=0.8, agreement_model=lin) == pytest.approx(
        P.power_mcnemar(n=2000, agreement=0.9, power=0.8), abs=1e-10)
    mde_exact = P.mde_accuracy(n=500, agreement=0.9, method="exact")
    assert P.power_mcnemar(n=500, delta=mde_exact, agreement=0.9, method="exact") >= 0.8 - 1e-9


def test_card_appendix_c_exact_enumeration():
    # Card et al. appendix C: delta 0.02, P_a 0.9 -- n = 500 badly underpowered with
    # Type-M about 1.9; n = 2000 nearly 80 % power with Type-M about 1.1
    small = P.mcnemar_exact_errors(n=500, delta=0.02, agreement=0.9)
    assert small.power < 0.3
    assert small.type_m == pytest.approx(1.9, abs=0.05)
    big = P.mcnemar_exact_errors(n=2000, delta=0.02, agreement=0.9)
    assert 0.75 < big.power < 0.80
    assert big.type_m == pytest.approx(1.1, abs=0.05)


# ================================================================ errors
def test_exactly_one_unknown():
    with pytest.raises(PowerError, match=r"exactly one of `n`, `effect_size`, `power`, "
                                         r"`alpha` must be None .* got 0 left None: none"):
        P.power_paired_t(n=10, effect_size=0.5, power=0.8)
    with pytest.raises(ParameterError, match=r"got 2 left None: `n`, `power`"):
        P.power_paired_t(effect_size=0.5)
    with pytest.raises(PowerError, match=r"exactly one of `n`, `delta`, `agreement`"):
        P.power_mcnemar(n=10, delta=0.1)
    with pytest.raises(PowerError, match=r"exactly one of `n`, `p1`, `p2`"):
        P.power_two_proportions(n=10, power=0.8)


def test_probability_and_agreement_ranges():
    with pytest.raises(PowerError, match=r"`p1` must be a probability in \[0, 1\]; got 1\.2"):
        P.power_two_proportions(n=10, p1=1.2, p2=0.5)
    with pytest.raises(PowerError, match=r"`agreement` must be a probability in \[0, 1\]; "
                                         r"got -0\.1"):
        P.power_mcnemar(n=10, delta=0.0, agreement=-0.1)
    with pytest.raises(PowerError, match=r"`p` must be a probability in \[0, 1\]; got 2"):
        P.power_sign_test(n=10, p=2)
    with pytest.raises(PowerError, match=r"`baseline` must be a probability"):
        P.mde_accuracy(n=10, baseline=1.5, agreement_model=P.GLUE_AGREEMENT_MODEL)


def test_delta_larger_than_discordant_share():
    with pytest.raises(PowerError, match=r"`delta` = 0\.2: an accuracy difference cannot "
                                         r"exceed the discordant share 1 - agreement = 0\.1"):
        P.power_mcnemar(n=100, delta=0.2, agreement=0.9)
    with pytest.raises(PowerError, match=r"cannot exceed the discordant share"):
        P.simulate_mcnemar(n=100, delta=-0.3, agreement=0.8, n_simulations=10)


@pytest.mark.parametrize("name,value", [("alpha", 0.0), ("alpha", 1.5), ("power", 1.0),
                                        ("power", -0.2)])
def test_alpha_and_power_in_open_unit_interval(name, value):
    kw = {"n": 50, "effect_size": 0.5, "alpha": 0.05, "power": None}
    kw[name] = value
    if name == "power":
        kw["n"] = None
    with pytest.raises(PowerError, match=rf"`{name}` must be in \(0, 1\); got {value!r}"):
        P.power_paired_t(**kw)


def test_infeasible_effect_says_the_range():
    with pytest.raises(InfeasibleError, match=r"no accuracy difference within the feasible "
                                              r"range \(0, 1 - agreement\] = \(0, 0\.1\] "
                                              r"reaches power = 0\.99"):
        P.power_mcnemar(n=50, agreement=0.9, power=0.99)
    with pytest.raises(InfeasibleError, match=r"no p2 within the feasible range "
                                              r"\(0\.99, 1\) reaches power = 0\.9"):
        P.power_two_proportions(n=20, p1=0.99, power=0.9)
    with pytest.raises(PowerError, match=r"`power` = 0\.02 must exceed the rejection rate"):
        P.power_paired_t(n=20, power=0.02)


def test_other_parameter_errors():
    with pytest.raises(PowerError, match=r"`psi` \(odds ratio larger/smaller discordant "
                                         r"probability\) must be >= 1"):
        P.power_mcnemar_discordant(n=10, paid=0.1, psi=0.5)
    with pytest.raises(PowerError, match=r"discordant probabilities cannot sum to more"):
        P.power_mcnemar_discordant(n=10, paid=0.4, psi=2)
    with pytest.raises(PowerError, match=r"`method` must be one of 'normal', 'exact'"):
        P.power_mcnemar(n=10, delta=0.0, agreement=0.9, method="chi2")
    with pytest.raises(PowerError, match=r"`alternative` must be one of"):
        P.power_paired_t(n=10, effect_size=0.3, alternative="bigger")
    with pytest.raises(TypeError, match=r"`n` must be an integer; got 10\.5"):
        P.power_mcnemar(n=10.5, delta=0.0, agreement=0.9, method="exact")
    with pytest.raises(PowerError, match=r"give exactly one of `agreement` .* and "
                                         r"`agreement_model`"):
        P.mde_accuracy(n=100)
    with pytest.raises(PowerError, match=r"`baseline` accuracy is required"):
        P.mde_accuracy(n=100, agreement_model=P.GLUE_AGREEMENT_MODEL)


def test_card_accuracy_notebook_outputs_by_exact_enumeration():
    # printed outputs of notebooks_for_power_calculations/accuracy.ipynb in
    # github.com/dallascard/NLP-power-analysis (10,000 simulations each; their "power"
    # counts significant results of the true sign = our power_correct_sign):
    # P_a = 0.975, delta = 0.02, n = 500 -> power 0.800, Type-M 1.118, Type-S 0.000
    ex = P.mcnemar_exact_errors(n=500, delta=0.02, agreement=0.975)
    se = math.sqrt(0.8 * 0.2 / 10_000)
    assert abs(ex.power_correct_sign - 0.800) < 4 * se
    assert abs(ex.type_m - 1.118) < 0.01
    # minimal agreement for accuracies 0.70 / 0.72 (P_a = 0.42), n = 1000
    # -> power 0.119, Type-M 3.004, Type-S 0.022 (about 1,200 significant simulations)
    ex = P.mcnemar_exact_errors(n=1000, delta=0.02, agreement=0.42)
    assert abs(ex.power_correct_sign - 0.119) < 4 * math.sqrt(0.119 * 0.881 / 10_000)
    assert abs(ex.type_m - 3.004) < 0.06
    assert abs(ex.type_s - 0.022) < 4 * math.sqrt(0.022 * 0.978 / 1200)
    # appendix C: with delta = 0.04, or with P_a = 0.975, 500 items would have the power
    assert P.mcnemar_exact_errors(n=500, delta=0.04, agreement=0.9).power > 0.75


@pytest.mark.parametrize("old", ["paired_t", "two_proportions", "mcnemar",
                                 "mcnemar_discordant", "sign_test"])
def test_power_names_before_0_2_still_work_and_warn(old):
    # power_* names the power functions; the old ones were easy to confuse with the
    # tests of the same name in multistat.significance
    new = getattr(P, f"power_{old}")
    kwargs = {"paired_t": dict(n=30, effect_size=0.5),
              "two_proportions": dict(n=500, p1=0.5, p2=0.6),
              "mcnemar": dict(n=500, delta=0.05, agreement=0.8),
              "mcnemar_discordant": dict(n=500, paid=0.2, psi=2.0),
              "sign_test": dict(n=60, p=0.65)}[old]
    with pytest.warns(DeprecationWarning, match=f"power_{old}"):
        value = getattr(P, old)(**kwargs)
    assert value == new(**kwargs)
    with pytest.raises(AttributeError, match="no_such"):
        P.no_such  # noqa: B018
