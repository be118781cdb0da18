"""Files written beside the HTML report, all atomically: CSV tables, the DVC metrics JSON
(``metrics.json``) and the DVC plot data (``plots/leaderboard``, ``plots/power``,
``plots/ranking``; one small CSV per dataset × metric or pair)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from multistat import _atomic
from multistat.report import detectability as _detect


def _slug(*parts) -> str:
    from multistat.report.html import _slug as slug

    return slug(*parts)


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    with _atomic.atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


def write_dvc_files(out: Path, res, lb_all, det_all, curves, test) -> None:
    """``metrics.json`` (DVC metrics: leader, significance, MDE per dataset × metric) and
    ``plots/`` (DVC plots: one leaderboard CSV per dataset × metric, one power-curve CSV per
    adjacent pair)."""
    import json
    import shutil

    summary = _detect.study_summary(res, lb_all, det_all, test=test)
    _atomic.write_text(out / "metrics.json", json.dumps(summary, indent=2, sort_keys=True)
                       + "\n")
    plots = out / "plots"
    for sub in ("leaderboard", "power"):
        if (plots / sub).is_dir():
            shutil.rmtree(plots / sub)
        (plots / sub).mkdir(parents=True)
    for (ds, metric), g in lb_all.groupby(["dataset", "metric"], sort=False):
        write_csv(plots / "leaderboard" / f"{_slug(ds, metric)}.csv",
                   g[["rank", "system", "score", "ci_low", "ci_high", "wins"]])
    for (ds, metric, a, b), g in curves.groupby(["dataset", "metric", "system_a",
                                                 "system_b"], sort=False):
        write_csv(plots / "power" / f"{_slug(ds, metric, a, b)}.csv",
                   g[["delta", "power", "n", "mde"]])


def write_rank_plots(out: Path, ranking) -> None:
    """``plots/ranking/<dataset>__<metric>.csv``: expected rank and rank interval per
    system (DVC plots)."""
    import shutil

    from multistat.report.ranking import check_ranking

    board = check_ranking(ranking)
    folder = out / "plots" / "ranking"
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cols = ["system", "rank", "expected_rank", "rank_ci_low", "rank_ci_high", "p_best",
            "cluster"]
    for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False):
        write_csv(folder / f"{_slug(ds, metric)}.csv", g[cols])
