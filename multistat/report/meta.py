"""Forest plots and the report's "Meta-analysis across test sets" section (issue 27).

Draws what :func:`multistat.meta_analysis` computed: each study's effect with its
interval (squares sized by weight), the pooled estimate as a diamond spanning its
confidence interval, and the prediction interval as a line through it (metafor's
``forest()`` layout). Computes no statistic: the numbers come from the pooled table and
:func:`multistat.meta.study_rows`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["forest_plot", "meta_section"]

_INK = "#1a1a1a"
_STUDY = "#0072B2"  # Okabe-Ito blue
_POOLED = "#D55E00"  # Okabe-Ito vermillion
#: forest plots drawn in the report at most (the pooled table lists every group)
MAX_FOREST = 24


def _num(v) -> str:
    return "" if not np.isfinite(v) else f"{v:.3g}" if abs(v) < 1e-3 and v else f"{v:.4f}"


def forest_plot(frame: pd.DataFrame, *, ax=None, title: str | None = None,
                xlabel: str = "effect") -> Figure:
    """Forest plot from a frame of studies and a last pooled row
    (:meth:`multistat.meta.MetaResult.to_frame` layout: ``study, estimate, ci_low,
    ci_high, weight`` and, on the pooled row, ``pi_low, pi_high``).

    Returns the Figure (``ax``'s when one is given)."""
    from multistat.report.plots import _t

    studies, pooled = frame.iloc[:-1], frame.iloc[-1]
    k = len(studies)
    if ax is None:
        fig = Figure(figsize=(7.5, 1.4 + 0.32 * (k + 2)))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    ys = np.arange(k, 0, -1) + 1.0  # studies top-down, the pooled row at y = 0
    w = studies["weight"].to_numpy(float)
    size = 20 + 180 * (w / w.max() if w.size and np.nanmax(w) > 0 else np.ones(k))
    ax.hlines(ys, studies["ci_low"], studies["ci_high"], color=_INK, lw=1)
    ax.scatter(studies["estimate"], ys, s=size, marker="s", color=_STUDY, zorder=3)
    est, lo, hi = pooled["estimate"], pooled["ci_low"], pooled["ci_high"]
    pil, pih = pooled.get("pi_low", np.nan), pooled.get("pi_high", np.nan)
    if np.isfinite(pil) and np.isfinite(pih) and (pil < lo or pih > hi):
        ax.hlines(0, pil, pih, color=_POOLED, lw=1.2, linestyles=(0, (3, 2)))
        ax.vlines([pil, pih], -0.15, 0.15, color=_POOLED, lw=1.2)
    ax.fill([lo, est, hi, est], [0, 0.3, 0, -0.3], color=_POOLED, zorder=3)
    ax.axvline(0, color="#777777", lw=0.8, ls="--", zorder=0)
    labels = [_t(s) for s in studies["study"]] + [_t(pooled["study"])]
    ax.set_yticks(list(ys) + [0], labels)
    ax.set_ylim(-1, k + 2)
    right = [f"{_num(e)} [{_num(a)}, {_num(b)}]" for e, a, b in
             zip(studies["estimate"], studies["ci_low"], studies["ci_high"])]
    right.append(f"{_num(est)} [{_num(lo)}, {_num(hi)}]")
    sec = ax.secondary_yaxis("right")
    sec.set_yticks(list(ys) + [0], right)
    sec.tick_params(length=0, labelsize=8)
    sec.spines["right"].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel(_t(xlabel))
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(_t(title), fontsize=9.5)
    fig.subplots_adjust(left=0.28, right=0.72, top=0.9 if title else 0.96, bottom=0.18)
    return fig


def _label(row, by) -> str:
    return " · ".join(str(row[c]) for c in by)


def meta_section(results: pd.DataFrame, pooled: pd.DataFrame, figdir, tabdir, *,
                 dpi: int = 110, test: str | None = None) -> str:
    """HTML of the section; writes ``tables/meta.{csv,md}`` and
    ``figures/forest_*.png`` (one per pooled group with at least two studies, the
    report's ``test`` first, at most :data:`MAX_FOREST`)."""
    from multistat._atomic import write_text
    from multistat.meta import study_rows
    from multistat.report.html import _e, _img, _slug, _table
    from multistat.report.plots import save_png
    from multistat.report.tables import _fmt, to_markdown

    meta = pooled.attrs.get("multistat", {})
    by = [c for c in meta.get("by", ["metric", "system_a", "system_b", "test"])
          if c in pooled]
    from multistat.report._files import write_csv

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
    rows = study_rows(results, pooled)
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
