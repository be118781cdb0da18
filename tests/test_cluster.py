"""compare(..., cluster="group"): the cluster bootstrap and permutation (multistat._cluster),
and what compare does with runs (n_runs, the "aso" test)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from test_units_group import mqm_ted_dataset

import multistat
from multistat import cube
from multistat._cluster import Clustered, group_codes
from multistat.errors import DataValidationError, ParameterError

KW = {"effect_sizes": False, "n_resamples": 1000, "correction": "none"}


def clustered_study(rho, seed, n_groups=20, size=10, shift=0.0):
    """Two systems; the difference a - b has a group effect of variance rho and an
    instance effect of variance 1 - rho (intra-group correlation rho)."""
    r = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), size)
    n = len(g)
    d = r.normal(0, np.sqrt(rho), n_groups)[g] + r.normal(0, np.sqrt(1 - rho), n) + shift
    b = r.normal(size=n)
    ds = cube.make_dataset("d", np.stack([b + d, b])[:, None, :], systems=["a", "b"],
                           metrics=["m"], instances=[f"i{k:04d}" for k in range(n)])
    return cube.make_study([ds.assign_coords(group=("instance",
                                                    [f"doc{k:03d}" for k in g]))])


def test_expansion_by_hand():
    # 5 instances in groups x x y z z (codes 0 0 1 2 2); group plan rows (counts of x,y,z)
    codes = group_codes(["x", "x", "y", "z", "z"])
    assert codes.tolist() == [0, 0, 1, 2, 2]
    boot = Clustered(lambda p, d: p, codes, "bootstrap")
    # row (2, 1, 0): x twice, y once -> instance counts 2 2 1 0 0 (sum 5 = n, unchanged)
    # row (0, 0, 3): z three times -> 0 0 0 3 3 (sum 6) rescaled by 5/6 -> 0 0 0 2.5 2.5
    out = boot(np.array([[2.0, 1, 0], [0, 0, 3]]), None)
    np.testing.assert_allclose(out, [[2, 2, 1, 0, 0], [0, 0, 0, 2.5, 2.5]])
    flip = Clustered(lambda p, d: p, codes, "permutation")
    np.testing.assert_array_equal(flip(np.array([[1.0, -1, 1]]), None), [[1, 1, -1, 1, 1]])
    # first-appearance numbering: singletons in order give the identity
    assert group_codes(["q", "a", "m"]).tolist() == [0, 1, 2]


def test_singleton_groups_reduce_to_the_iid_bootstrap_and_permutation():
    study = clustered_study(0.3, 0)
    ds = cube.datasets(study)["d"]
    single = cube.make_study([ds.assign_coords(group=("instance", ds.instance.values))])
    for ci in ("percentile", "bca"):
        iid = multistat.compare(single, tests=("bootstrap", "permutation"), ci_method=ci,
                                **KW)
        cl = multistat.compare(single, tests=("bootstrap", "permutation"), ci_method=ci,
                               cluster="group", **KW)
        for col in ("estimate", "ci_low", "ci_high", "p_value"):
            np.testing.assert_allclose(cl[col], iid[col], rtol=1e-12, atol=0,
                                       equal_nan=True, err_msg=f"{ci} {col}")
        assert cl.note[0].startswith("cluster bootstrap over 200 groups")


def test_cluster_interval_widens_with_within_group_correlation():
    # 20 documents x 10 sentences; the iid bootstrap treats 200 sentences as independent.
    # Design effect of the mean: 1 + (m - 1) rho -> width ratio sqrt(1 + 9 rho):
    # rho 0: 1, rho 0.6: sqrt(6.4) = 2.5
    ratios = {}
    for rho in (0.0, 0.6):
        r = []
        for seed in range(6):
            study = clustered_study(rho, seed)
            kw = dict(tests=("bootstrap",), ci_method="percentile", **KW)
            iid = multistat.compare(study, **kw).iloc[0]
            cl = multistat.compare(study, cluster="group", **kw).iloc[0]
            r.append((cl.ci_high - cl.ci_low) / (iid.ci_high - iid.ci_low))
        ratios[rho] = float(np.mean(r))
    assert 0.7 < ratios[0.0] < 1.2  # 20 clusters: a noisy estimate of the same width
    assert 1.8 < ratios[0.6] < 3.2
    assert ratios[0.6] > ratios[0.0] + 0.8


def test_cluster_permutation_exact_by_hand():
    # 6 groups: 2^6 = 64 <= n_resamples, so all group sign flips are enumerated
    study = clustered_study(0.5, 3, n_groups=6, size=4, shift=0.4)
    res = multistat.compare(study, tests=("permutation",), cluster="group", **KW).iloc[0]
    ds = cube.datasets(study)["d"]
    d = ds.score.values[0, 0] - ds.score.values[1, 0]
    codes = group_codes(ds.group.values)
    sums = np.bincount(codes, weights=d)  # the mean of flipped d = sum_g s_g S_g / n
    obs = d.sum()
    null = np.array([np.dot(s, sums) for s in itertools.product([1, -1], repeat=6)])
    p = np.mean(np.abs(null) >= abs(obs) - 1e-9)  # exact: the identity is in the 64
    assert res.p_value == pytest.approx(p)
    assert "exact enumeration of all 2^G group sign flips" in res.note


def test_cluster_errors():
    rng = np.random.default_rng(0)
    plain = cube.make_study([cube.make_dataset("plain", rng.normal(size=(2, 1, 8)),
                                               systems=["a", "b"], metrics=["m"],
                                               instances=[f"i{k}" for k in range(8)])])
    with pytest.raises(DataValidationError, match="'plain' has no 'group' coordinate"):
        multistat.compare(plain, tests=("bootstrap",), cluster="group", **KW)
    with pytest.raises(ParameterError, match="`cluster` must be one of"):
        multistat.compare(plain, tests=("bootstrap",), cluster="doc", **KW)
    study = clustered_study(0.2, 0)
    with pytest.raises(ParameterError, match="not available with Westfall-Young"):
        multistat.compare(study, tests=("bootstrap",), cluster="group",
                          effect_sizes=False, n_resamples=100, correction="westfall-young")


def test_closed_form_rows_say_they_ignore_groups():
    t = multistat.compare(clustered_study(0.2, 1), tests=("t", "bootstrap"),
                          cluster="group", **KW).set_index("test")
    assert "instances treated as independent despite cluster='group' (20 groups)" in \
        t.loc["t", "note"]
    assert t.loc["bootstrap", "cluster"] == "group"
    assert t.attrs["multistat"]["cluster"] == "group"


def test_mqm_ted_talks_as_clusters():
    # real data: MQM of 4 systems on 529 segments in 5 TED talks (tests/data slice)
    study = cube.make_study([mqm_ted_dataset()])
    kw = dict(tests=("bootstrap", "permutation"), ci_method="percentile", **KW)
    iid = multistat.compare(study, **kw)
    cl = multistat.compare(study, cluster="group", **kw)
    boot_i = iid[iid.test == "bootstrap"].reset_index(drop=True)
    boot_c = cl[cl.test == "bootstrap"].reset_index(drop=True)
    np.testing.assert_allclose(boot_c.estimate, boot_i.estimate)  # same point estimates
    width = (boot_c.ci_high - boot_c.ci_low) / (boot_i.ci_high - boot_i.ci_low)
    assert len(width) == 6 and (boot_c.note.str.contains("over 5 groups")).all()
    # only 5 talks: 2^5 = 32 group sign vectors, enumerated; the smallest two-sided p is
    # 2/32 = 0.0625, so no pair can reach 0.05 with whole talks flipped
    perm = cl[cl.test == "permutation"]
    assert (perm.p_value >= 2 / 32 - 1e-12).all()
    assert perm.note.str.contains("exact enumeration").all()
    # docs/guides/across-test-sets.md: Nemo vs UEdin is significant over sentences, not over talks
    pick = (boot_i.system_a == "Nemo") & (boot_i.system_b == "UEdin")
    assert boot_i[pick].p_value.item() == pytest.approx(0.026, abs=0.001)
    assert boot_c[pick].p_value.item() == pytest.approx(0.30, abs=0.01)
    # talks differ: every pair's interval is wider when whole talks are resampled
    # (observed ratios 1.2 to 2.4 with seed 0)
    assert (width > 1).all()


# --------------------------------------------------------------------------- runs, aso
def runs_study(seed=0):
    rng = np.random.default_rng(seed)
    # 3 systems x 2 metrics x 30 instances x 5 runs; run offsets make runs differ
    shift = np.array([0.6, 0.0, -0.4])[:, None, None, None]
    rs = rng.normal(size=(3, 2, 30, 5)) + shift + rng.normal(0, 0.3, size=(3, 2, 1, 5))
    ds = cube.make_dataset("d", cube.run_mean(rs), systems=list("abc"),
                           metrics=["up", "down"], instances=[f"i{k:02d}" for k in range(30)],
                           run_score=rs, higher_is_better=[True, False])
    return cube.make_study([ds]), rs


def test_runs_are_visible_and_aso_runs_on_run_scores():
    study, rs = runs_study()
    t = multistat.compare(study, tests=("t", "aso"), **KW)
    assert (t.n_runs == 5).all()
    tt = t[t.test == "t"]
    assert tt.note.str.contains("scores averaged over 5 runs").all()
    a = t[t.test == "aso"].set_index(["metric", "system_a", "system_b"])
    assert a.p_value.isna().all() and not a.reject.any()
    assert (a.n == 5).all() and a.note.str.startswith("ASO over 5 runs per system").all()
    run_means = rs.mean(2)  # (S, M, R): one score per run
    for m, hib in ((0, True), (1, False)):
        metric = ["up", "down"][m]
        for i, j in ((0, 1), (0, 2), (1, 2)):
            row = a.loc[(metric, "abc"[i], "abc"[j])]
            ref = multistat.aso(run_means[i, m], run_means[j, m], n_resamples=1000,
                                higher_is_better=hib)
            # the same estimator; different bootstrap streams: Monte Carlo agreement
            assert row.statistic == pytest.approx(ref.eps_min, abs=0.12)
            assert row.eps_min_reverse == pytest.approx(ref.eps_min_reverse, abs=0.12)
            assert row.violation_ratio == pytest.approx(ref.violation_ratio, abs=1e-12)
    # a is better on "up" (higher) and worse on "down" (lower is better)
    assert a.loc[("up", "a", "c"), "statistic"] < 0.2
    assert a.loc[("down", "a", "c"), "eps_min_reverse"] < 0.2


def test_aso_without_runs_uses_instance_scores_and_swaps():
    study = clustered_study(0.0, 2, shift=1.5)
    t = multistat.compare(study, tests=("aso",), **KW).iloc[0]
    assert "instance scores (no runs in the study)" in t.note and t.n == 200
    assert t.statistic < 0.2  # a = b + d with d ~ 1.5 + N(0, 1)
    ds = cube.datasets(study)["d"]
    swapped = multistat.compare(study, tests=("aso",), pairs=[("b", "a")], **KW).iloc[0]
    # per-system bootstrap streams: the swapped pair reuses them, so its violation ratio is
    # 1 - eps_W2(a, b) up to deepsig's first grid point, and its eps_min is the reverse
    assert swapped.violation_ratio == pytest.approx(1 - t.violation_ratio, abs=0.02)
    assert swapped.statistic == pytest.approx(t.eps_min_reverse, abs=0.02)
    assert ds.sizes["instance"] == 200
    assert isinstance(t, pd.Series)
