"""Report layer: leaderboards, pairwise tables, checklists, figures and the HTML report.

matplotlib and seaborn are imported only inside this package.
"""

from multistat.report.html import write_report
from multistat.report.plots import heatmap, histograms, leaderboard_plot, power_curve, save_png
from multistat.report.tables import (
    checklist,
    leaderboard,
    leaderboard_display,
    pairwise_display,
    pairwise_matrix,
    pairwise_table,
    system_scores,
    to_latex,
    to_markdown,
)

__all__ = [
    "checklist",
    "heatmap",
    "histograms",
    "leaderboard",
    "leaderboard_display",
    "leaderboard_plot",
    "pairwise_display",
    "pairwise_matrix",
    "pairwise_table",
    "power_curve",
    "save_png",
    "system_scores",
    "to_latex",
    "to_markdown",
    "write_report",
]
