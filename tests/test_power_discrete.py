"""Sample sizes of the exact discrete tests (issue 13.6): smallest n and stays-above n,
checked against a plain linear scan of the exact power and against scipy's binomtest."""

import json
import pickle

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import multistat.power as P
from multistat.cli import app
from multistat.errors import InfeasibleError
from multistat.power import _discrete


def _scan(power_of_n, target, n_max):
    """Linear scan over 1..n_max: (first n reaching target, 1 + last n below target)."""
    pw = np.array([power_of_n(n) for n in range(1, n_max + 1)])
    ok = pw >= target
    below = np.nonzero(~ok)[0]
    return int(np.argmax(ok)) + 1, int(below[-1]) + 2


def test_sign_issue_example_against_binomtest():
    # issue 13: 0.814 at 208, 0.798 at 209, 0.8037 at 199 -- recomputed here from scipy's
    # binomtest rejection region, independently of multistat's critical values
    def ref(n, p=0.6):
        return sum(stats.binom.pmf(k, n, p) for k in range(n + 1)
                   if stats.binomtest(k, n, 0.5).pvalue <= 0.05)

    def ref_fast(n, p=0.6):  # binomtest's two-sided p for p0 = 1/2, vectorized over k
        k = np.arange(n + 1)
        pv = np.minimum(1, 2 * np.minimum(stats.binom.cdf(k, n, 0.5),
                                          stats.binom.sf(k - 1, n, 0.5)))
        return stats.binom.pmf(k, n, p)[pv <= 0.05].sum()
    assert ref(199) == pytest.approx(0.8037, abs=1e-4) == ref_fast(199)
    assert ref(209) == pytest.approx(ref_fast(209)) and ref(209) < 0.8
    assert ref_fast(208) == pytest.approx(0.8140, abs=1e-3) and ref_fast(210) >= 0.8
    r = P.power_sign_test(p=0.6, power=0.8)
    assert r == 199 and r.smallest == 199 and r.stays_above == 210
    assert all(ref_fast(n) < 0.8 for n in range(1, 199))
    assert all(ref_fast(n) >= 0.8 for n in range(210, 2000))
    assert r.power_smallest == pytest.approx(ref_fast(199), abs=1e-12)


@pytest.mark.parametrize("p,target,alternative", [
    (0.6, 0.8, "two-sided"), (0.7, 0.9, "two-sided"), (0.35, 0.8, "two-sided"),
    (0.62, 0.85, "greater"), (0.4, 0.8, "less"), (0.75, 0.5, "two-sided"),
])
def test_sign_solver_equals_linear_scan(p, target, alternative):
    r = P.power_sign_test(p=p, power=target, alternative=alternative)
    # scan far beyond the proven bound N: nothing below the target may appear there
    n_max = 3 * r.bound_n
    first, stays = _scan(lambda n: P.power_sign_test(n=n, p=p, alternative=alternative), target,
                         n_max)
    assert (r.smallest, r.stays_above) == (first, stays)
    assert r.smallest <= r.stays_above <= r.bound_n


def test_hoeffding_bound_is_below_exact_power_and_monotone():
    ks = np.arange(1, 3000)
    for q, alt in [(0.6, "two-sided"), (0.55, "greater"), (0.3, "less"), (0.45, "two-sided")]:
        low = _discrete.hoeffding_bound(ks, q, 0.05, alt)
        exact = _discrete.sign_power(ks, q, 0.05, alt)
        assert np.all(low <= exact + 1e-12)
        assert np.all(np.diff(low) >= -1e-15)
        assert low.max() > 0.5  # the bound is not vacuous over this range


@pytest.mark.parametrize("delta,agreement,target", [
    (0.2, 0.0, 0.8),    # every item discordant: the sign test itself, saw-tooth
    (0.15, 0.5, 0.8),
    (0.1, 0.7, 0.9),
    (-0.12, 0.6, 0.8),
])
def test_mcnemar_exact_solver_equals_linear_scan(delta, agreement, target):
    r = P.power_mcnemar(delta=delta, agreement=agreement, power=target, method="exact")
    n_max = r.bound_n + 200
    first, stays = _scan(lambda n: P.power_mcnemar(n=n, delta=delta, agreement=agreement,
                                             method="exact"), target, n_max)
    assert (r.smallest, r.stays_above) == (first, stays)
    assert P.power_mcnemar(n=r.smallest, delta=delta, agreement=agreement,
                     method="exact") == pytest.approx(r.power_smallest, abs=1e-10)


def test_mcnemar_all_discordant_equals_sign_test():
    r = P.power_mcnemar(delta=0.2, agreement=0.0, power=0.8, method="exact")
    s = P.power_sign_test(p=0.6, power=0.8)
    assert (r.smallest, r.stays_above) == (s.smallest, s.stays_above) == (199, 210)


def test_readme_mcnemar_example_unchanged():
    r = P.power_mcnemar(delta=0.02, agreement=0.9, power=0.8, method="exact")
    assert (r.smallest, r.stays_above) == (2043, 2043)


def test_result_is_a_float_and_pickles():
    r = P.power_sign_test(p=0.6, power=0.8)
    assert isinstance(r, float) and float(r) == 199.0 and r + 1 == 200.0
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.stays_above == 210 and "210" in repr(r2)
    assert r.to_dict()["n_stays_above"] == 210


def test_wrong_direction_is_infeasible():
    with pytest.raises(InfeasibleError, match="scan horizon"):
        P.power_sign_test(p=0.4, power=0.8, alternative="greater")
    with pytest.raises(InfeasibleError, match="scan horizon"):
        P.power_mcnemar(delta=-0.05, agreement=0.8, power=0.8, method="exact",
                  alternative="greater")


def test_cli_reports_both_sizes():
    runner = CliRunner()
    res = runner.invoke(app, ["power", "sign", "--p", "0.6", "--power", "0.8", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n"] == 199 and out["n_stays_above"] == 210 and out["n_ceil"] == 199
    res = runner.invoke(app, ["power", "sign", "--p", "0.6", "--power", "0.8"])
    assert "n_stays_above" in res.output and "210" in res.output
