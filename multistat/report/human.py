"""The report's "Human evaluation" section, for a study with ratings by rater.

Per dataset x metric with ratings: the design (raters, items, ratings per item),
Krippendorff's interval alpha per system (agreement of the raters who rated the same
items), the variance components of Card et al.'s crossed model, the mixed-model
leaderboard (the compare table's ``"mixed"`` rows, when the run had them) and a raters x
items power grid for the study's own effect size, like Card et al.'s Figure 6. It draws
and tabulates; the numbers come from :mod:`multistat.human.ratings`,
:mod:`multistat.human.agreement` and :func:`multistat.power.simulate_likert`.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from multistat import cube
from multistat.human.agreement import agreement
from multistat.human.ratings import variance_components
from multistat.power import simulate_likert
from multistat.report._files import write_csv
from multistat.report.plots import save_png

#: the raters x items grid of the power figure
GRID_RATERS = (3, 5, 10, 20)
GRID_ITEMS = (50, 100, 200, 400, 800)


def design_table(ds) -> pd.DataFrame:
    """One row per metric x system: raters, items rated, ratings, ratings per item."""
    r = ds[cube.RATING].transpose(*cube.RATING_DIMS).values
    rows = []
    for m, metric in enumerate(ds.metric.values):
        for s, system in enumerate(ds.system.values):
            present = ~np.isnan(r[s, m])
            items = int(present.any(axis=1).sum())
            rows.append({"metric": str(metric), "system": str(system),
                         "raters": int(present.any(axis=0).sum()), "items": items,
                         "ratings": int(present.sum()),
                         "ratings_per_item": present.sum() / items if items else np.nan})
    return pd.DataFrame(rows)


def power_grid(variance, effect: float, *, raters=GRID_RATERS, items=GRID_ITEMS,
               n_simulations: int = 500, alpha: float = 0.05, seed: int = 0
               ) -> pd.DataFrame:
    """Power of the crossed design for every raters x items cell (long table)."""

    rows = []
    for w in raters:
        for i in items:
            r = simulate_likert(n_items=i, n_workers=w, effect=effect, variance=variance,
                                n_simulations=n_simulations, alpha=alpha, seed=seed)
            rows.append({"raters": w, "items": i, "power": r.power})
    return pd.DataFrame(rows)


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


def human_section(study, results: pd.DataFrame, figdir, tabdir, *, dpi, table_html,
                  img_html, slug, n_resamples: int = 1000) -> str:
    """HTML of the section ('' when no dataset of ``study`` has ratings by rater).

    ``table_html(frame)``, ``img_html(png, alt, caption)`` and ``slug(*parts)`` are the
    report page's own, so markup and file names follow its rules; files are written
    atomically (``save_png``, ``write_csv``).
    """

    if study is None:
        return ""
    nodes = {k: v for k, v in cube.datasets(study).items() if cube.RATING in v}
    if not nodes:
        return ""
    e = html.escape
    intro = ("<p>Ratings by rater: the design, the raters' agreement (Krippendorff's alpha, "
             "interval level, bootstrap interval over items), the variance components of "
             "<code>rating ~ system + (1 + system || rater) + (1 + system || item)</code> "
             "(Card et al. 2020, Table 16), the mixed-model comparisons and the power of "
             "other designs for this study's own effect size.</p>")
    h = ['<section id="human"><h2>Human evaluation</h2>', intro]
    for name, ds in nodes.items():
        design = design_table(ds)
        h.append(f"<h3>{e(name)}</h3>")
        h.append(table_html(design.round(2)))
        write_csv(tabdir / f"human_design_{slug(name)}.csv", design)
        for metric in ds.metric.values:
            metric = str(metric)
            agree = agreement(ds.sel(metric=[metric]), "interval",
                              n_resamples=n_resamples, seed=0)
            h.append(f"<h4>{e(metric)}: agreement</h4>")
            h.append(table_html(agree[["system", "alpha", "ci_low", "ci_high", "n_units",
                                       "n_raters", "note"]].round(3)))
            try:
                # the compare table's own mixed fits, when the run had them (not refitted)
                vc = variance_components(study, dataset=name, metric=metric, fits=results)
            except Exception as exc:  # noqa: BLE001 - a design the model cannot fit
                h.append(f"<p>No variance components: {e(str(exc))}</p>")
                continue
            names = ("worker_intercept", "worker_slope", "item_intercept", "item_slope",
                     "sigma")
            comps = pd.DataFrame([{"component": k, "sd": getattr(vc.variance, k)}
                                  for k in names])
            comps["component"] = comps["component"].str.replace("worker", "rater")
            h.append(f"<h4>{e(metric)}: variance components</h4>")
            h.append(table_html(comps.round(4)))
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
            effect = max(vc.effect, 1e-12)
            grid = power_grid(vc.variance, effect)
            write_csv(tabdir / f"human_power_{slug(name, metric)}.csv", grid)
            png = save_png(power_grid_figure(grid, title=(
                f"{name} · {metric}: power at the observed |beta_1| = {effect:.3g}")),
                figdir / f"human_power_{slug(name, metric)}.png", dpi=dpi)
            h.append(img_html(png, f"power grid {name} {metric}",
                              "Power of the mixed-model test (Wald z on the ANOVA "
                              "estimates, 500 simulations per point) for the pilot's "
                              "variance components and its mean |beta_1|; the dashed "
                              "line is 80 %."))
    h.append("</section>")
    return "".join(h)
