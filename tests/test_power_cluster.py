"""Power, sample size and design effect of the clustered paired t test
(multistat.power.clustered), against statsmodels' t-test power on the group means and a
simulation of the test itself within Monte Carlo error."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from multistat.errors import PowerParameterError
from multistat.power import design_effect, mde_paired_t_cluster, power_paired_t_cluster
from multistat.significance import paired_t_cluster as t_cluster_test


def test_design_effect_equal_and_general():
    assert design_effect(0.3, 5) == pytest.approx(1 + 4 * 0.3, rel=1e-15)
    assert design_effect(0.0, 50) == 1.0 and design_effect(1.0, 7) == 7.0
    sizes = np.array([1, 3, 4, 8, 2, 6])
    # Eldridge et al. (2006): 1 + ((1 + CV^2) m_bar - 1) rho, CV with the population sd
    m_bar, cv = sizes.mean(), sizes.std() / sizes.mean()
    assert design_effect(0.2, sizes) == pytest.approx(1 + ((1 + cv**2) * m_bar - 1) * 0.2,
                                                      rel=1e-13)
    assert design_effect(0.25, [4] * 9) == pytest.approx(design_effect(0.25, 4), rel=1e-15)


@pytest.mark.parametrize("G,m,icc,d", [(40, 5, 0.3, 0.2), (12, 10, 0.05, 0.4),
                                       (200, 2, 0.8, 0.1)])
def test_power_is_the_t_test_on_group_means(G, m, icc, d):
    # reference: statsmodels' one-sample t power on G group means whose standardized
    # effect is d sqrt(m / DE) (Var of a group mean: sigma^2 DE / m)
    eff = d * math.sqrt(m / (1 + (m - 1) * icc))
    for alt, sm_alt in (("two-sided", "two-sided"), ("greater", "larger")):
        ref = TTestPower().power(effect_size=eff, nobs=G, alpha=0.05, alternative=sm_alt)
        got = power_paired_t_cluster(n_clusters=G, cluster_size=m, icc=icc, effect_size=d,
                               alternative=alt)
        assert got == pytest.approx(ref, rel=1e-9)


def test_solvers_round_trip():
    kw = {"cluster_size": 5, "icc": 0.3}
    G = power_paired_t_cluster(effect_size=0.2, power=0.8, **kw)
    assert power_paired_t_cluster(n_clusters=G, effect_size=0.2, **kw) == pytest.approx(0.8,
                                                                                  rel=1e-9)
    d = power_paired_t_cluster(n_clusters=40, power=0.8, **kw)
    assert power_paired_t_cluster(n_clusters=40, effect_size=d, **kw) == pytest.approx(0.8,
                                                                                 rel=1e-9)
    assert mde_paired_t_cluster(n_clusters=40, sd=2.0, **kw) == pytest.approx(2 * d,
                                                                              rel=1e-12)
    a = power_paired_t_cluster(n_clusters=40, effect_size=0.3, power=0.9, alpha=None, **kw)
    assert power_paired_t_cluster(n_clusters=40, effect_size=0.3, alpha=a, **kw) == \
        pytest.approx(0.9, rel=1e-9)
    # more correlation inside groups -> more groups needed
    assert power_paired_t_cluster(effect_size=0.2, power=0.8, cluster_size=5, icc=0.6) > G


def _simulated_power(sizes, icc, d, R, seed, alternative="two-sided"):
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes)
    g = np.repeat(np.arange(len(sizes)), sizes)
    diff = (rng.normal(0, math.sqrt(icc), (R, len(sizes)))[:, g]
            + rng.normal(0, math.sqrt(1 - icc), (R, len(g))) + d)
    p = t_cluster_test(diff, np.zeros_like(diff), groups=g, alternative=alternative).p_value
    return float(np.mean(p <= 0.05))


@pytest.mark.parametrize("sizes,icc,d,alternative", [
    ([5] * 20, 0.3, 0.3, "two-sided"),
    ([5] * 20, 0.3, 0.25, "greater"),
    # unequal groups: the design effect's general form (an approximation)
    (np.tile([1, 2, 4, 6, 9, 2], 6), 0.25, 0.2, "two-sided"),
])
def test_power_matches_a_simulation_of_the_test(sizes, icc, d, alternative):
    R = 4000
    sim = _simulated_power(sizes, icc, d, R, seed=len(sizes), alternative=alternative)
    sizes = np.asarray(sizes)
    if np.all(sizes == sizes[0]):
        got = power_paired_t_cluster(n_clusters=len(sizes), cluster_size=int(sizes[0]), icc=icc,
                               effect_size=d, alternative=alternative)
    else:
        got = power_paired_t_cluster(cluster_size=sizes, icc=icc, effect_size=d,
                               alternative=alternative)
    se = math.sqrt(got * (1 - got) / R)
    assert abs(sim - got) < 4 * se, (sim, got, se)


def test_errors_name_the_parameter():
    with pytest.raises(PowerParameterError, match=r"`icc` must be in \[0, 1\]"):
        design_effect(1.5, 4)
    with pytest.raises(PowerParameterError, match=r"`cluster_size` must be >= 1; got 0.5"):
        design_effect(0.1, 0.5)
    # singleton groups: no design effect, the t test on n instances
    assert power_paired_t_cluster(n_clusters=30, cluster_size=1, icc=0.7, effect_size=0.5) == \
        pytest.approx(TTestPower().power(effect_size=0.5, nobs=30, alpha=0.05), rel=1e-9)
    with pytest.raises(PowerParameterError, match="every group size must be a finite"):
        design_effect(0.1, [3, 0])
    with pytest.raises(PowerParameterError, match="disagrees with the 3 group sizes"):
        power_paired_t_cluster(n_clusters=4, cluster_size=[2, 3, 4], icc=0.1, effect_size=0.3)
    with pytest.raises(PowerParameterError, match="number of groups is fixed"):
        power_paired_t_cluster(cluster_size=[2, 3, 4], icc=0.1, effect_size=0.3, power=0.8)
    with pytest.raises(PowerParameterError, match=r"`n_clusters` must be >= 2 \(the test"):
        power_paired_t_cluster(n_clusters=1, cluster_size=3, icc=0.1, effect_size=0.3)
    assert 0.05 < power_paired_t_cluster(n_clusters=2, cluster_size=3, icc=0.1,
                                   effect_size=0.3) < 1
    with pytest.raises(PowerParameterError, match="exactly one of"):
        power_paired_t_cluster(n_clusters=5, cluster_size=3, icc=0.1, effect_size=0.3, power=0.8)


def test_cli_solves_the_number_of_groups(capsys):
    import json

    from conftest import run_cli

    status, out, err = run_cli(["power", "t-cluster", "--cluster-size", "5", "--icc", "0.3",
                                "--effect-size", "0.2", "--power", "0.8", "--json"], capsys)
    assert status == 0, err
    got = json.loads(out)
    want = power_paired_t_cluster(cluster_size=5, icc=0.3, effect_size=0.2, power=0.8)
    assert got["solved"] == "n_clusters" and got["n_clusters"] == pytest.approx(want,
                                                                               rel=1e-12)
    assert got["n_clusters_ceil"] == math.ceil(want) and got["design_effect"] == 2.2
    status, _, err = run_cli(["power", "t-cluster", "--icc", "2", "--n-clusters", "10",
                              "--effect-size", "0.3"], capsys)
    assert status == 2 and err.count("\n") == 1 and "`--icc` must be in [0, 1]" in err
