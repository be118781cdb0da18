"""Report layer: leaderboards, pairwise tables, checklists, figures and the HTML report.

The report draws what the analysis stages wrote and computes no statistic: its sections
(:mod:`multistat.report.sections`, an ordered registry) each read the inputs they declare,
given as ``write_report(results, out_dir, sections={name: table})``;
:func:`multistat.stages.report_inputs` runs the analysis stages whose tables are missing.
matplotlib and seaborn are imported only inside this package.
"""

from importlib import import_module

from multistat._lazy import require_extra

require_extra("report")  # matplotlib, seaborn, pillow: one line naming the extra if missing

from multistat.report.forest import forest_plot
from multistat.report.html import write_report
from multistat.report.plots import (
    heatmap,
    histograms,
    leaderboard_plot,
    power_curve_plot,
    save_png,
)
from multistat.report.tables import (
    checklist,
    leaderboard,
    leaderboard_display,
    leaderboard_scores,
    pairwise_display,
    pairwise_matrix,
    pairwise_table,
    to_latex,
    to_markdown,
)

__all__ = [
    "checklist",
    "forest_plot",
    "heatmap",
    "histograms",
    "leaderboard",
    "leaderboard_display",
    "leaderboard_plot",
    "leaderboard_scores",
    "pairwise_display",
    "pairwise_matrix",
    "pairwise_table",
    "power_curve_plot",
    "save_png",
    "to_latex",
    "to_markdown",
    "write_report",
]


def __getattr__(name):  # the module's name before 0.2 (the README showed it)
    if name == "ranking":
        return import_module("multistat.report.clusters")
    raise AttributeError(f"module 'multistat.report' has no attribute {name!r}")
