"""The report's "Metric meta-evaluation" section: per dataset, the metric leaderboard with
clusters (:func:`multistat.meta_evaluate`), each metric's value with its bootstrap
interval, and a heatmap of the Pearson correlations between the metrics (and the human
scores) that :func:`multistat.meta_evaluate` computed. Draws only."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from multistat.errors import DataValidationError
from multistat.io import read_parquet
from multistat.report._files import own_folder, write_csv
from multistat.report._inputs import check_table
from multistat.report._markup import figure
from multistat.report.clusters import _html_table, _slug
from multistat.report.plots import save_png

BOARD = ("dataset", "metric", "value", "ci_low", "ci_high", "rank", "cluster")
MATRIX = ("dataset", "metric_a", "metric_b", "correlation")


def _frame(obj, name: str, cols) -> pd.DataFrame:
    if obj is None:
        return None
    if isinstance(obj, pd.DataFrame):
        frame = obj
    else:
        frame = read_parquet(obj)
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise DataValidationError(f"`{name}` lacks column(s) {missing}; has "
                                  f"{list(frame.columns)} (write it with `multistat "
                                  f"meta-evaluate`)")
    return check_table(frame, name)


def metric_plot(board: pd.DataFrame):
    """Each metric's value with its bootstrap interval, best at the top, coloured by
    cluster; dashed lines separate clusters."""

    k = len(board)
    fig = Figure(figsize=(7.0, 0.3 * k + 1.3))
    ax = fig.add_subplot()
    y = np.arange(k)
    cl = board["cluster"].astype(int).to_numpy()
    palette = sns.color_palette("colorblind", max(3, int(cl.max())))
    colours = [palette[(c - 1) % len(palette)] for c in cl]
    ax.hlines(y, board["ci_low"], board["ci_high"], colors=colours, linewidth=2.5)
    ax.scatter(board["value"], y, c=colours, edgecolors="black", s=36, zorder=3)
    for i in np.flatnonzero(np.diff(cl)):
        ax.axhline(i + 0.5, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_yticks(y, [f"{m} (c{c})" for m, c in zip(board["metric"], cl)], fontsize=8)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_xlabel(f"{board['statistic'].iloc[0] if 'statistic' in board else 'value'} "
                  "with the human scores (bootstrap interval)")
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(f"{board['dataset'].iloc[0]} — metrics by agreement, clusters", fontsize=10)
    fig.tight_layout()
    return fig


def correlation_heatmap(matrix: pd.DataFrame, order=None):
    """Heatmap of the Pearson correlations between metrics (one dataset)."""

    wide = matrix.pivot(index="metric_a", columns="metric_b", values="correlation")
    if order is not None:
        order = [m for m in order if m in wide.index]
        wide = wide.loc[order, order]
    k = len(wide)
    fig = Figure(figsize=(0.45 * k + 2.6, 0.45 * k + 1.8))
    ax = fig.add_subplot()
    sns.heatmap(wide, ax=ax, vmin=-1, vmax=1, cmap="vlag", annot=k <= 16, fmt=".2f",
                annot_kws={"fontsize": 6}, cbar_kws={"label": "Pearson r"}, square=True)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(labelsize=7)
    ax.set_title(f"{matrix['dataset'].iloc[0]} — correlation between metrics", fontsize=10)
    fig.tight_layout()
    return fig


def write_metaeval(board, out_dir, *, matrix=None, dpi: int = 110) -> str:
    """Write ``tables/metaeval.csv`` and ``figures/metaeval_<dataset>.png`` (and
    ``figures/metric_correlations_<dataset>.png`` with ``matrix``) under ``out_dir``;
    return the HTML section (figures embedded)."""

    board = _frame(board, "metaeval", BOARD)
    matrix = _frame(matrix, "metaeval_matrix", MATRIX)
    out = Path(out_dir)
    figdir, tabdir = own_folder(out, "figures"), own_folder(out, "tables")
    write_csv(tabdir / "metaeval.csv", board)  # atomic, formula-like cells neutralised
    meta = board.attrs.get("multistat", {})
    e = html.escape
    h = ['<section id="metaeval"><h2>Metric meta-evaluation</h2>',
         (f"<p>Agreement of each metric with the human scores "
         f"({e(str(meta.get('human', '')))}, {e(str(meta.get('level', '')))} level). "
         f"{e(str(meta.get('rule', '')))}. Intervals: percentile bootstrap over the items "
         f"({e(str(meta.get('n_resamples', '')))} resamples, seed "
         f"{e(str(meta.get('seed', '')))}).</p>")]
    for ds, g in board.groupby("dataset", sort=False):
        g = g.reset_index(drop=True)
        slug = _slug(ds)
        shown = pd.DataFrame({
            "Metric": g["metric"], "Value": g["value"].map(lambda v: f"{v:.4f}"),
            "95% CI": [f"[{lo:.4f}, {hi:.4f}]" for lo, hi in zip(g["ci_low"], g["ci_high"])],
            "Rank": g["rank"], "Cluster": g["cluster"]})
        rows = [_html_table(shown)]
        png = save_png(metric_plot(g), figdir / f"metaeval_{slug}.png", dpi=dpi)
        h.append(f"<h3>{e(str(ds))}</h3><div class=\"grid\">{''.join(rows)}")
        h.append(figure(png, f"metric leaderboard of {ds}", "Value and bootstrap interval "
                        "per metric; dashed: cluster boundaries.") + "</div>")
        if matrix is not None and (matrix["dataset"] == ds).any():
            m = matrix[matrix["dataset"] == ds]
            order = [meta.get("human")] + list(g["metric"])
            png = save_png(correlation_heatmap(m, order), figdir /
                           f"metric_correlations_{slug}.png", dpi=dpi)
            h.append(figure(png, f"correlations between metrics of {ds}", "Pearson "
                            "correlation between the metrics' scores (and the human "
                            "scores) over the judged cells."))
    h.append("</section>")
    return "".join(h)
