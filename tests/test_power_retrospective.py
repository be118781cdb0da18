"""Retrospective power curves (NLPStatTest manual Algorithms 3 and 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import multistat.power as P
from multistat.errors import PowerError
from multistat.significance._base import REGISTRY


def _data(n=100, shift=0.5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1.0, n), np.zeros(n)


def test_default_grid_is_the_manuals():
    # manual section 3.4: 100 units and 5 measurements -> 20, 40, 60, 80, 100
    assert P.default_sample_sizes(100, 5) == [20, 40, 60, 80, 100]
    x, y = _data()
    frame = P.power_curve(x, y, delta=0.3, method="normal", n_simulations=50)
    assert frame["n"].tolist() == [20, 40, 60, 80, 100]
    assert list(frame.columns) == ["n", "power", "power_se", "n_simulations", "method",
                                   "test", "delta", "alpha", "alternative", "seed"]


@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_normal_monte_carlo_t_matches_noncentral_t(alternative):
    # Algorithm 3 with the t test vs the exact power (TTestPower-equivalent), 4 MC s.e.
    frame = P.power_curve(delta=0.3, sd=1.2, method="normal", test="t",
                          sample_sizes=[10, 40, 120], n_simulations=4000,
                          alternative=alternative)
    for row in frame.itertuples():
        exact = P.power_paired_t(n=row.n, effect_size=0.3 / 1.2, alternative=alternative)
        assert abs(row.power - exact) <= 4 * math.sqrt(exact * (1 - exact) / 4000)


def test_bootstrap_shift_matters():
    # data with a real mean difference of ~0.5; hypothesised delta = 0:
    # shifted bootstrap (Algorithm 4) gives the size alpha, the unshifted one does not
    x, y = _data(shift=0.5)
    kw = {"delta": 0.0, "method": "bootstrap", "test": "t", "sample_sizes": [30, 60],
          "n_simulations": 3000}
    shifted = P.power_curve(x, y, **kw)
    unshifted = P.power_curve(x, y, shift=False, **kw)
    se = math.sqrt(0.05 * 0.95 / 3000)
    assert np.all(np.abs(shifted["power"] - 0.05) <= 4 * se + 0.01)  # + t on a bootstrap
    assert np.all(unshifted["power"] > 0.5)


def test_bootstrap_at_delta_close_to_normal_curve_for_normal_data():
    x, y = _data(n=400, shift=0.0, seed=1)
    kw = {"delta": 0.25, "test": "t", "sample_sizes": [25, 100], "n_simulations": 3000}
    boot = P.power_curve(x, y, method="bootstrap", **kw)
    norm = P.power_curve(x, y, method="normal", **kw)
    for b, m in zip(boot.itertuples(), norm.itertuples()):
        assert abs(b.power - m.power) <= 4 * math.hypot(b.power_se, m.power_se) + 0.02


@pytest.mark.parametrize("test", ["wilcoxon", "sign"])
def test_rank_tests_curves(test):
    assert test in REGISTRY
    x, y = _data(n=120, shift=0.4, seed=2)
    at_null = P.power_curve(x, y, delta=0.0, test=test, sample_sizes=[20, 60],
                            n_simulations=1500)
    se = math.sqrt(0.05 * 0.95 / 1500)
    assert np.all(at_null["power"] <= 0.05 + 4 * se)  # level kept (sign test: below)
    curve = P.power_curve(x, y, delta=0.4, test=test, sample_sizes=[20, 60, 120],
                          n_simulations=1500)
    assert np.all(np.diff(curve["power"]) > 0)
    norm = P.power_curve(delta=0.4, sd=1.0, method="normal", test="t",
                         sample_sizes=[120], n_simulations=1500)
    assert curve["power"].iloc[-1] <= norm["power"].iloc[0] + 4 * se + 0.02  # t is best


def test_resampling_registered_test_runs_vectorized():
    x, y = _data(n=60, shift=0.5)
    frame = P.power_curve(x, y, delta=0.5, test="permutation", sample_sizes=[30],
                          n_simulations=200, test_options={"n_resamples": 300, "seed": 1})
    t = P.power_curve(x, y, delta=0.5, test="t", sample_sizes=[30], n_simulations=200)
    assert abs(frame["power"].iloc[0] - t["power"].iloc[0]) < 0.15


def test_seeded_and_reproducible():
    x, y = _data()
    a = P.power_curve(x, y, delta=0.3, n_simulations=300, seed=0)
    b = P.power_curve(x, y, delta=0.3, n_simulations=300, seed=0)
    c = P.power_curve(x, y, delta=0.3, n_simulations=300, seed=5)
    assert a.equals(b)
    assert not a["power"].equals(c["power"])


def test_curve_errors():
    with pytest.raises(PowerError, match=r"method='bootstrap' needs the observed scores"):
        P.power_curve(delta=0.1, sample_sizes=[10])
    with pytest.raises(PowerError, match=r"method='normal' needs `sd` or data"):
        P.power_curve(delta=0.1, method="normal", sample_sizes=[10])
    with pytest.raises(PowerError, match=r"`sample_sizes` must be an integer >= 2; got 1"):
        P.power_curve(delta=0.1, sd=1, method="normal", sample_sizes=[1])
    with pytest.raises(PowerError, match=r"`method` must be one of 'bootstrap', 'normal'"):
        P.power_curve(delta=0.1, sd=1, method="mc", sample_sizes=[10])
    with pytest.raises(PowerError, match=r"contain NaN"):
        P.power_curve([1.0, np.nan, 2.0], delta=0.1)
    with pytest.raises(ValueError, match=r"unknown test 'ttest'"):
        P.power_curve(delta=0.1, sd=1, method="normal", sample_sizes=[10], test="ttest")


def test_power_simulation_skips_the_unused_interval_without_changing_p():
    """The simulation asks the Wilcoxon test for p-values only (its tied-data interval is
    an inversion scan); the p-values are the same as with the interval computed."""
    from multistat.power.retrospective import _p_value_only
    from multistat.significance.rank import wilcoxon

    assert _p_value_only(wilcoxon) == {"_interval": False}
    assert _p_value_only(REGISTRY["t"].func) == {}
    d = np.round(np.random.default_rng(0).normal(0.2, 1.0, size=(200, 40)), 1)  # ties
    full = wilcoxon(d, np.zeros_like(d))
    fast = wilcoxon(d, np.zeros_like(d), _interval=False)
    np.testing.assert_array_equal(fast.p_value, full.p_value)
