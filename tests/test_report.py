"""Report layer: leaderboards, pairwise views, checklists, figures and the HTML report.

Inputs are real: REALSumm (tests/data/realsumm, 25 summarizers × 100 documents) through
``multistat.load`` and ``multistat.compare``; reference values are recomputed here from the
raw CSV with pandas/scipy.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REALSUMM, full_report

import multistat as ms
from multistat import cube
from multistat.errors import (
    DataValidationError,
    InputFileError,
    ParameterError,
    ParameterTypeError,
    UnknownSystemError,
)
from multistat.report import html as rhtml
from multistat.report import plots, tables

ROOT_DATA = Path(__file__).resolve().parents[1] / "data"
METRICS = ["litepyramid_recall", "rouge_1_f_score"]
SYSTEMS = ["abs/bart_out", "abs/semsim_out", "ext/refresh_out", "abs/t5_out_11B",
           "abs/bottom_up_out", "ext/neusumm_out", "abs/presumm_out_trans_abs"]


def _subset(study, systems, metrics, rename=None):
    ds = cube.datasets(study)["scores"].sel(system=systems, metric=metrics)
    if rename:
        ds = ds.assign_coords(system=[rename.get(s, s) for s in ds.system.values])
    return cube.make_study({"realsumm": ds})


@pytest.fixture(scope="module")
def full():
    return ms.load(REALSUMM, instance_col="doc_id", system_col=["summary_type", "system"])


@pytest.fixture(scope="module")
def study(full):
    return _subset(full, SYSTEMS, METRICS)


@pytest.fixture(scope="module")
def results(study):
    return ms.compare(study, tests=("t", "wilcoxon", "bootstrap"), n_resamples=500, seed=0,
                      effect_sizes=False, power=True)


@pytest.fixture(scope="module")
def raw():
    d = pd.read_csv(REALSUMM)
    d["system"] = d["summary_type"] + "/" + d["system"]
    return d


# ----------------------------------------------------------------------------- input checks
def test_check_results_errors(results):
    with pytest.raises(ParameterTypeError, match=r"`results` must be a pandas DataFrame "
                                                 r"\(the compare table\); got list"):
        tables.check_results([1, 2])
    with pytest.raises(DataValidationError, match=r"`results` lacks compare-table column\(s\) "
                                                  r"\['p_value'\]"):
        tables.check_results(results.drop(columns="p_value"))
    with pytest.raises(DataValidationError, match="`results` is empty"):
        tables.check_results(results.iloc[:0])
    with pytest.raises(ParameterError, match=r"`test` 'sign' is not in the results; tests "
                                             r"run: t, wilcoxon, bootstrap"):
        tables.primary_tests(results, "sign")


def test_significance_and_winner_follow_reject(results):
    df = tables.check_results(results)
    assert (df["significant"] == results["reject"].astype(bool)).all()
    est = results["estimate"].to_numpy()
    win_a = results["reject"] & (est > 0)
    win_b = results["reject"] & (est < 0)
    assert (df.loc[win_a, "winner"] == df.loc[win_a, "system_a"]).all()
    assert (df.loc[win_b, "winner"] == df.loc[win_b, "system_b"]).all()
    assert (df.loc[~results["reject"], "winner"] == "").all()
    assert win_a.sum() + win_b.sum() > 0  # the fixture has significant pairs


# ----------------------------------------------------------------------------- leaderboard
def test_leaderboard_scores_intervals_and_wins(results, study, raw):
    from multistat.comparison import system_scores

    from multistat.stages import report_inputs

    # the intervals come from the statistics layer: compare's per-system bootstrap with the
    # results' own seed and number of resamples, run by the stage before the report (the
    # report computes no interval)
    scores = report_inputs(results, study=study)["systems"]
    lb = tables.leaderboard(results, scores=scores, test="t")
    assert set(lb.columns) >= {"rank", "system", "score", "ci_low", "ci_high", "wins"}
    ref = system_scores(study, n_resamples=500, seed=0).set_index(["metric", "system"])
    assert set(lb["ci_method"]) == {"bootstrap percentile"}
    for metric in METRICS:
        part = lb[lb["metric"] == metric]
        x = raw[(raw["metric"] == metric) & raw["system"].isin(SYSTEMS)]
        mean = x.groupby("system")["score"].mean()
        for _, row in part.iterrows():
            s = row["system"]
            # reference: pandas mean of the raw CSV; interval = system_scores'
            assert row["score"] == pytest.approx(mean[s], rel=1e-12)
            assert (row["ci_low"], row["ci_high"]) == (ref.loc[(metric, s), "ci_low"],
                                                       ref.loc[(metric, s), "ci_high"])
            assert row["ci_low"] < row["score"] < row["ci_high"]
        # best first, ranks 1..k by score
        assert list(part["score"]) == sorted(part["score"], reverse=True)
        assert part["rank"].iloc[0] == 1
        # wins counted independently from the compare table
        t = results[(results["metric"] == metric) & (results["test"] == "t")]
        for _, row in part.iterrows():
            s = row["system"]
            wins = ((t["system_a"] == s) & t["reject"] & (t["estimate"] > 0)).sum() + \
                   ((t["system_b"] == s) & t["reject"] & (t["estimate"] < 0)).sum()
            assert row["wins"] == wins
            assert row["compared"] == len(SYSTEMS) - 1


def test_leaderboard_uses_compare_system_scores(results, study):
    from multistat.comparison import system_scores

    sc = system_scores(study, n_resamples=300, seed=0)
    lb = tables.leaderboard(results, scores=sc)
    merged = lb.merge(sc, on=["dataset", "metric", "system"], suffixes=("", "_ref"))
    assert len(merged) == len(lb)
    np.testing.assert_array_equal(merged["ci_low"], merged["ci_low_ref"])
    np.testing.assert_array_equal(merged["score"], merged["score_ref"])
    assert set(lb["ci_method"]) == {"bootstrap percentile"}


def test_leaderboard_without_study_uses_score_columns(results):
    lb = tables.leaderboard(results, test="t")
    assert lb["ci_low"].isna().all() and (lb["ci_method"] == "none").all()
    ref = tables.leaderboard(results.drop(columns=["score_a", "score_b"]), test="t")
    # without any score: ordered by wins - losses; the leader still beats the most
    assert ref["score"].isna().all()
    for metric in METRICS:
        a = lb[lb["metric"] == metric]
        b = ref[ref["metric"] == metric]
        assert b["wins"].iloc[0] - b.get("losses").iloc[0] == \
            (b["wins"] - b["losses"]).max()
        assert set(a["system"]) == set(b["system"])


def test_lower_is_better_flips_direction(study):
    # the same scores negated and declared lower-is-better give the same leaderboard
    ds = cube.datasets(study)["realsumm"]
    neg = cube.make_dataset("realsumm", -ds["score"].values, systems=ds.system.values,
                            metrics=ds.metric.values, instances=ds.instance.values,
                            higher_is_better=[False] * ds.sizes["metric"])
    neg_study = cube.make_study({"realsumm": neg})
    kw = {"tests": ("t",), "effect_sizes": False}
    pos_lb = tables.leaderboard(ms.compare(study, **kw))
    neg_lb = tables.leaderboard(ms.compare(neg_study, **kw))
    assert list(pos_lb["system"]) == list(neg_lb["system"])
    assert list(pos_lb["wins"]) == list(neg_lb["wins"])
    np.testing.assert_allclose(neg_lb["score"], -pos_lb["score"], rtol=1e-12)
    assert not neg_lb["higher_is_better"].any()


# ----------------------------------------------------------------------------- pairwise
def test_pairwise_matrix_antisymmetric(results):
    order = SYSTEMS
    eff, dec, p = tables.pairwise_matrix(results, "realsumm", "rouge_1_f_score", test="t",
                                         order=order)
    assert list(eff.index) == order
    e = eff.to_numpy()
    off = ~np.eye(len(order), dtype=bool)
    np.testing.assert_array_equal(e[off], -e.T[off])
    np.testing.assert_array_equal(dec.to_numpy()[off], -dec.to_numpy().T[off])
    np.testing.assert_array_equal(p.to_numpy()[off], p.to_numpy().T[off])
    t = results[(results["metric"] == "rouge_1_f_score") & (results["test"] == "t")]
    for a, b, est, rej, pa in zip(t["system_a"], t["system_b"], t["estimate"], t["reject"],
                                  t["p_adjusted"]):
        assert eff.loc[a, b] == est and p.loc[a, b] == pa
        assert dec.loc[a, b] == (np.sign(est) if rej else 0)
    with pytest.raises(ParameterError, match=r"`value` 'cliffs_delta' is not a column"):
        tables.pairwise_matrix(results, "realsumm", "rouge_1_f_score", test="t",
                               value="cliffs_delta")
    with pytest.raises(ParameterError, match=r"no rows for dataset 'realsumm', metric 'x'"):
        tables.pairwise_matrix(results, "realsumm", "x", test="t")


def test_pairwise_table_and_checklist(results):
    pw = tables.pairwise_table(results)
    # default test: the first of the run's tests
    assert set(pw["test"]) == {"t"}
    assert len(pw) == 2 * len(SYSTEMS) * (len(SYSTEMS) - 1) // 2
    ck = tables.checklist(results)
    assert len(ck) == len(results)
    row = ck[(ck["test"] == "bootstrap (two-sided)")].iloc[0]
    assert row["resamples_seed"] == "B = 500, seed 0"
    assert row["effect_size_ci"] == "not computed"  # compare ran without effect sizes
    t_rows = ck[ck["test"] == "t (two-sided)"]
    assert (t_rows["resamples_seed"] == "not resampled").all()
    assert (t_rows["correction"] == "holm over realsumm | " + t_rows["metric"] + " | t").all()
    first = results[results["test"] == "t"].iloc[0]
    r0 = t_rows.iloc[0]
    assert r0["n"] == "100" and r0["alpha"] == "0.05"
    assert r0["estimate_ci"].startswith(tables._fmt(first["estimate"]) + " [")
    assert r0["power"] == tables._fmt(first["power"])
    with pytest.raises(ParameterError, match=r"`effect` must be 'auto' or one of"):
        tables.pairwise_table(results, effect="r2")


def test_number_formatting():
    assert tables._fmt(0.0123456) == "0.0123"
    assert tables._fmt(123.456) == "123"
    assert tables._fmt(float("nan")) == "–"
    assert tables._fmt_p(3e-7) == "< 0.0001"
    assert tables._fmt_p(0.04321) == "0.0432"


def test_markdown_and_latex_escape():
    frame = pd.DataFrame({"System": ["a|b", "x_y & 50% $5 #1 {c} ~^\\"], "n": [1, 2]})
    md = tables.to_markdown(frame)
    lines = md.strip().split("\n")
    assert lines[0] == "| System | n |" and lines[1] == "|---|---:|"
    assert lines[2] == "| a\\|b | 1 |"
    assert lines[3] == "| x_y &amp; 50% $5 #1 {c} ~^\\\\ | 2 |"
    # HTML-significant characters become entities in every cell and header, so a
    # renderer shows them as text (issue 13.8)
    evil = pd.DataFrame({"<b>x</b>": ["<script>alert(1)</script>", "a & b > c"]})
    md = tables.to_markdown(evil)
    assert "<" not in md and ">" not in md
    assert md.splitlines()[0] == "| &lt;b&gt;x&lt;/b&gt; |"
    assert md.splitlines()[2] == "| &lt;script&gt;alert(1)&lt;/script&gt; |"
    assert md.splitlines()[3] == "| a &amp; b &gt; c |"
    tex = tables.to_latex(frame, caption="Scores & ranks", label="tab:x")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\begin{tabular}{lr}" in tex
    assert (r"x\_y \& 50\% \$5 \#1 \{c\} \textasciitilde{}\textasciicircum{}"
            r"\textbackslash{} & 2 \\") in tex
    assert r"\caption{Scores \& ranks}" in tex


# ----------------------------------------------------------------------------- figures
def test_heatmap_cells_order_and_title(results, study):
    fig = plots.heatmap(results, "realsumm", "litepyramid_recall", study=study)
    ax = fig.axes[0]
    order = [t.get_text() for t in ax.get_yticklabels()]
    lb = tables.leaderboard(results)
    lb = lb[lb["metric"] == "litepyramid_recall"]
    assert order == list(lb["system"])
    eff, dec, _ = tables.pairwise_matrix(results, "realsumm", "litepyramid_recall",
                                         test="t", order=order)
    factor, dec_places = plots._scale(eff.to_numpy(), False)
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in ax.texts}
    k = len(order)
    for i in range(k):
        for j in range(k):
            if i != j:
                want = f"{eff.iloc[i, j] * factor:+.{dec_places}f}"
                got = texts[(i, j)]
                assert got == want or (float(want) == 0 and float(got) == 0)
    # cell colours: imshow codes 2 = row better, 0 = row worse, 1 = n.s.
    codes = np.asarray(ax.collections[0].get_array()).reshape(k, k)  # one quad a cell
    d = dec.to_numpy()
    off = ~np.eye(k, dtype=bool)
    np.testing.assert_array_equal(codes[off], (d[off] + 1))
    title = ax.get_title()
    assert "t test" in title and "α = 0.05" in title and "holm correction" in title
    assert "higher is better" in title


def test_heatmap_readable_at_25_systems(full):
    res = ms.compare(full, tests=("t",), metrics=["litepyramid_recall"], effect_sizes=False)
    fig = plots.heatmap(res, "scores", "litepyramid_recall")
    ax = fig.axes[0]
    assert len(ax.get_yticklabels()) == 25
    sizes = {t.get_fontsize() for t in ax.texts}
    assert min(sizes) >= 6  # never below 6 pt
    # every cell at least 0.4 inch wide
    width_in = ax.get_position().width * fig.get_figwidth()
    assert width_in / 25 >= 0.4
    png = plots.save_png(fig, dpi=110)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_scale_factor():
    assert plots._scale(np.array([0.24, -0.01]), False) == (100.0, 1)
    assert plots._scale(np.array([0.081]), False) == (100.0, 2)
    assert plots._scale(np.array([0.004]), False) == (1000.0, 2)
    assert plots._scale(np.array([3.0]), False) == (1.0, 2)
    assert plots._scale(np.array([11.2]), False) == (1.0, 1)
    assert plots._scale(np.array([250.0]), False) == (1.0, 0)
    assert plots._scale(np.array([0.3]), True) == (1.0, 2)


def test_histograms_hold_the_data(study, raw):
    fig = plots.histograms(study, "realsumm", "rouge_1_f_score", "abs/bart_out",
                           "abs/semsim_out")
    a_ax, b_ax, d_ax = fig.axes[:3]
    for ax in (a_ax, b_ax, d_ax):
        assert sum(p.get_height() for p in ax.patches) == 100
    x = raw[(raw["metric"] == "rouge_1_f_score")].pivot(index="doc_id", columns="system",
                                                          values="score")
    diff = x["abs/bart_out"] - x["abs/semsim_out"]
    means = [ln.get_xdata()[0] for ln in d_ax.lines]
    assert means[1] == pytest.approx(diff.mean(), abs=1e-12)
    assert means[2] == pytest.approx(diff.median(), abs=1e-12)
    with pytest.raises(UnknownSystemError, match=r"`system_b` 'nobody' is not a system of "
                                                 r"dataset 'realsumm'"):
        plots.histograms(study, "realsumm", "rouge_1_f_score", "abs/bart_out", "nobody")
    with pytest.raises(ParameterError, match=r"`metric` 'bleu' is not in dataset"):
        plots.histograms(study, "realsumm", "bleu", "abs/bart_out", "abs/semsim_out")
    with pytest.raises(ParameterError, match=r"`dataset` 'wmt' is not in the study"):
        plots.histograms(study, "wmt", "bleu", "abs/bart_out", "abs/semsim_out")


def _analytic_power_table():
    from multistat.power import power_paired_t

    rows = [{"n": n, "effect_size": d, "power": power_paired_t(n=n, effect_size=d)}
            for d in (0.1, 0.2, 0.3, 0.5) for n in (10, 20, 50, 100, 200, 500, 1000)]
    return pd.DataFrame(rows)


def test_power_curve_lines_are_the_table():
    table = _analytic_power_table()
    fig = plots.power_curve_plot(table, title="paired t")
    ax = fig.axes[0]
    lines = [ln for ln in ax.lines if len(ln.get_xdata()) > 2]
    assert len(lines) == 4
    for ln, (_, g) in zip(lines, table.groupby("effect_size")):
        np.testing.assert_array_equal(ln.get_xdata(), g["n"])
        np.testing.assert_array_equal(ln.get_ydata(), g["power"])
    target = next(ln for ln in ax.lines if len(ln.get_ydata()) == 2)
    assert list(target.get_ydata()) == [0.8, 0.8]
    assert ax.get_xscale() == "log"  # 10 .. 1000 spans more than 8x
    with pytest.raises(DataValidationError, match=r"power table lacks column 'power'"):
        plots.power_curve_plot(table.drop(columns="power"))
    with pytest.raises(ParameterError, match=r"`hue` 'delta' is not a column"):
        plots.power_curve_plot(table, hue="delta")


def test_leaderboard_plot_errors(results, study):
    lb = tables.leaderboard(results)
    with pytest.raises(ParameterError, match=r"`lb` must hold one dataset × metric"):
        plots.leaderboard_plot(lb)
    with pytest.raises(DataValidationError, match=r"`lb` \(leaderboard\) is empty"):
        plots.leaderboard_plot(lb.iloc[:0])


# ----------------------------------------------------------------------------- HTML
EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def evil_study(full):
    return _subset(full, SYSTEMS[:5], ["litepyramid_recall"], rename={SYSTEMS[1]: EVIL})


def test_write_report_files_and_escaping(evil_study, tmp_path):
    res = ms.compare(evil_study, tests=("t", "sign"), effect_sizes=False)
    res_path = ms.write_parquet(res, tmp_path / "results.parquet",
                                metadata=res.attrs["multistat"])
    analysis = ms.analyze(evil_study)
    path = full_report(res_path, tmp_path / "out", study=evil_study, sections={
        "analysis": analysis, "power": {"Paired t, prospective": _analytic_power_table()}})
    assert path == tmp_path / "out" / "report.html"
    text = path.read_text(encoding="utf-8")
    assert EVIL not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text.lower()
    # self-contained: every image is embedded, nothing is fetched
    srcs = re.findall(r'src="([^"]*)"', text)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "http://" not in text and "https://" not in text
    for section in ('id="summary"', 'id="overview"', 'id="analysis"', 'id="power"',
                    'class="leaderboard"', 'class="pairwise"', 'class="checklist"'):
        assert section in text
    out = tmp_path / "out"
    figs = sorted(p.name for p in (out / "figures").iterdir())
    assert any(f.startswith("heatmap_realsumm__litepyramid_recall") for f in figs)
    assert any(f.startswith("hist_") for f in figs)
    assert any(f.startswith("power_") for f in figs)
    md = (out / "tables" / "leaderboard_realsumm__litepyramid_recall.md").read_text()
    assert md.count("\n") == 2 + 5  # header, rule, 5 systems
    # Markdown tables keep the name as text: HTML-significant characters as entities
    assert EVIL not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    tex = (out / "tables" / "leaderboard_realsumm__litepyramid_recall.tex").read_text()
    assert r"\textless{}script\textgreater{}" in tex
    lb = pd.read_csv(out / "tables" / "leaderboard.csv")
    assert len(lb) == 5


def test_write_report_errors(results, tmp_path):
    with pytest.raises(InputFileError, match=r"`results`: .*missing\.parquet: no such file"):
        rhtml.write_report(tmp_path / "missing.parquet", tmp_path)
    with pytest.raises(ParameterTypeError, match=r"`results` must be a pandas DataFrame or a "
                                                 r"path to a Parquet file; got int"):
        rhtml.write_report(3, tmp_path)
    with pytest.raises(ParameterError, match=r"`histogram_pairs` needs `study`"):
        rhtml.write_report(results, tmp_path,
                           options={"histogram_pairs": [("a", "b", "c", "d")]})
    with pytest.raises(DataValidationError, match=r"`analysis` lacks column\(s\) "
                                                  r"\['system_a', 'system_b'\]"):
        rhtml.write_report(results, tmp_path, sections={
            "analysis": pd.DataFrame({"dataset": ["x"], "metric": ["y"]})})
    with pytest.raises(ParameterTypeError, match=r"`power` must be a DataFrame, a path, or a "
                                                 r"list/dict of them; got int"):
        rhtml.write_report(results, tmp_path, sections={"power": 5})
    with pytest.raises(ParameterError, match=r"`sections`: unknown input\(s\) \['powr'\]"):
        rhtml.write_report(results, tmp_path, sections={"powr": 5})
    with pytest.raises(ParameterError, match=r"`options`: unknown option\(s\) \['tset'\]"):
        rhtml.write_report(results, tmp_path, options={"tset": "t"})
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['bogus'\]"):
        rhtml.write_report(results, tmp_path, bogus=1)


# ----------------------------------------------------------------------------- CLI
def test_report_command_end_to_end(evil_study, tmp_path):
    import typer
    from typer.testing import CliRunner

    from multistat.cli.report import report_command
    from multistat.power import power_curve

    app = typer.Typer()
    app.command("report")(report_command)
    app.command("noop")(lambda: None)  # two commands: `report` is a subcommand
    res = ms.compare(evil_study, tests=("t",), effect_sizes=False)
    rp = ms.write_parquet(res, tmp_path / "r.parquet", metadata=res.attrs["multistat"])
    ds = cube.datasets(evil_study)["realsumm"]["score"].sel(metric="litepyramid_recall")
    curves = pd.concat([power_curve(ds.isel(system=0).values, ds.isel(system=1).values,
                                    delta=d, method="normal", sample_sizes=[20, 50, 100, 200],
                                    n_simulations=200, seed=0) for d in (0.02, 0.05)])
    pp = ms.write_parquet(curves, tmp_path / "p.parquet")
    st = cube.save(evil_study, tmp_path / "s.nc")
    out = CliRunner().invoke(app, ["report", str(rp), "--out", str(tmp_path / "rep"),
                                   "--power", str(pp), "--study", str(st), "--annotate",
                                   "none", "--dpi", "60"])
    assert out.exit_code == 0, out.output
    assert "wrote " in out.output
    text = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="power"' in text and "delta = 0.05" not in text  # legend is in the PNG
    assert len(list((tmp_path / "rep" / "figures").glob("power_[0-9]*.png"))) == 1
    # and one figure of the adjacent pairs (power against the true difference)
    assert len(list((tmp_path / "rep" / "figures").glob("power_adjacent_*.png"))) == 1
    bad = CliRunner().invoke(app, ["report", str(rp), "--out", str(tmp_path / "x"),
                                   "--histograms", "all"])
    assert isinstance(bad.exception, ParameterError)
    assert re.search(r"`--histograms` must be one of 'top2', 'none'; got 'all'",
                     str(bad.exception))


def test_heatmap_baseline_pairs_leave_cells_empty(study):
    res = ms.compare(study, tests=("t",), pairs="baseline:abs/bart_out", effect_sizes=False)
    fig = plots.heatmap(res, "realsumm", "rouge_1_f_score", study=study)
    ax = fig.axes[0]
    k = len(SYSTEMS)
    codes = np.asarray(ax.collections[0].get_array()).reshape(k, k)  # one quad a cell
    # only the baseline's row and column are filled: 2 (k - 1) cells
    assert int((codes != 3).sum()) == 2 * (k - 1)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[-1] == "not compared"
    lb = tables.leaderboard(res)
    assert set(lb.loc[lb["system"] != "abs/bart_out", "compared"]) == {1}


def test_choose_effect_follows_the_test():
    nan = float("nan")
    row = {"test": "t", "statistic_kind": "mean", "cohens_d": 0.2, "hedges_g": 0.19,
           "wilcoxon_r": 0.1, "hodges_lehmann": 0.5}
    assert tables.choose_effect(row) == "cohens_d"
    assert tables.choose_effect({**row, "test": "wilcoxon"}) == "wilcoxon_r"
    assert tables.choose_effect({**row, "test": "sign", "statistic_kind": "median"}) == \
        "hodges_lehmann"
    # corpus metrics: every effect NaN -> none reported
    assert tables.choose_effect({**row, **dict.fromkeys(tables.EFFECTS, nan)}) == ""
    assert tables.choose_effect(row, "hedges_g") == "hedges_g"


def test_power_curve_of_a_card_scenario_shows_type_m():
    from multistat.power import simulate_mcnemar

    sims = pd.concat([simulate_mcnemar(n=n, delta=d, agreement=0.9, n_simulations=300,
                                       seed=0).to_frame()
                      for d in (0.02, 0.04) for n in (250, 1000, 4000)], ignore_index=True)
    fig = plots.power_curve_plot(sims, title="McNemar, P_a = 0.9")
    power_ax, m_ax = fig.axes[:2]
    for ax, col in ((power_ax, "power"), (m_ax, "type_m")):
        lines = [ln for ln in ax.lines if len(ln.get_xdata()) == 3]
        assert len(lines) == 2  # one per true_effect
        for ln, (_, g) in zip(lines, sims.groupby("true_effect")):
            np.testing.assert_array_equal(ln.get_ydata(), g.sort_values("n")[col])
    assert [t.get_text() for t in power_ax.get_legend().get_texts()][:2] == \
        ["true_effect = 0.02", "true_effect = 0.04"]


def test_shown_test_follows_the_analysis(results, study, tmp_path):
    analysis = ms.analyze(study)
    chosen = tables.recommended_tests(results, analysis)
    for metric in METRICS:
        an = analysis[analysis["metric"] == metric]
        counts = an["recommended"].str.split(",").explode().str.strip().value_counts()
        counts = counts[counts.index.isin(["t", "wilcoxon", "bootstrap"])]  # tests run
        assert chosen[("realsumm", metric)] == counts.index[0]
    path = rhtml.write_report(results, tmp_path, sections={"analysis": analysis},
                              options={"histogram_pairs": None})
    lb = pd.read_csv(tmp_path / "tables" / "leaderboard.csv")
    assert {(m, t) for m, t in zip(lb["metric"], lb["test"])} == \
        {(m, chosen[("realsumm", m)]) for m in METRICS}
    assert "the test the data analysis recommends for most pairs" in path.read_text()


def test_winner_of_significant_zero_median_estimates():
    # binary scores: the sign test's and Wilcoxon's median/Hodges-Lehmann estimates are 0
    # for most pairs while the test is significant; the better system is the one with
    # more wins on the discordant instances, i.e. the higher accuracy (pandas on the file)
    demo = ROOT_DATA / "demo.parquet"
    study = ms.load(demo)
    res = ms.compare(study, tests=("sign", "wilcoxon"), metrics=["correct"],
                     effect_sizes=False)
    df = tables.check_results(res)
    zero = df[df["significant"] & (df["estimate"] == 0)]
    assert len(zero) >= 10
    raw = pd.read_parquet(demo)
    acc = raw[raw["metric"] == "correct"].groupby(["dataset", "system"])["score"].mean()
    for _, r in zero.iterrows():
        better = max((r["system_a"], r["system_b"]), key=lambda s: acc[(r["dataset"], s)])
        assert r["winner"] == better


def test_heatmap_auto_annotation_falls_back_to_score_difference():
    study = ms.load(ROOT_DATA / "demo.parquet")
    res = ms.compare(study, tests=("wilcoxon",), metrics=["correct"], datasets=["newstest"],
                     effect_sizes=False)
    fig = plots.heatmap(res, "newstest", "correct")
    ax = fig.axes[0]
    assert "score(A) − score(B) (× 100)" in ax.get_title()
    order = [t.get_text() for t in ax.get_yticklabels()]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in ax.texts}
    raw = pd.read_parquet(ROOT_DATA / "demo.parquet")
    acc = raw[(raw["metric"] == "correct") & (raw["dataset"] == "newstest")] \
        .groupby("system")["score"].mean()
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            if i != j:
                assert float(texts[(i, j)]) == pytest.approx(100 * (acc[a] - acc[b]),
                                                             abs=0.051)


def test_effect_sizes_in_checklist_and_heatmap(study):
    res = ms.compare(study, tests=("t", "wilcoxon"), metrics=["rouge_1_f_score"])
    assert res["cohens_d"].notna().all()
    ck = tables.checklist(res)
    for (_, row), (_, ref) in zip(ck.iterrows(), res.iterrows()):
        name = "cohens_d" if ref["test"] == "t" else "wilcoxon_r"
        label = "Cohen's d_z" if name == "cohens_d" else "Wilcoxon r"
        assert row["effect_size_ci"] == (
            f"{label} {tables._fmt(ref[name])} [{tables._fmt(ref[name + '_ci_low'])}, "
            f"{tables._fmt(ref[name + '_ci_high'])}] (95% CI)")
    fig = plots.heatmap(res, "realsumm", "rouge_1_f_score", test="t", annotate="cohens_d",
                        study=study)
    ax = fig.axes[0]
    assert "Cohen's d_z of A − B" in ax.get_title()
    order = [t.get_text() for t in ax.get_yticklabels()]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in ax.texts}
    t = res[res["test"] == "t"]
    for a, b, d in zip(t["system_a"], t["system_b"], t["cohens_d"]):
        i, j = order.index(a), order.index(b)
        assert texts[(i, j)] in (f"{d:+.2f}", "0.00") and texts[(j, i)] in (f"{-d:+.2f}",
                                                                            "0.00")


# ----------------------------------------------------------------------------- MQM direction
def test_mqm_default_direction_puts_human_translations_on_top():
    """MQM newstest2020 zh-en holds negated error penalties (<= 0): higher is better, which
    is multistat's default. Loaded with default options, the two human translations lead
    and Online-B is last (means recomputed from the raw file with pandas)."""
    from conftest import MQM_ZHEN
    raw = pd.read_csv(MQM_ZHEN, sep=r"\s+")
    assert raw["mqm_avg_score"].max() <= 0
    means = raw.groupby("system")["mqm_avg_score"].mean().sort_values(ascending=False)
    study = ms.load(MQM_ZHEN, score_col="mqm_avg_score", instance_col="seg_id",
                    metric="mqm")
    results, systems = ms.compare(study, tests=("t",), effect_sizes=False,
                                  return_systems=True, n_resamples=200, seed=0)
    lb = tables.leaderboard(results, scores=systems)
    assert lb["higher_is_better"].all()
    assert lb["system"].tolist() == means.index.tolist()
    assert lb["system"].tolist()[:2] == ["Human-A.0", "Human-B.0"]
    assert lb["system"].iloc[-1] == "Online-B.1605"
    np.testing.assert_allclose(lb["score"], means.to_numpy(), rtol=0, atol=1e-12)
    # the humans significantly beat every MT system (paired t, Holm)
    assert lb.set_index("system").loc["Human-A.0", "wins"] >= 8
