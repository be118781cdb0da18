"""Metric meta-evaluation (multistat.meta.evaluation): values against mt-metrics-eval's unit tests
and scipy, the vectorised resampling kernels against direct recomputation on resampled
data, PERM-BOTH against mt-metrics-eval's p-values within Monte Carlo error, and the study
path on REALSumm (tests/data/realsumm)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import multistat
from multistat import engine as eng
from multistat.errors import DataValidationError, ParameterError, ParameterTypeError
from multistat.meta import evaluation as me
from multistat.meta.evaluation import compare_metrics, meta_evaluate, metric_correlation
from tests.conftest import REALSUMM, REALSUMM_OPTIONS

GOLD, METRIC = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]


# ----------------------------------------------------------------- mt-metrics-eval values
@pytest.mark.parametrize("statistic, epsilon, expected", [
    # mt-metrics-eval stats_test.py, testKendallVariants / testKendallWithTiesOpt
    ("kendall_b", 0.0, 0.316227766), ("kendall_c", 0.0, 0.32), ("kendall_23", 0.0, 0.2),
    ("acc23", 0.0, 0.6), ("acc23", 2.0, 0.4), ("acc23", "optimal", 0.7)])
def test_mt_metrics_eval_kendall_variants(statistic, epsilon, expected):
    r = metric_correlation(GOLD, METRIC, statistic=statistic, epsilon=epsilon)
    assert r.value == pytest.approx(expected, abs=1e-9)
    assert r.n == 10


@pytest.mark.parametrize("statistic, average_by, expected", [
    # mt-metrics-eval stats_test.py: Correlation(2, [1..6], [2, 1, 4, 3, 3, 7]) with
    # average_by 'none' / 'sys' / 'item' (testPearson, testKendall, testKendallC)
    ("pearson", "none", 0.776), ("pearson", "system", 0.760), ("pearson", "item", 1.0),
    ("kendall_b", "none", 0.552), ("kendall_b", "system", 0.575), ("kendall_b", "item", 1.0),
    ("kendall_c", "none", 0.556), ("kendall_c", "system", 0.611), ("kendall_c", "item", 1.0)])
def test_mt_metrics_eval_averaging(statistic, average_by, expected):
    g = np.array([1, 2, 3, 4, 5, 6.]).reshape(2, 3)
    m = np.array([2, 1, 4, 3, 3, 7.]).reshape(2, 3)
    assert metric_correlation(g, m, statistic=statistic, average_by=average_by).value \
        == pytest.approx(expected, abs=5e-4)


def test_mt_metrics_eval_kendall_23_counts():
    # stats_test.py testKendallVariants_23 / WithPositiveEpsilon: 21 pairs, hand counts
    x, y = [1, 1, 1, 2, 2, 3, 4], [1, 1, 2, 2, 4, 3, 3]
    assert metric_correlation(x, y, statistic="kendall_23").value == pytest.approx(7 / 21)
    assert metric_correlation(x, y, statistic="kendall_23", epsilon=0.1).value \
        == pytest.approx(7 / 21)
    # epsilon 1 on the metric (y): 13 metric ties; mt-metrics-eval's expected (5 + 3 - 1
    # - 0 - 10) / 21 with its x/y roles: here y is the metric
    r = metric_correlation(x, y, statistic="kendall_23", epsilon=1.0)
    c = me._kendall_counts(np.array([x], float), np.array([y], float), 1.0)
    assert r.value == pytest.approx(float((c["A"] + 3 * c["T"] - c["Zh"] - c["Zm"])[0] / 21))


def test_missing_human_cells_are_left_out():
    # stats_test.py testMissingEntries: None in gold drops the cell
    g = np.array([1, np.nan, 3, 4, 5, 6])
    m = np.array([2, 1, 4, 3, 5, 6.])
    ref = scipy.stats.pearsonr([1, 3, 4, 5, 6], [2, 4, 3, 5, 6])
    r = metric_correlation(g, m, statistic="pearson")
    assert r.value == pytest.approx(ref.statistic, abs=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, abs=1e-12)
    assert r.n == 5
    # testAverageByItemWithMissingEntries: an item with one judged system is left out
    g2 = np.array([[1, np.nan, 3], [4, 5, 6.]])
    m2 = np.array([[2, 1, 8], [3, 5, 6.]])
    r2 = metric_correlation(g2, m2, statistic="pearson", average_by="item")
    assert r2.value == pytest.approx(np.mean([scipy.stats.pearsonr([1, 4], [2, 3])[0],
                                              scipy.stats.pearsonr([3, 6], [8, 6])[0]]))
    assert r2.n_rows == 2


@pytest.mark.parametrize("statistic", ["pearson", "spearman", "kendall_b", "kendall_c"])
def test_single_row_equals_scipy(statistic):
    rng = np.random.default_rng(0)
    h = np.round(rng.normal(size=40), 1)
    m = np.round(h + rng.normal(size=40), 1)  # ties in both
    fn = {"pearson": scipy.stats.pearsonr, "spearman": scipy.stats.spearmanr,
          "kendall_b": lambda a, b: scipy.stats.kendalltau(a, b, variant="b"),
          "kendall_c": lambda a, b: scipy.stats.kendalltau(a, b, variant="c")}[statistic]
    ref = fn(h, m)
    r = metric_correlation(h, m, statistic=statistic)
    assert r.value == pytest.approx(ref.statistic, abs=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_pairwise_accuracy_is_the_share_of_pairs_ordered_alike():
    # Kocmi et al. (2021): sign(h_i - h_j) == sign(m_i - m_j); mt-metrics-eval's
    # stats_test.py testAgreement: gold [1,2,3,3,4], metric [1,1,2,1,2] -> 5 of 10
    r = metric_correlation([1, 2, 3, 3, 4], [1, 1, 2, 1, 2], statistic="pairwise_accuracy")
    assert r.value == 0.5 and r.n == 10


def test_optimal_epsilon_is_the_best_candidate_and_reproduces_the_value():
    rng = np.random.default_rng(1)
    h = np.round(rng.normal(size=(5, 30)), 0)
    m = h + rng.normal(scale=0.8, size=h.shape)
    h[1, :4] = np.nan
    for statistic in ("acc23", "kendall_23"):
        r = metric_correlation(h, m, statistic=statistic, average_by="item",
                               epsilon="optimal")
        again = metric_correlation(h, m, statistic=statistic, average_by="item",
                                   epsilon=r.epsilon)
        assert again.value == r.value
        # brute force over every candidate threshold (0 and each |metric difference|)
        cand = np.unique(np.abs(m.T[:, :, None] - m.T[:, None, :]))
        best = max(metric_correlation(h, m, statistic=statistic, average_by="item",
                                      epsilon=float(e)).value for e in cand)
        assert r.value == pytest.approx(best, abs=1e-12)


def test_soft_pairwise_accuracy_within_monte_carlo_error_of_the_exact_value():
    # stats_test.py testPairwiseConfidenceError: 0.872 (1000 permutations, seed 4). The
    # exact value: human p(A > B) = 1 (all 8 sign vectors), metric p = 7/8 -> 0.875
    g = np.array([[1, 2, 3], [2, 3, 4.]])
    m = np.array([[2, 2, 4], [1, 3, 5.]])
    r = metric_correlation(g, m, statistic="soft_pairwise_accuracy", n_resamples=1000)
    assert abs(r.value - 0.875) < 4 * np.sqrt(0.875 * 0.125 / 1000)


# ----------------------------------------------------------------- kernels vs direct
def _data(seed=0, S=5, N=30, K=3, missing=True):
    rng = np.random.default_rng(seed)
    h = np.round(rng.normal(size=(S, N)), 1)
    ms = {f"m{k}": h + rng.normal(scale=1 + k / 2, size=h.shape) for k in range(K)}
    if missing:
        h[0, :3] = np.nan
        h[2, 5] = np.nan
    return h, ms


@pytest.mark.parametrize("statistic, average_by", [
    ("pearson", "none"), ("pearson", "system"), ("pearson", "item"),
    ("acc23", "item"), ("kendall_23", "item"), ("pairwise_accuracy", "item"),
    ("kendall_b", "item"), ("kendall_c", "item"), ("kendall_b", "none")])
def test_perm_both_null_equals_recomputation_on_swapped_scores(statistic, average_by):
    h, ms = _data()
    d = me._prepare(h, ms, statistic, average_by, 0.0)
    kern = me._PermKernel(d)
    plan = eng.plan_block("permutation", d.S * d.N, 8, 0, "", 0)
    null = kern(plan)
    v = ~np.isnan(h)
    z = {k: np.where(v, (x - x[v].mean()) / x[v].std(), 0.0) for k, x in ms.items()}
    names = list(ms)
    for b in range(plan.shape[0]):
        keep = plan[b].reshape(h.shape) > 0
        for p, (ia, ib) in enumerate(zip(d.ia, d.ib)):
            za, zb = z[names[ia]], z[names[ib]]
            a2, b2 = np.where(keep, za, zb), np.where(keep, zb, za)
            ref = (metric_correlation(h, a2, statistic=statistic, average_by=average_by).value
                   - metric_correlation(h, b2, statistic=statistic,
                                        average_by=average_by).value)
            assert null[b, p] == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("statistic, average_by", [
    ("pearson", "none"), ("pearson", "system"), ("pearson", "item"), ("spearman", "item"),
    ("kendall_b", "item"), ("acc23", "item")])
def test_bootstrap_kernel_equals_recomputation_on_resampled_items(statistic, average_by):
    h, ms = _data(1)
    d = me._prepare(h, ms, statistic, average_by, 0.0)
    plan = eng.plan_block("bootstrap", d.N, 6, 0, "", 0)
    dist = me._BootKernel(d)(plan)
    for b in range(plan.shape[0]):
        idx = np.repeat(np.arange(d.N), plan[b].astype(int))
        for k, m in enumerate(ms.values()):
            ref = metric_correlation(h[:, idx], m[:, idx], statistic=statistic,
                                     average_by=average_by).value
            assert dist[b, k] == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("statistic", ["kendall_b", "acc23", "kendall_23"])
def test_bootstrap_of_1d_kendall_counts_copies_as_ties(statistic):
    rng = np.random.default_rng(2)
    g = np.round(rng.normal(size=12), 1)
    ms = {"a": g + rng.normal(size=12), "b": g + rng.normal(scale=2, size=12)}
    d = me._prepare(g, ms, statistic, "none", 0.0)
    plan = eng.plan_block("bootstrap", 12, 5, 0, "", 0)
    dist = me._BootKernel(d)(plan)
    for b in range(5):
        idx = np.repeat(np.arange(12), plan[b].astype(int))
        for k, m in enumerate(ms.values()):
            assert dist[b, k] == pytest.approx(
                metric_correlation(g[idx], m[idx], statistic=statistic).value, abs=1e-12)


def test_system_level_bootstrap_recomputes_system_means():
    h, ms = _data(3)
    d = me._prepare(h, ms, "pearson", "none", 0.0)
    plan = eng.plan_block("bootstrap", d.N, 4, 0, "", 0)
    dist = me._SystemBootKernel(d, "kendall_b", 0.0)(plan)
    for b in range(4):
        idx = np.repeat(np.arange(d.N), plan[b].astype(int))
        hs, mss = me._system_scores(h[:, idx], {k: m[:, idx] for k, m in ms.items()})
        for k, m in enumerate(mss.values()):
            assert dist[b, k] == pytest.approx(
                metric_correlation(hs, m, statistic="kendall_b").value, abs=1e-12)


# ----------------------------------------------------------------- PERM-BOTH vs reference
def _mtme_case():
    rng = np.random.default_rng(3)
    S, N = 6, 80
    h = np.round(rng.normal(size=(S, N)), 1)
    a = h + rng.normal(scale=1.6, size=h.shape)
    b = h + rng.normal(scale=2.0, size=h.shape)
    h[0, :5] = np.nan
    return h, a, b


@pytest.mark.parametrize("statistic, average_by, n_resamples, p_ref, b_ref, delta_ref", [
    # mt-metrics-eval 68a481a, stats.PermutationSigDiff(corr_b, corr_a, fn, average_by,
    # k, PermutationSigDiffParams(block_size=10**5)) after np.random.seed(0): p of metric
    # a (the first) agreeing better, count/k; the data of _mtme_case with None for NaN
    # (script: benchmarks/bench_metaeval.py --reference). Values recorded 2026-11-25.
    ("pearson", "none", 20000, 0.0036, 20000, 0.12053642833660855),
    ("pearson", "item", 4000, 0.01375, 4000, 0.11615579830678463),
    ("pearson", "system", 4000, 0.00275, 4000, 0.1305812439894668),
    ("acc23", "item", 4000, 0.01325, 4000, 0.05499999999999994),
    # PermutationSigDiff(..., scipy.stats.kendalltau, "item", 4000): tau_b
    ("kendall_b", "item", 4000, 0.012, 4000, 0.11276254702565908),
])
def test_perm_both_p_agrees_with_mt_metrics_eval(statistic, average_by, n_resamples, p_ref,
                                                 b_ref, delta_ref):
    h, a, b = _mtme_case()
    t = compare_metrics(h, {"a": a, "b": b}, statistic=statistic, average_by=average_by,
                        test="perm-both", n_resamples=n_resamples, seed=0,
                        alternative="greater", correction="none")
    assert t["delta"].iloc[0] == pytest.approx(delta_ref, abs=1e-12)
    p = t["p_value"].iloc[0]
    # two independent Monte Carlo estimates of one p: 4 standard errors of the difference
    se = np.sqrt(p_ref * (1 - p_ref) / b_ref + p_ref * (1 - p_ref) / n_resamples)
    assert abs(p - p_ref) < 4 * se + 1 / n_resamples


def test_perm_both_two_sided_and_swapped_pairs():
    h, a, b = _mtme_case()
    kw = {"statistic": "acc23", "average_by": "item", "n_resamples": 500,
          "correction": "none"}
    ab = compare_metrics(h, {"a": a, "b": b}, alternative="greater", **kw)
    ba = compare_metrics(h, {"b": b, "a": a}, alternative="less", **kw)
    assert ba["delta"].iloc[0] == -ab["delta"].iloc[0]
    assert ba["p_value"].iloc[0] == ab["p_value"].iloc[0]  # the same null, negated
    two = compare_metrics(h, {"a": a, "b": b}, alternative="two-sided", **kw)
    less = compare_metrics(h, {"a": a, "b": b}, alternative="less", **kw)
    # on one shared null, with delta > 0: {T* >= T} within {|T*| >= |T|} within
    # {T* >= T} or {T* <= T}, so p_greater <= p_two <= p_greater + p_less (the same +1s);
    # the swap null is not symmetric, so p_two is not 2 min(p) (here 0.024 vs 2 x 0.006)
    p_g, p_l, p_2 = (x["p_value"].iloc[0] for x in (ab, less, two))
    assert ab["delta"].iloc[0] > 0 and p_g <= p_2 <= p_g + p_l
    assert p_2 > p_g  # some swaps exceed |delta| on the other side
    again = compare_metrics(h, {"a": a, "b": b}, alternative="two-sided", **kw)
    pd.testing.assert_frame_equal(two, again)


def test_williams_reproduces_mt_metrics_eval():
    # stats_test.py WilliamsSigDiffTest.testSigDiff: p 0.019 (one-sided), r 0.999, 0.987
    gold = [1, 2, 3, 4, 5]
    t = compare_metrics(gold, {"m1": [1.1, 2, 3.1, 4, 5.1], "m2": [1.5, 2, 3.1, 4, 5.5]},
                        test="williams", alternative="greater", correction="none")
    row = t.iloc[0]
    assert row["p_value"] == pytest.approx(0.019, abs=5e-4)
    assert row["value_a"] == pytest.approx(0.999, abs=5e-4)
    assert row["value_b"] == pytest.approx(0.987, abs=5e-4)
    two = compare_metrics(gold, {"m1": [1.1, 2, 3.1, 4, 5.1], "m2": [1.5, 2, 3.1, 4, 5.5]},
                          test="williams", correction="none")
    assert two["p_value"].iloc[0] == pytest.approx(2 * row["p_value"])


def test_bootstrap_interval_and_p():
    h, ms = _data(4, S=6, N=200, K=3, missing=False)
    t = compare_metrics(h, ms, statistic="kendall_b", average_by="item", test="bootstrap",
                        n_resamples=999, seed=1)
    assert list(t.columns) == list(me.PAIR_COLUMNS)
    assert (t["ci_low"] <= t["delta"]).all() and (t["delta"] <= t["ci_high"]).all()
    # m0 (least noise) beats m2 (most noise) clearly
    row = t[(t.metric_a == "m0") & (t.metric_b == "m2")].iloc[0]
    assert row["delta"] > 0 and row["ci_low"] > 0 and row["p_value"] == 2 / 1000  # 2 x 1/1000


def test_compare_metrics_takes_a_one_dataset_study():
    study = multistat.load(REALSUMM, **REALSUMM_OPTIONS)
    ds = multistat.cube.datasets(study)["scores"]
    names = [str(m) for m in ds.metric.values]
    sub = ds.isel(metric=[names.index(m) for m in
                          ("litepyramid_recall", "rouge_1_recall", "rouge_2_precision")])
    one = multistat.cube.make_study({"scores": sub})
    t = compare_metrics("litepyramid_recall", one, statistic="acc23", average_by="item",
                        n_resamples=200)
    score = ds["score"].values
    direct = compare_metrics(score[:, names.index("litepyramid_recall")],
                             {m: score[:, names.index(m)] for m in
                              ("rouge_1_recall", "rouge_2_precision")},
                             statistic="acc23", average_by="item", n_resamples=200)
    assert t["delta"].iloc[0] == direct["delta"].iloc[0]
    assert t["delta"].iloc[0] > 0


# ----------------------------------------------------------------- study path
@pytest.fixture(scope="module")
def realsumm():
    return multistat.load(REALSUMM, dataset_col="summary_type", instance_col="doc_id")


def test_meta_evaluate_segment_level_on_realsumm(realsumm):
    board = meta_evaluate(realsumm, human="litepyramid_recall", level="segment",
                          statistic="acc23", n_resamples=300, seed=0, correction="none",
                          metrics=["rouge_1_recall", "rouge_2_recall", "rouge_1_precision",
                                   "bert_precision_score"])
    assert list(board.columns) == list(me.BOARD_COLUMNS)
    assert set(board["dataset"]) == {"abs", "ext"}
    for name, part in board.groupby("dataset"):
        assert (np.diff(part["value"].to_numpy()) <= 0).all()  # best first
        assert (part["ci_low"] <= part["ci_high"]).all()
        assert (np.diff(part["cluster"].to_numpy()) >= 0).all()
        h = realsumm[name]["score"].sel(metric="litepyramid_recall").values
        for _, row in part.iterrows():
            m = realsumm[name]["score"].sel(metric=row["metric"]).values
            assert row["value"] == metric_correlation(h, m, statistic="acc23",
                                                      average_by="item").value
    abs_ = board[board.dataset == "abs"].set_index("metric")
    # recall metrics agree better with a recall-based human score than precision ones
    assert abs_.loc["rouge_1_recall", "cluster"] < abs_.loc["rouge_1_precision", "cluster"]


def test_meta_evaluate_strict_clusters_follow_the_rank_rule(realsumm):
    from multistat.leaderboard.ranking import better_matrix, clusters, score_order

    board, pairs, mat = me._meta_evaluation(realsumm, "litepyramid_recall", level="system",
                                           statistic="pearson", datasets=["abs"],
                                           n_resamples=500, correction="holm",
                                           cluster_rule="strict")
    names = list(board["metric"])
    idx = {m: i for i, m in enumerate(names)}
    better = better_matrix(len(names), pairs["metric_a"].map(idx), pairs["metric_b"].map(idx),
                           pairs["reject"], np.sign(pairs["delta"]))
    order = score_order(board["value"].to_numpy(), True, names)
    assert (board["cluster"].to_numpy() == clusters(order, better)).all()
    assert set(mat["metric_a"]) == set(names) | {"litepyramid_recall"}
    diag = mat[mat.metric_a == mat.metric_b]["correlation"]
    assert np.allclose(diag, 1.0)


def test_meta_evaluate_with_missing_human_judgments(tmp_path):
    # an incomplete design: each system judged on its own items (missing="keep")
    path = _incomplete_csv(tmp_path / "scores.csv")
    with pytest.raises(DataValidationError, match="system 's0' lacks"):
        multistat.load(path)
    study = multistat.load(path, missing="keep")
    assert np.isnan(study["scores"]["score"].sel(metric="mqm").values).any()
    # compare runs paired tests on the items both systems have (issue 25, _holes)
    table = multistat.compare(study, tests=("t",), metrics=["mqm"], correction=None)
    both = ~np.isnan(study["scores"]["score"].sel(metric="mqm").values)
    idx = {f"s{s}": s for s in range(5)}
    assert (table["n"].to_numpy() == [int((both[idx[a]] & both[idx[b]]).sum()) for a, b in
                                       zip(table.system_a, table.system_b)]).all()
    assert (table["n"] < 40).all()
    with pytest.raises(DataValidationError, match="dataset 'scores', metric 'mqm': instance "
                                                  "'0' is scored for some systems only"):
        multistat.analyze(study)
    board = meta_evaluate(study, human="mqm", level="system", statistic="pearson",
                          n_resamples=200)
    ds = study["scores"]
    h = ds["score"].sel(metric="mqm").values
    v = ~np.isnan(h)
    hs = np.array([h[s][v[s]].mean() for s in range(5)])
    b = ds["score"].sel(metric="bleu").values
    bs = np.array([b[s][v[s]].mean() for s in range(5)])
    row = board.set_index("metric").loc["bleu"]
    assert row["value"] == pytest.approx(scipy.stats.pearsonr(hs, bs)[0], abs=1e-12)
    seg = meta_evaluate(study, human="mqm", level="segment", statistic="pearson",
                        average_by="none", n_resamples=200)
    assert seg.set_index("metric").loc["bleu", "n"] == int(v.sum())


# ----------------------------------------------------------------- errors
def test_errors_name_what_is_wrong():
    h, ms = _data()
    with pytest.raises(ParameterError, match="`statistic` must be one of"):
        metric_correlation(GOLD, METRIC, statistic="tau")
    with pytest.raises(ParameterError, match="`average_by` must be one of"):
        metric_correlation(GOLD, METRIC, average_by="segment")
    with pytest.raises(ParameterError, match="epsilon='optimal' .* defined for"):
        metric_correlation(GOLD, METRIC, statistic="pearson", epsilon="optimal")
    with pytest.raises(ParameterError, match="applies to the Kendall statistics"):
        metric_correlation(GOLD, METRIC, statistic="pearson", epsilon=0.5)
    with pytest.raises(ParameterError, match="kendall_c with epsilon > 0"):
        metric_correlation(GOLD, METRIC, statistic="kendall_c", epsilon=0.5)
    with pytest.raises(ParameterError, match="a number >= 0 or 'optimal'; got -1"):
        metric_correlation(GOLD, METRIC, statistic="acc23", epsilon=-1)
    with pytest.raises(ParameterTypeError, match="`epsilon` must be a number"):
        metric_correlation(GOLD, METRIC, statistic="acc23", epsilon=[1])
    with pytest.raises(ParameterError, match="metric 'metric' has shape"):
        metric_correlation(GOLD, METRIC[:4])
    bad = np.array(METRIC, float)
    bad[2] = np.nan
    with pytest.raises(DataValidationError, match="metric 'metric' is nan at system 0, "
                                                  "item 2 where the human score is 2.0"):
        metric_correlation(GOLD, bad)
    with pytest.raises(ParameterError, match="needs systems x items"):
        metric_correlation(GOLD, METRIC, statistic="soft_pairwise_accuracy")
    with pytest.raises(ParameterError, match="at least 2 metrics"):
        compare_metrics(h, {"m0": ms["m0"]})
    with pytest.raises(ParameterError, match="PERM-BOTH is vectorised for pearson and the "
                                             "Kendall statistics; for spearman"):
        compare_metrics(h, ms, statistic="spearman", average_by="item")
    tied = {k: np.round(m) for k, m in ms.items()}
    with pytest.raises(ParameterError, match="PERM-BOTH for kendall_b: the metrics' "
                                             "z-scores tie within a row"):
        compare_metrics(h, tied, statistic="kendall_b", average_by="item")
    with pytest.raises(ParameterError, match="use epsilon=0 with test='perm-both'"):
        compare_metrics(h, ms, statistic="acc23", average_by="item", epsilon=0.5,
                        test="perm-both")
    with pytest.raises(ParameterError, match="test='perm-pairs' swaps the outcomes of "
                                             "pairwise comparisons.*got statistic='pearson'"):
        compare_metrics(h, ms, statistic="pearson", test="perm-pairs")
    with pytest.raises(ParameterError, match="Williams' test compares Pearson"):
        compare_metrics(h, ms, statistic="pearson", average_by="item", test="williams")
    with pytest.raises(ParameterError, match="bootstrap of kendall_b with average_by='none'"):
        compare_metrics(h, ms, statistic="kendall_b", average_by="none", test="bootstrap")
    with pytest.raises(ParameterError, match="nest one permutation test"):
        compare_metrics(h, ms, statistic="soft_pairwise_accuracy")
    with pytest.raises(ParameterError, match="1-D scores form one row"):
        compare_metrics(GOLD, {"a": METRIC, "b": GOLD}, average_by="item")
    with pytest.raises(ParameterTypeError, match="`metrics` must be a mapping"):
        compare_metrics(GOLD, [METRIC, GOLD])
    with pytest.raises(ParameterError, match="`test` must be one of"):
        compare_metrics(h, ms, test="perm")


def test_study_errors(realsumm):
    with pytest.raises(ParameterError, match="no dataset of the study has the human metric "
                                             "'mqm'"):
        meta_evaluate(realsumm, human="mqm")
    with pytest.raises(ParameterError, match="dataset 'abs' has no metric\\(s\\) \\['x'\\]"):
        meta_evaluate(realsumm, human="litepyramid_recall", metrics=["x"])
    with pytest.raises(ParameterError, match="`level` must be one of"):
        meta_evaluate(realsumm, human="litepyramid_recall", level="corpus")
    with pytest.raises(ParameterError, match="takes a study of one dataset"):
        compare_metrics("litepyramid_recall", realsumm)


# ----------------------------------------------------------------- command line
def _incomplete_csv(path, seed=7):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(5):
        for i in range(40):
            q = rng.normal() + s / 3
            rows += [(f"s{s}", str(i), "bleu", q + rng.normal(scale=0.5)),
                     (f"s{s}", str(i), "chrf", q + rng.normal(scale=1.5))]
            if rng.random() < 0.7:
                rows.append((f"s{s}", str(i), "mqm", q))
    pd.DataFrame(rows, columns=["system", "instance", "metric", "score"]).to_csv(
        path, index=False)
    return path


def test_cli_meta_evaluate_with_missing_keep(tmp_path, capsys):
    from multistat.io import read_parquet
    from tests.conftest import run_cli

    csv = _incomplete_csv(tmp_path / "scores.csv")
    status, _, err = run_cli(["load", csv, "--out", tmp_path / "s.nc"], capsys)
    assert status == 2 and "lacks" in err and "Traceback" not in err
    status, out, err = run_cli(["load", csv, "--missing", "keep", "--out",
                                tmp_path / "s.nc"], capsys)
    assert status == 0, err
    status, out, err = run_cli(
        ["meta-evaluate", tmp_path / "s.nc", "--human", "mqm", "--level", "system",
         "--n-resamples", "200", "--out", tmp_path / "m.parquet", "--pairs-out",
         tmp_path / "p.csv", "--matrix-out", tmp_path / "r.parquet"], capsys)
    assert status == 0, err
    assert "cluster 1:" in out and "perm-both test" in out
    board = read_parquet(tmp_path / "m.parquet")
    ref = meta_evaluate(multistat.load(csv, missing="keep"), human="mqm", level="system",
                        n_resamples=200)
    pd.testing.assert_frame_equal(board.reset_index(drop=True), ref, check_like=True)
    assert set(pd.read_csv(tmp_path / "p.csv")["metric_a"]) == {"bleu"}
    assert len(read_parquet(tmp_path / "r.parquet")) == 9  # mqm, bleu, chrf squared


@pytest.mark.parametrize("args, fragment", [
    (["--human", "nope"], "no dataset of the study has the human metric 'nope'"),
    (["--human", "mqm", "--epsilon", "x"], "--epsilon must be a number >= 0 or 'optimal'"),
    (["--human", "mqm", "--statistic", "spearman"], "PERM-BOTH is vectorised for pearson"),
    (["--human", "mqm", "--out", "m.txt"], "--out"),
])
def test_cli_meta_evaluate_errors_are_one_line(tmp_path, capsys, args, fragment):
    from tests.conftest import run_cli

    csv = _incomplete_csv(tmp_path / "scores.csv")
    run_cli(["load", csv, "--missing", "keep", "--out", tmp_path / "s.nc"], capsys)
    argv = ["meta-evaluate", tmp_path / "s.nc", *args]
    if "--out" not in args:
        argv += ["--out", tmp_path / "m.parquet"]
    else:
        argv[-1] = tmp_path / argv[-1]
    status, _, err = run_cli(argv, capsys)
    assert status == 2
    assert fragment in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_help_names_the_options(capsys):
    from tests.conftest import run_cli

    status, out, _ = run_cli(["meta-evaluate", "--help"], capsys)
    assert status == 0
    for flag in ("--human", "--level", "--statistic", "--average-by", "--epsilon", "--test",
                 "--pairs-out", "--matrix-out", "--cluster-rule"):
        assert flag in out


# ----------------------------------------------------------------- report
def test_report_has_the_metric_section(tmp_path, realsumm):
    from multistat.report import write_report
    from multistat.report.metaeval import write_metaeval

    board, _, matrix = me._meta_evaluation(realsumm, "litepyramid_recall", level="system",
                                          statistic="pearson", n_resamples=100,
                                          metrics=["rouge_1_recall", "rouge_2_recall",
                                                   "bert_precision_score"])
    res = multistat.compare(realsumm, metrics=["litepyramid_recall"], tests=("t",))
    path = write_report(res, tmp_path / "rep",
                        sections={"metaeval": board, "metaeval_matrix": matrix},
                        options={"histogram_pairs": None})
    text = path.read_text()
    assert '<section id="metaeval"><h2>Metric meta-evaluation</h2>' in text
    assert "rouge_2_recall" in text and "Pearson correlation between the metrics" in text
    for ds in ("abs", "ext"):
        assert (tmp_path / "rep" / "figures" / f"metaeval_{ds}.png").stat().st_size > 1000
        assert (tmp_path / "rep" / "figures" / f"metric_correlations_{ds}.png").exists()
    shown = pd.read_csv(tmp_path / "rep" / "tables" / "metaeval.csv")
    assert list(shown["metric"]) == list(board["metric"])
    with pytest.raises(DataValidationError, match="`metaeval` lacks column\\(s\\) "
                                                  "\\['cluster'\\]"):
        write_metaeval(board.drop(columns="cluster"), tmp_path / "x")
    # the CSV goes through the report's one writer: a formula-like metric name is
    # neutralised (OWASP), numbers stay numbers
    evil = board.assign(metric=['=HYPERLINK("x")'] + list(board["metric"].iloc[1:]))
    write_metaeval(evil, tmp_path / "evil", matrix=None)
    cells = pd.read_csv(tmp_path / "evil" / "tables" / "metaeval.csv")
    assert cells["metric"].iloc[0] == "'=HYPERLINK(\"x\")"
    assert cells["value"].dtype == float


def test_a_metric_missing_where_a_human_judgment_is_names_the_cell(tmp_path):
    path = _incomplete_csv(tmp_path / "scores.csv")
    frame = pd.read_csv(path, dtype={"instance": str})
    judged = frame[(frame.metric == "mqm") & (frame.system == "s1")]["instance"]
    inst = judged.iloc[0]
    drop = frame.index[(frame.metric == "bleu") & (frame.system == "s1")
                       & (frame.instance == inst)]
    frame.drop(drop).to_csv(path, index=False)
    study = multistat.load(path, missing="keep")
    with pytest.raises(DataValidationError, match="metric 'bleu' is nan at dataset "
                                                  f"'scores', system 's1', instance '{inst}' "
                                                  "where the human score is"):
        meta_evaluate(study, human="mqm", n_resamples=10)


def test_system_level_tie_calibration_uses_the_system_scores(realsumm):
    board, pairs, _ = me._meta_evaluation(realsumm, "litepyramid_recall", level="system",
                                         statistic="acc23", epsilon="optimal",
                                         test="bootstrap", datasets=["ext"],
                                         n_resamples=200,
                                         metrics=["rouge_1_recall", "bert_f_score"])
    ds = realsumm["ext"]
    hs, mss = me._system_scores(ds["score"].sel(metric="litepyramid_recall").values,
                                {m: ds["score"].sel(metric=m).values
                                 for m in ("rouge_1_recall", "bert_f_score")})
    for m, x in mss.items():
        r = metric_correlation(hs, x, statistic="acc23", epsilon="optimal")
        assert board.set_index("metric").loc[m, "value"] == r.value
    row = pairs.iloc[0]
    assert row["delta"] == row["value_a"] - row["value_b"]
    assert row["ci_low"] < row["ci_high"] and 0 < row["p_value"] <= 1


def test_large_1d_kendall_bootstrap_is_refused_by_its_memory(monkeypatch):
    monkeypatch.setattr(me, "PAIR_MATRIX_BYTES", 2**20)
    g = np.arange(200.0)
    with pytest.raises(ParameterError, match="needs 3 MiB of pair matrices \\(at most 1 "
                                             "MiB\\)"):
        compare_metrics(g, {"a": g, "b": -g}, statistic="kendall_b", test="bootstrap")


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(me, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 8 and result.failed == 0


def test_system_level_tie_calibration_on_an_ordinary_study():
    """level="system" with epsilon="optimal" calibrates on the S system scores: each
    metric's value is metric_correlation's on the system means. It used to calibrate on the
    S x N cells first and refuse 15 x 800 ("would enumerate 71,994,000 pairs of cells")."""
    rng = np.random.default_rng(3)
    S, N = 15, 800
    q = rng.normal(size=S)
    hum = q[:, None] + rng.normal(0, 1, (S, N))
    metrics = {"m1": hum + rng.normal(0, 0.5, (S, N)), "m3": hum + rng.normal(0, 2.0, (S, N))}
    rows = [{"dataset": "d", "system": f"s{s:02d}", "metric": m, "instance": f"i{i:04d}",
             "score": v[s, i]} for m, v in {"human": hum, **metrics}.items()
            for s in range(S) for i in range(N)]
    study = multistat.from_frame(pd.DataFrame(rows))
    board, _, _ = me._meta_evaluation(study, "human", level="system", statistic="acc23",
                                     epsilon="optimal", test="bootstrap", n_resamples=200)
    for m, v in metrics.items():
        ref = me.metric_correlation(hum.mean(1), v.mean(1), statistic="acc23",
                                    epsilon="optimal", n_resamples=0)
        got = board.loc[board["metric"] == m].iloc[0]
        assert got["value"] == pytest.approx(ref.value, abs=1e-12)
        assert got["ci_low"] <= got["value"] <= got["ci_high"]


def test_soft_pairwise_p_per_system_equals_the_pair_path():
    """With every item judged, _pairwise_p forms the sign-flip null from per-system sums
    (pairs last); it must give the p-values of the per-pair difference matrix the path for
    missing cells uses (forced here by passing the same data through that path)."""
    from multistat import engine as eng

    rng = np.random.default_rng(4)
    x = np.round(rng.normal(size=(12, 300)), 3)
    flips = eng.plan_block("permutation", 300, 500, 0, "", 0)
    full = np.ones_like(x, dtype=bool)
    fast = me._pairwise_p(x, full, flips)
    iu, ju = np.triu_indices(12, 1)
    d = x[iu] - x[ju]
    null, obs = flips @ d.T, d.sum(1)
    slow = np.sum(null >= obs - eng._tolerance(obs, null), axis=0) / 500
    np.testing.assert_array_equal(fast, slow)
    assert 0 < fast.min() < 0.5 < fast.max() <= 1  # pairs both ways: not all 0 or 1
