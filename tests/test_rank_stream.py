"""The streamed leaderboard step-down (multistat.leaderboard.stream) against the compare table.

``rank`` without a pairs table takes every pair's decision from the kernels of
multistat.leaderboard._pair_kernels; ``rank_with_pairs`` still runs ``compare(tests=["bootstrap"],
correction="westfall-young")`` and reads the decisions off its table. The two must give
the same leaderboard bit for bit, and the kernels the same p-values as the compare
table's, on studies with clear tiers, with ties (integer scores), with several metrics
in one group and with metrics where lower is better.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import multistat
from multistat import cube
from multistat.leaderboard import stream as rank_stream
from multistat.leaderboard.ranking import rank_request, run_ranking


def _study(S, n, *, seed=0, integer=False, metrics=("score",), gap=0.3, lower=()):
    rng = np.random.default_rng(seed)
    M = len(metrics)
    x = (-gap * (np.arange(S) // 4)[:, None, None] + rng.normal(size=(1, M, n))
         + rng.normal(size=(S, M, n)))
    if integer:
        x = np.round(3 * x)
    ds = cube.make_dataset("d", x, systems=[f"s{i:02d}" for i in range(S)],
                           metrics=list(metrics), instances=np.arange(n),
                           higher_is_better=[m not in lower for m in metrics])
    return cube.make_study([ds])


CASES = {
    "tiers": {"S": 24, "n": 40},
    "ties": {"S": 14, "n": 25, "integer": True, "gap": 0.2},
    "two-metrics": {"S": 12, "n": 30, "metrics": ("m1", "m2"), "lower": ("m2",)},
    "close": {"S": 10, "n": 30, "gap": 0.05, "seed": 3},
    "far": {"S": 16, "n": 50, "gap": 2.0, "seed": 5},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_board_equals_compare_board(case):
    study = _study(**CASES[case])
    req = rank_request(n_resamples=499, seed=7)
    assert rank_stream.applicable(study, req)
    old = run_ranking(study, req, pairs=True)
    new = run_ranking(study, req, pairs=False)
    assert new.pairs is None
    pd.testing.assert_frame_equal(new.table, old.table, check_exact=True)
    keep = ("multistat_version", "alternative", "alpha", "family", "kind", "test",
            "correction", "seed", "n_resamples", "rule", "floor_notes", "input_sha256")
    assert {k: new.table.attrs["multistat"][k] for k in keep} == \
        {k: old.table.attrs["multistat"][k] for k in keep}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_pvalues_equal_the_compare_table(case):
    study = _study(**CASES[case])
    req = rank_request(n_resamples=300, seed=1, alpha=0.1)
    table = run_ranking(study, req, pairs=True).pairs
    for name, _, _, _, _, systems, decisions in rank_stream.decide(study, req):
        for dec in decisions:
            rows = table[(table["dataset"] == name) & (table["metric"] == dec.metric)]
            assert list(rows["system_a"]) == list(systems[dec.ia])
            assert list(rows["system_b"]) == list(systems[dec.ib])
            np.testing.assert_array_equal(dec.estimate, rows["estimate"].to_numpy())
            np.testing.assert_array_equal(dec.p_value, rows["p_value"].to_numpy())
            np.testing.assert_array_equal(dec.p_adjusted, rows["p_adjusted"].to_numpy())
            np.testing.assert_array_equal(dec.reject, rows["reject"].to_numpy())


def test_pair_statistics_sd_is_numpys():
    """The kernel's sd is numpy's ``std(ddof=1)`` of the oriented null column bit for bit
    (numpy's pairwise summation), for lengths around its blocks of 8 and 128."""
    from multistat.leaderboard._pair_kernels import pair_statistics, pairwise_plan

    rng = np.random.default_rng(4)
    for B in (2, 7, 8, 9, 127, 128, 129, 300, 1000, 4099):
        DT = rng.normal(size=(3, B)) * 10.0 ** rng.uniform(-3, 3)
        ia, ib, est = np.array([0, 1]), np.array([1, 2]), np.array([0.1, -0.2])
        out = [np.empty(2) for _ in range(5)]
        pair_statistics(DT, ia, ib, est, 0.0, 0, True, *pairwise_plan(B), *out)
        null = np.abs(DT[ia].T - DT[ib].T - est)  # (B, 2), resamples contiguous per pair
        null = np.asfortranarray(null)
        np.testing.assert_array_equal(out[2], null.std(axis=0, ddof=1))


def test_what_takes_the_compare_table():
    study = _study(8, 20)
    assert not rank_stream.applicable(study, rank_request(test="t"))
    assert not rank_stream.applicable(study, rank_request(correction="holm"))
    assert not rank_stream.applicable(study, rank_request(equivalence_margin=0.1))
    # the public rank() takes the streamed path and gives the compare path's board
    board = multistat.rank(study, n_resamples=199)
    old = run_ranking(study, rank_request(n_resamples=199), pairs=True).table
    pd.testing.assert_frame_equal(board, old, check_exact=True)
