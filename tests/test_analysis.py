"""Tests of multistat.analysis: descriptives, skewness, normality and Table 2.

Table 2 of the NLPStatTest manual (the toolkit's user manual,
appendix C.4), with the skewness rule of appendix C.2 (|gamma| < 0.5: mean, else median):

=========  ======  =========  ===========  =====================================  ==========
symmetric  normal  statistic  recommended  non-preferred                          inappr.
=========  ======  =========  ===========  =====================================  ==========
yes        yes     mean       t            sign, Wilcoxon, permutation, bootstrap none
yes        no      mean       Wilcoxon     sign, permutation, bootstrap           t
no         no      median     sign         permutation, bootstrap (median)        t, Wilcoxon
=========  ======  =========  ===========  =====================================  ==========

Skewness and normality p-values are recomputed independently with scipy
(``scipy.stats.skew(bias=True)``, ``scipy.stats.shapiro``, ``scipy.stats.normaltest``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import DATA_FILE
from scipy import stats

from multistat import cube
from multistat.analysis import SHAPIRO_MAX, analyze, recommend
from multistat.errors import ConstantInputWarning, ParameterError, UnknownSystemError
from multistat.units import evaluation_units

ROW_NORMAL = {"test_statistic": "mean", "recommended": {"t"},
              "non_preferred": {"sign", "wilcoxon", "permutation", "bootstrap"},
              "inappropriate": set()}
ROW_SYMMETRIC = {"test_statistic": "mean", "recommended": {"wilcoxon"},
                 "non_preferred": {"sign", "permutation", "bootstrap"},
                 "inappropriate": {"t"}}
ROW_SKEWED = {"test_statistic": "median", "recommended": {"sign"},
              "non_preferred": {"permutation", "bootstrap"},
              "inappropriate": {"t", "wilcoxon"}}

# scipy.stats.skew(x, bias=True) == 0.5 exactly for this sample: mean -1, second central
# moment 9, third 27/2, 13.5 / 9 ** 1.5 = 0.5 (found by exhaustive search over integer
# samples of size 16 with exact rational moments; all intermediate floats are exact)
SKEW_HALF = np.array([-4, -4, -4, -4, -4, -4, -3, -1, -1, -1, -1, 1, 3, 3, 4, 4], float)


def table_row(row):
    """The Table 2 part of an analysis row, as sets."""
    return {"test_statistic": row["test_statistic"],
            **{k: set(filter(None, row[k].split(","))) for k in
               ("recommended", "non_preferred", "inappropriate")}}


def expected_row(d, alpha=0.05):
    """Table 2 row for differences ``d`` from scipy's skewness and normality test."""
    gamma = stats.skew(d, bias=True)
    test = stats.shapiro if len(d) <= 5000 else stats.normaltest
    if abs(gamma) >= 0.5:
        return ROW_SKEWED
    return ROW_NORMAL if test(d).pvalue > alpha else ROW_SYMMETRIC


def pair_study(a, b, kind="mean", name="d"):
    """A one-metric study of two systems with scores a and b."""
    score = np.stack([a, b])[:, None, :]
    return cube.make_study([cube.make_dataset(
        name, score, systems=["A", "B"], metrics=["m"], instances=range(len(a)),
        kind=[kind])])


def diff_study(d):
    return pair_study(np.asarray(d, float), np.zeros(len(d)))


def symmetrize(y):
    """``[y, -y]``: sample skewness 0 up to rounding (a symmetric sample)."""
    return np.concatenate([y, -y])


# ======================================================================== Table 2 rows
class TestTable2:
    def test_normal_differences(self):
        # Blom normal scores: as normal as a sample gets (Shapiro-Wilk p close to 1)
        n = 200
        d = stats.norm.ppf((np.arange(1, n + 1) - 0.375) / (n + 0.25))
        row = analyze(diff_study(d)).iloc[0]
        assert abs(row["skewness"]) < 1e-12 and row["normality_p"] > 0.9
        assert row["normal"] and row["normality_test"] == "shapiro-wilk"
        assert table_row(row) == ROW_NORMAL == expected_row(d)

    @pytest.mark.parametrize("dist", ["laplace", "t3"])
    def test_symmetric_heavy_tailed(self, dist):
        rng = np.random.default_rng(2026)
        y = rng.laplace(size=1000) if dist == "laplace" else rng.standard_t(3, size=1000)
        d = symmetrize(y)
        row = analyze(diff_study(d)).iloc[0]
        assert abs(row["skewness"]) < 1e-12  # symmetric by construction
        assert row["normality_p"] < 1e-6 and not row["normal"]
        assert table_row(row) == ROW_SYMMETRIC == expected_row(d)
        assert "t: normality rejected (t is OK for large samples" in row["reasons"]

    @pytest.mark.parametrize("sign", [1, -1])
    def test_skewed_exponential(self, sign):
        n = 500
        d = sign * stats.expon.ppf((np.arange(1, n + 1) - 0.5) / n)  # skewness about 2
        row = analyze(diff_study(d)).iloc[0]
        assert row["skewness"] == pytest.approx(stats.skew(d, bias=True), rel=1e-12)
        assert sign * row["skewness"] > 1.5
        assert table_row(row) == ROW_SKEWED == expected_row(d)
        assert "wilcoxon: assumes a symmetric distribution" in row["reasons"]

    @pytest.mark.parametrize("sign", [1, -1])
    def test_skewness_exactly_half_picks_median(self, sign):
        d = sign * SKEW_HALF
        assert stats.skew(d, bias=True) == sign * 0.5  # precondition: exactly +-0.5
        row = analyze(diff_study(d)).iloc[0]
        assert row["skewness"] == sign * 0.5
        assert table_row(row) == ROW_SKEWED

    @pytest.mark.parametrize("gamma, normal, expected", [
        (0.5, True, ROW_SKEWED), (-0.5, False, ROW_SKEWED),
        (np.nextafter(0.5, 0), True, ROW_NORMAL), (-np.nextafter(0.5, 0), False, ROW_SYMMETRIC),
        (0.0, True, ROW_NORMAL), (3.0, True, ROW_SKEWED), (-1.0, False, ROW_SKEWED),
        (np.nan, False, ROW_SYMMETRIC)])  # NaN (constant differences) counts as symmetric
    def test_recommend_directly(self, gamma, normal, expected):
        rec = recommend(gamma, normal)
        assert table_row(rec) == expected
        # one reason per test, every test in exactly one list
        reasons = rec["reasons"].split(" | ")
        named = [r.split(":")[0] for r in reasons]
        listed = set().union(*(expected[k] for k in ("recommended", "non_preferred",
                                                     "inappropriate")))
        assert sorted(named) == sorted(listed) == sorted(
            ["t", "wilcoxon", "sign", "permutation", "bootstrap"])

    def test_binary_adds_mcnemar(self):
        rec = recommend(0.1, False, binary=True)
        assert rec["recommended"].split(",") == ["mcnemar", "wilcoxon"]
        assert rec["reasons"].startswith("mcnemar: binary (0/1) scores")
        rng = np.random.default_rng(5)
        a = rng.integers(0, 2, 300).astype(float)
        b = rng.integers(0, 2, 300).astype(float)
        row = analyze(pair_study(a, b, kind="binary")).iloc[0]
        assert row["recommended"].split(",")[0] == "mcnemar"
        expected = expected_row(a - b)
        assert set(row["recommended"].split(",")[1:]) == expected["recommended"]
        mean_row = analyze(pair_study(a, b, kind="mean")).iloc[0]
        assert "mcnemar" not in mean_row["recommended"]


# ======================================================================== normality
class TestNormality:
    def test_shapiro_p_value(self):
        rng = np.random.default_rng(1)
        a, b = rng.gamma(2.0, size=(2, 120))
        row = analyze(pair_study(a, b)).iloc[0]
        assert row["normality_test"] == "shapiro-wilk"
        assert row["normality_p"] == pytest.approx(stats.shapiro(a - b).pvalue, rel=1e-12)

    @pytest.mark.parametrize("n, test", [(SHAPIRO_MAX, "shapiro-wilk"),
                                         (SHAPIRO_MAX + 1, "dagostino-pearson")])
    def test_switch_above_5000(self, n, test):
        rng = np.random.default_rng(n)
        d = rng.normal(size=n)
        row = analyze(diff_study(d)).iloc[0]
        assert SHAPIRO_MAX == 5000
        assert row["normality_test"] == test
        ref = stats.shapiro(d) if n <= 5000 else stats.normaltest(d)
        assert row["normality_p"] == pytest.approx(ref.pvalue, rel=1e-10)

    def test_alpha_is_the_normality_level(self):
        rng = np.random.default_rng(3)
        d = rng.normal(size=60)
        p = stats.shapiro(d).pvalue
        assert 0.05 < p < 0.99 and abs(stats.skew(d)) < 0.5  # preconditions of this seed
        normal = analyze(diff_study(d), alpha=0.05).iloc[0]
        strict = analyze(diff_study(d), alpha=0.999).iloc[0]
        assert normal["normal"] and not strict["normal"]
        assert strict["normality_alpha"] == 0.999
        assert table_row(normal) == ROW_NORMAL and table_row(strict) == ROW_SYMMETRIC

    def test_identical_systems_warn(self):
        a = np.random.default_rng(6).normal(size=30)
        with pytest.warns(ConstantInputWarning, match=r"metric 'm': 1 pair\(s\) have "):
            row = analyze(pair_study(a, a.copy())).iloc[0]
        assert row["mean_diff"] == 0.0 and row["std_diff"] == 0.0
        assert np.isnan(row["skewness"]) and np.isnan(row["normality_p"])

    def test_two_units_no_normality_test(self):
        row = analyze(diff_study([0.0, 1.0])).iloc[0]
        assert row["normality_test"] == "none (n < 3)" and np.isnan(row["normality_p"])
        assert row["n"] == 2

    def test_constant_differences_warn(self):
        rng = np.random.default_rng(4)
        a = rng.normal(size=50)
        score = np.stack([a, a + 1.0, rng.normal(size=50)])[:, None, :]
        study = cube.make_study([cube.make_dataset(
            "d", score, systems=["x", "y", "z"], metrics=["m"], instances=range(50))])
        with pytest.warns(ConstantInputWarning,
                          match=r"dataset 'd', metric 'm': 1 pair\(s\) have constant "
                                r"differences; skewness and normality are undefined"):
            table = analyze(study)
        const = table.set_index(["system_a", "system_b"]).loc[("x", "y")]
        assert np.isnan(const["skewness"]) and np.isnan(const["normality_p"])
        # a - (a + 1) is -1 only up to rounding: constant for the analysis all the same
        assert const["mean_diff"] == pytest.approx(-1.0) and const["std_diff"] < 1e-15
        assert const["test_statistic"] == "mean"
        other = table.set_index(["system_a", "system_b"]).loc[("x", "z")]
        d = score[0, 0] - score[2, 0]
        assert other["normality_p"] == pytest.approx(stats.shapiro(d).pvalue, rel=1e-12)


# ======================================================================== descriptives
class TestDescriptives:
    def test_columns_against_numpy(self, toy_study):
        table = analyze(toy_study)
        required = ["dataset", "metric", "system_a", "system_b", "n", "skewness",
                    "normality_test", "normality_p", "test_statistic", "recommended",
                    "non_preferred", "inappropriate"]
        assert set(required) <= set(table.columns)
        # toy: 4 systems x 3 metrics (6 pairs); other: 3 systems x 3 metrics (3 pairs)
        assert len(table) == 6 * 3 + 3 * 3
        for _, row in table.iterrows():
            ds = cube.datasets(toy_study)[row["dataset"]]
            x = ds.score.sel(metric=row["metric"])
            a = x.sel(system=row["system_a"]).values
            b = x.sel(system=row["system_b"]).values
            keep = ~np.isnan(a)
            a, b = a[keep], b[keep]
            assert row["n"] == keep.sum()
            for suffix, v in (("a", a), ("b", b), ("diff", a - b)):
                ref = {"mean": v.mean(), "median": np.median(v), "std": v.std(ddof=1),
                       "min": v.min(), "max": v.max(), "q1": np.percentile(v, 25),
                       "q3": np.percentile(v, 75)}
                for stat, value in ref.items():
                    assert row[f"{stat}_{suffix}"] == pytest.approx(value, rel=1e-12,
                                                                    abs=1e-15)
            assert row["skewness"] == pytest.approx(stats.skew(a - b, bias=True), rel=1e-9)
        # m2 has 3 dropped instances in "toy"
        assert set(table.query("dataset == 'toy' and metric == 'm2'")["n"]) == {20}

    def test_pairs_and_filters(self, toy_study):
        base = analyze(toy_study, pairs="baseline:sys0", datasets=["toy"], metrics="m1")
        assert list(base["system_b"]) == ["sys0"] * 3
        assert list(base["system_a"]) == ["sys1", "sys2", "sys3"]
        listed = analyze(toy_study, pairs=[("sys2", "sys1")], datasets="toy", metrics=["m3"])
        assert len(listed) == 1 and listed.iloc[0]["mean_diff"] == pytest.approx(
            listed.iloc[0]["mean_a"] - listed.iloc[0]["mean_b"], abs=1e-15)
        # swapping a and b flips the location statistics and the skewness
        swapped = analyze(toy_study, pairs=[("sys1", "sys2")], datasets="toy",
                          metrics=["m3"]).iloc[0]
        assert swapped["mean_diff"] == pytest.approx(-listed.iloc[0]["mean_diff"])
        assert swapped["skewness"] == pytest.approx(-listed.iloc[0]["skewness"])

    def test_units_with_dropped_instances(self, toy_study):
        # "toy" m2 keeps 20 of 23 instances: 6 units of size 3, then a NaN unit
        table = analyze(evaluation_units(toy_study, size=3), datasets="toy")
        assert set(table.loc[table["metric"] == "m2", "n"]) == {6}
        assert set(table.loc[table["metric"] == "m1", "n"]) == {7}
        assert table["mean_diff"].notna().all()

    def test_dask_study_same_result(self, toy_study):
        pd.testing.assert_frame_equal(analyze(cube.chunk(toy_study, system=2)),
                                      analyze(toy_study))


class TestErrors:
    @pytest.mark.parametrize("alpha", [0, 1, 1.5])
    def test_alpha(self, toy_study, alpha):
        with pytest.raises(ParameterError, match=r"`alpha` must be in \(0, 1\); got"):
            analyze(toy_study, alpha=alpha)

    def test_unknown_system(self, toy_study):
        with pytest.raises(UnknownSystemError, match=r"unknown system 'nope'"):
            analyze(toy_study, pairs="baseline:nope")

    def test_unknown_metric_and_dataset(self, toy_study):
        with pytest.raises(ParameterError,
                           match=r"`metrics`: unknown metric\(s\) \['bleu'\]; the study has "
                                 r"\['m1', 'm2', 'm3'\]"):
            analyze(toy_study, metrics=["bleu"])
        with pytest.raises(ParameterError,
                           match=r"`datasets`: unknown dataset\(s\) \['news'\]; the study "
                                 r"has \['toy', 'other'\]"):
            analyze(toy_study, datasets="news")


# ======================================================================== data-file.txt
@pytest.mark.parametrize("size", [1, 7])
def test_data_file_follows_table2(data_file_study, size):
    """NLPStatTest's data-file.txt (sentence BLEU of two WMT18 systems, 2001 lines).

    Recomputed here with scipy on the unit differences (numpy.array_split units):
    EU size 1: n = 2001, skewness -0.2637, Shapiro-Wilk p = 1.15e-23 -> symmetric, not
    normal -> Wilcoxon recommended, t inappropriate.
    EU size 7: n = 285, skewness -0.0638, Shapiro-Wilk p = 0.288 -> symmetric and normal
    -> t recommended.
    """
    raw = np.loadtxt(DATA_FILE)
    d = raw[:, 0] - raw[:, 1]
    d = np.array([c.mean() for c in np.array_split(d, len(d) // size)])
    row = analyze(evaluation_units(data_file_study, size=size)).iloc[0]
    assert (row["system_a"], row["system_b"], row["n"]) == ("A", "B", len(d))
    assert row["skewness"] == pytest.approx(stats.skew(d, bias=True), rel=1e-9)
    assert row["normality_test"] == "shapiro-wilk"
    assert row["normality_p"] == pytest.approx(stats.shapiro(d).pvalue, rel=1e-9)
    assert row["mean_diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert table_row(row) == expected_row(d)
    assert table_row(row) == (ROW_SYMMETRIC if size == 1 else ROW_NORMAL)


def test_pairs_in_slabs_give_the_same_table(monkeypatch):
    import multistat.analysis as an
    from multistat._budget import Budget

    rng = np.random.default_rng(2)
    S, n = 7, 400
    score = np.round(rng.normal(size=(S, 1, n)) + rng.normal(size=(1, 1, n)), 1)
    score[6] = score[5] + 1.0  # constant differences for one pair
    ds = cube.make_dataset("d", score, systems=[f"s{i}" for i in range(S)], metrics=["m"],
                           instances=range(n))
    st = cube.make_study({"d": ds})
    with pytest.warns(ConstantInputWarning, match="1 pair"):
        whole = analyze(st)

    class TwoPairs(Budget):  # slabs of 2 of the 21 pairs, whatever the sizes
        def slabs(self, total, bytes_per_row, *, multiple=1):
            return [slice(i, min(i + 2, total)) for i in range(0, total, 2)]

    monkeypatch.setattr(an.Budget, "of", classmethod(lambda cls, v=None: TwoPairs(1)))
    with pytest.warns(ConstantInputWarning, match="1 pair"):
        slabs = analyze(st)
    pd.testing.assert_frame_equal(whole, slabs)
