"""``multistat friedman``, ``multistat replicability`` and ``multistat units --by group``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_one_line_error as one_line_error
from conftest import run_cli as run

import multistat
from multistat import cube
from multistat.io import read_parquet


@pytest.fixture(scope="module")
def study_and_table(tmp_path_factory):
    rng = np.random.default_rng(0)
    nodes = {}
    for d in ("newstest", "ted", "wmt"):
        score = rng.normal(size=(4, 1, 50)) + np.array([0.8, 0.4, 0.0, -0.1])[:, None, None]
        nodes[d] = cube.make_dataset(d, score, systems=list("ABCD"), metrics=["m"],
                                     instances=[f"i{j}" for j in range(50)])
    study = cube.make_study(nodes)
    tmp = tmp_path_factory.mktemp("across")
    path = tmp / "study.nc"
    cube.save(study, path)
    table = multistat.compare(study, tests=("t",), effect_sizes=False)
    tpath = tmp / "results.parquet"
    multistat.write_parquet(table, tpath)
    return study, path, table, tpath


def test_friedman_wide_table(tmp_path, capsys):
    wide = tmp_path / "wide.csv"
    pd.DataFrame({"block": ["s1", "s2", "s3", "s4"], "A": [0.9, 0.8, 0.85, 0.7],
                  "B": [0.8, 0.7, 0.8, 0.6], "C": [0.7, 0.75, 0.6, 0.65]}).to_csv(
        wide, index=False)
    out, fig = tmp_path / "f.parquet", tmp_path / "cd.png"
    status, stdout, err = run(["friedman", wide, "--wide", "-o", out, "--figure", fig],
                              capsys)
    assert status == 0, err
    # chi2 = 6 and F_F = 9 worked by hand in tests/test_across.py; p = exp(-6/2) = .04979;
    # F(2, 6) tail: (1 + 2 * 9 / 6)^(-6/2) = 4^-3 = 0.015625 (printed .4g: 0.01562)
    assert stdout.splitlines()[0] == ("Friedman chi2 = 6, p = 0.04979; Iman-Davenport F = "
                                      "9, p = 0.01562 (3 systems, 4 blocks)")
    assert "mean ranks (1 = best): A 1.00, B 2.50, C 2.50" in stdout
    assert fig.stat().st_size > 1000
    pw = read_parquet(out)
    assert len(pw) == 3 and pw.attrs["multistat"]["statistic"] == pytest.approx(6.0)
    # lower is better flips the ranks
    status, stdout, _ = run(["friedman", wide, "--wide", "--lower-is-better", "-o", out],
                            capsys)
    assert "mean ranks (1 = best): B 1.50, C 1.50, A 3.00" in stdout


def test_friedman_study_and_compare_table_agree(study_and_table, tmp_path, capsys):
    study, path, _, tpath = study_and_table
    ref = multistat.friedman(study)
    for src in (path, tpath):
        status, stdout, err = run(["friedman", src, "-o", tmp_path / "f.parquet",
                                   "--posthoc", "bonferroni-dunn", "--control", "D"],
                                  capsys)
        assert status == 0, err
        assert f"Friedman chi2 = {ref.statistic:.4g}" in stdout
        pw = read_parquet(tmp_path / "f.parquet")
        assert set(pw.system_a) == {"D"} and len(pw) == 3


def test_replicability_cli(study_and_table, tmp_path, capsys):
    _, _, table, tpath = study_and_table
    status, stdout, err = run(["replicability", "--p-values",
                               "a=0.168,b=0.297,c=0.357,d=0.019,e=0.218,f=0.001"], capsys)
    assert status == 0, err
    # Dror et al.'s example (tests/test_across.py): k_Bonferroni = 1, Holm identifies f
    assert stdout.splitlines() == [
        "k = 1 of 6 test sets (bonferroni, alpha=0.05)",
        "partial conjunction p (u = 1..N): 0.006, 0.095, 0.672, 0.672, 0.672, 0.672",
        "identified by Holm: f"]
    status, stdout, _ = run(["replicability", "--p-values",
                             "0.168,0.297,0.357,0.019,0.218,0.001", "--method", "fisher"],
                            capsys)
    assert stdout.startswith("k = 2 of 6")
    out = tmp_path / "rep.parquet"
    status, stdout, err = run(["replicability", tpath, "-o", out], capsys)
    assert status == 0, err
    got = read_parquet(out)
    pd.testing.assert_frame_equal(got.reset_index(drop=True),
                                  multistat.replicability(table).reset_index(drop=True),
                                  check_dtype=False)


def test_cli_errors(study_and_table, tmp_path, capsys):
    _, path, _, tpath = study_and_table
    one_line_error(*run(["replicability"], capsys)[::2], "not both")
    one_line_error(*run(["replicability", "--p-values", "a=0.1,0.2"], capsys)[::2],
                   "name every p-value")
    one_line_error(*run(["replicability", "--p-values", "0.1,x"], capsys)[::2],
                   "'x' is not a number")
    one_line_error(*run(["replicability", tpath, "--test", "z"], capsys)[::2],
                   "--test 'z' is not in")
    one_line_error(*run(["friedman", path, "--posthoc", "tukey"], capsys)[::2],
                   "`--posthoc` must be one of")
    one_line_error(*run(["friedman", path, "--control", "A"], capsys)[::2],
                   "`--control` applies only")


def test_units_by_group(tmp_path, capsys):
    score = np.arange(24, dtype=float).reshape(2, 1, 12)
    ds = cube.make_dataset("docs", score, systems=["a", "b"], metrics=["m"],
                           instances=[f"i{k:02d}" for k in range(12)])
    ds = ds.assign_coords(group=("instance", [f"doc{k // 4}" for k in range(12)]))
    src, out = tmp_path / "s.nc", tmp_path / "u.nc"
    cube.save(cube.make_study([ds]), src)
    status, _, err = run(["units", src, "--by", "group", "-o", out], capsys)
    assert status == 0, err
    got = cube.datasets(cube.open_study(out))["docs"]
    assert got.instance.values.tolist() == ["doc0", "doc1", "doc2"]
    # means of 4 consecutive values: 1.5, 5.5, 9.5 (system a), + 12 for b
    np.testing.assert_allclose(got.score.values[:, 0], [[1.5, 5.5, 9.5], [13.5, 17.5, 21.5]])


def test_friedman_metrics_are_never_blocks(tmp_path, capsys):
    from test_across import two_metric_study

    study, _ = two_metric_study(("newstest", "ted", "wmt", "flores"), ["bleu", "ter"], 3)
    path = tmp_path / "study.nc"
    cube.save(study, path)
    out, fig = tmp_path / "f.parquet", tmp_path / "cd.png"
    status, stdout, err = run(["friedman", path, "--metrics", "ter", "-o", out,
                               "--figure", fig], capsys)
    assert status == 0, err
    ref = multistat.friedman(study, metric="ter")  # 4 test sets are the blocks
    assert stdout.splitlines()[0] == (
        f"ter: Friedman chi2 = {ref.statistic:.4g}, p = {ref.p_value:.4g}; Iman-Davenport "
        f"F = {ref.iman_davenport:.4g}, p = {ref.iman_davenport_p_value:.4g} (3 systems, "
        "4 blocks)")
    pw = read_parquet(out)
    assert set(pw.metric) == {"ter"} and len(pw) == 3 and fig.stat().st_size > 1000
    assert pw.attrs["multistat"]["n_blocks"] == 4
    # default: one test per metric, never 8 blocks of test set x metric
    status, stdout, err = run(["friedman", path, "-o", out, "--figure", fig], capsys)
    assert status == 0, err
    assert "bleu: Friedman chi2" in stdout and "ter: Friedman chi2" in stdout
    assert stdout.count("(3 systems, 4 blocks)") == 2 and "8 blocks" not in stdout
    pw = read_parquet(out)
    assert pw.groupby("metric").size().to_dict() == {"bleu": 3, "ter": 3}
    assert pw.attrs["multistat"]["per_metric"]["bleu"]["n_blocks"] == 4
    assert (tmp_path / "cd_bleu.png").is_file() and (tmp_path / "cd_ter.png").is_file()
    one_line_error(*run(["friedman", path, "--metrics", "chrf"], capsys)[::2],
                   "`--metrics`: unknown metric(s) ['chrf']; the scores have "
                   "['bleu', 'ter']")
    wide = tmp_path / "wide.csv"
    pd.DataFrame({"block": ["s1", "s2"], "A": [1, 2], "B": [2, 3], "C": [0, 1]}).to_csv(
        wide, index=False)
    one_line_error(*run(["friedman", wide, "--wide", "--metrics", "bleu"], capsys)[::2],
                   "--metrics applies to a study or a compare table")


def test_friedman_figure_names_never_become_paths(tmp_path, capsys):
    # a metric named 'a/b' was written into the file name as a folder (a crash); its
    # figure now takes the report's injective file stem, inside the figure's folder
    from test_across import two_metric_study

    study, _ = two_metric_study(("newstest", "ted", "wmt", "flores"), ["a/b", "ter"], 3)
    path = tmp_path / "study.nc"
    cube.save(study, path)
    out, fig = tmp_path / "f.parquet", tmp_path / "figs" / "cd.png"
    status, stdout, err = run(["friedman", path, "-o", out, "--figure", fig], capsys)
    assert status == 0, err
    written = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert len(written) == 2 and "cd_ter.png" in written
    assert all(p.parent == tmp_path / "figs" for p in (tmp_path / "figs").iterdir())
    assert any(n.startswith("cd_a-b--") for n in written), written


# the command line prints the project's warnings (one line on stderr); here they stay
# warnings instead of the test suite's errors, to be read as a user reads them
@pytest.mark.filterwarnings("always::multistat.errors.DroppedDataWarning")
def test_friedman_and_replicability_record_what_they_left_out(tmp_path, capsys):
    # 'late' entered two of the three test sets: the commands say so on the terminal and
    # in the written table's metadata, never silently narrowing to the common systems
    rng = np.random.default_rng(1)
    nodes = {}
    for d, systems in (("d1", list("ABC") + ["late"]), ("d2", list("ABC") + ["late"]),
                       ("d3", list("ABC"))):
        score = rng.normal(size=(len(systems), 1, 30)) + np.linspace(1, 0, len(systems))[
            :, None, None]
        nodes[d] = cube.make_dataset(d, score, systems=systems, metrics=["m"],
                                     instances=[f"i{j}" for j in range(30)])
    path = tmp_path / "study.nc"
    cube.save(cube.make_study(nodes), path)
    status, text, err = run(["friedman", path, "--out", tmp_path / "f.parquet"], capsys)
    assert status in (0, None), err
    assert "multistat: warning: metric 'm': 1 system(s) left out" in err
    assert "note: 1 system(s) left out, not scored on every test set: 'late'" in text
    meta = read_parquet(tmp_path / "f.parquet").attrs["multistat"]
    assert meta["dropped_systems"] == {"late": ["d3"]}
    assert meta["notes"][0].startswith("1 system(s) left out, not scored on every test set")
    table = multistat.compare(cube.make_study(nodes), tests=("t",), effect_sizes=False)
    tpath = tmp_path / "results.parquet"
    multistat.write_parquet(table, tpath)
    status, text, err = run(["replicability", tpath, "--out", tmp_path / "r.parquet"],
                            capsys)
    assert "multistat: warning: 3 of 6 pair(s) tested on fewer" in err
    assert status in (0, None), err
    assert "3 of 6 pair(s) tested on fewer than the table's 3 test sets" in text
    meta = read_parquet(tmp_path / "r.parquet").attrs["multistat"]
    assert len(meta["narrowed"]) == 3 and "no row on 'd3'" in meta["narrowed"][0]
