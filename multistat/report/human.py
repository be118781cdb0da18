"""The report's "Human evaluation" section, for a study with ratings by rater.

Per dataset x metric with ratings: the design (raters, items, ratings per item),
Krippendorff's interval alpha per system (agreement of the raters who rated the same
items), the variance components of Card et al.'s crossed model, the mixed-model
leaderboard (the compare table's ``"mixed"`` rows, when the run had them) and a raters x
items power grid for the study's own effect size, like Card et al.'s Figure 6. It draws
and tabulates the tables of :func:`multistat.human.pilot.rating_tables` (the analysis
stage; ``multistat report --study`` runs it when they are not given) and computes nothing.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from multistat.report._files import write_csv
from multistat.report.plots import save_png

#: the section's input tables (:func:`multistat.human.pilot.rating_tables`)
INPUTS = ("human_design", "human_agreement", "human_components", "human_power")


def power_grid_figure(grid: pd.DataFrame, *, title: str) -> Figure:
    """Power against items, one line per number of raters (Card et al. Figure 6)."""
    fig = Figure(figsize=(5.6, 3.4))
    ax = fig.add_subplot()
    for w, g in grid.groupby("raters"):
        ax.plot(g["items"], g["power"], marker="o", label=f"{w} raters")
    ax.axhline(0.8, color="#888", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.minorticks_off()  # the log axis's minor labels would overlap the item counts
    ax.set_xticks(sorted(grid["items"].unique()))
    ax.set_xticklabels([str(v) for v in sorted(grid["items"].unique())])
    ax.set_ylim(0, 1)
    ax.set_xlabel("items rated by every rater under both systems")
    ax.set_ylabel("power")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def components_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The components table the section draws (``dataset, metric, component, sd, effect,
    note``): as given, or from a ``multistat components`` table (its pooled standard
    deviations, stored in its metadata, one row each)."""
    meta = table.attrs.get("multistat", {}) if hasattr(table, "attrs") else {}
    if "component" in table or meta.get("kind") != "variance_components":
        return table
    pooled = meta.get("pooled", {})
    return pd.DataFrame([{"dataset": str(meta.get("dataset", "")),
                          "metric": str(meta.get("metric", "")),
                          "component": str(k).replace("worker", "rater"), "sd": float(v),
                          "effect": float(meta.get("effect", float("nan"))), "note": ""}
                         for k, v in pooled.items()])


def human_section(tables: Mapping, results: pd.DataFrame, figdir, tabdir, *, dpi,
                  table_html, img_html, slug) -> str:
    """HTML of the section ('' when ``tables`` holds none of :data:`INPUTS`).

    ``tables`` maps :data:`INPUTS` to their tables (``human_components`` may also be the
    table of ``multistat components``); ``table_html(frame)``,
    ``img_html(png, alt, caption)`` and ``slug(*parts)`` are the report page's own, so
    markup and file names follow its rules; files are written atomically (``save_png``,
    ``write_csv``).
    """
    given = {k: v for k, v in tables.items() if k in INPUTS and v is not None and len(v)}
    if not given:
        return ""
    empty = pd.DataFrame(columns=["dataset", "metric"])
    design_all = given.get("human_design", empty)
    agree_all = given.get("human_agreement", empty)
    comps_all = components_rows(given.get("human_components", empty))
    grid_all = given.get("human_power", empty)
    e = html.escape
    intro = ("<p>Ratings by rater: the design, the raters' agreement (Krippendorff's alpha, "
             "interval level, bootstrap interval over items), the variance components of "
             "<code>rating ~ system + (1 + system || rater) + (1 + system || item)</code> "
             "(Card et al. 2020, Table 16), the mixed-model comparisons and the power of "
             "other designs for this study's own effect size.</p>")
    h = ['<section id="human"><h2>Human evaluation</h2>', intro]

    def part(frame, name, metric=None):
        if "dataset" not in frame:
            return frame.iloc[0:0]
        sel = frame["dataset"].astype(str) == name
        if metric is not None and "metric" in frame:
            sel &= frame["metric"].astype(str) == metric
        return frame[sel]

    frames = (design_all, agree_all, comps_all, grid_all)
    names = pd.unique(pd.concat([f["dataset"].astype(str) for f in frames if "dataset" in f]))
    for name in names:
        design = part(design_all, name).drop(columns=["dataset"])
        h.append(f"<h3>{e(name)}</h3>")
        if len(design):
            h.append(table_html(design.round(2)))
            write_csv(tabdir / f"human_design_{slug(name)}.csv", design)
        metrics = pd.unique(pd.concat([part(f, name)["metric"].astype(str)
                                       for f in frames if "metric" in f]))
        for metric in metrics:
            agree = part(agree_all, name, metric)
            if len(agree):
                h.append(f"<h4>{e(metric)}: agreement</h4>")
                cols = [c for c in ("system", "alpha", "ci_low", "ci_high", "n_units",
                                    "n_raters", "note") if c in agree]
                h.append(table_html(agree[cols].round(3)))
            comps = part(comps_all, name, metric)
            failed = (comps["note"].astype(str).str.len() > 0 if "note" in comps
                      else pd.Series(False, index=comps.index))
            if len(comps) and failed.all():
                h.append(f"<p>No variance components: {e(str(comps['note'].iloc[0]))}</p>")
                continue
            if len(comps):
                h.append(f"<h4>{e(metric)}: variance components</h4>")
                h.append(table_html(comps[["component", "sd"]].round(4)))
            mixed = results[(results["test"] == "mixed") & (results["dataset"] == name)
                            & (results["metric"] == metric)]
            if len(mixed):
                cols = [c for c in ("system_a", "system_b", "estimate", "ci_low", "ci_high",
                                    "df", "low_df", "p_adjusted", "reject") if c in mixed]
                h.append(f"<h4>{e(metric)}: mixed-model comparisons</h4>")
                h.append(table_html(mixed[cols].round(4)))
                low = mixed["low_df"].fillna(False).astype(bool) if "low_df" in mixed \
                    else pd.Series(False, index=mixed.index)
                if low.any():  # flagged by the test (multistat.significance.mixed.LOW_DF)
                    h.append(f"<p>{int(low.sum())} of {len(mixed)} comparisons have fewer "
                             "than 2 Satterthwaite degrees of freedom (low_df): a t on so "
                             "few df has infinite variance, so their intervals and p-values "
                             "are unreliable. The rater slope variance rests on too few "
                             "raters; more raters, not more items, narrow them.</p>")
            grid = part(grid_all, name, metric)
            if not len(grid):
                continue
            effect = float(grid["effect"].iloc[0]) if "effect" in grid else float("nan")
            grid = grid[["raters", "items", "power"]]
            write_csv(tabdir / f"human_power_{slug(name, metric)}.csv", grid)
            png = save_png(power_grid_figure(grid, title=(
                f"{name} · {metric}: power at the observed |beta_1| = {effect:.3g}")),
                figdir / f"human_power_{slug(name, metric)}.png", dpi=dpi)
            h.append(img_html(png, f"power grid {name} {metric}",
                              "Power of the mixed-model test (Wald z on the ANOVA "
                              "estimates, simulated per point) for the pilot's "
                              "variance components and its mean |beta_1|; the dashed "
                              "line is 80 %."))
    h.append("</section>")
    return "".join(h)
