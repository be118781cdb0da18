"""The report's "Meta-analysis across test sets" section, with forest plots
(:func:`multistat.report.forest.forest_plot`).

Draws what :func:`multistat.meta_analysis` computed: each study's effect with its
interval (squares sized by weight), the pooled estimate as a diamond spanning its
confidence interval, and the prediction interval as a line through it (metafor's
``forest()`` layout). Computes no statistic: the numbers come from the pooled table and
:func:`multistat.meta.pooling.study_rows`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from multistat._atomic import write_text
from multistat.report._files import file_stem as _slug
from multistat.report._files import write_csv
from multistat.report._markup import escape as _e
from multistat.report._markup import figure as _img
from multistat.report._markup import table as _table
from multistat.report.forest import forest_plot
from multistat.report.plots import save_png
from multistat.report.tables import _fmt, to_markdown

__all__ = ["forest_plot", "meta_section"]

#: forest plots drawn in the report at most (the pooled table lists every group)
MAX_FOREST = 24


def _label(row, by) -> str:
    return " · ".join(str(row[c]) for c in by)


def meta_section(pooled: pd.DataFrame, studies: pd.DataFrame, figdir, tabdir, *,
                 dpi: int = 110, test: str | None = None) -> str:
    """HTML of the section; writes ``tables/meta.{csv,md}`` and
    ``figures/forest_*.png`` (one per pooled group with at least two studies, the
    report's ``test`` first, at most :data:`MAX_FOREST`).

    ``studies`` is the table of the studies behind each pooled row
    (:func:`multistat.meta.pooling.study_rows`, the analysis stage): drawn, not
    computed."""
    meta = pooled.attrs.get("multistat", {})
    by = [c for c in meta.get("by", ["metric", "system_a", "system_b", "test"])
          if c in pooled]

    write_csv(tabdir / "meta.csv", pooled)  # atomic, formula-like cells neutralised
    cols = [*by, "k", "estimate", "ci_low", "ci_high", "p_value", "tau2", "i2", "pi_low",
            "pi_high"]
    shown = pooled[cols].copy()
    for c in cols[len(by) + 1:]:
        shown[c] = [_fmt(v) for v in shown[c]]
    write_text(tabdir / "meta.md", to_markdown(shown))
    drawable = pooled[pooled["k"] >= 2]
    if test is not None and "test" in drawable and (drawable["test"] == test).any():
        drawable = drawable[drawable["test"] == test]
    drawn = drawable.head(MAX_FOREST)
    rows = studies
    figs = []
    for _, row in drawn.iterrows():
        mask = np.ones(len(rows), bool)
        for c in by:
            mask &= (rows[c].astype(str) == str(row[c])).to_numpy()
        st = rows[mask]
        frame = pd.concat([st[["study", "estimate", "ci_low", "ci_high", "weight"]],
                           pd.DataFrame({"study": [f"pooled ({row['method']})"],
                                         "estimate": [row["estimate"]],
                                         "ci_low": [row["ci_low"]],
                                         "ci_high": [row["ci_high"]], "weight": [1.0],
                                         "pi_low": [row["pi_low"]],
                                         "pi_high": [row["pi_high"]]})],
                          ignore_index=True)
        label = _label(row, by)
        fig = forest_plot(frame, title=f"{label}: τ² = {_fmt(row['tau2'])}, I² = "
                                       f"{100 * row['i2']:.0f}%",
                          xlabel=str(meta.get("effect", "estimate")) + " (a − b)")
        png = save_png(fig, figdir / f"forest_{_slug(*[row[c] for c in by])}.png", dpi=dpi)
        figs.append(_img(png, f"forest plot {label}",
                         f"{label}: studies (squares sized by weight) with "
                         f"{100 * row['confidence_level']:g}% intervals, the pooled "
                         "estimate (diamond) and its prediction interval (dashed)."))
    method = meta.get("method", str(pooled["method"].iloc[0]) if len(pooled) else "")
    h = ['<section id="meta"><h2>Meta-analysis across test sets</h2>',
         f"<p>Each effect pooled across the {_e(meta.get('study', 'dataset'))} column "
         f"({_e(method)} random-effects model, {_e(meta.get('meta_test', 'z'))} "
         "inference; <code>multistat meta</code>): the pooled difference with its "
         "interval, the between-study variance τ² and I² (share of the variability "
         "that is heterogeneity), and the prediction interval for a new test set. "
         f"{len(pooled)} pooled rows, all in <code>tables/meta.csv</code>"
         + (f"; forest plots of the first {len(drawn)}" if len(drawn) < len(drawable)
            else "") + ".</p>",
         _table(shown, cls="meta", numeric=cols[len(by):]), *figs, "</section>"]
    return "".join(h)
