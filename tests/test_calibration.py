"""Calibration suite (issue 13.5): a one-minute subset of `make validate`, on real compare
runs, with the outputs written and read back."""

import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from validation import calibration as C
from multistat import compare
from multistat.significance import REGISTRY


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    table = C.run_calibration(distributions=("normal", "binary"), sizes=(20, 50),
                              replicates=1000, n_groups=10, n_resamples=499)
    out = tmp_path_factory.mktemp("validation")
    paths = C.write_reports(table, out)
    return table, paths


def test_every_registered_test_has_type_i_cells(quick):
    table, _ = quick
    size = table[table["kind"] == "type_i_error"]
    # mcnemar via the binary setting; ASO gives eps_min, not a p-value: it has no Type I
    # error cell (it had one at rate 0, "conservative")
    assert set(size["test"]) == set(REGISTRY) - {"aso"}
    assert not (table["test"] == "aso").any()
    assert (size["replicates"] == 1000).all()
    for method in C.CI_METHODS:
        assert ((table["kind"] == "coverage") & (table["test"] == "bootstrap")
                & (table["method"] == method)).any()


def test_exact_and_t_tests_are_not_liberal_on_normal_data(quick):
    table, _ = quick
    size = table[(table["kind"] == "type_i_error") & (table["distribution"] == "normal")]
    for test in ("t", "wilcoxon", "sign", "permutation"):
        rows = size[size["test"] == test]
        # 3 binomial SE at R = 1000: 0.05 + 3 * 0.0069 = 0.0707
        assert (rows["rate"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000)).all(), rows


def test_verdicts_and_reasons(quick):
    table, _ = quick
    se = np.sqrt(table["nominal"] * (1 - table["nominal"]) / table["replicates"])
    assert np.allclose(table["se_binomial"], se)
    inside = (table["rate"] - table["nominal"]).abs() <= 3 * se
    assert ((table["verdict"] == "ok") == inside).all()
    off = table[table["verdict"] != "ok"]
    assert (off["reason"].str.len() > 0).all()
    assert (table.loc[table["verdict"] == "ok", "reason"] == "").all()


def test_interval_rate_is_one_minus_rejection_for_t(quick):
    # the t interval inverts the t test: coverage of theta = 1 - rejection rate at theta
    table, _ = quick
    for (dist, n), g in table[table["test"] == "t"].groupby(["distribution", "n"]):
        rej = g.loc[g["kind"] == "type_i_error", "rate"].item()
        cov = g.loc[g["kind"] == "coverage", "rate"].item()
        assert cov == pytest.approx(1 - rej), (dist, n)


def test_outputs_parquet_and_markdown(quick):
    table, (pq_path, md_path) = quick
    back = pq.read_table(pq_path).to_pandas()
    pd.testing.assert_frame_equal(back.reset_index(drop=True),
                                  table.reset_index(drop=True), check_dtype=False)
    text = md_path.read_text()
    assert "## Type I error" in text and "## Interval coverage" in text
    assert text.count("| t |") >= 4
    # the run's settings survive the Parquet file: the Markdown can be redrawn from it
    # (a redraw once printed "? null data sets ... seed ?")
    from multistat.io import read_parquet

    again = read_parquet(pq_path)
    assert again.attrs["multistat"] == table.attrs["multistat"]
    assert C.to_markdown(again) + "\n" == text
    assert "1000 null data sets per setting in 10 datasets" in text


def test_reference_rates_against_scipy():
    # the t and Wilcoxon rejection counts through compare equal scipy's on the same data
    from scipy import stats

    rng = np.random.default_rng(C.seed_of("calibration", 0, "normal", 20))
    a, b = C.draw("normal", 20, 100, rng)
    study, pairs = C._study("normal", a, b, 4)
    for test, ref in (("t", stats.ttest_rel(a, b, axis=1).pvalue),
                      ("wilcoxon", stats.wilcoxon(a, b, axis=1).pvalue)):
        tab = compare(study, tests=(test,), pairs=pairs, correction=None,
                      effect_sizes=False, scheduler="synchronous")
        np.testing.assert_allclose(np.sort(tab["p_value"].to_numpy()), np.sort(ref),
                                   rtol=1e-9)


def test_datasets_get_independent_resampling_plans():
    # identical data in two datasets: a shared plan would give identical bootstrap p-values;
    # different dataset names give independent plans (so replicates are independent)
    rng = np.random.default_rng(1)
    a, b = C.draw("normal", 30, 1, rng)
    study, pairs = C._study("normal", np.repeat(a, 2, 0), np.repeat(b, 2, 0), 2)
    tab = compare(study, tests=("bootstrap",), pairs=pairs, correction=None,
                  effect_sizes=False, n_resamples=499, scheduler="synchronous")
    p = tab.sort_values("dataset")["p_value"].to_numpy()
    assert p.size == 2 and p[0] != p[1]
    # within a dataset the same plan serves every pair: identical pairs, identical p
    study1, pairs1 = C._study("normal", np.repeat(a, 2, 0), np.repeat(b, 2, 0), 1)
    tab1 = compare(study1, tests=("bootstrap",), pairs=pairs1, correction=None,
                   effect_sizes=False, n_resamples=499, scheduler="synchronous")
    assert tab1["p_value"].nunique() == 1


def test_skewed_truth_is_the_population_value():
    t = C.truth("skewed")
    # Exp(1) - 1 - N(0, 0.25): mean 0; median below 0 (right skew); pseudo-median between
    assert t["mean"] == 0.0
    assert -0.35 < t["median"] < t["pseudomedian"] < 0.0
    rng = np.random.default_rng(5)
    d = C._skewed_d(rng, 1_000_000)
    assert abs(d.mean()) < 0.005 and abs(np.median(d) - t["median"]) < 0.005
