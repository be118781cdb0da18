"""Small-n honesty for accuracy: each system's accuracy on few questions gets a binomial
interval that keeps its coverage (Wilson, or Clopper-Pearson), and the report says when a
benchmark is too small to separate its systems.

References: statsmodels.stats.proportion.proportion_confint (methods "wilson" and "beta");
coverage computed exactly by summing binomial probabilities over every count k."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

import multistat
from multistat import cube
from multistat.significance._proportion import binomial_interval
from multistat.errors import ParameterError
from multistat.power import detectability as pdet
from multistat.report import detectability as det_mod
from tests.conftest import full_report


@pytest.mark.parametrize("method,sm_method", [("wilson", "wilson"), ("exact", "beta")])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_binomial_interval_equals_statsmodels(method, sm_method, level):
    for n in (1, 2, 5, 12, 40, 1000):
        k = np.arange(n + 1)
        lo, hi = binomial_interval(k, n, level, method)
        ref_lo, ref_hi = proportion_confint(k, n, alpha=1 - level, method=sm_method)
        np.testing.assert_allclose(lo, ref_lo, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(hi, ref_hi, rtol=1e-10, atol=1e-14)


def _coverage(lo, hi, n, p):
    """Exact coverage at true accuracy p of intervals (lo[k], hi[k]) for k = 0..n."""
    k = np.arange(n + 1)
    return float(np.sum(stats.binom.pmf(k, n, p) * ((lo <= p) & (p <= hi))))


def test_coverage_on_few_questions_beats_the_percentile_bootstrap():
    # n = 15 questions: the percentile bootstrap of the mean (its limit as B grows: the
    # quantiles of Binomial(n, k/n)/n) against Wilson and Clopper-Pearson, exact coverage
    n, grid = 15, np.linspace(0.5, 0.97, 48)
    k = np.arange(n + 1)
    boot_lo = stats.binom.ppf(0.025, n, k / n) / n
    boot_hi = stats.binom.ppf(0.975, n, k / n) / n
    w = binomial_interval(k, n, 0.95, "wilson")
    cp = binomial_interval(k, n, 0.95, "exact")
    cov = {name: np.array([_coverage(lo, hi, n, p) for p in grid])
           for name, (lo, hi) in {"boot": (boot_lo, boot_hi), "wilson": w,
                                  "cp": cp}.items()}
    assert cov["cp"].min() >= 0.95 - 1e-12          # exact: never below the level
    assert cov["wilson"].mean() > 0.94              # Wilson: about the level on average
    assert cov["boot"].mean() < 0.90 and cov["boot"].min() < 0.6  # the bootstrap is not
    assert cov["wilson"].mean() > cov["boot"].mean() + 0.05


def _binary_study(n=12, probs=(0.9, 0.5, 1.0), seed=0):
    rng = np.random.default_rng(seed)
    acc = np.stack([(rng.random(n) < p).astype(float) for p in probs])
    acc[-1] = 1.0  # a system with every answer right: the bootstrap collapses to a point
    cont = rng.normal(size=(len(probs), n))
    ds = cube.make_dataset("d", np.stack([acc, cont], 1),
                           systems=[f"s{i}" for i in range(len(probs))],
                           metrics=["acc", "m"], kind=["binary", "mean"],
                           instances=[f"q{i:02d}" for i in range(n)])
    return cube.make_study({"d": ds}), acc


def test_system_scores_give_binary_metrics_their_binomial_interval():
    study, acc = _binary_study()
    sc = multistat.system_scores(study, n_resamples=300, seed=1)
    boot = multistat.system_scores(study, n_resamples=300, seed=1,
                                   binary_interval="bootstrap")
    exact = multistat.system_scores(study, n_resamples=300, seed=1,
                                    binary_interval="exact")
    for i in range(acc.shape[0]):
        k, n = int(acc[i].sum()), acc.shape[1]
        row = sc[(sc.metric == "acc") & (sc.system == f"s{i}")].iloc[0]
        assert row.ci_method == "wilson"
        np.testing.assert_allclose([row.ci_low, row.ci_high],
                                   proportion_confint(k, n, method="wilson"), rtol=1e-10)
        row = exact[(exact.metric == "acc") & (exact.system == f"s{i}")].iloc[0]
        assert row.ci_method == "clopper-pearson"
        np.testing.assert_allclose([row.ci_low, row.ci_high],
                                   proportion_confint(k, n, method="beta"), rtol=1e-10)
    # 12 of 12 right: the percentile bootstrap is the point [1, 1], Wilson is not
    perfect = sc[(sc.metric == "acc") & (sc.system == "s2")].iloc[0]
    assert perfect.ci_high == 1.0 and perfect.ci_low < 0.8
    b = boot[(boot.metric == "acc") & (boot.system == "s2")].iloc[0]
    assert b.ci_low == b.ci_high == 1.0 and b.ci_method == "bootstrap percentile"
    # the continuous metric keeps the bootstrap, identical in all three
    cont = sc.metric == "m"
    assert (sc[cont].ci_method == "bootstrap percentile").all()
    np.testing.assert_array_equal(sc[cont].ci_low, boot[cont].ci_low)
    # compare's per-system table is the same table
    _, systems = multistat.compare(study, tests=("bootstrap",), n_resamples=300, seed=1,
                                   return_systems=True)
    assert systems.equals(sc)
    with pytest.raises(ParameterError, match="`binary_interval` must be one of"):
        multistat.system_scores(study, binary_interval="agresti")


def test_binary_metric_averaged_over_runs_keeps_the_bootstrap():
    rng = np.random.default_rng(3)
    runs = (rng.random((2, 1, 10, 3)) < 0.7).astype(float)
    ds = cube.make_dataset("d", runs.mean(-1), systems=["a", "b"], metrics=["acc"],
                           kind=["binary"], instances=[f"q{i}" for i in range(10)],
                           run_score=runs)
    sc = multistat.system_scores(cube.make_study({"d": ds}), n_resamples=200)
    assert (sc.ci_method == "bootstrap percentile").all()


@pytest.mark.slow  # writes the whole report (figures): about 5 s
def test_report_says_a_small_binary_benchmark_cannot_separate_its_systems(tmp_path):
    # 20 questions, accuracies 0.70 / 0.65 / 0.60: the smallest detectable difference at
    # this size is ~0.35, every observed difference is smaller
    rng = np.random.default_rng(5)
    n = 20
    acc = np.stack([(rng.permutation(n) < round(p * n)).astype(float)
                    for p in (0.70, 0.65, 0.60)])
    ds = cube.make_dataset("quiz", acc[:, None, :], systems=["a", "b", "c"],
                           metrics=["accuracy"], kind=["binary"],
                           instances=[f"q{i:02d}" for i in range(n)])
    study = cube.make_study({"quiz": ds})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = multistat.compare(study, tests=("mcnemar", "t"))
        det = pdet.detectability(table, study=study, test="t")
        small = det_mod.smallest_detectable(det).iloc[0]
        assert small.too_small and small.n == n
        assert small.max_difference < small.mde_min
        text = det_mod.statement(small)
        assert text.startswith("this benchmark (20 instances) is too small to separate")
        full_report(table, tmp_path, study=study,
                    options={"test": "t", "histogram_pairs": None})
    html = (tmp_path / "report.html").read_text()
    assert "is too small to separate these systems" in html
    # the leaderboard's intervals of the accuracies are Wilson's
    lb = (tmp_path / "tables" / "leaderboard.csv").read_text()
    assert "wilson" in lb
    # a benchmark large enough for its differences gets no such sentence
    big = np.stack([(rng.random(2000) < p).astype(float) for p in (0.9, 0.6, 0.3)])
    ds = cube.make_dataset("big", big[:, None, :], systems=["a", "b", "c"],
                           metrics=["accuracy"], kind=["binary"],
                           instances=[f"q{i:04d}" for i in range(2000)])
    study = cube.make_study({"big": ds})
    table = multistat.compare(study, tests=("t",))
    small = det_mod.smallest_detectable(pdet.detectability(table, study=study)).iloc[0]
    assert not small.too_small
    assert "too small" not in det_mod.statement(small)


def test_rank_gives_binary_metrics_the_same_interval_as_system_scores():
    study, _ = _binary_study(n=20)
    board = multistat.rank(study, n_resamples=300, seed=1)
    ref = multistat.system_scores(study, n_resamples=300, seed=1)
    merged = board.merge(ref, on=["dataset", "metric", "system"], suffixes=("", "_ref"))
    assert len(merged) == 6
    np.testing.assert_array_equal(merged["ci_low"], merged["ci_low_ref"])
    np.testing.assert_array_equal(merged["ci_high"], merged["ci_high_ref"])
    assert (merged.loc[merged.metric == "acc", "ci_method"] == "wilson").all()
    assert "Wilson" in board.attrs["multistat"]["score_interval"]
