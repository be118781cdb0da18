"""Figures of the report: pairwise heatmaps, leaderboards, histograms, power curves.

matplotlib and seaborn are imported here (and only in :mod:`multistat.report`). Figures are
built with the object-oriented API (:class:`matplotlib.figure.Figure`, no pyplot state), so
drawing is thread-safe and needs no display. Colours come from the Okabe-Ito /
seaborn ``"colorblind"`` palette, distinguishable under the common colour-vision
deficiencies; significance is also spelled out in the legend, never by colour alone.

References
----------
Zhu, H. et al. (2020). NLPStatTest: A Toolkit for Comparing NLP System Performance.
AACL-IJCNLP 2020 System Demonstrations, ACL Anthology 2020.aacl-demo.7 (Figure 4: the
pairwise significance heatmap of the WMT17 systems; the data-analysis histograms).
Okabe, M., Ito, K. (2008). Color Universal Design (CUD): How to make figures and
presentations that are friendly to colorblind people. https://jfly.uni-koeln.de/color/
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from PIL import Image

from multistat import _atomic
from multistat.errors import DataValidationError, ParameterError, UnknownSystemError
from multistat.report import _layout
from multistat.report import tables as _tables
from multistat.significance import REGISTRY

# Okabe & Ito (2008) colour-blind-safe colours
BETTER = "#0072B2"  # blue: row system significantly better
WORSE = "#E69F00"  # orange: row system significantly worse
NS = "#E8E8E8"  # light grey: not significant
MISSING = "#FFFFFF"

__all__ = ["MAX_POWER_PANELS", "PAGE_SHRINK", "PAGE_WIDTH", "adjacent_power", "heatmap",
           "heatmap_fits", "histograms", "leaderboard_plot", "power_curve_plot", "save_png"]


def _t(text) -> str:
    """Plain text for matplotlib: ``$`` would switch to mathtext."""
    return str(text).replace("$", r"\$")


def _short(text, width: int = 40) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _labels(names) -> list[str]:
    out: list[str] = []
    seen: dict[str, int] = {}
    for n in names:
        s = _short(n)
        seen[s] = seen.get(s, 0) + 1
        out.append(_t(s if seen[s] == 1 else f"{s} ({seen[s]})"))
    return out


def _scale(values: np.ndarray, standardized: bool) -> tuple[float, int]:
    """Factor (power of ten) and decimals so the largest |value| prints with ~3 digits.

    Differences below 1 (proportions, ROUGE, accuracy) are shown × 100 ("points") or more
    when they are below 0.01; standardized effects are printed as they are.
    """
    finite = np.abs(values[np.isfinite(values)])
    big = float(finite.max()) if finite.size else 0.0
    if standardized or big == 0:
        return 1.0, 2
    factor = 1.0
    if big < 1:
        k = max(2, math.ceil(-math.log10(big) - 1e-12))
        factor = 10.0 ** k
    scaled = big * factor
    return factor, (2 if scaled < 10 else (1 if scaled < 100 else 0))


def heatmap(results: pd.DataFrame, dataset: str, metric: str, *, test: str | None = None,
            annotate: str | None = "auto", study=None, scores=None,
            order=None, max_width: float | None = None) -> Figure:
    """Pairwise heatmap of one dataset × metric: who significantly beats whom.

    Parameters
    ----------
    results : compare table
    dataset, metric : which comparison family to draw
    test : which test's corrected decisions to show (default: the primary test, see
        :func:`multistat.report.tables.primary_tests`)
    annotate : value written in each cell for row − column: ``"estimate"`` (the test's
        estimate of A − B in metric units — mean, median, Hodges-Lehmann or corpus
        difference — rescaled by a power of ten the title states), ``"score_difference"``
        (difference of the systems' scores, ``score_a − score_b``), an effect-size column
        (``"cohens_d"``, ``"hedges_g"``, ``"wilcoxon_r"``, ``"hodges_lehmann"``), ``None``
        for no numbers, or ``"auto"``: the estimate, unless most estimates are exactly 0
        (medians of binary or Likert differences) and the score difference is known
    study, scores : sources of the per-system scores that order the axes (see
        :func:`multistat.report.tables.leaderboard_scores`)
    order : explicit system order (best first) instead, e.g. the ranking's
    max_width : widest figure wanted, in inches (the report's page takes
        :data:`PAGE_WIDTH` = 13 in, 1,430 px at 110 dpi). ``None`` (default): the full-size
        figure, every label and every number drawn, as wide as the systems need. When the
        full-size figure would be wider, a compact one: cells shrink to fit, every
        ``m``-th system is labelled (``"rank. name"``; ``m`` by
        :func:`multistat.report._layout.label_step`, so labels never overlap) and the
        numbers are left out unless they fit their cells.

    Returns
    -------
    matplotlib Figure. Rows and columns are the systems, best first (``higher_is_better``
    decides); a cell is blue when the row system is significantly better than the column
    system after the multiple-comparison correction, orange when significantly worse,
    grey when not significant, white when the pair was not compared.

    Notes
    -----
    Full size: font sizes and cell sizes shrink with the number of systems k (cells 0.62,
    0.5, then 0.42 in from 15 systems on; labels ``clip(11 − 0.16 k, 6.5, 10)`` pt,
    annotation ``clip(11.5 − 0.2 k, 6, 9)`` pt), so every label has a slot of at least
    1.25 em at any k; the figure grows with k. A figure wider than the page allows
    (:data:`PAGE_WIDTH` / :data:`PAGE_SHRINK`, about 30 systems) is one to zoom into: 8 pt
    labels, numbers as large as the widest fits in 85 % of its cell, up to 9 pt (150
    systems: 66 in, 7,300 px at 110 dpi).
    Compact: labels 7 pt, cell = (max_width − label margin) / k, label step
    ``m = ceil(1.25 · 7 pt / (cell · sin 60°))`` (x labels are set at 60°; the same m on
    both axes). The label margins are measured with matplotlib's font metrics.
    """
    df = _tables.check_results(results)
    sub = df[(df["dataset"] == str(dataset)) & (df["metric"] == str(metric))]
    if sub.empty:
        raise ParameterError(f"no results for dataset {dataset!r} and metric {metric!r}")
    test = test or _tables.primary_tests(sub)[(str(dataset), str(metric))]
    if order is None:
        lb = _tables.leaderboard(sub, study=study, scores=scores, test=test)
        order = list(lb["system"])
    part = sub[sub["test"] == test]
    value = annotate or "estimate"
    if value == "auto":
        est = pd.to_numeric(part["estimate"], errors="coerce")
        degenerate = (est == 0).mean() > 0.5
        value = "score_difference" if degenerate and {"score_a", "score_b"} <= set(part) \
            else "estimate"
    eff, dec, _ = _tables.pairwise_matrix(sub, str(dataset), str(metric), test=test,
                                          value=value, order=order)
    k = len(order)
    standardized = value in ("cohens_d", "hedges_g", "wilcoxon_r")
    factor, decimals = _scale(eff.to_numpy(dtype=float), standardized)

    code = np.full((k, k), 3.0)  # 0 worse, 1 n.s., 2 better, 3 missing
    d = dec.to_numpy(dtype=float)
    code[d == -1] = 0
    code[d == 0] = 1
    code[d == 1] = 2
    cmap = ListedColormap([WORSE, NS, BETTER, MISSING])

    vals = eff.to_numpy(dtype=float) * factor
    lay = _heatmap_layout(order, max_width, _cell_texts(vals, decimals) if annotate else [])
    cell, fs_label, fs_annot, step = lay["cell"], lay["fs_label"], lay["fs_annot"], lay["step"]
    label_w, label_h = lay["label_w"], lay["label_h"]
    top, legend = 1.05, 0.45
    side = k * cell
    width = max(label_w + side + 0.35, 7.0)
    height = legend + label_h + side + top
    fig = Figure(figsize=(width, height))
    left = label_w + max(0.0, (width - label_w - side - 0.35) / 2)
    ax = fig.add_axes((left / width, (legend + label_h) / height, side / width,
                       side / height))
    # one quad per cell, white edges for the grid (an image would be resampled to the
    # output size in float RGBA: 1.9 GB at 150 systems, against 0.3 GB for the quads)
    edges = np.arange(k + 1) - 0.5
    ax.pcolormesh(edges, edges, code, cmap=cmap, vmin=-0.5, vmax=3.5, edgecolors="white",
                  linewidth=min(1.2, 0.08 * cell * 72), antialiased=False)
    ax.set_xlim(-0.5, k - 0.5)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_aspect("equal")
    names = lay["labels"]
    ax.set_xticks(np.arange(k), names, rotation=60, ha="right", rotation_mode="anchor",
                  fontsize=fs_label)
    ax.set_yticks(np.arange(k), names, fontsize=fs_label)
    if step > 1:  # tick marks only where a label is
        for axis in (ax.xaxis, ax.yaxis):
            for i, tick in enumerate(axis.get_major_ticks()):
                tick.tick1line.set_visible(i % step == 0)
    ax.tick_params(which="major", length=2)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if annotate and fs_annot:
        for i in range(k):
            for j in range(k):
                if i == j or not np.isfinite(vals[i, j]):
                    continue
                colour = "white" if code[i, j] == 2 else "#1a1a1a"
                txt = f"{vals[i, j]:+.{decimals}f}"
                if float(txt) == 0:
                    txt = f"{0:.{decimals}f}"
                ax.text(j, i, txt, ha="center", va="center", fontsize=fs_annot,
                        color=colour, in_layout=False)
    if fs_annot:
        for i in range(k):
            ax.text(i, i, "—", ha="center", va="center", fontsize=fs_annot,
                    color="#999999", in_layout=False)

    alpha = _one(part["alpha"], "α")
    corr = _one(part["correction"], "") if "correction" in part else \
        str(_tables._meta(results).get("correction", "")) or "no"
    corr = "no" if corr in ("", "None", "none", "nan") else corr
    hib = bool(part["higher_is_better"].iloc[0])
    what = _tables.effect_label(value)
    if value == "score_difference":
        what = "score(A) − score(B)" if factor == 1 else f"score(A) − score(B) (× {factor:g})"
    elif value == "estimate":
        kinds = set(part["statistic_kind"].astype(str)) if "statistic_kind" in part else set()
        spec = REGISTRY.get(str(test))
        what = (spec.estimate_label if spec is not None and spec.estimate_label else
                "median of A − B" if kinds == {"median"} else
                "corpus score A − B" if kinds == {"corpus"} else "mean of A − B")
        what = what if factor == 1 else f"{what} (× {factor:g})"
    else:
        what = f"{what} of A − B"
    fig.suptitle(_t(f"{_short(dataset, 60)} · {_short(metric, 60)}"), fontsize=12,
                 fontweight="bold", y=1 - 0.12 / height, va="top")
    cell_text = (f"cell: {what}, A = row, B = column" if annotate and fs_annot else
                 "A = row, B = column; numbers in the full-size image")
    thinned = f"; one system in {step} labelled" if step > 1 else ""
    ax.set_title(_t(f"{_tables.test_label(test)} test, α = {alpha}, {corr} correction · "
                    f"{'higher' if hib else 'lower'} is better\n"
                    f"{cell_text}; best first{thinned}"),
                 fontsize=9, pad=8)
    handles = [Patch(facecolor=BETTER, label="row significantly better"),
               Patch(facecolor=WORSE, label="row significantly worse"),
               Patch(facecolor=NS, label="not significant")]
    if np.any((code == 3) & ~np.eye(k, dtype=bool)):
        handles.append(Patch(facecolor=MISSING, edgecolor="#999999", label="not compared"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
               fontsize=8, bbox_to_anchor=(0.5, 0.02 / height))
    return fig


#: width of the report's page for figures, in inches (1,430 px at 110 dpi)
PAGE_WIDTH = 13.0
#: the report shows the full-size heatmap on its page while the page shrinks it to no less
#: than this share (25 systems: 13.3 in, 98 %); wider ones get a compact page figure
PAGE_SHRINK = 0.8
_SIN60 = math.sin(math.radians(60))


def _cell_texts(vals: np.ndarray, decimals: int) -> list[str]:
    """The widest-looking cell numbers (the longest strings) for sizing the cells."""
    finite = vals[np.isfinite(vals)]
    if finite.size == 0:
        return []
    return [f"{v:+.{decimals}f}" for v in (finite.min(), finite.max())]


def heatmap_fits(order, max_width: float = PAGE_WIDTH) -> bool:
    """Whether the full-size :func:`heatmap` of systems ``order`` is at most ``max_width``
    inches wide (then ``heatmap(..., max_width=max_width)`` draws it unchanged)."""
    lay = _heatmap_layout(list(order), None, [])
    return max(lay["label_w"] + len(order) * lay["cell"] + 0.35, 7.0) <= max_width


def _heatmap_layout(order, max_width, cell_texts) -> dict:
    """Cell size (in), label and number font sizes (pt), label step and margins (in) of
    :func:`heatmap` (its Notes state the rules)."""

    k = len(order)
    names = _labels(order)
    cell = 0.62 if k <= 8 else (0.5 if k <= 14 else 0.42)
    fs_label = float(np.clip(11 - 0.16 * k, 6.5, 10))
    fs_annot = float(np.clip(11.5 - 0.2 * k, 6, 9))
    w = _layout.text_width_pt(names, fs_label) / 72
    if max_width is not None and max(w + 0.15 + k * cell + 0.35, 7.0) > max_width + 1e-9:
        fs_label = 7.0
        names = [f"{i + 1}. {n}" for i, n in enumerate(names)]
        w = _layout.text_width_pt(names, fs_label) / 72
        cell = max(max_width - w - 0.15 - 0.35, 2.0) / k
        # numbers only where the widest fits its cell with a margin, at 6 pt or more
        unit = _layout.text_width_pt(cell_texts, 1.0)
        fit = min(9.0, 0.85 * cell * 72 / unit if unit else 9.0,
                  cell * 72 / _layout.LINE)
        fs_annot = fit if fit >= 6 else 0.0
    elif max(w + 0.15 + k * cell + 0.35, 7.0) > PAGE_WIDTH / PAGE_SHRINK:
        # too wide for the page: a figure to zoom into, so larger type (8 pt labels,
        # numbers as large as their cells allow up to 9 pt)
        fs_label = 8.0
        w = _layout.text_width_pt(names, fs_label) / 72
        unit = _layout.text_width_pt(cell_texts, 1.0)
        fs_annot = max(fs_annot, min(9.0, 0.85 * cell * 72 / unit)) if unit else fs_annot
    step = _layout.label_step(cell * 72, fs_label, 60)
    return {"cell": cell, "fs_label": fs_label, "fs_annot": fs_annot, "step": step,
            "labels": _layout.thin(names, step), "label_w": w + 0.15,
            "label_h": w * _SIN60 + _layout.LINE * fs_label / 72 * 0.5 + 0.25}


def _one(col: pd.Series, name: str) -> str:
    vals = pd.unique(col.dropna().astype(str))
    if len(vals) == 0:
        return "?"
    return vals[0] if len(vals) == 1 else "varies"


def leaderboard_plot(lb: pd.DataFrame) -> Figure:
    """Dot-and-whisker leaderboard of one dataset × metric (best at the top).

    ``lb`` is one dataset × metric of :func:`multistat.report.tables.leaderboard`; the
    whiskers are the score intervals (absent when no interval is known) and the right
    margin says how many systems each one significantly beats.
    """
    if lb.empty:
        raise DataValidationError("`lb` (leaderboard) is empty")
    if lb[["dataset", "metric"]].drop_duplicates().shape[0] != 1:
        raise ParameterError("`lb` must hold one dataset × metric; filter the leaderboard")
    k = len(lb)
    fs = float(np.clip(11 - 0.16 * k, 6.5, 10))
    left_w = max(len(_short(s)) + len(str(r)) + 2 for r, s in zip(lb["rank"], lb["system"])) \
        * fs * 0.6 / 72 + 0.15
    right_w = 8 * fs * 0.6 / 72 + 0.2
    width, height = left_w + 5.0 + right_w, 0.26 * k + 1.2
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((left_w / width, 0.6 / height, 5.0 / width, (height - 1.0) / height))
    y = np.arange(k)[::-1]
    colour = sns.color_palette("colorblind")[0]
    score = lb["score"].to_numpy(dtype=float)
    if np.isfinite(score).any():
        lo, hi = lb["ci_low"].to_numpy(dtype=float), lb["ci_high"].to_numpy(dtype=float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.errorbar(score[ok], y[ok], xerr=[score[ok] - lo[ok], hi[ok] - score[ok]], fmt="o",
                    color=colour, ecolor=colour, elinewidth=1.2, capsize=2, markersize=4)
        ax.plot(score[~ok], y[~ok], "o", color=colour, markersize=4)
        ax.set_xlabel(_t(f"{_short(lb['metric'].iloc[0], 50)} "
                         f"({'higher' if lb['higher_is_better'].iloc[0] else 'lower'} is "
                         f"better; bars: {100 * lb['confidence_level'].iloc[0]:g}% CI)"),
                      fontsize=9)
    else:
        ax.barh(y, lb["wins"], color=colour)
        ax.set_xlabel("systems significantly beaten (no scores available)", fontsize=9)
    ax.set_yticks(y, [_t(f"{r}. {_short(s)}") for r, s in zip(lb["rank"], lb["system"])],
                  fontsize=fs)
    ax.set_ylim(-0.7, k - 0.3)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    sec = ax.secondary_yaxis("right")
    sec.set_yticks(y, [f"beats {w}" for w in lb["wins"]], fontsize=fs)
    sec.tick_params(length=0)
    ax.set_title(_t(f"{_short(lb['dataset'].iloc[0], 60)} · {_short(lb['metric'].iloc[0], 60)}"
                    f" — leaderboard ({lb['test'].iloc[0]} test after correction)"),
                 fontsize=10)
    return fig


def histograms(study, dataset: str, metric: str, system_a: str, system_b: str, *,
               bins="auto") -> Figure:
    """Histograms of the scores of A, of B and of the paired differences A − B.

    The data-analysis view of NLPStatTest: the shape of A − B (skewness, outliers, ties)
    decides between mean- and median-based tests. The difference panel marks 0, the mean
    and the median. Scores are read from ``multistat.cube.datasets(study)[dataset]``;
    instances that are NaN (dropped) are left out pairwise.
    """
    # heavy: xarray, lazily
    from multistat import cube as _cube

    ds_all = _cube.datasets(study)
    if dataset not in ds_all:
        raise ParameterError(f"`dataset` {dataset!r} is not in the study; datasets: "
                             f"{list(ds_all)}")
    ds = ds_all[dataset]
    if metric not in ds["metric"].values:
        raise ParameterError(f"`metric` {metric!r} is not in dataset {dataset!r}; metrics: "
                             f"{list(map(str, ds['metric'].values))}")
    for name, s in (("system_a", system_a), ("system_b", system_b)):
        if s not in ds["system"].values:
            raise UnknownSystemError(f"`{name}` {s!r} is not a system of dataset "
                                     f"{dataset!r}")
    a = np.asarray(ds["score"].sel(system=system_a, metric=metric).values, dtype=float)
    b = np.asarray(ds["score"].sel(system=system_b, metric=metric).values, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    diff = a - b
    pal = sns.color_palette("colorblind")
    fig = Figure(figsize=(11, 3.4))
    axes = fig.subplots(1, 3)
    lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    for ax, x, name, c in ((axes[0], a, system_a, pal[0]), (axes[1], b, system_b, pal[1])):
        sns.histplot(x=x, ax=ax, bins=bins, color=c, binrange=(lo, hi) if hi > lo else None)
        ax.set_title(_t(f"{'A' if x is a else 'B'} = {_short(name, 34)} "
                        f"(mean {np.mean(x):.3g})"), fontsize=9)
        ax.set_xlabel(_t(_short(metric, 40)), fontsize=8)
        ax.axvline(float(np.mean(x)), color="black", linewidth=1, label="mean")
    sns.histplot(x=diff, ax=axes[2], bins=bins, color=pal[2])
    axes[2].axvline(0, color="#555555", linestyle=":", linewidth=1, label="0")
    axes[2].axvline(float(np.mean(diff)), color="black", linewidth=1.2, label="mean")
    axes[2].axvline(float(np.median(diff)), color=pal[3], linestyle="--", linewidth=1.2,
                    label="median")
    axes[2].legend(fontsize=7, frameon=False)
    sd = float(np.std(diff, ddof=1)) if diff.size > 1 else float("nan")
    skew = float(pd.Series(diff).skew()) if diff.size > 2 else float("nan")
    axes[2].set_title(f"A − B (n = {diff.size}, sd = {sd:.3g}, skewness = {skew:.2f})",
                      fontsize=9)
    axes[2].set_xlabel("difference", fontsize=8)
    for ax in axes:
        ax.tick_params(labelsize=7)
        ax.set_ylabel("count", fontsize=8)
    kind = str(ds["kind"].sel(metric=metric).values) if "kind" in ds.coords else "mean"
    note = " (per-instance scores of a corpus metric; the corpus score is not their mean)" \
        if kind == "corpus" else ""
    fig.suptitle(_t(f"{_short(dataset, 50)} · {_short(metric, 50)}{note}"), fontsize=10)
    fig.subplots_adjust(left=0.055, right=0.99, bottom=0.15, top=0.83, wspace=0.28)
    return fig


_HUES = ("delta", "true_effect", "effect_size", "effect", "difference", "agreement", "test")


def power_curve_plot(table: pd.DataFrame, *, x: str = "n", y: str = "power",
                     hue: str | None = None, target: float = 0.8, title: str = "",
                     se: str | None = "power_se", type_m: str | None = "type_m") -> Figure:
    """Power against sample size, one line per value of ``hue``, with the target line.

    Parameters
    ----------
    table : plain DataFrame with at least the columns ``x`` (sample size, default ``n``) and
        ``y`` (power in [0, 1], default ``power``); optionally ``hue`` (default: the first of
        ``delta, true_effect, effect_size, effect, difference, agreement, test`` that
        varies), ``se`` (Monte Carlo standard error of the power, drawn as a ±1.96 se band)
        and ``type_m`` (Gelman & Carlin's exaggeration ratio among significant results, as
        in :class:`multistat.power.simulation.SimulationResult`): when present a second
        panel shows it against n with the no-exaggeration line at 1.
    target : the power drawn as a dashed horizontal line (80 % by convention)
    title : figure title

    Returns
    -------
    matplotlib Figure. The x axis is logarithmic when the sizes span more than 8×.

    References
    ----------
    Card, D. et al. (2020). With Little Power Comes Great Responsibility. EMNLP.
    doi:10.18653/v1/2020.emnlp-main.745
    """
    for c in (x, y):
        if c not in table:
            raise DataValidationError(f"power table lacks column {c!r}; has "
                                      f"{list(table.columns)}")
    if table.empty:
        raise DataValidationError("power table is empty")
    if hue is None:
        hue = next((h for h in _HUES if h in table and table[h].nunique() > 1), None)
    elif hue not in table:
        raise ParameterError(f"`hue` {hue!r} is not a column of the power table; has "
                             f"{list(table.columns)}")
    with_m = bool(type_m and type_m in table
                  and np.isfinite(pd.to_numeric(table[type_m], errors="coerce")).any())
    fig = Figure(figsize=(11.0, 4.0) if with_m else (6.4, 4.0))
    axes = fig.subplots(1, 2) if with_m else [fig.add_subplot()]
    ax = axes[0]
    groups = [(None, table)] if hue is None else list(table.groupby(hue, sort=True))
    pal = sns.color_palette("colorblind", max(len(groups), 1))
    markers = "osD^vP*Xh<>p"
    for i, (level, g) in enumerate(groups):
        g = g.sort_values(x)
        xs, ys = g[x].to_numpy(dtype=float), g[y].to_numpy(dtype=float)
        label = None if level is None else _t(f"{hue} = {_fmt_level(level)}")
        style = {"marker": markers[i % len(markers)], "markersize": 4,
                 "color": pal[i % len(pal)], "linewidth": 1.4}
        ax.plot(xs, ys, label=label, **style)
        if se and se in g:
            s = g[se].to_numpy(dtype=float)
            ax.fill_between(xs, np.clip(ys - 1.96 * s, 0, 1), np.clip(ys + 1.96 * s, 0, 1),
                            color=pal[i % len(pal)], alpha=0.18, linewidth=0)
        if with_m:
            axes[1].plot(xs, pd.to_numeric(g[type_m], errors="coerce").to_numpy(dtype=float),
                         label=label, **style)
    ax.axhline(target, color="#444444", linestyle="--", linewidth=1,
               label=f"{100 * target:g} % power")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("power")
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    if with_m:
        axes[1].axhline(1, color="#444444", linestyle="--", linewidth=1,
                        label="no exaggeration")
        axes[1].set_ylabel("Type-M (exaggeration: |significant estimate| / |true|)")
        axes[1].legend(fontsize=8, frameon=False, loc="upper right")
    xs_all = table[x].to_numpy(dtype=float)
    xs_all = xs_all[np.isfinite(xs_all) & (xs_all > 0)]
    ticks = np.unique(xs_all)
    for a in axes:
        if xs_all.size and xs_all.max() / xs_all.min() > 8:
            a.set_xscale("log")
        if 1 < ticks.size <= 12:
            a.set_xticks(ticks, [f"{t:g}" for t in ticks])
            a.minorticks_off()
        a.set_xlabel("sample size n" if x == "n" else _t(x))
        a.grid(color="#e5e5e5", linewidth=0.6)
    if title:
        fig.suptitle(_t(title), fontsize=10)
    fig.set_layout_engine("constrained")
    return fig


#: at most this many adjacent pairs get a power panel (the first in rank order); the
#: report lists every adjacent pair in a table
MAX_POWER_PANELS = 12


def adjacent_power(curves: pd.DataFrame, dataset: str, metric: str, *,
                   target: float = 0.8, cols: int = 3,
                   max_panels: int = MAX_POWER_PANELS) -> Figure:
    """Power against the true difference, one panel per pair adjacent in the ranking.

    ``curves``: :func:`multistat.report.detectability.power_curves` rows of one dataset ×
    metric (columns ``system_a, system_b, n, delta, power, mde``), pairs in rank order.
    Only the first ``max_panels`` pairs are drawn (:data:`MAX_POWER_PANELS` = 12: 4 rows
    of 3); the title says how many of how many. The dashed line is ``target`` power, the
    dotted one the pair's smallest detectable difference.
    """
    pairs = list(curves.groupby(["system_a", "system_b"], sort=False))
    if not pairs:
        raise DataValidationError(f"no power curves for {dataset} / {metric}")
    total = len(pairs)
    pairs = pairs[:max(1, int(max_panels))]
    cols = max(1, min(cols, len(pairs)))
    rows = math.ceil(len(pairs) / cols)
    fig = Figure(figsize=(3.3 * cols, 2.5 * rows + 0.6))
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, ((a, b), g) in zip(axes, pairs):
        ax.plot(g["delta"], g["power"], color=BETTER, lw=1.8)
        ax.axhline(target, color="0.4", ls="--", lw=0.9)
        mde = float(g["mde"].iloc[0])
        if np.isfinite(mde):
            ax.axvline(mde, color="0.4", ls=":", lw=0.9)
        ax.set_ylim(0, 1.02)
        ax.set_title(_t(f"{_short(a, 30)} vs\n{_short(b, 30)} (n = {int(g['n'].iloc[0])})"),
                     fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # tick labels never collide
        ax.set_xlabel(_t(f"true difference ({_short(metric, 20)})"), fontsize=8)
        ax.set_ylabel("power", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[len(pairs):]:
        ax.set_visible(False)
    shown = (f"all {total} adjacent pairs" if len(pairs) == total else
             f"the first {len(pairs)} of {total} adjacent pairs, in rank order")
    fig.suptitle(_t(f"{_short(dataset, 40)} · {_short(metric, 40)}: {shown}"), fontsize=9)
    fig.tight_layout()
    return fig


def _fmt_level(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):g}"
    return str(v)


def save_png(fig: Figure, path=None, *, dpi: int = 110, colors: int | None = 64) -> bytes:
    """PNG bytes of ``fig`` (also written to ``path`` when given).

    ``colors``: quantize to a palette of that many colours (fast octree; the figures are
    flat colours and anti-aliased text, so 64 colours look the same at a third of the
    size); None keeps full RGBA. The PNG carries no date, so reruns are byte-identical.
    """

    buf = io.BytesIO()
    if colors:  # Agg's RGBA buffer straight into the quantizer: no PNG encode + decode
        # heavy: matplotlib, lazily
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas, old_dpi = FigureCanvasAgg(fig), fig.dpi
        try:
            fig.set_dpi(dpi)
            canvas.draw()
            img = Image.frombuffer("RGBA", canvas.get_width_height(physical=True),
                                   canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
        finally:
            fig.set_dpi(old_dpi)
        img = img.quantize(colors=colors, method=Image.Quantize.FASTOCTREE)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
    else:
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    data = buf.getvalue()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with _atomic.atomic_open(path, "wb") as fh:
            fh.write(data)
    return data
