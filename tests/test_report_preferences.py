"""Report section of the Bradley-Terry leaderboard (issue 26): the display table, the
rank-interval figure, the section in ``write_report`` and the stand-alone page of
``multistat preferences --report``. Real battles from MQM newstest2020 zh-en."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import MQM_ZHEN, assert_one_line_error
from conftest import run_cli as run
from test_preferences import mqm_battles

import multistat
from multistat.errors import DataValidationError
from multistat.report import preferences as rp


@pytest.fixture(scope="module")
def board():
    return multistat.bradley_terry(mqm_battles(300), n_resamples=200, seed=1)


def test_display_table_and_files(board, tmp_path):
    disp = rp.preference_leaderboard(board)
    assert list(disp.columns) == ["Cluster", "Rank", "Rank range", "Rank 95% CI",
                                  "System", "Score", "Score CI", "P(best)", "Beats",
                                  "Battles", "Win rate"]
    assert disp["System"].tolist() == board["system"].tolist()  # best first
    assert disp["Battles"].tolist() == [str(n) for n in board["n_battles"]]
    assert disp["Score"].iloc[0] == f"{board['score'].iloc[0]:.0f}"
    html = rp.write_preferences(board, tmp_path)
    assert html.startswith('<section id="preferences">') and "data:image/png;base64," in html
    assert "13500 battles between 10 systems" in html
    assert (tmp_path / "figures/preference_rank_intervals.png").stat().st_size > 1000
    md = (tmp_path / "tables/preferences.md").read_text()
    rules = sum("───" in line for line in md.splitlines())
    assert rules == board["cluster"].nunique() - 1  # one rule between clusters
    assert r"\midrule" in (tmp_path / "tables/preferences.tex").read_text()
    back = pd.read_csv(tmp_path / "tables/preferences.csv")
    assert back["system"].tolist() == board["system"].tolist()


def test_section_in_the_html_report(board, tmp_path):
    study = multistat.load(MQM_ZHEN, format="long", sep=r"\s+", score_col="mqm_avg_score",
                           instance_col="seg_id", metric="mqm")
    results = multistat.compare(study, tests=("t",), effect_sizes=False)
    path = tmp_path / "lb.parquet"
    multistat.write_parquet(board, path, metadata=board.attrs["multistat"])
    html = multistat.report.write_report(results, tmp_path / "rep",
                                         sections={"preferences": path}).read_text()
    assert 'id="preferences"' in html and 'href="#preferences"' in html
    assert (tmp_path / "rep/figures/preference_rank_intervals.png").is_file()


def test_cli_report_page_and_bad_table(tmp_path, capsys):
    src = tmp_path / "battles.csv"
    mqm_battles(200).to_csv(src, index=False)
    status, out, err = run(["preferences", src, "-o", tmp_path / "lb.parquet", "--report",
                            tmp_path / "rep", "--n-resamples", 100], capsys)
    assert status == 0, err
    page = (tmp_path / "rep/preferences.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="preferences"' in page
    assert f"wrote {tmp_path / 'rep/preferences.html'}" in out
    with pytest.raises(DataValidationError, match=r"lacks column\(s\) \['n_battles'"):
        rp.check_preferences(pd.DataFrame({"system": ["a"]}).assign(
            **{c: 1.0 for c in rp.NEEDED if c not in ("system", "n_battles")}))
    inside = tmp_path / "r2" / "tables" / "battles.csv"
    inside.parent.mkdir(parents=True)
    inside.write_bytes(src.read_bytes())
    status, _, err = run(["preferences", inside, "-o", tmp_path / "x.csv", "--report",
                          tmp_path / "r2"], capsys)
    assert_one_line_error(status, err, "holds the input file")


def test_page_states_what_was_resampled_and_names_sparse_systems(tmp_path):
    battles = mqm_battles(150)
    per_item = multistat.bradley_terry(battles, n_resamples=100, seed=1, item="item")
    html = rp.write_preferences(per_item, tmp_path / "a")
    assert "bootstrap over items (column &#x27;item&#x27;, 150 items: all battles of an " \
           "item resampled together)" in html
    per_battle = multistat.bradley_terry(battles, n_resamples=100, seed=1)
    html = rp.write_preferences(per_battle, tmp_path / "b")
    assert "bootstrap over battles, each battle resampled as independent" in html
    assert "too few battles" not in html
    extra = pd.DataFrame({"model_a": ["newcomer", "newcomer"],
                          "model_b": ["Online-B.1605", "Human-A.0"],
                          "winner": ["model_a", "model_b"]})
    with pytest.warns(multistat.human.preferences.PreferenceWarning, match="newcomer"):
        sparse = multistat.bradley_terry(pd.concat([battles, extra]), n_resamples=100,
                                         seed=1)
    html = rp.write_preferences(sparse, tmp_path / "c")
    assert "too few battles to have a finite score" in html
    assert "<li>newcomer: no finite score in" in html
