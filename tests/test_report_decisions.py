"""One decision per pair in a report (multistat.report.decisions).

A compare run with Wilcoxon and bootstrap + Holm (999 resamples) and a ranking with the
defaults (bootstrap + Westfall-Young) disagree on many pairs of a 20-system study: Holm's
smallest adjusted bootstrap p over 190 pairs is 190 * 2/1000 = 0.38 (none significant),
the step-down's 2/1000. The report must show the ranking's decisions everywhere.
"""

from __future__ import annotations

import json
from html import unescape

import numpy as np
import pandas as pd
import pytest
from conftest import assert_one_line_error as one_line_error
from conftest import run_cli as run

import multistat
from multistat import cube
from multistat.errors import DataValidationError, ParameterError, ResamplingFloorWarning
from multistat.leaderboard.ranking import rank_with_pairs
from multistat.report import plots as _plots
from multistat.report import write_report

S, N = 20, 40


@pytest.fixture(scope="module")
def study():
    # tiers of 5 systems, 1.5 apart (8 standard errors of a mean difference at n = 40)
    rng = np.random.default_rng(7)
    x = (-1.5 * (np.arange(S) // 5)[:, None] + rng.normal(size=N)[None, :]
         + rng.normal(size=(S, N)))
    ds = cube.make_dataset("tiers", x[:, None, :], systems=[f"s{i:02d}" for i in range(S)],
                           metrics=["score"], instances=np.arange(N))
    return cube.make_study([ds])


@pytest.fixture(scope="module")
def runs(study):
    results = multistat.compare(study, tests=("wilcoxon", "bootstrap"), correction="holm",
                                n_resamples=999, effect_sizes=False)
    ranked = rank_with_pairs(study, n_resamples=2000)
    return results, ranked


def test_every_section_shows_the_rankings_decisions(runs, tmp_path, monkeypatch):
    results, ranked = runs
    board, pairs = ranked.table, ranked.pairs
    assert board["cluster"].max() == 4 and int(pairs["reject"].sum()) > 0
    # the compare run's bootstrap decides nothing (Holm at its floor): a report mixing the
    # two would say "beats 0" beside clusters
    assert not results.loc[results.test == "bootstrap", "reject"].any()
    seen = {}
    real = _plots.heatmap

    def spy(rows, dataset, metric, *, test=None, **kw):
        seen[(dataset, metric)] = (rows[rows["test"] == test], test)
        return real(rows, dataset, metric, test=test, **kw)

    monkeypatch.setattr(_plots, "heatmap", spy)
    html = unescape(write_report(
        results, tmp_path, sections={"ranking": board, "ranking_pairs": pairs},
        options={"test": "wilcoxon", "histogram_pairs": None}).read_text())
    # stated once, at the top
    sentence = ("One decision per pair: every “beats” count, heatmap star, cluster and "
                "rank range in this report comes from the bootstrap test, westfall-young "
                "correction per dataset × metric, α = 0.05, 2,000 resamples (seed 0) (the "
                "ranking's decisions).")
    assert html.count(sentence) == 1
    assert html.index(sentence) < html.index('id="summary"')
    # leaderboard "Beats" (tables/leaderboard.csv wins) = the ranking's beats
    lb = pd.read_csv(tmp_path / "tables" / "leaderboard.csv").set_index("system")
    assert lb["test"].eq("bootstrap").all()
    pd.testing.assert_series_equal(lb["wins"].sort_index(),
                                   board.set_index("system")["beats"].sort_index(),
                                   check_names=False, check_dtype=False)
    # overview and DVC metrics: the same pairs
    m = json.loads((tmp_path / "metrics.json").read_text())["results"]["tiers"]["score"]
    assert m["significant_pairs"] == int(pairs["reject"].sum())
    assert m["leader_significantly_best"] is False  # the top tier has 5 equal systems
    # heatmap stars: drawn from the ranking's pair rows
    rows, test = seen[("tiers", "score")]
    assert test == "bootstrap" and rows["correction"].eq("westfall-young").all()
    key = ["system_a", "system_b"]
    got = rows.set_index(key)["significant"].sort_index()
    want = pairs.set_index(key)["reject"].sort_index()
    pd.testing.assert_series_equal(got, want, check_names=False)
    # the Wilcoxon tables are labelled as another test
    assert "(wilcoxon test — another test, not the decisions stated at the top)" in html


def test_compare_rows_serve_when_they_match(study, tmp_path):
    # a compare run with the ranking's own test, correction and alpha needs no pair table
    board = multistat.rank(study, test="t", correction="holm")
    results = multistat.compare(study, tests=("t", "wilcoxon"), correction="holm",
                                effect_sizes=False)
    html = unescape(write_report(results, tmp_path, sections={"ranking": board},
                                 options={"histogram_pairs": None}).read_text())
    assert "comes from the t test, holm correction per dataset × metric, α = 0.05" in html
    lb = pd.read_csv(tmp_path / "tables" / "leaderboard.csv").set_index("system")
    assert (lb["wins"].sort_index() == board.set_index("system")["beats"].sort_index()).all()


def test_mismatch_is_an_error(runs, tmp_path, capsys):
    results, ranked = runs
    msg = (r"the ranking decides pairs with the bootstrap test, westfall-young correction, "
           r"α = 0\.05, but the compare table ran it with the bootstrap test, holm "
           r"correction, α = 0\.05 \(first: tiers / score\); for one decision per pair")
    with pytest.raises(ParameterError, match=msg):
        write_report(results, tmp_path / "a", sections={"ranking": ranked.table},
                     options={"histogram_pairs": None})
    # a pair table of another run
    other = ranked.pairs.assign(correction="holm")
    with pytest.raises(DataValidationError, match="the ranking pair table decides with the "
                                             "bootstrap test, holm correction"):
        write_report(results, tmp_path / "b", sections={"ranking": ranked.table,
                                                        "ranking_pairs": other},
                     options={"histogram_pairs": None})
    # the command line: one line, exit 2
    res, rk = tmp_path / "results.parquet", tmp_path / "ranking.parquet"
    multistat.write_parquet(results, res, metadata=results.attrs["multistat"])
    multistat.write_parquet(ranked.table, rk, metadata=ranked.table.attrs["multistat"])
    one_line_error(*run(["report", res, "--out", tmp_path / "c", "--ranking", rk],
                        capsys)[::2],
                   "but the compare table ran it with the bootstrap test, holm correction",
                   "--ranking-pairs")


def test_cli_rank_pairs_out_feeds_the_report(study, tmp_path, capsys):
    src = tmp_path / "study.nc"
    cube.save(study, src)
    res = tmp_path / "results.parquet"
    assert run(["compare", src, "--tests", "t", "--out", res, "--no-progress",
                "--no-effect-sizes"], capsys)[0] == 0
    rk, pr = tmp_path / "ranking.parquet", tmp_path / "pairs.parquet"
    status, out, err = run(["rank", src, "--out", rk, "--pairs-out", pr, "--n-resamples",
                            "2000"], capsys)
    assert status == 0, err
    assert f"wrote {rk} and {pr}" in out
    pairs = multistat.io.read_parquet(pr)
    assert len(pairs) == S * (S - 1) // 2
    assert pairs.attrs["multistat"]["kind"] == "ranking_pairs"
    assert pairs.attrs["multistat"]["correction"] == "westfall-young"
    status, out, err = run(["report", res, "--out", tmp_path / "rep", "--ranking", rk,
                            "--ranking-pairs", pr], capsys)
    assert status == 0, err
    html = unescape((tmp_path / "rep" / "report.html").read_text())
    assert "comes from the bootstrap test, westfall-young correction" in html
    assert "(t test — another test, not the decisions stated at the top)" in html


def test_floor_note_reaches_the_report(study, tmp_path):
    with pytest.warns(ResamplingFloorWarning, match="over 190 pairs"):
        ranked = rank_with_pairs(study, correction="holm", n_resamples=999)
    results = multistat.compare(study, tests=("t",), effect_sizes=False)
    html = unescape(write_report(
        results, tmp_path, sections={"ranking": ranked.table, "ranking_pairs": ranked.pairs},
        options={"histogram_pairs": None}).read_text())
    assert ("Note: bootstrap test with holm correction over 190 pairs (tiers / score): the "
            "smallest adjusted p-value it can give is 0.38 > alpha = 0.05") in html
    # without a ranking: the compare run's own deciding test is checked the same way
    results = multistat.compare(study, tests=("bootstrap",), correction="holm",
                                n_resamples=999, effect_sizes=False)
    html = unescape(write_report(results, tmp_path / "b", options={"histogram_pairs": None}).read_text())
    assert "Note: bootstrap test with holm correction over 190 pairs" in html
    assert "n_resamples >= 7,599" in html  # 2 * 190 / (B + 1) <= 0.05 (by hand)
