"""Reports at the size of a shared task (issue 23, item 3): heatmaps, rank intervals,
critical-difference diagrams and power panels at 150 systems, their labels checked for
overlap by measuring the rendered text rectangles with matplotlib's Agg renderer
(:mod:`multistat.report._layout`), and the report's full-size heatmap link."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from _tiers import names, tiered_study
from conftest import full_report
from matplotlib.figure import Figure

import multistat as ms
from multistat.power import detectability as pdet
from multistat.report import _layout, plots
from multistat.report import html as rhtml
from multistat.report.clusters import rank_interval_plot
from multistat.report.testsets import cd_diagram

K = 150


@pytest.fixture(scope="module")
def big():
    study = tiered_study(K, n=120)
    res = ms.compare(study, tests=("t",), effect_sizes=False)
    return study, res


# ----------------------------------------------------------------------------- the rules
def test_layout_rules_by_hand():
    # 8.75 pt (1.25 em of 7 pt) across; pitch 5 pt upright: ceil(1.75) = 2
    assert _layout.label_step(5.0, 7.0, 90) == 2
    # at 60 degrees the slot across is 5 * sin 60 = 4.33 pt: ceil(2.02) = 3
    assert _layout.label_step(5.0, 7.0, 60) == 3
    assert _layout.label_step(30.0, 7.0, 60) == 1
    assert _layout.thin(list("abcdefg"), 3) == ["a", "", "", "d", "", "", "g"]
    # "150" at 8 pt is 3 digits of 0.636 em (DejaVu Sans) = 15.3 pt, x 1.15 hinting
    # margin + 6 pt gap = 23.6 pt; 150 ranks on 396 pt: 2.64 pt per rank -> step 10 (26 pt)
    assert _layout.text_width_pt(["150"], 8) == pytest.approx(3 * 0.636 * 8 * 1.15, rel=0.01)
    assert _layout.nice_step(150, 396, 8) == 10
    assert _layout.nice_step(10, 396, 8) == 1
    assert _layout.nice_step(1000, 396, 8) == 100
    with pytest.raises(ValueError, match="label pitch must be positive"):
        _layout.label_step(0, 7)


def test_overlap_check_can_fail_and_spares_parallel_rotated_labels():
    fig = Figure(figsize=(4, 4))
    ax = fig.add_axes((0.4, 0.4, 0.5, 0.5))
    ax.set_yticks(np.arange(40), [f"system-{i:02d}" for i in range(40)], fontsize=9)
    # 40 labels of 9 pt on 2 inches (3.6 pt each) must collide
    found = _layout.overlaps(fig)
    assert len(found) >= 30 and ("system-00", "system-01") in found or \
        ("system-01", "system-00") in found
    # 60-degree labels 30 pt apart: their axis-aligned boxes overlap, the text does not
    fig = Figure(figsize=(8, 4))
    ax = fig.add_axes((0.1, 0.5, 0.8, 0.4))
    ax.set_xlim(-0.5, 9.5)
    ax.set_xticks(np.arange(10), [f"a-long-system-name-{i}" for i in range(10)],
                  rotation=60, ha="right", rotation_mode="anchor", fontsize=7)
    labels = ax.get_xticklabels()
    fig.draw_without_rendering()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    r = FigureCanvasAgg(fig).get_renderer()
    assert labels[0].get_window_extent(r).overlaps(labels[1].get_window_extent(r))
    assert _layout.overlaps(fig) == []
    # and cut-off labels are found: a long label on an axes at the left edge
    fig = Figure(figsize=(4, 2))
    ax = fig.add_axes((0.05, 0.2, 0.9, 0.7))
    ax.set_yticks([0], ["a label far longer than the margin"])
    assert _layout.outside(fig) == ["a label far longer than the margin"]


# ----------------------------------------------------------------------------- heatmaps
def test_heatmap_150_systems_page_and_full_size(big):
    _, res = big
    order = names(K)[::-1]  # any order given (the report passes the ranking's)
    page = plots.heatmap(res, "newstest2024", "chrF", order=order,
                         max_width=plots.PAGE_WIDTH)
    assert page.get_figwidth() == pytest.approx(plots.PAGE_WIDTH)
    ax = page.axes[0]
    shown = [t.get_text() for t in ax.get_yticklabels()]
    # the stated rule: 7 pt labels, cell = axis width / k, step = ceil(1.25 * 7 / (cell *
    # sin 60)) on both axes, "rank. name"
    cell_pt = ax.get_position().width * page.get_figwidth() * 72 / K
    step = math.ceil(1.25 * 7 / (cell_pt * math.sin(math.radians(60))))
    assert step == 3  # 150 systems on 13 in
    assert [i for i, s in enumerate(shown) if s] == list(range(0, K, step))
    assert shown[0] == f"1. {order[0]}" and shown[3] == f"4. {order[3]}"
    assert f"one system in {step} labelled" in ax.get_title()
    assert _layout.overlaps(page) == [] and _layout.outside(page) == []
    assert not ax.texts  # 4.5 pt cells hold no readable number
    # full size: every label, no overlap, none cut off (numbers left out to keep the
    # check fast; they do not move the labels)
    full = plots.heatmap(res, "newstest2024", "chrF", order=order, annotate=None)
    ax = full.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == plots._labels(order)
    assert [t.get_text() for t in ax.get_xticklabels()] == plots._labels(order)
    assert max(map(len, plots._labels(order))) == 40  # long names end in "…" at 40
    assert _layout.overlaps(full) == [] and _layout.outside(full) == []
    assert not plots.heatmap_fits(order) and plots.heatmap_fits(order[:20])


def test_heatmap_numbers_fit_their_cells_when_drawn(big):
    _, res = big
    k = 25  # compact (13.8 in at full size) with 0.38 in cells: numbers fit at >= 6 pt
    order = names(K)[:k]
    part = res[res["system_a"].isin(order) & res["system_b"].isin(order)]
    page = plots.heatmap(part, "newstest2024", "chrF", order=order,
                         max_width=plots.PAGE_WIDTH)
    ax = page.axes[0]
    assert page.get_figwidth() == pytest.approx(plots.PAGE_WIDTH)
    assert len(ax.texts) == k * k  # k (k - 1) numbers and k dashes
    assert min(t.get_fontsize() for t in ax.texts) >= 6
    # every number inside its cell: cell width in pixels at 110 dpi
    cell_px = ax.get_position().width * page.get_figwidth() * 110 / k
    rects, _ = _layout._rectangles(page, ax.texts[:200], 110)
    widths = rects[:, :, 0].max(axis=1) - rects[:, :, 0].min(axis=1)
    assert widths.max() < cell_px
    assert _layout.overlaps(page) == []


# ----------------------------------------------------------------------------- rank / CD
def test_rank_intervals_150_systems_labels_never_overlap(big):
    study, _ = big
    board = ms.rank(study, test="t", n_resamples=200)
    fig = rank_interval_plot(board)
    ax = fig.axes[0]
    assert len([t for t in ax.get_yticklabels() if t.get_text()]) == K
    ticks = [int(t) for t in ax.get_xticks()]
    assert ticks[:3] == [1, 10, 20] and ticks[-1] == 150  # nice step 10 on 5.5 in
    assert _layout.overlaps(fig) == [] and _layout.outside(fig) == []


def test_cd_diagram_150_systems_labels_never_overlap():
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.normal(size=(8, K)) + np.linspace(3, 0, K), columns=names(K))
    fig = cd_diagram(ms.friedman(wide))
    texts = fig.axes[0].texts
    labels = [t for t in texts if re.search(r"\(\d+\.\d\d\)$", t.get_text())]
    assert len(labels) == K
    assert _layout.overlaps(fig, texts) == []
    assert _layout.outside(fig, texts) == []
    # the old layout (0.55 data units per row in a 7.5 in figure) did overlap: control
    numbers = [t for t in texts if t.get_text().isdigit()]
    assert 3 <= len(numbers) <= 40  # rank axis thinned to a nice step


# ----------------------------------------------------------------------------- power
def test_power_panels_bounded_in_rank_order(big):
    study, res = big
    det = pdet.detectability(res, study=study, pairs="adjacent")
    curves = pdet.power_curves(det)
    assert curves[["system_a", "system_b"]].drop_duplicates().shape[0] == K - 1
    fig = plots.adjacent_power(curves, "newstest2024", "chrF")
    drawn = [ax for ax in fig.axes if ax.get_visible()]
    assert len(drawn) == plots.MAX_POWER_PANELS == 12
    first = det.iloc[0]
    assert drawn[0].get_title().startswith(f"{first['system_a']} vs")
    assert "the first 12 of 149 adjacent pairs" in fig.texts[0].get_text()
    assert _layout.overlaps(fig) == []


def test_study_sds_equal_per_pair_numpy(big):
    study, _ = big
    from multistat import cube

    x = cube.datasets(study)["newstest2024"]["score"].sel(metric="chrF")
    sys_names = [str(s) for s in x["system"].values]
    pairs = [(sys_names[i], sys_names[j]) for i in range(0, K, 7) for j in range(3, K, 11)
             if i != j] + [("nope", sys_names[0])]
    n, sd = pdet._study_sds(study, "newstest2024", "chrF", pairs)
    vals = x.values
    for (a, b), n_p, s in zip(pairs[:-1], n, sd):
        d = vals[sys_names.index(a)] - vals[sys_names.index(b)]
        assert n_p == d.size and s == np.std(d, ddof=1)  # the same numpy call, exact
    assert n[-1] == 0 and np.isnan(sd[-1])
    # NaN of some systems only: dropped pair by pair (reference: statistics.stdev)
    import statistics

    ds = cube.datasets(study)["newstest2024"]
    score = ds["score"].values.copy()
    score[0, 0, :5] = np.nan
    holed = cube.make_study({"newstest2024": ds.assign(score=(ds["score"].dims, score))})
    n, sd = pdet._study_sds(holed, "newstest2024", "chrF",
                               [(sys_names[0], sys_names[1]), (sys_names[1], sys_names[2])])
    d = score[0, 0, 5:] - score[1, 0, 5:]
    assert n[0] == 115 and sd[0] == pytest.approx(statistics.stdev(d.tolist()), rel=1e-12)
    assert n[1] == 120


# ----------------------------------------------------------------------------- the report
def test_report_links_full_size_heatmap_and_orders_by_rank(tmp_path):
    k = 40
    study = tiered_study(k, n=80, tiers=4)
    res = ms.compare(study, tests=("t",), effect_sizes=False)
    board = ms.rank(study, test="t", n_resamples=200)
    path = full_report(res, tmp_path / "rep", study=study, sections={"ranking": board})
    html = path.read_text()
    href = re.findall(r'href="(figures/heatmap-full_[^"]+\.png)"', html)
    assert len(set(href)) == 1
    png = (path.parent / href[0]).read_bytes()
    w, h = rhtml._png_size(png)
    assert f"Full-size image ({w:,} × {h:,} px)." in html
    from multistat.report._files import file_stem  # the one file-name rule

    stem = file_stem("newstest2024", "chrF")
    page = (path.parent / "figures" / f"heatmap_{stem}.png").read_bytes()
    assert rhtml._png_size(page)[0] <= plots.PAGE_WIDTH * 110 + 1 < w
    # every adjacent pair in the table; the first 12 drawn
    rows = re.findall(r'<table class="adjacent".*?</table>', html)[0].count("<tr>") - 1
    assert rows == k - 1
    assert html.count(">drawn<") == plots.MAX_POWER_PANELS
    # a heatmap follows the ranking's order when one is given
    swapped = board.copy()
    swapped.loc[[0, 1], "rank"] = swapped.loc[[1, 0], "rank"].to_numpy()
    order = rhtml._rank_order(swapped, "newstest2024", "chrF", list(board["system"]))
    assert order[:2] == [board["system"].iloc[1], board["system"].iloc[0]]
    assert rhtml._rank_order(None, "newstest2024", "chrF", ["x"]) == ["x"]
