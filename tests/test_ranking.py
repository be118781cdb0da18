"""Leaderboards (multistat.rank): clusters, rank ranges and rank intervals.

Expectations are computed by hand from the design of each study (comments say how).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import labels_study

import multistat
from multistat.leaderboard import ranking
from multistat.errors import ParameterError


# ----------------------------------------------------------------------------- arrays
def test_point_ranks_average_ties_and_direction():
    # hand: scores 3, 1, 3, 2 -> higher is better: 1.5, 4, 1.5, 3; lower is better reversed
    assert ranking.point_ranks(np.array([3, 1, 3, 2.])).tolist() == [1.5, 4, 1.5, 3]
    assert ranking.point_ranks(np.array([3, 1, 3, 2.]), False).tolist() == [3.5, 1, 3.5, 2]


def test_resampled_means_equal_but_for_rounding_tie():
    # integer scores: two systems with the same resampled sum have the same mean in exact
    # arithmetic, but a BLAS product may sum them in another order (the last bit then
    # depends on the kernels); 0.1 + 0.2 against 0.3 is such a pair. They must tie (each
    # 1/2 of "best", average rank), as exact ties do, while a real gap of 1e-9 does not.
    third = 0.1 + 0.2
    assert third != 0.3
    dist = np.array([[third, 0.3, 0.1], [third, 0.3, 0.1], [0.3, 0.3 - 1e-9, 0.1]])
    rd = ranking.rank_distribution(dist, True, confidence_level=0.5)
    np.testing.assert_allclose(rd["p_best"], [(0.5 + 0.5 + 1) / 3, (0.5 + 0.5) / 3, 0])
    np.testing.assert_allclose(rd["expected_rank"], [(1.5 + 1.5 + 1) / 3, (1.5 + 1.5 + 2) / 3,
                                                     3])
    # the snapped values: runs within 1e-12 of the row's scale take their smallest value,
    # NaN and infinities stay apart
    snapped = ranking._snap_ties(np.array([[third, np.nan, 0.3, -np.inf, np.inf, 1.0]]))
    np.testing.assert_array_equal(snapped, [[0.3, np.nan, 0.3, -np.inf, np.inf, 1.0]])


def test_rank_distribution_by_hand():
    # 4 resamples x 3 systems; ranks per row (1 best, higher is better):
    # [3,2,1] -> 1,2,3 ; [1,2,3] -> 3,2,1 ; [5,5,1] -> 1.5,1.5,3 ; [4,1,2] -> 1,3,2
    dist = np.array([[3, 2, 1], [1, 2, 3], [5, 5, 1], [4, 1, 2]], float)
    rd = ranking.rank_distribution(dist, True, confidence_level=0.5)
    np.testing.assert_allclose(rd["expected_rank"], [6.5 / 4, 8.5 / 4, 9 / 4])
    # p_best: system 0 first in rows 0, 3 and shares row 2 -> (1 + 1 + 0.5) / 4
    np.testing.assert_allclose(rd["p_best"], [2.5 / 4, 0.5 / 4, 1 / 4])
    assert rd["p_best"].sum() == pytest.approx(1.0)
    # 50 % equal-tailed: quantiles 0.25 and 0.75 of the empirical cdf (inverted cdf):
    # system 0 ranks sorted 1, 1, 1.5, 3 -> q.25 = 1, q.75 = 1.5
    assert rd["rank_ci_low"][0] == 1 and rd["rank_ci_high"][0] == 1.5
    # system 2 ranks sorted 1, 2, 3, 3 -> 1, 3
    assert rd["rank_ci_low"][2] == 1 and rd["rank_ci_high"][2] == 3
    # lower is better: the mirror image
    rl = ranking.rank_distribution(-dist, False, confidence_level=0.5)
    for k in rd:
        np.testing.assert_allclose(rl[k], rd[k])


def test_clusters_and_ranges_non_transitive_decisions():
    # sorted best first s0 > s1 > s2 > s3; decisions: s0>s2, s0>s3, s1>s3, s2>s3, NOT s0>s1,
    # NOT s1>s2. Boundaries: after 0? needs s0>s1: no. after 1? needs s1>s2: no.
    # after 2? needs s0,s1,s2 > s3: yes -> clusters 1,1,1,2.
    better = np.zeros((4, 4), bool)
    for i, j in [(0, 2), (0, 3), (1, 3), (2, 3)]:
        better[i, j] = True
    order = np.arange(4)
    assert ranking.clusters(order, better).tolist() == [1, 1, 1, 2]
    low, high, beats, beaten_by = ranking.rank_ranges(better)
    # low = 1 + #better than it; high = 4 - #worse than it
    assert low.tolist() == [1, 1, 2, 4]
    assert high.tolist() == [2, 3, 3, 4]
    assert beats.tolist() == [2, 1, 1, 0] and beaten_by.tolist() == [0, 0, 1, 3]
    # drop s2 > s3: no boundary anywhere
    better[2, 3] = False
    assert ranking.clusters(order, better).tolist() == [1, 1, 1, 1]
    # a full order: every system its own cluster, whatever the input order of systems
    score = np.array([2., 4., 1., 3.])
    everything = score[:, None] > score[None, :]  # every higher score significantly better
    order = ranking.score_order(score, True)
    assert order.tolist() == [1, 3, 0, 2]
    assert ranking.clusters(order, everything).tolist() == [3, 1, 4, 2]


def test_better_matrix_directions():
    # pairs (0,1) a better, (0,2) b better, (1,2) not rejected
    better = ranking.better_matrix(3, [0, 0, 1], [1, 2, 2], [True, True, False],
                                   [1.0, -1.0, 1.0])
    assert better.tolist() == [[False, True, False], [False, False, False],
                               [True, False, False]]


# ----------------------------------------------------------------------------- a study
def planted_frame(n=400, seed=1):
    """Five systems with a clear order and two planted exact ties.

    ``top1``/``top2`` and ``low1``/``low2`` differ by +-0.5 on exactly half the instances
    each way (mean difference exactly 0, tied scores); ``mid`` is 5 below the top and 5
    above the bottom with instance noise sd 1 (z ~ 100: every test rejects).
    """
    rng = np.random.default_rng(seed)
    base = rng.normal(50, 10, n)
    flip = np.where(np.arange(n) % 2 == 0, 0.5, -0.5)
    rng.shuffle(flip)
    top1 = base + 10 + rng.normal(0, 1, n)
    low1 = base + rng.normal(0, 1, n)
    systems = {"top1": top1, "top2": top1 + flip, "mid": base + 5 + rng.normal(0, 1, n),
               "low1": low1, "low2": low1 - flip}
    rows = []
    for s, v in systems.items():
        for metric, values in (("score", v), ("error", -v)):
            rows.append(pd.DataFrame({"dataset": "planted", "system": s, "metric": metric,
                                      "instance": [f"i{i:04d}" for i in range(n)],
                                      "score": values}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    # a real file: long CSV read with the error metric declared lower-is-better
    path = tmp_path_factory.mktemp("rank") / "planted.csv"
    planted_frame().to_csv(path, index=False)
    return multistat.load(path, lower_is_better=("error",))


@pytest.fixture(scope="module")
def board(planted):
    return multistat.rank(planted, n_resamples=2000, seed=3)


def test_rank_columns_and_metadata(board):
    assert tuple(board.columns) == ranking.COLUMNS
    meta = board.attrs["multistat"]
    assert meta["test"] == "bootstrap" and meta["test_requested"] == "auto"
    assert meta["correction"] == "westfall-young" and meta["seed"] == 3  # "auto"
    assert meta["floor_notes"] == []
    assert meta["n_resamples"] == 2000 and "boundary" in meta["rule"]


@pytest.mark.parametrize("metric", ["score", "error"])
def test_planted_clusters_ranges_intervals(board, metric):
    b = board[board.metric == metric].set_index("system")
    # hand: tiers {top1, top2} > mid > {low1, low2}; exact ties within a tier
    assert b.loc[["top1", "top2"], "rank"].tolist() == [1.5, 1.5]
    assert b.loc["mid", "rank"] == 3
    assert b.loc[["low1", "low2"], "rank"].tolist() == [4.5, 4.5]
    assert b["cluster"].to_dict() == {"top1": 1, "top2": 1, "mid": 2, "low1": 3, "low2": 3}
    # rank ranges: top: 1 + 0 better, 5 - 3 worse = [1, 2]; mid [3, 3]; low [4, 5]
    assert b.loc["top1", ["rank_range_low", "rank_range_high"]].tolist() == [1, 2]
    assert b.loc["mid", ["rank_range_low", "rank_range_high"]].tolist() == [3, 3]
    assert b.loc["low2", ["rank_range_low", "rank_range_high"]].tolist() == [4, 5]
    assert b["beats"].to_dict() == {"top1": 3, "top2": 3, "mid": 2, "low1": 0, "low2": 0}
    assert b["beaten_by"].to_dict() == {"top1": 0, "top2": 0, "mid": 2, "low1": 3,
                                        "low2": 3}
    # rank intervals: a tied pair swaps places in about half of the resamples -> [1, 2]
    assert b.loc["top1", ["rank_ci_low", "rank_ci_high"]].tolist() == [1, 2]
    assert b.loc["mid", ["rank_ci_low", "rank_ci_high"]].tolist() == [3, 3]
    assert b.loc["low1", ["rank_ci_low", "rank_ci_high"]].tolist() == [4, 5]
    # p_best ~ 1/2 for each top system (symmetric differences), MC sd 0.011 at B = 2000
    assert b.loc["top1", "p_best"] == pytest.approx(0.5, abs=0.05)
    assert b[["p_best"]].sum().item() == pytest.approx(1.0)
    assert b.loc["mid", "p_best"] == 0 and b.loc["mid", "expected_rank"] == 3
    assert b.loc["top1", "expected_rank"] + b.loc["top2", "expected_rank"] == \
        pytest.approx(3.0)
    # rows best first
    assert b["rank"].is_monotonic_increasing


def test_rank_scores_are_system_scores(planted, board):
    # the same shared plan, seed and resamples as multistat.system_scores
    ref = multistat.system_scores(planted, n_resamples=2000, seed=3, confidence_level=0.95)
    merged = board.merge(ref, on=["dataset", "metric", "system"], suffixes=("", "_ref"))
    assert len(merged) == len(board) == 10
    for c in ("score", "ci_low", "ci_high"):
        np.testing.assert_array_equal(merged[c], merged[f"{c}_ref"])


def test_rank_other_tests_same_planted_structure(planted):
    for test in ("t", "wilcoxon", "permutation"):
        b = multistat.rank(planted, test=test, n_resamples=2000, metrics=["score"])
        assert b.set_index("system")["cluster"].to_dict() == {
            "top1": 1, "top2": 1, "mid": 2, "low1": 3, "low2": 3}, test
        assert b.attrs["multistat"]["test"] == test


def test_rank_draws_the_bootstrap_plan_once(planted, monkeypatch):
    # the rank intervals take the bootstrap test's own per-system arrays out of compare
    # (compare(..., _resampled=...), the channel the Westfall-Young step-down reads):
    # one plan per metric group whatever the correction; another test's board draws the
    # bootstrap plan for its intervals only
    from multistat import engine

    calls = []
    real = engine.resample
    monkeypatch.setattr(engine, "resample",
                        lambda kind, *a, **k: calls.append(kind) or real(kind, *a, **k))
    cols = ["system", "score", "ci_low", "ci_high", "rank_ci_low", "rank_ci_high",
            "expected_rank", "p_best"]
    boards = {}
    for test, correction, drawn in (("auto", "holm", ["bootstrap"]),
                                    ("auto", "westfall-young", ["bootstrap"]),
                                    ("permutation", "westfall-young",
                                     ["permutation", "bootstrap"])):
        calls.clear()
        boards[test, correction] = multistat.rank(planted, test=test, correction=correction,
                                                  n_resamples=500, seed=2)
        assert calls == drawn, (test, correction)  # "score" and "error": one group
    first = boards["auto", "holm"][cols]
    for key, b in boards.items():
        pd.testing.assert_frame_equal(b[cols], first, check_exact=True, obj=str(key))


def test_demo_known_ties_share_a_cluster():
    from multistat.demo import demo_frame

    study = multistat.from_frame(demo_frame())
    b = multistat.rank(study, n_resamples=10_000)
    assert len(b) == 2 * 3 * 10
    for (ds, metric), g in b.groupby(["dataset", "metric"]):
        c = g.set_index("system")["cluster"]
        for x, y in (("sys-a", "sys-b"), ("sys-d", "sys-e"), ("sys-g", "sys-h")):
            assert c[x] == c[y], (ds, metric, x, y)
        # the best system is in cluster 1 and no range excludes the point rank
        assert g["cluster"].iloc[0] == 1
        assert (g["rank_range_low"] <= g["rank"]).all()
        assert (g["rank"] <= g["rank_range_high"]).all()


def test_rank_errors(planted):
    with pytest.raises(ParameterError, match="`test` must be one of"):
        multistat.rank(planted, test="nope")
    with pytest.raises(ParameterError, match="`confidence_level` must be in"):
        multistat.rank(planted, confidence_level=1.5)
    with pytest.raises(ParameterError, match="`equivalence_margin` must be a positive"):
        multistat.rank(planted, equivalence_margin=-1)
    with pytest.raises(ParameterError, match="unknown metric"):
        multistat.rank(planted, metrics=["bleu"])


# ----------------------------------------------------------------------------- CLI, report
def run_cli(argv, capsys):
    from multistat.cli import main

    try:
        status = main([str(a) for a in argv])
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def test_cli_rank_writes_parquet_and_report(tmp_path, capsys):
    from multistat.io import read_parquet
    from multistat.report import clusters as rr
    from multistat.report import write_report

    src = tmp_path / "planted.csv"
    planted_frame().query("metric == 'score'").to_csv(src, index=False)
    out = tmp_path / "ranking.parquet"
    status, text, err = run_cli(["rank", src, "--out", out, "--n-resamples", 1000,
                                 "--seed", 5, "--test", "t", "--correction", "holm",
                                 "--alpha", 0.01], capsys)
    assert status in (0, None), err
    # the parentheses say what they hold: each system's rank interval
    assert "cluster 1: top1 (rank 1-2), top2 (rank 1-2)" in text
    assert "cluster 2: mid (rank 3-3)" in text
    board = read_parquet(out)
    assert tuple(board.columns) == ranking.COLUMNS
    meta = board.attrs["multistat"]
    assert (meta["test"], meta["correction"], meta["seed"], meta["n_resamples"],
            meta["alpha"]) == ("t", "holm", 5, 1000, 0.01)
    assert board.set_index("system")["cluster"].to_dict() == {
        "top1": 1, "top2": 1, "mid": 2, "low1": 3, "low2": 3}
    # the WMT-style tables: a rule between clusters (Markdown rule row, LaTeX \midrule)
    disp = rr.cluster_leaderboard(board)
    md = rr.to_markdown(disp).splitlines()
    assert [i for i, line in enumerate(md) if "───" in line] == [4, 6]
    assert md[2].startswith("| 1 | 1.5 | 1–2 | 1–2 | top1 |")
    tex = rr.to_latex(disp, caption="c")
    assert tex.count(r"\midrule") == 3  # header rule + 2 cluster boundaries
    # and the HTML report with the section, figure and files
    # the compare run decides as the ranking does (t, Holm, alpha 0.01): one decision per
    # pair in every section (tests/test_report_decisions.py covers a mismatch)
    results = multistat.compare(multistat.load(src), tests=("t",), effect_sizes=False,
                                alpha=0.01)
    html = write_report(results, tmp_path / "rep", sections={"ranking": out}).read_text()
    assert 'id="ranking"' in html and "rank intervals of planted score" in html
    assert (tmp_path / "rep/figures/rank_intervals_planted__score.png").stat().st_size > 1000
    for f in ("ranking.csv", "ranking_planted__score.md", "ranking_planted__score.tex"):
        assert (tmp_path / "rep/tables" / f).is_file()


def test_cli_rank_errors_are_one_line(tmp_path, capsys):
    src = tmp_path / "planted.csv"
    planted_frame().to_csv(src, index=False)
    status, _, err = run_cli(["rank", src, "--out", tmp_path / "r.parquet", "--alpha", 2],
                             capsys)
    assert status == 2 and err.count("\n") == 1 and "`--alpha` must be in" in err
    status, _, err = run_cli(["rank", src, "--out", tmp_path / "r.parquet", "--metrics",
                              "bleu"], capsys)
    assert status == 2 and "unknown metric(s) ['bleu']" in err
    assert not (tmp_path / "r.parquet").exists()


def test_rank_docstring_example():
    import doctest

    result = doctest.testmod(ranking, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0


def test_rank_corpus_metric_reuses_the_plan():
    # a corpus metric (accuracy from summed [correct, 1] statistics): rank intervals come
    # from the corpus kernel on the shared plan, the same numbers as system_scores
    study = labels_study((("best", 0.95), ("good", 0.8), ("good2", 0.8), ("weak", 0.5)),
                         n=400, seed=8, metrics=("accuracy", "macro_f1"), dataset="cls")
    b = multistat.rank(study, n_resamples=2000, seed=1)
    ref = multistat.system_scores(study, n_resamples=2000, seed=1)
    merged = b.merge(ref, on=["dataset", "metric", "system"], suffixes=("", "_ref"))
    np.testing.assert_array_equal(merged["ci_low"], merged["ci_low_ref"])
    for metric, g in b.groupby("metric"):
        c = g.set_index("system")["cluster"]
        # 0.95 vs 0.8 vs 0.5 accuracy at n = 400: z > 7 between tiers; good ~ good2
        assert c["best"] == 1 and c["good"] == c["good2"] == 2 and c["weak"] == 3, metric
        assert g["p_best"].sum() == pytest.approx(1.0)
        assert g.set_index("system").loc["best", "rank_ci_high"] == 1


def test_interval_notes_say_who_chose_the_interval():
    # rank's pairs carry percentile intervals because rank chose them (its default), not
    # the user; compare with ci_method="percentile" is the user's choice, and says so
    from multistat import cube

    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 1, 30)) + np.array([0.6, 0.3, 0.0, -0.2])[:, None, None]
    study = cube.make_study([cube.make_dataset("d", x, systems=list("abcd"), metrics=["m"],
                                               instances=np.arange(30))])
    pairs = ranking.rank_with_pairs(study, n_resamples=200).pairs
    notes = set(pairs["note"].dropna())
    assert notes and all(n.startswith("percentile interval by default (rank's intervals "
                                      "are percentile intervals)") for n in notes), notes
    table = multistat.compare(study, tests=("bootstrap",), ci_method="percentile",
                              n_resamples=200, effect_sizes=False)
    assert table["note"].str.startswith("percentile interval, chosen by the user "
                                        "(ci_method; the default is basic)").all()
    assert not table["note"].str.contains("by choice").any()
