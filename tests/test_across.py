"""Friedman / post-hoc tests and replicability analysis (multistat.leaderboard.across)."""

from __future__ import annotations

import gc
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import multistat
from multistat import cube
from multistat.leaderboard.across import friedman, partial_conjunction, replicability
from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    ParameterError,
    ParameterTypeError,
    UnknownSystemError,
)


def _wide(seed=0, n_blocks=12, k=5, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_blocks, k)) + np.linspace(0, 1, k)
    if ties:
        x = np.round(x, 0)  # many ties within blocks
    return pd.DataFrame(x, index=[f"set{i}" for i in range(n_blocks)],
                        columns=[f"s{j}" for j in range(k)])


# ------------------------------------------------------------------------------ Friedman
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_friedman_equals_scipy(seed, ties):
    wide = _wide(seed, ties=ties)
    ref = stats.friedmanchisquare(*wide.to_numpy().T)  # reference: scipy
    r = friedman(wide)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    # the direction of ranking does not change chi2_F
    r2 = friedman(wide, higher_is_better=False)
    assert r2.statistic == pytest.approx(ref.statistic, rel=1e-12)


def test_friedman_mean_ranks_and_iman_davenport_by_hand():
    # blocks x systems; ranks (1 = best, higher is better):
    #   b1: A .9 B .8 C .7   -> 1 2 3
    #   b2: A .8 B .7 C .75  -> 1 3 2
    #   b3: A .85 B .8 C .6  -> 1 2 3
    #   b4: A .7 B .6 C .65  -> 1 3 2
    # mean ranks A 1, B 2.5, C 2.5; N = 4, k = 3
    # chi2 = 12N/(k(k+1)) [sum R^2 - k(k+1)^2/4] = 4 * (1 + 6.25 + 6.25 - 12) = 6.0
    # F_F = (N-1) chi2 / (N(k-1) - chi2) = 3 * 6 / (8 - 6) = 9.0, on (2, 6) df
    wide = pd.DataFrame({"A": [0.9, 0.8, 0.85, 0.7], "B": [0.8, 0.7, 0.8, 0.6],
                         "C": [0.7, 0.75, 0.6, 0.65]})
    r = friedman(wide)
    assert r.mean_ranks.to_dict() == {"A": 1.0, "B": 2.5, "C": 2.5}
    assert r.statistic == pytest.approx(6.0)
    assert r.p_value == pytest.approx(math.exp(-6.0 / 2))  # chi2_2 tail = exp(-x/2)
    assert r.iman_davenport == pytest.approx(9.0)
    assert r.iman_davenport_p_value == pytest.approx(stats.f.sf(9.0, 2, 6))
    # lower is better reverses the ranks
    r_low = friedman(wide, higher_is_better=False)
    assert r_low.mean_ranks.to_dict() == {"B": 1.5, "C": 1.5, "A": 3.0}


# Demšar (2006), Table 5(a): two-tailed Nemenyi q_0.05 for k = 2..10 (q_alpha = studentized
# range / sqrt 2) and Table 5(b) Bonferroni-Dunn q_0.05
DEMSAR_Q05 = {2: 1.960, 3: 2.343, 4: 2.569, 5: 2.728, 6: 2.850, 7: 2.949, 8: 3.031,
              9: 3.102, 10: 3.164}
DEMSAR_BD_Q05 = {2: 1.960, 3: 2.241, 4: 2.394, 5: 2.498, 6: 2.576, 7: 2.638, 8: 2.690,
                 9: 2.724, 10: 2.773}


@pytest.mark.parametrize("k", sorted(DEMSAR_Q05)[1:])
def test_nemenyi_cd_matches_demsar_table_and_studentized_range(k):
    n = 14
    r = friedman(_wide(3, n_blocks=n, k=k))
    q = stats.studentized_range.ppf(0.95, k, np.inf) / np.sqrt(2)
    assert r.critical_difference == pytest.approx(q * np.sqrt(k * (k + 1) / (6 * n)),
                                                  rel=1e-12)
    assert q == pytest.approx(DEMSAR_Q05[k], abs=1e-3)


def test_nemenyi_pairwise_p_values():
    wide = _wide(4, n_blocks=20, k=4)
    r = friedman(wide)
    se = np.sqrt(4 * 5 / (6 * 20))
    assert len(r.pairwise) == 6
    for row in r.pairwise.itertuples():
        diff = r.mean_ranks[row.system_a] - r.mean_ranks[row.system_b]
        assert row.rank_difference == pytest.approx(diff)
        q = abs(diff) / se * np.sqrt(2)
        assert row.p_value == pytest.approx(stats.studentized_range.sf(q, 4, np.inf),
                                            rel=1e-6)
        # a pair is rejected exactly when its rank difference exceeds the CD
        assert row.reject == (abs(diff) > r.critical_difference)


def test_bonferroni_dunn_against_control():
    wide = _wide(5, n_blocks=15, k=6)
    r = friedman(wide, posthoc="bonferroni-dunn", control="s0")
    assert set(r.pairwise.system_a) == {"s0"} and len(r.pairwise) == 5
    se = np.sqrt(6 * 7 / (6 * 15))
    z = (r.mean_ranks["s0"] - r.mean_ranks["s3"]) / se
    row = r.pairwise.set_index("system_b").loc["s3"]
    assert row.statistic == pytest.approx(z)
    assert row.p_adjusted == pytest.approx(min(1, 5 * 2 * stats.norm.sf(abs(z))))
    # critical difference of Bonferroni-Dunn (Demšar Table 5b)
    assert row.critical_difference == pytest.approx(DEMSAR_BD_Q05[6] * se, rel=2e-3)
    # default control: the best mean rank
    assert friedman(wide, posthoc="bonferroni-dunn").control == r.mean_ranks.index[0]


def test_wilcoxon_holm_matches_scipy_and_statsmodels():
    from statsmodels.stats.multitest import multipletests

    wide = _wide(6, n_blocks=10, k=3)
    r = friedman(wide, posthoc="wilcoxon-holm")
    ps = []
    for a, b in [("s0", "s1"), ("s0", "s2"), ("s1", "s2")]:
        ps.append(stats.wilcoxon(wide[a], wide[b]).pvalue)  # reference: scipy
    assert r.pairwise.p_value.tolist() == pytest.approx(ps)
    assert r.pairwise.p_adjusted.tolist() == pytest.approx(
        multipletests(ps, method="holm")[1])


def two_metric_study(datasets, metrics, seed):
    """Systems a > b > c (0.5 apart) on each test set; the first metric higher is better,
    the second lower is better. Returns ``(study, {dataset: node})``."""
    rng = np.random.default_rng(seed)
    nodes = {}
    for d in datasets:
        score = rng.normal(size=(3, 2, 30)) + np.array([0.5, 0.0, -0.5])[:, None, None]
        nodes[d] = cube.make_dataset(d, score, systems=["a", "b", "c"], metrics=metrics,
                                     instances=[f"i{j}" for j in range(30)],
                                     higher_is_better=[True, False])
    return cube.make_study(nodes), nodes


def test_friedman_from_study_uses_system_scores_and_orientation():
    study, nodes = two_metric_study(("newstest", "ted", "wmt"), ["up", "down"], 0)
    # blocks are the test sets of one metric, never metrics (one Friedman per metric)
    with pytest.raises(ParameterError, match=r"the study has metrics \['up', 'down'\]; "
                                             "a Friedman test blocks on the test sets"):
        multistat.friedman(study)
    with pytest.raises(ParameterError, match=r"unknown metric\(s\) \['bleu'\]"):
        multistat.friedman(study, metric="bleu")
    for m, sign in (("up", 1), ("down", -1)):
        r = multistat.friedman(study, metric=m)
        assert r.n_blocks == 3 and r.n_systems == 3
        assert r.ranks.index.tolist() == ["newstest", "ted", "wmt"]
        # the same wide table by hand: block means, "down" negated (lower is better)
        rows = [sign * ds.score.sel(metric=m).mean("instance").values
                for ds in nodes.values()]
        ref = stats.friedmanchisquare(*np.array(rows).T)
        assert r.statistic == pytest.approx(ref.statistic)
        assert r.p_value == pytest.approx(ref.pvalue)
    per = multistat.leaderboard.across.blocks_per_metric(study)
    assert list(per) == ["up", "down"] and per["down"].shape == (3, 3)


def test_friedman_errors():
    wide = _wide(0, n_blocks=4, k=3)
    with pytest.raises(ParameterError, match="`posthoc` must be one of"):
        friedman(wide, posthoc="tukey")
    with pytest.raises(UnknownSystemError, match="`control` 'zz' is not a system"):
        friedman(wide, posthoc="bonferroni-dunn", control="zz")
    with pytest.raises(ParameterError, match="`control` applies only"):
        friedman(wide, control="s0")
    bad = wide.copy()
    bad.iloc[2, 1] = np.nan
    with pytest.raises(DataValidationError, match="system 's1' in block 'set2'"):
        friedman(bad)
    with pytest.raises(DataValidationError, match="at least 3 systems"):
        friedman(wide.iloc[:, :2])
    with pytest.raises(DataValidationError, match="at least 2 blocks"):
        friedman(wide.iloc[:1])
    with pytest.raises(ParameterTypeError, match="`scores` must be a pandas DataFrame"):
        friedman([[1, 2], [3, 4]])
    with pytest.raises(ParameterError, match="`alpha` must be in"):
        friedman(wide, alpha=1.5)


def test_friedman_perfect_agreement():
    wide = pd.DataFrame({"a": [3.0, 3, 3], "b": [2.0, 2, 2], "c": [1.0, 1, 1]})
    r = friedman(wide)
    # chi2 = 12*3/12 * (1 + 4 + 9 - 12) = 6 = N(k-1): F_F is infinite
    assert r.statistic == pytest.approx(6.0)
    assert r.iman_davenport == np.inf and r.iman_davenport_p_value == 0.0


# ------------------------------------------------------------------------- replicability
def _chi2_even_sf(x, df):
    """Upper tail of chi-square with even df = 2m: exp(-x/2) sum_{j<m} (x/2)^j / j!."""
    m = df // 2
    return math.exp(-x / 2) * sum((x / 2) ** j / math.factorial(j) for j in range(m))


def test_replicability_example_of_the_authors():
    # Example from the README of Dror et al.'s code (rtmdrr/replicability-analysis-NLP):
    # p = 0.168, 0.297, 0.357, 0.019, 0.218, 0.001 at alpha 0.05 gives k_Bonferroni = 1,
    # k_Fisher = 2, Holm rejects dataset6.
    p = [0.168, 0.297, 0.357, 0.019, 0.218, 0.001]
    r = replicability(p, alpha=0.05, method="bonferroni")
    # sorted: .001 .019 .168 .218 .297 .357; Bonferroni (N-u+1) p_(u):
    # u=1: 6*.001=.006  u=2: 5*.019=.095  u=3: 4*.168=.672  u=4: 3*.218=.654 -> max .672
    # u=5: 2*.297=.594 -> .672  u=6: .357 -> .672 ; only u=1 is <= .05: k = 1
    assert r.partial_conjunction_p == pytest.approx([.006, .095, .672, .672, .672, .672])
    assert r.k == 1 and r.datasets == ["dataset6"]
    f = replicability(p, alpha=0.05, method="fisher")
    # u=2: -2 (ln .019 + ln .168 + ln .218 + ln .297 + ln .357) = 19.029, chi2_10 tail .0399
    x2 = -2 * sum(math.log(v) for v in (.019, .168, .218, .297, .357))
    assert x2 == pytest.approx(19.029, abs=1e-3)
    assert f.partial_conjunction_p[1] == pytest.approx(_chi2_even_sf(x2, 10))
    assert f.partial_conjunction_p[1] == pytest.approx(0.0399, abs=1e-4)
    # u=6: chi2_2 tail of -2 ln .357 is .357 itself
    assert f.partial_conjunction_p[5] == pytest.approx(0.357)
    assert f.k == 2
    assert f.datasets == ["dataset6"]  # identification is Holm's whatever the method


def test_replicability_second_hand_example():
    # p = .01 .02 .03 .5 (named), alpha .05
    # Bonferroni: u=1: 4*.01 = .04 <= .05; u=2: 3*.02 = .06 > .05 -> k = 1
    # Holm: .01 <= .05/4 = .0125 reject; .02 > .05/3 = .0167 stop -> {a}
    # Fisher: u=1: -2 ln(.01*.02*.03*.5) = 25.434, chi2_8 tail = .0013
    #         u=2: -2 ln(.02*.03*.5) = 16.223, chi2_6 tail = .0126
    #         u=3: -2 ln(.03*.5) = 8.399, chi2_4 tail = e^-4.200 (1 + 4.200) = .0780 -> k = 2
    s = pd.Series({"a": 0.01, "b": 0.02, "c": 0.03, "d": 0.5})
    b = replicability(s)
    assert b.k == 1 and b.datasets == ["a"]
    assert b.partial_conjunction_p[:2] == pytest.approx([0.04, 0.06])
    f = replicability(s, method="fisher")
    exp = [_chi2_even_sf(-2 * math.log(.01 * .02 * .03 * .5), 8),
           _chi2_even_sf(-2 * math.log(.02 * .03 * .5), 6),
           _chi2_even_sf(-2 * math.log(.03 * .5), 4)]
    assert exp == pytest.approx([0.0013, 0.0126, 0.0780], abs=1e-4)
    assert f.partial_conjunction_p[:3] == pytest.approx(exp)
    assert f.k == 2


def test_holm_identifies_k_bonferroni_smallest():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(1)
    # statsmodels' Holm calls gc.collect() every time, which scans every object of the
    # test session (~0.1 s a call); freezing them leaves only this loop's objects to scan
    gc.freeze()
    try:
        _holm_cases(rng, multipletests)
    finally:
        gc.unfreeze()


def _holm_cases(rng, multipletests):
    for _ in range(200):
        p = rng.uniform(size=rng.integers(1, 9)) ** 3
        r = replicability(p, alpha=0.1)
        holm = multipletests(p, alpha=0.1, method="holm")[0]
        assert r.k == holm.sum() == len(r.datasets)
        assert sorted(r.datasets) == sorted(f"dataset{i + 1}" for i in np.flatnonzero(holm))
        # partial conjunction p-values are monotone and k counts those <= alpha
        pc = np.array(r.partial_conjunction_p)
        assert np.all(np.diff(pc) >= 0) and r.k == int((pc <= 0.1).sum())
        raw = partial_conjunction(p, "bonferroni")
        assert pc == pytest.approx(np.maximum.accumulate(raw))


def test_replicability_from_compare_table():
    rng = np.random.default_rng(2)
    nodes = {}
    shift = {"d1": 1.0, "d2": 0.9, "d3": 0.0}  # a beats b on d1, d2 only
    for d, s in shift.items():
        score = rng.normal(size=(2, 1, 60))
        score[0] += s
        nodes[d] = cube.make_dataset(d, score, systems=["a", "b"], metrics=["m"],
                                     instances=[f"i{j}" for j in range(60)])
    table = multistat.compare(cube.make_study(nodes), tests=("t",), effect_sizes=False)
    out = replicability(table).set_index("better")
    assert len(out) == 2  # the claims "a better" and "b better"
    row = out.loc["a"]
    assert row.n_datasets == 3 and row.test == "t"
    # one-sided p of "a better": p/2 where the estimate is positive, 1 - p/2 elsewhere
    t = table.set_index("dataset")
    one = np.where(t.estimate > 0, t.p_value / 2, 1 - t.p_value / 2)
    ref = replicability(pd.Series(one, index=t.index))
    assert row.k == ref.k and row.datasets == ";".join(ref.datasets)
    assert row.k == 2 and set(row.datasets.split(";")) == {"d1", "d2"}
    # the same one-sided p-values as the t test with alternative="greater"
    g = multistat.compare(cube.make_study(nodes), tests=("t",), effect_sizes=False,
                          alternative="greater").set_index("dataset")
    assert one == pytest.approx(g.p_value.to_numpy(), rel=1e-9)
    assert replicability(g.reset_index()).iloc[0].k == 2


def test_replicability_errors():
    with pytest.raises(ParameterError, match="test set 'dataset2' has p-value 1.5"):
        replicability([0.1, 1.5])
    with pytest.raises(ParameterError, match="`p_values` is empty"):
        replicability([])
    with pytest.raises(ParameterError, match="`method` must be one of"):
        replicability([0.1], method="simes")
    with pytest.raises(ParameterTypeError, match="`p_values` must be a sequence"):
        replicability(0.1)
    with pytest.raises(DataValidationError, match="lacks column"):
        replicability(pd.DataFrame({"p_value": [0.1]}))


def _narrowed_study():
    """Three test sets; system 'late' entered only two of them (as WMT's language pairs:
    not every team submits to every pair)."""
    rng = np.random.default_rng(4)
    nodes = {}
    for d, systems in (("d1", ["a", "b", "c", "late"]), ("d2", ["a", "b", "c", "late"]),
                       ("d3", ["a", "b", "c"])):
        score = rng.normal(size=(len(systems), 1, 40))
        score += np.linspace(1, 0, len(systems))[:, None, None]
        nodes[d] = cube.make_dataset(d, score, systems=systems, metrics=["m"],
                                     instances=[f"i{j}" for j in range(40)])
    return cube.make_study(nodes)


def test_friedman_names_the_systems_it_leaves_out():
    study = _narrowed_study()
    with pytest.warns(DroppedDataWarning, match=r"metric 'm': 1 system\(s\) left out, not "
                                                r"scored on every test set: 'late' \(no "
                                                r"score on 'd3'\); the test ranks the 3 "
                                                r"systems common to all 3 test sets"):
        r = multistat.friedman(study, metric="m")
    assert r.n_systems == 3 and "late" not in r.mean_ranks.index
    assert r.dropped == {"late": ["d3"]}
    assert r.notes == ["1 system(s) left out, not scored on every test set: 'late' (no "
                       "score on 'd3'); the test ranks the 3 systems common to all 3 test "
                       "sets"]
    # nothing left out: no note, no warning (the project's warnings are errors here)
    full = multistat.leaderboard.across.blocks_per_metric(
        cube.make_study({k: v for k, v in cube.datasets(study).items() if k != "d3"}))
    assert multistat.friedman(full["m"]).notes == []


def test_replicability_names_the_pairs_tested_on_fewer_test_sets():
    study = _narrowed_study()
    table = multistat.compare(study, tests=("t",), effect_sizes=False)
    with pytest.warns(DroppedDataWarning, match=r"3 of 6 pair\(s\) tested on fewer than "
                                                r"the table's 3 test sets: a vs late "):
        out = replicability(table)
    narrowed = out.attrs["multistat"]["narrowed"]
    assert len(narrowed) == 3 and all("late" in n for n in narrowed)
    assert narrowed[0].endswith("no row on 'd3' (a system not in that test set)")
    late = out[(out.system_b == "late") | (out.system_a == "late")]
    assert set(late["n_datasets"]) == {2}
