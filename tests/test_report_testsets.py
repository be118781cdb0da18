"""The report's "Across test sets" section (multistat.report.testsets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import multistat
from multistat import cube
from multistat.errors import ParameterError
from multistat.leaderboard.across import across_results, wide_scores
from multistat.report.testsets import _cliques, cd_diagram
from tests.conftest import full_report


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    nodes = {}
    shift = np.array([0.6, 0.3, 0.0, -0.2])[:, None, None]
    for d in ("newstest", "ted", "wmt", "flores"):
        score = rng.normal(size=(4, 2, 40)) + shift
        nodes[d] = cube.make_dataset(d, score, systems=["A", "B", "C", "D"],
                                     metrics=["bleu", "ter"],
                                     instances=[f"i{j}" for j in range(40)],
                                     higher_is_better=[True, False])
    return multistat.compare(cube.make_study(nodes), tests=("t",), effect_sizes=False)


def test_wide_scores_are_oriented_test_set_means(table):
    wide = wide_scores(table, "ter")  # blocks: the 4 test sets of one metric
    assert wide.shape == (4, 4)
    row = table[(table.dataset == "ted") & (table.metric == "ter")
                & (table.system_a == "A") & (table.system_b == "B")].iloc[0]
    assert wide.loc["ted", "A"] == pytest.approx(-row.score_a)  # lower is better
    assert wide.loc["ted", "B"] == pytest.approx(-row.score_b)
    with pytest.raises(ParameterError, match=r"the table has metrics \['bleu', 'ter'\]"):
        wide_scores(table)


def test_report_has_the_section_and_its_files(table, tmp_path):
    path = full_report(table, tmp_path, options={"histogram_pairs": None})
    html = path.read_text(encoding="utf-8")
    assert '<section id="across"><h2>Across test sets</h2>' in html
    assert 'href="#across"' in html
    # one Friedman test per metric over the 4 test sets, never metrics as blocks
    assert html.count("<h3>bleu: 4 test sets</h3>") == 1
    assert html.count("<h3>ter: 4 test sets</h3>") == 1
    assert "blocks (dataset × metric)" not in html
    saved = pd.read_csv(tmp_path / "tables" / "friedman.csv")
    for m in ("bleu", "ter"):
        assert (tmp_path / "figures" / f"cd_diagram_{m}.png").stat().st_size > 1000
        fr = multistat.friedman(wide_scores(table, m))
        assert fr.n_blocks == 4
        assert saved[saved.metric == m].p_value.to_numpy() == pytest.approx(
            fr.pairwise.p_value.to_numpy())
    assert not (tmp_path / "figures" / "cd_diagram.png").exists()
    rep = pd.read_csv(tmp_path / "tables" / "replicability.csv")
    assert set(rep.columns) >= {"k", "k_fisher", "datasets", "better"}
    assert len(rep) == 2 * 6 * 2  # 2 metrics x 6 pairs x 2 claims


def test_no_section_with_one_dataset(tmp_path):
    from multistat.report.testsets import across_section

    rng = np.random.default_rng(1)
    # one test set, several metrics: metric blocks would make a Friedman test; none runs
    ds = cube.make_dataset("only", rng.normal(size=(3, 2, 20)), systems=list("abc"),
                           metrics=["bleu", "chrf"], instances=[f"i{j}" for j in range(20)])
    t = multistat.compare(cube.make_study([ds]), tests=("t",), effect_sizes=False)
    assert across_results(t) == ({}, None)
    assert across_section(t, {}, None, tmp_path, tmp_path) == ""
    html = full_report(t, tmp_path / "rep", options={"histogram_pairs": None}).read_text()
    assert 'id="across"' not in html and "Friedman" not in html
    assert not list((tmp_path / "rep" / "figures").glob("cd_diagram*"))


def test_cliques_and_diagram():
    mr = pd.Series({"a": 1.0, "b": 1.5, "c": 2.8, "d": 3.0})
    # CD 1.0: a-b joined (0.5 < 1), b-c not (1.3), c-d joined (0.2)
    assert _cliques(mr, 1.0) == [(1.0, 1.5), (2.8, 3.0)]
    # CD 1.9: a..c (1.8 < 1.9, a..d is 2.0) and b..d (1.5) overlap, both kept; c-d lies
    # inside b..d and gets no bar of its own
    assert _cliques(mr, 1.9) == [(1.0, 2.8), (1.5, 3.0)]
    wide = pd.DataFrame(np.random.default_rng(2).normal(size=(6, 5)),
                        columns=[f"sys{i}" for i in range(5)])
    fig = cd_diagram(multistat.friedman(wide))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("CD = ") for t in texts)
    assert sum(t.startswith("sys") for t in texts) == 5
