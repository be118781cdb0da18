"""``multistat report --ranking R`` without a compare table: the one-page leaderboard
(multistat.report.leaderboard_page). The browser test at 5,000 systems is in
tests/test_report_browser.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from multistat import cube
from multistat.cli import main
from multistat.io import read_parquet


@pytest.fixture(scope="module")
def ranking(tmp_path_factory):
    rng = np.random.default_rng(2)
    S, n = 12, 40
    x = -0.8 * (np.arange(S) // 4)[:, None] + rng.normal(size=(S, n))
    ds = cube.make_dataset("news<b>", x[:, None, :], systems=[f"sys-{i}" for i in range(S)],
                           metrics=["chrF"], instances=np.arange(n))
    folder = tmp_path_factory.mktemp("lb")
    cube.save(cube.make_study([ds]), folder / "study.nc")
    assert main(["rank", str(folder / "study.nc"), "--out", str(folder / "r.parquet"),
                 "--n-resamples", "499"]) in (0, None)
    return folder / "r.parquet"


def test_page_from_the_ranking_alone(ranking, tmp_path, capsys):
    board = read_parquet(ranking)
    assert main(["report", "--ranking", str(ranking), "--out", str(tmp_path)]) in (0, None)
    assert "wrote" in capsys.readouterr().out
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    # one row per system, best first, with what the ranking says
    rows = re.findall(r"<tr><td>(.*?)</tr>", text)
    assert len(rows) == len(board)
    best = board.sort_values("rank").iloc[0]
    assert f"<td>{best['system']}</td>" in rows[0]
    assert f"<td>{int(best['beats'])}</td>" in rows[0]
    assert "news&lt;b&gt; · chrF" in text and "news<b>" not in text  # escaped
    assert "<script>" in text and "http" not in text.split("<script>")[1]
    assert "499 resamples, seed 0" in text
    assert (tmp_path / "tables" / "ranking.csv").exists()
    assert list((tmp_path / "figures").glob("scores_*.png"))


@pytest.mark.parametrize("args, message", [
    ([], "give the compare table RESULTS, or --ranking"),
    (["--ranking", "{r}", "--study", "{r}"], "--study need(s) the compare table RESULTS"),
])
def test_what_the_page_refuses(ranking, tmp_path, capsys, args, message):
    args = [a.format(r=ranking) for a in args]
    with pytest.raises(SystemExit) as exc:
        main(["report", *args, "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_out_is_required(ranking, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", "--ranking", str(ranking)])
    assert exc.value.code == 2 and "--out is required" in capsys.readouterr().err
