"""The report as a registry of sections (multistat.report.sections): the page and its table
of contents follow the registry, a section registered from outside appears in place and
escaped, write_report takes its inputs through `sections=` (the old keywords still work,
with a DeprecationWarning, and give the same page), and `multistat report --section`."""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest

import multistat
from multistat import cube
from multistat.errors import ParameterError
from multistat.report import html as rhtml
from multistat.report import sections as S
from multistat.report import write_report


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(3)
    shift = np.array([0.5, 0.2, 0.0, -0.3])[:, None, None]
    nodes = {d: cube.make_dataset(d, rng.normal(size=(4, 1, 30)) + shift,
                                  systems=["A", "B", "C<b>", "D"], metrics=["bleu"],
                                  instances=[f"i{j}" for j in range(30)])
             for d in ("news", "ted")}
    return cube.make_study(nodes)


@pytest.fixture(scope="module")
def results(study):
    return multistat.compare(study, tests=("t",), effect_sizes=False)


def _toc(html: str) -> list[str]:
    nav = re.search(r"<nav>(.*?)</nav>", html, re.S).group(1)
    return re.findall(r'href="#([^"]+)"', nav)


def _sections(html: str) -> list[str]:
    return re.findall(r'<section (?:class="[^"]*" )?id="([^"]+)"', html)


def test_write_report_takes_at_most_eight_parameters():
    params = inspect.signature(write_report).parameters
    named = [p for p in params.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert len(named) <= 8, list(params)
    assert [p.name for p in named] == ["results", "out_dir", "sections", "study", "title",
                                       "dpi", "options"]


@pytest.mark.slow  # whole reports (several seconds on two cores)
def test_the_table_of_contents_is_the_page_in_registry_order(results, study, tmp_path):
    from multistat.stages import report_inputs

    inputs = report_inputs(results, study=study)
    html = write_report(results, tmp_path, sections=inputs, study=study,
                        options={"histogram_pairs": None}).read_text()
    assert _toc(html) == _sections(html)  # one entry per section, in page order
    registry = [s.name for s in S.SECTIONS]
    placed = [registry.index("families" if a.startswith("dm-") else a) for a in _toc(html)]
    assert placed == sorted(placed)
    assert {"summary", "overview", "across", "dm-news__bleu", "dm-ted__bleu"} <= \
        set(_toc(html))


def test_a_registered_section_appears_in_place_escaped(results, tmp_path):
    evil = "<script>alert(1)</script>"

    def render(page):
        text = f"{evil} compared {len(page.results)} rows"
        return [S.Part("custom", evil, S.render_section("custom", evil, paragraphs=[text]))]

    section = S.register(S.Section("custom", "Custom", render, inputs=("systems",)),
                         after="overview")
    try:
        html = write_report(results, tmp_path, options={"histogram_pairs": None}).read_text()
    finally:
        S.SECTIONS.remove(section)
    assert _toc(html)[:3] == ["summary", "overview", "custom"]
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt; compared 12 rows" in html
    # the same registration twice, or one reading an undeclared input, is refused
    S.register(section)
    try:
        with pytest.raises(ParameterError, match="registered already"):
            S.register(section)
    finally:
        S.SECTIONS.remove(section)
    with pytest.raises(ParameterError, match=r"undeclared input\(s\) \['nowhere'\]"):
        S.register(S.Section("x", "X", render, inputs=("nowhere",)))
    with pytest.raises(ParameterError, match="`after`: no section 'nope'"):
        S.register(S.Section("x", "X", render), after="nope")
    assert "x" not in [s.name for s in S.SECTIONS]


def test_templates_escape_every_value():
    from multistat.report import _templates

    env = _templates.environment()
    assert env.autoescape is True
    page = _templates.render("section.html.j2", anchor='"><x', title="<b>", body="",
                             paragraphs=["&"], notes=[], cls="")
    assert page.startswith('<section id="&#34;&gt;&lt;x"><h2>&lt;b&gt;</h2><p>&amp;</p>')


@pytest.mark.slow  # whole reports (several seconds on two cores)
def test_old_keywords_warn_and_give_the_same_page(results, study, tmp_path):
    analysis = multistat.analyze(study)
    new = write_report(results, tmp_path / "new", sections={"analysis": analysis}, dpi=30,
                       options={"test": "t", "histogram_pairs": None}).read_text()
    with pytest.warns(DeprecationWarning, match=r"keywords analysis, histogram_pairs, test "
                                                r"are deprecated: give the inputs as "
                                                r"sections="):
        old = write_report(results, tmp_path / "old", analysis=analysis, test="t",
                           histogram_pairs=None, dpi=30).read_text()
    assert old == new
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new call warns about nothing
        write_report(results, tmp_path / "quiet", options={"histogram_pairs": None}, dpi=30)


def test_inputs_are_declared_once_with_their_kind():
    assert list(S.INPUTS) == list(dict.fromkeys(S.INPUTS))
    assert {i.kind for i in S.INPUTS.values()} == {"table", "tables", "object"}
    for section in S.SECTIONS:
        assert set(section.inputs) | set(section.requires) <= set(S.INPUTS), section.name
    assert S.input_names("object") == ["friedman", "floor_notes"]


# ----------------------------------------------------------------------------- the CLI
def _run(args):
    from typer.testing import CliRunner

    from multistat.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.slow  # whole reports (several seconds on two cores)
def test_section_option_is_the_alias_flags(results, study, tmp_path):
    res = multistat.write_parquet(results, tmp_path / "r.parquet",
                                  metadata=results.attrs["multistat"])
    an = multistat.write_parquet(multistat.analyze(study), tmp_path / "an.parquet")
    a = _run(["report", res, "--out", tmp_path / "a", "--section", f"analysis={an}",
              "--histograms", "none", "--dpi", "30"])
    b = _run(["report", res, "--out", tmp_path / "b", "--analysis", an,
              "--histograms", "none", "--dpi", "30"])
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    assert (tmp_path / "a" / "report.html").read_text() == \
        (tmp_path / "b" / "report.html").read_text()
    for bad, message in ((["--section", "nosuch=x.parquet"], "unknown input 'nosuch'"),
                         (["--section", "analysis"], "is not NAME=PATH"),
                         (["--section", f"analysis={an}", "--analysis", an],
                          "analysis given twice")):
        out = _run(["report", res, "--out", tmp_path / "c", *bad])
        assert out.exit_code != 0 and message in str(out.exception or out.output)


@pytest.mark.slow  # whole reports (several seconds on two cores)
def test_rank_stores_its_pairs_so_the_report_needs_nothing_else(study, tmp_path):
    from multistat.cli import rank as cli_rank

    st = cube.save(study, tmp_path / "s.nc")
    ranked = _run(["rank", st, "--out", tmp_path / "rk.parquet", "--n-resamples", "200"])
    assert ranked.exit_code == 0, ranked.output
    pairs = tmp_path / "rk.pairs.parquet"
    board, meta = multistat.read_table(tmp_path / "rk.parquet")
    assert "rank" in board and "pair" not in " ".join(board.columns)  # still the ranking
    assert meta["pairs_file"] == "rk.pairs.parquet" and len(meta["pairs_sha256"]) == 64
    stored = multistat.read_parquet(pairs)
    assert len(stored) == 2 * 6 and set(stored["test"]) == {meta["test"]}
    # the streamed decisions stored are the compare table's (--pairs-out), bit for bit
    explicit = _run(["rank", st, "--out", tmp_path / "rk2.parquet", "--n-resamples", "200",
                     "--pairs-out", tmp_path / "p2.parquet"])
    assert explicit.exit_code == 0, explicit.output
    ref = multistat.read_parquet(tmp_path / "p2.parquet")
    both = stored.merge(ref, on=["dataset", "metric", "system_a", "system_b"],
                        suffixes=("", "_ref"))
    assert len(both) == len(stored) == len(ref)
    for col in ("estimate", "p_value", "p_adjusted", "reject", "score_a", "score_b"):
        np.testing.assert_array_equal(both[col], both[col + "_ref"])
    assert multistat.read_table(tmp_path / "rk2.parquet")[1]["pairs_file"] == "p2.parquet"
    # a compare table of another test: the decisions come from the stored pairs
    res = multistat.compare(study, tests=("t",), effect_sizes=False)
    rp = multistat.write_parquet(res, tmp_path / "r.parquet", metadata=res.attrs["multistat"])
    out = _run(["report", rp, "--out", tmp_path / "rep", "--ranking", tmp_path / "rk.parquet",
                "--histograms", "none"])
    assert out.exit_code == 0, out.output
    assert "(the ranking&#39;s decisions)" in (tmp_path / "rep" / "report.html").read_text()
    # without its pair file (a DVC checkout of the ranking alone) the report says so and
    # takes the compare table's rows of the ranking's test, which this one did not run
    from multistat.errors import DroppedDataWarning
    from multistat.report.html import read_inputs

    moved = pairs.rename(tmp_path / "elsewhere.parquet")
    with pytest.warns(DroppedDataWarning, match=r"rk\.pairs\.parquet are missing"):
        assert "ranking_pairs" not in read_inputs({"ranking": tmp_path / "rk.parquet"})
    moved.rename(pairs)
    # a pair file that is not the one the ranking was written with is refused
    multistat.write_parquet(stored.iloc[::-1].reset_index(drop=True), pairs)
    out = _run(["report", rp, "--out", tmp_path / "rep2", "--ranking",
                tmp_path / "rk.parquet"])
    assert out.exit_code != 0 and "SHA-256 differs" in str(out.exception or out.output)
    # beyond the bound the ranking is streamed without pairs and says so
    bound = cli_rank.STORED_PAIRS_MAX
    cli_rank.STORED_PAIRS_MAX = 5
    try:
        big = _run(["rank", st, "--out", tmp_path / "big.parquet", "--n-resamples", "200"])
    finally:
        cli_rank.STORED_PAIRS_MAX = bound
    assert big.exit_code == 0, big.output
    _, meta = multistat.read_table(tmp_path / "big.parquet")
    assert meta["pairs_file"] is None and "not stored" in meta["pairs_note"]
    assert not (tmp_path / "big.pairs.parquet").exists()


@pytest.mark.slow  # a report with figures
def test_human_section_draws_the_rating_tables(tmp_path):
    # the numbers come from the human layer's tables (multistat.human.pilot), the section
    # only draws them: what the page shows is what the tables hold
    import pandas as pd

    from multistat.human.agreement import agreement
    from multistat.human.pilot import rating_tables

    rng = np.random.default_rng(7)
    rows = [(s, i, r, float(np.clip(round(3 + 0.6 * (s == "good") + rng.normal()), 1, 5)))
            for s in ("good", "base") for i in range(30) for r in range(3)]
    path = tmp_path / "ratings.csv"
    pd.DataFrame(rows, columns=["system", "item", "rater", "likert"]).to_csv(path,
                                                                         index=False)
    study = multistat.load(path, score_col="likert", instance_col="item", rater_col="rater")
    tables = rating_tables(study, n_resamples=50, n_simulations=20)
    name = next(iter(cube.datasets(study)))
    ref = agreement(cube.datasets(study)[name].sel(metric=["likert"]), "interval",
                    n_resamples=50, seed=0)
    np.testing.assert_array_equal(tables["human_agreement"]["alpha"], ref["alpha"])
    assert list(tables["human_components"]["component"]) == [
        "rater_intercept", "rater_slope", "item_intercept", "item_slope", "sigma"]
    assert len(tables["human_power"]) == 4 * 5
    res = multistat.compare(study, tests=("t",), effect_sizes=False)
    html = write_report(res, tmp_path / "rep", sections=tables, dpi=30,
                        options={"histogram_pairs": None}).read_text()
    assert 'id="human"' in html and "likert: variance components" in html
    assert "human" in _toc(html)
    grid = pd.read_csv(tmp_path / "rep" / "tables" / f"human_power_{name}__likert.csv")
    np.testing.assert_allclose(grid["power"], tables["human_power"]["power"])
    # without the tables there is no section (nothing is computed from the study)
    bare = write_report(res, tmp_path / "bare", study=study, dpi=30,
                        options={"histogram_pairs": None}).read_text()
    assert 'id="human"' not in bare


@pytest.mark.slow  # three commands and a report (several seconds on two cores)
def test_human_section_from_the_analysis_commands_tables(tmp_path):
    # `multistat agreement` and `multistat components --grid-out` write the numbers; the
    # report draws them with no study at all
    import pandas as pd

    rng = np.random.default_rng(8)
    rows = [(s, i, r, float(np.clip(round(3 + 0.6 * (s == "good") + rng.normal()), 1, 5)))
            for s in ("good", "base") for i in range(30) for r in range(3)]
    path = tmp_path / "ratings.csv"
    pd.DataFrame(rows, columns=["system", "item", "rater", "likert"]).to_csv(path,
                                                                         index=False)
    study = multistat.load(path, score_col="likert", instance_col="item", rater_col="rater")
    st = cube.save(study, tmp_path / "s.nc")
    a, c, g = tmp_path / "a.parquet", tmp_path / "c.parquet", tmp_path / "g.parquet"
    assert _run(["agreement", st, "--out", a, "--n-resamples", "50"]).exit_code == 0
    out = _run(["components", st, "--out", c, "--grid-out", g, "--grid-simulations", "20"])
    assert out.exit_code == 0, out.output
    grid = multistat.read_parquet(g)
    assert list(grid.columns) == ["dataset", "metric", "raters", "items", "power", "effect"]
    res = multistat.compare(study, tests=("t",), effect_sizes=False)
    rp = multistat.write_parquet(res, tmp_path / "r.parquet", metadata=res.attrs["multistat"])
    rep = _run(["report", rp, "--out", tmp_path / "rep", "--histograms", "none", "--dpi",
                "30", "--section", f"human_agreement={a}", "--section",
                f"human_components={c}", "--section", f"human_power={g}"])
    assert rep.exit_code == 0, rep.output
    html = (tmp_path / "rep" / "report.html").read_text()
    pooled = multistat.read_table(c)[1]["pooled"]
    assert "likert: agreement" in html and "likert: variance components" in html
    assert f"{round(pooled['sigma'], 4):g}" in html  # the pooled sd the command wrote
    name = grid["dataset"].iloc[0]
    drawn = pd.read_csv(tmp_path / "rep" / "tables" / f"human_power_{name}__likert.csv")
    np.testing.assert_allclose(drawn["power"], grid["power"])
