"""Report section of a Bradley-Terry leaderboard (:func:`multistat.bradley_terry`).

Draws and formats only; every number comes from the leaderboard table. The table has
the columns of a :func:`multistat.rank` table for one "dataset x metric" (the battles, on
the Elo scale), so the cluster leaderboard and the rank-interval figure are
:mod:`multistat.report.clusters`'s, with the battles and win rate added.

* :func:`preference_leaderboard` -- the display table (strings), best first;
* :func:`write_preferences` -- ``tables/preferences.{csv,md,tex}``,
  ``figures/preference_rank_intervals.png`` and the HTML section for
  :func:`multistat.report.write_report`;
* :func:`write_preference_page` -- the same section as a stand-alone HTML page
  (``multistat preferences --report DIR``).
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from multistat import _atomic
from multistat._atomic import write_text
from multistat.errors import DataValidationError
from multistat.io import read_parquet
from multistat.report import clusters as _clusters
from multistat.report._files import own_folder, write_csv
from multistat.report._markup import CSS as _CSS
from multistat.report._inputs import check_table
from multistat.report._markup import figure
from multistat.report.plots import save_png

#: the columns of a rank table for one dataset x metric, plus the battles
NEEDED = tuple(c for c in _clusters.NEEDED if c not in ("dataset", "metric")) + (
    "n_battles", "win_rate")


def check_preferences(board) -> pd.DataFrame:
    """The leaderboard (DataFrame or Parquet path), with its columns checked."""

    board = board if isinstance(board, pd.DataFrame) else read_parquet(board)
    if missing := [c for c in NEEDED if c not in board.columns]:
        raise DataValidationError(f"preference leaderboard lacks column(s) {missing} "
                                  "(write it with `multistat preferences` / "
                                  "multistat.bradley_terry)")
    return check_table(board, "preferences")


def _as_ranking(board: pd.DataFrame, name: str) -> pd.DataFrame:
    out = board.assign(dataset=name, metric="Elo")
    meta = dict(board.attrs.get("multistat", {}))
    out.attrs = {"multistat": {**meta, "test": "bootstrap Wald",
                               "correction": meta.get("correction", "holm")}}
    return out


def preference_leaderboard(board, name: str = "battles") -> pd.DataFrame:
    """Display table (strings), best first: the cluster leaderboard of
    :func:`multistat.report.clusters.cluster_leaderboard` plus battles and win rate."""
    board = check_preferences(board)
    ranked = _as_ranking(board, name)
    disp = _clusters.cluster_leaderboard(ranked)
    order = ranked.sort_values(["cluster", "rank", "system"], kind="stable")
    disp["Battles"] = order["n_battles"].astype(int).astype(str).to_numpy()
    disp["Win rate"] = [f"{w:.3f}" for w in order["win_rate"]]
    return disp


def _resampled(meta) -> str:
    """What the bootstrap resampled, in words (the leaderboard's metadata)."""
    if meta.get("resampling") == "items":
        return (f"bootstrap over items (column {meta.get('item_column')!r}, "
                f"{meta.get('n_items')} items: all battles of an item resampled together)")
    return ("bootstrap over battles, each battle resampled as independent (battles that "
            "share a prompt or segment are not: give the item column to resample items)")


def _sparse_note(meta) -> str:
    """A paragraph naming the systems without a finite score in some resamples."""
    sparse = meta.get("sparse_systems") or {}
    if not sparse:
        return ""
    e = html.escape
    items = "".join(f"<li>{e(str(k))}: {e(str(v))}</li>" for k, v in sparse.items())
    return (f"<p>Systems with too few battles to have a finite score in every resample "
            f"(their intervals count those resamples; {e(str(meta.get('scale', '')))}):"
            f"</p><ul>{items}</ul>")


def _section(board, out: Path, dpi: int, name: str) -> str:
    board = check_preferences(board)
    figdir, tabdir = own_folder(out, "figures"), own_folder(out, "tables")

    write_csv(tabdir / "preferences.csv", board)  # atomic, formula-like cells neutralised
    disp = preference_leaderboard(board, name)
    meta = board.attrs.get("multistat", {})
    write_text(tabdir / "preferences.md", _clusters.to_markdown(disp))
    cap = "Bradley-Terry leaderboard (Elo scale); rules separate significance clusters."
    write_text(tabdir / "preferences.tex",
               _clusters.to_latex(disp, caption=cap, label="tab:preferences"))
    fig = _clusters.rank_interval_plot(_as_ranking(board, name))
    fig.axes[0].set_title(f"{name} · Bradley-Terry (Elo) — rank intervals", fontsize=10)
    png = save_png(fig, figdir / "preference_rank_intervals.png", dpi=dpi)
    e = html.escape
    anchor = meta.get("anchor")
    ties = meta.get("ties", "half")
    tie_text = ("a tie counts half a win for each side" if ties == "half" else
                f"ties by Davidson's model (nu = {meta.get('davidson_nu', float('nan')):.3g})")
    return "".join([
        ('<section id="preferences"><h2>Pairwise preferences: Bradley–Terry leaderboard'
        "</h2>"),
        f"<p>{e(str(meta.get('n_battles', '')))} battles between "
        f"{e(str(meta.get('n_systems', len(board))))} systems; maximum-likelihood "
        "Bradley–Terry scores on the Elo scale (400 points = 10:1 odds), "
        + (f"{e(str(anchor))} fixed at 1000" if anchor else "mean score 1000")
        + f"; {e(tie_text)}. Score and rank intervals: {e(_resampled(meta))} "
        f"({e(str(meta.get('n_resamples', '')))} resamples, seed "
        f"{e(str(meta.get('seed', '')))}). {e(meta.get('rule', ''))}.</p>",
        _sparse_note(meta),
        '<div class="grid">', _clusters._html_table(disp),
        figure(png, "rank intervals of the Bradley-Terry leaderboard", "Thick: bootstrap "
               "rank interval; light: rank range from the corrected pairwise decisions; "
               "dashed: cluster boundaries.") + "</div></section>"])


def write_preferences(board, out_dir, *, dpi: int = 110, name: str = "battles") -> str:
    """Write the tables and the figure under ``out_dir``; return the HTML section."""
    return _section(board, Path(out_dir), dpi, name)


def write_preference_page(board, out_dir, *, dpi: int = 110, name: str = "battles",
                          title: str = "multistat: pairwise preferences") -> Path:
    """``out_dir/preferences.html`` (figure embedded) with the tables and figure."""

    out = Path(out_dir)
    section = _section(board, out, dpi, name)
    e = html.escape
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{e(title)}</h1>{section}</main></body></html>\n")
    path = out / "preferences.html"
    _atomic.write_text(path, page)
    return path
