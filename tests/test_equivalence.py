"""Equivalence (TOST) columns of compare: p_equivalence, equivalent; rank's
equivalent_to_next."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

import multistat
from multistat.demo import demo_frame


@pytest.fixture(scope="module")
def demo():
    frame = demo_frame()
    return frame, multistat.from_frame(frame)


def scores(frame, dataset, metric, system):
    x = frame[(frame.dataset == dataset) & (frame.metric == metric)
              & (frame.system == system)]
    return x.sort_values("instance")["score"].to_numpy()


@pytest.mark.parametrize("margin", [0.05, 0.2])
def test_tost_t_equals_two_one_sided_scipy_ttest_rel(demo, margin):
    frame, study = demo
    t = multistat.compare(study, tests=("t",), metrics=["likert"], datasets=["newstest"],
                          equivalence_margin=margin, effect_sizes=False)
    assert {"p_equivalence", "p_equivalence_adjusted", "equivalent"} <= set(t.columns)
    for row in t.itertuples():
        a = scores(frame, row.dataset, row.metric, row.system_a)
        b = scores(frame, row.dataset, row.metric, row.system_b)
        # reference: scipy, H0 theta <= -margin (greater) and H0 theta >= margin (less)
        lower = scipy.stats.ttest_rel(a + margin, b, alternative="greater").pvalue
        upper = scipy.stats.ttest_rel(a - margin, b, alternative="less").pvalue
        assert row.p_equivalence == pytest.approx(max(lower, upper), rel=1e-10, abs=1e-14)
    # Holm over the same family (dataset x metric x test)
    from multistat.correct import holm

    r, p = holm(t["p_equivalence"].to_numpy(), 0.05)
    np.testing.assert_allclose(t["p_equivalence_adjusted"], p)
    assert (t["equivalent"] == r).all()
    assert t.attrs["multistat"]["equivalence_margin"] == margin


def test_tost_resampling_and_wilcoxon_by_hand(demo):
    # planted: b = a + d with d = (e, -e), e ~ N(0, 0.05): mean, median and pseudo-median
    # of d are exactly 0, se ~ 0.05 / sqrt(200) = 0.0035. Every test calls the pair
    # equivalent within +-1 (~280 se away) and none within +-0.001 (0.3 se)
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 200
    a = rng.normal(10, 2, n)
    e = rng.normal(0, 0.05, n // 2)
    d = np.concatenate([e, -e])
    c = a + 3 + rng.normal(0, 0.5, n)
    frame = pd.concat([pd.DataFrame({"dataset": "x", "system": s, "metric": "m",
                                     "instance": np.arange(n).astype(str), "score": v})
                       for s, v in (("a", a), ("b", a + d), ("c", c))])
    study = multistat.from_frame(frame)
    for margin, expect in ((1.0, True), (0.001, False)):
        t = multistat.compare(study, tests=("t", "wilcoxon", "bootstrap", "permutation",
                                            "sign"), equivalence_margin=margin,
                              n_resamples=1000, effect_sizes=False)
        ab = t[(t.system_a == "a") & (t.system_b == "b")].set_index("test")
        for test in ("t", "wilcoxon", "bootstrap", "permutation"):
            assert ab.loc[test, "equivalent"] == expect, (test, margin)
        # the pair 3 apart is never equivalent
        ac = t[(t.system_a == "a") & (t.system_b == "c")]
        assert not ac["equivalent"].any()
        # sign: no TOST, NaN with a note
        assert np.isnan(ab.loc["sign", "p_equivalence"])
        assert "no TOST for the sign test" in ab.loc["sign", "note"]


def test_rank_equivalent_to_next(demo):
    _, study = demo
    b = multistat.rank(study, equivalence_margin=0.5, metrics=["likert"],
                       datasets=["newstest"], n_resamples=2000)
    assert list(b.columns)[-1] == "equivalent_to_next"
    assert b["equivalent_to_next"].isna().tolist() == [False] * 9 + [True]
    # each flag is compare's `equivalent` for that adjacent pair
    t = multistat.compare(study, tests=("bootstrap",), metrics=["likert"],
                          datasets=["newstest"], n_resamples=2000, equivalence_margin=0.5,
                          effect_sizes=False, ci_method="percentile")
    eq = {frozenset((r.system_a, r.system_b)): r.equivalent for r in t.itertuples()}
    sysl = b["system"].tolist()
    for i in range(9):
        assert b["equivalent_to_next"].iloc[i] == eq[frozenset((sysl[i], sysl[i + 1]))]
    assert b["equivalent_to_next"].iloc[:9].any()


def test_margin_errors(demo):
    from multistat.errors import ParameterError

    _, study = demo
    for bad in (0, -1.0, float("inf")):
        with pytest.raises(ParameterError, match="`equivalence_margin` must be a (positive|finite)"):
            multistat.compare(study, tests=("t",), equivalence_margin=bad)
