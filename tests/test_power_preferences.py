"""Power of head-to-head preferences with several raters per item (issue 26): the
extension of ``simulate_preference`` checked against the binomial scenario, its own
null, and its true effect."""

from __future__ import annotations

import math

import pytest
from conftest import run_cli as run

from multistat.errors import PowerParameterError
from multistat.power import simulate_preference


def mc(a, b, r):
    """3 Monte Carlo SE of a difference of two shares from r simulations each."""
    p = (a + b) / 2
    return 3 * math.sqrt(2 * p * (1 - p) / r) + 1e-9


def test_one_rater_without_effects_is_the_binomial_scenario():
    old = simulate_preference(n=80, p_a=0.6, p_tie=0.1, n_simulations=3000, seed=2)
    new = simulate_preference(n=80, p_a=0.6, p_tie=0.1, n_simulations=3000, seed=2,
                              n_raters=1, item_sd=0.0, rater_sd=0.0)
    assert new == old


def test_item_effects_with_one_rater_are_a_binomial_on_the_marginal():
    # one judgment per item: the item effect only changes P(a) to its mean over items
    r = simulate_preference(n=150, p_a=0.6, n_simulations=4000, item_sd=1.0, seed=1)
    ref = simulate_preference(n=150, p_a=0.5 + r.true_effect, n_simulations=4000, seed=3)
    assert abs(r.power - ref.power) < mc(r.power, ref.power, 4000)
    assert 0.5 + r.true_effect < 0.6  # random effects pull the marginal towards 1/2


def test_null_holds_alpha_and_raters_add_power():
    null = simulate_preference(n=60, p_a=0.45, p_tie=0.1, n_raters=3, item_sd=1.0,
                               n_simulations=3000, seed=4)
    assert null.true_effect == pytest.approx(0, abs=1e-12)
    assert null.power <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 3000)
    one = simulate_preference(n=60, p_a=0.6, n_raters=1, item_sd=0.5, n_simulations=2000)
    five = simulate_preference(n=60, p_a=0.6, n_raters=5, item_sd=0.5, n_simulations=2000)
    assert five.power > one.power + mc(five.power, one.power, 2000)
    # the observed effect (mean item share - 1/2) is unbiased for the true effect
    # (SD of one simulation's mean share about 0.04 at 60 items: MC SE 0.001)
    assert five.mean_effect == pytest.approx(five.true_effect, abs=0.004)
    assert five.true_effect == pytest.approx(one.true_effect)


def test_rater_leanings_make_the_population_null_liberal():
    r = simulate_preference(n=60, p_a=0.5, n_raters=3, rater_sd=0.8, n_simulations=2000)
    assert r.power > 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_raters": 0}, "n_raters"),
    ({"item_sd": -1.0}, r"`item_sd` must be >= 0"),
    ({"p_a": 0.9, "p_tie": 0.1, "item_sd": 0.5}, r"strictly between 0 and 1"),
])
def test_bad_parameters(kwargs, match):
    args = {"n": 50, "p_a": 0.6, **kwargs}
    with pytest.raises(PowerParameterError, match=match):
        simulate_preference(**args)


def test_cli(capsys):
    status, out, err = run(["power", "preference-sim", "--n", 40, "--p-a", 0.6,
                            "--raters", 3, "--item-sd", 0.5, "--n-simulations", 400],
                           capsys)
    assert status in (0, None), err
    assert "sign-flip test over items" in out
