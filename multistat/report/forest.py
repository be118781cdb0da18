"""Forest plot of a meta-analysis: each study's effect with its interval
(squares sized by weight), the pooled estimate as a diamond spanning its confidence
interval, and the prediction interval as a line through it (metafor's ``forest()``
layout). Draws only: it takes a meta-analysis result (or its ``to_frame()``) and computes
nothing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from multistat.report.plots import _t

__all__ = ["forest_plot"]

_INK = "#1a1a1a"
_STUDY = "#0072B2"  # Okabe-Ito blue
_POOLED = "#D55E00"  # Okabe-Ito vermillion


def _num(v) -> str:
    return "" if not np.isfinite(v) else f"{v:.3g}" if abs(v) < 1e-3 and v else f"{v:.4f}"


def forest_plot(result, *, ax=None, title: str | None = None,
                xlabel: str = "effect") -> Figure:
    """Forest plot of a meta-analysis: each study's effect with its interval (squares sized
    by weight), the pooled diamond and the prediction interval.

    Parameters
    ----------
    result : MetaResult or pandas.DataFrame
        A :func:`multistat.meta_analysis` result, or a frame of studies and a last pooled
        row in :meth:`MetaResult.to_frame` layout (``study, estimate, ci_low, ci_high,
        weight`` and, on the pooled row, ``pi_low, pi_high``).
    ax : matplotlib.axes.Axes, optional
        Draw into these axes; by default a new Figure.
    title : str, optional
        The figure's title.
    xlabel : str
        The effect axis label.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (``ax``'s when one is given).

    Examples
    --------
    >>> import multistat
    >>> from multistat.report import forest_plot
    >>> res = multistat.meta_analysis([0.1, 0.3, 0.2], [0.01, 0.02, 0.015])
    >>> fig = forest_plot(res, title="three studies")
    >>> fig.axes[0].get_title()
    'three studies'
    """
    frame = result if isinstance(result, pd.DataFrame) else result.to_frame()
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
