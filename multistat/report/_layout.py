"""Label layout for figures with many systems: text widths, label thinning, nice tick steps,
and the overlap check the tests (and anyone) can run on a drawn figure.

The rules are stated once here so figures and their captions say the same thing:

* a label needs a slot of :data:`LINE` × its font size (in points) across its baseline;
* with ``k`` labels on a pitch of ``p`` points, set at ``angle`` degrees to the axis, every
  ``m``-th label is drawn, ``m`` the smallest integer with ``m · p · sin(angle) ≥ LINE ·
  size`` (:func:`label_step`); the first label is always drawn;
* numeric axes (ranks 1 … k) get ticks at a "nice" step from 1, 2, 5, 10, 20, 25, 50, 100, …
  (:func:`nice_step`), the smallest whose tick spacing holds the widest tick label plus a
  gap.

:func:`overlaps` measures what was drawn: it asks matplotlib's Agg renderer for each text's
extent, rebuilds the text's own (possibly rotated) rectangle and tests pairs of rectangles
for intersection with the separating-axis theorem, so rotated tick labels whose axis-aligned
boxes overlap but whose glyph boxes do not are not reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

#: line pitch of a label, in units of its font size (DejaVu Sans: ascender + descender is
#: 1.164 em; 1.25 em leaves a visible gap)
LINE = 1.25

__all__ = ["HINTING", "LINE", "label_step", "nice_step", "outside", "overlaps",
           "text_width_pt", "thin"]


@lru_cache(maxsize=4096)
def _width(text: str, size: float) -> float:
    w, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=size),
                                                         ismath=False)
    return float(w)


#: Agg's hinting draws text up to 13 % wider than its outline (measured on 150 system
#: names at 6.5–9 pt and 50–600 dpi; 9 pt at 20 dpi: 27 %): widths carry this margin
HINTING = 1.15


def text_width_pt(texts: Iterable[str], size: float) -> float:
    """Width in points of the widest of ``texts`` at ``size`` points (matplotlib's font
    metrics of the default sans-serif font, times :data:`HINTING`); 0 for no texts."""
    return HINTING * max((_width(str(t), float(size)) for t in texts), default=0.0)


def label_step(pitch_pt: float, size: float, angle: float = 90.0) -> int:
    """Smallest ``m`` with ``m · pitch · sin(angle) ≥ LINE · size`` (module docstring):
    draw every ``m``-th of labels ``pitch_pt`` points apart, set at ``angle`` degrees to
    their axis (90 for horizontal labels on a vertical axis)."""
    across = pitch_pt * math.sin(math.radians(angle))
    if across <= 0:
        raise ValueError(f"label pitch must be positive; got {pitch_pt} pt at {angle}°")
    return max(1, math.ceil(LINE * size / across - 1e-9))


def thin(labels: Sequence[str], step: int) -> list[str]:
    """``labels`` with all but every ``step``-th (starting at the first) set to ``""``."""
    return [s if i % step == 0 else "" for i, s in enumerate(labels)]


def nice_step(k: int, span_pt: float, size: float, gap_pt: float = 6.0) -> int:
    """Tick step for integer positions 1 … ``k`` along ``span_pt`` points: the smallest of
    1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, … whose spacing holds the widest tick
    label (``str(k)`` at ``size`` points) plus ``gap_pt``."""
    need = text_width_pt([str(k)], size) + gap_pt
    per = span_pt / max(k, 1)
    decade = 1
    while True:
        for base in (1, 2, 2.5, 5) if decade >= 10 else (1, 2, 5):
            step = int(base * decade)
            if step * per >= need or step >= k:
                return step
        decade *= 10


# ----------------------------------------------------------------------------- checking
def _rectangles(fig, texts, dpi: float) -> tuple[np.ndarray, tuple[float, float]]:
    """(N, 4, 2) corners in pixels, at ``dpi``, of each text's own (rotated) rectangle."""
    # heavy: matplotlib, lazily
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    old = fig.dpi
    try:
        fig.set_dpi(dpi)
        fig.draw_without_rendering()  # lay out as a saved image would
        renderer = canvas.get_renderer()
        out = []
        for t in texts:
            box = t.get_window_extent(renderer)  # axis-aligned box of the rotated text
            rot = t.get_rotation()
            t.set_rotation(0)
            flat = t.get_window_extent(renderer)  # the same text unrotated: its own w × h
            t.set_rotation(rot)
            w, h = flat.width / 2, flat.height / 2
            cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
            c, s = math.cos(math.radians(rot)), math.sin(math.radians(rot))
            out.append([(cx + x * c - y * s, cy + x * s + y * c)
                        for x, y in ((-w, -h), (w, -h), (w, h), (-w, h))])
        size = (fig.bbox.width, fig.bbox.height)
    finally:
        fig.set_dpi(old)
    return np.asarray(out, float).reshape(-1, 4, 2), size


def _separated(a: np.ndarray, b: np.ndarray) -> bool:
    """Separating-axis test of two convex quadrilaterals (4 × 2 corners each)."""
    for poly in (a, b):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            axis = np.array([-edge[1], edge[0]])
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() or pb.max() <= pa.min():
                return True
    return False


def outside(fig, texts=None, *, dpi: float = 110) -> list[str]:
    """Texts of ``fig`` (default: every visible tick label) that reach beyond the figure's
    edges by more than half a pixel when saved at ``dpi``: cut off in the image."""
    texts = _visible(fig, texts)
    if not texts:
        return []
    rects, (w, h) = _rectangles(fig, texts, dpi)
    lo, hi = rects.min(axis=1), rects.max(axis=1)
    bad = (lo[:, 0] < -0.5) | (lo[:, 1] < -0.5) | (hi[:, 0] > w + 0.5) | (hi[:, 1] > h + 0.5)
    return [t.get_text() for t, b in zip(texts, bad) if b]


def _visible(fig, texts) -> list:
    fig.draw_without_rendering()  # tick labels exist only once the figure is laid out
    texts = _ticklabels(fig) if texts is None else texts
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _ticklabels(fig) -> list:
    """The tick labels a saved image shows: of visible axes, at ticks inside the view."""
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(hi - lo, 1e-300)
            locs = axis.get_majorticklocs()
            for loc, tick in zip(locs, axis.get_major_ticks(len(locs))):
                if lo - eps <= loc <= hi + eps:
                    out += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    return out


def overlaps(fig, texts=None, *, tolerance: float = 0.5,
             dpi: float = 110) -> list[tuple[str, str]]:
    """Pairs of drawn texts of ``fig`` whose rectangles intersect (by more than
    ``tolerance`` pixels) when saved at ``dpi``, measured with the Agg renderer.

    ``texts``: the :class:`matplotlib.text.Text` objects to check (default: every visible
    tick label of every axes with non-empty text). The figure is laid out first
    (:meth:`matplotlib.figure.Figure.draw_without_rendering`), so tick labels are the ones a
    saved image shows. Returns the texts' strings, pair by pair.
    """
    texts = _visible(fig, texts)
    if len(texts) < 2:
        return []
    rects, _ = _rectangles(fig, texts, dpi)
    shrink = rects.mean(axis=1, keepdims=True)
    # pull each corner `tolerance` pixels towards the centre: touching is not overlapping
    vec = shrink - rects
    norm = np.linalg.norm(vec, axis=2, keepdims=True)
    rects = rects + vec * np.minimum(1.0, tolerance / np.maximum(norm, 1e-12))
    lo, hi = rects.min(axis=1), rects.max(axis=1)  # axis-aligned prefilter
    found = []
    order = np.argsort(lo[:, 0], kind="stable")
    for pos, i in enumerate(order):
        for j in order[pos + 1:]:
            if lo[j, 0] >= hi[i, 0]:
                break
            if lo[j, 1] >= hi[i, 1] or lo[i, 1] >= hi[j, 1]:
                continue
            if not _separated(rects[i], rects[j]):
                found.append((texts[i].get_text(), texts[j].get_text()))
    return found
