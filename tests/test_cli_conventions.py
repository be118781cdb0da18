"""Command-line conventions: ``--version``, ``-h``, ``--quiet``, ``--json`` on every
command that prints a summary, progress on every command that resamples, and choices and
defaults taken from the library (the test registry, the run request), never retyped."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re

import numpy as np
import pandas as pd
import pytest
import typer
from conftest import run_cli as run

import multistat
from multistat import cube
from multistat.cli import _conventions, app, fill_library_choices
from multistat.io import read_parquet
from multistat.request import RunRequest
from multistat.significance import REGISTRY


@pytest.fixture(scope="module")
def study_file(tmp_path_factory):
    """4 systems x 1 metric x 40 instances, two of them clearly better."""
    rng = np.random.default_rng(3)
    score = rng.normal(size=(4, 1, 40)) + np.array([0, 0, 1, 1.5])[:, None, None]
    ds = cube.make_dataset("d", score, systems=["a", "b", "c", "e"], metrics=["m"],
                           instances=[f"i{k}" for k in range(40)])
    path = tmp_path_factory.mktemp("conventions") / "study.nc"
    cube.save(cube.make_study([ds]), path)
    return path


def _commands(group=None, prefix=()):
    """(name path, click command) of every leaf command of the app."""
    group = group or typer.main.get_command(app)
    for name, cmd in group.commands.items():
        if getattr(cmd, "commands", None):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def _flags(cmd) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


def _plain(text: str) -> str:
    """Help text without rich's box characters and line wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_version(capsys):
    status, out, err = run(["--version"], capsys)
    assert (status, out, err) == (0, f"multistat {multistat.__version__}\n", "")


@pytest.mark.parametrize("argv", [[], ["compare"], ["rank"], ["power", "paired-t"]])
def test_short_help_is_the_long_help(argv, capsys):
    status, long_help, _ = run([*argv, "--help"], capsys)
    status_h, short_help, _ = run([*argv, "-h"], capsys)
    assert status == status_h == 0
    assert short_help == long_help and "Usage: multistat" in short_help


def test_every_command_has_quiet_and_json():
    fill_library_choices()
    names = []
    for path, cmd in _commands():
        flags = _flags(cmd)
        assert {"--quiet", "-q", "--json"} <= flags, (path, flags)
        names.append(" ".join(path))
    assert {"compare", "rank", "preferences", "meta-evaluate", "power curve", "load",
            "report", "merge"} <= set(names)


def test_compare_help_names_every_registered_test(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one line per option: nothing cut by rich
    status, out, _ = run(["compare", "--help"], capsys)
    assert status == 0
    text = _plain(out)
    listed = text.split("comma-separated tests of the registry (multistat.significance):")[1]
    listed = listed.split("--statistic")[0]
    assert len(REGISTRY) >= 11  # t-cluster is the eleventh
    for name in REGISTRY:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", listed), name


def test_defaults_shown_are_the_run_requests(capsys, monkeypatch):
    """compare --help shows RunRequest's defaults, and a run with no options runs them."""
    from multistat.cli.compare import REQUEST_DEFAULTS

    fill_library_choices(["compare"])
    compare = typer.main.get_command(app).commands["compare"]
    params = {p.name: p for p in compare.params}
    defaults = {f.name: f.default for f in dataclasses.fields(RunRequest)}
    for name in REQUEST_DEFAULTS:
        value = defaults[name]
        shown = params[name].show_default
        expected = (",".join(value) if isinstance(value, tuple) else
                    format(value, "g") if isinstance(value, float) else str(value))
        assert shown == expected, name
        assert params[name].default is None  # nothing retyped: the request decides
    rank_params = {p.name: p for p in typer.main.get_command(app).commands["rank"].params}
    from multistat.leaderboard.ranking import rank_request

    for name, p in inspect.signature(rank_request).parameters.items():
        if name in rank_params and rank_params[name].show_default not in (None, True, False):
            assert rank_params[name].show_default == (
                format(p.default, "g") if isinstance(p.default, float) else str(p.default))


def test_compare_quiet_and_json(study_file, tmp_path, capsys):
    out = tmp_path / "r.parquet"
    status, stdout, err = run(["compare", study_file, "--tests", "t,sign", "-o", out,
                               "--quiet", "--progress"], capsys)
    assert (status, stdout, err) == (0, "", "")
    assert out.exists()
    status, stdout, err = run(["compare", study_file, "--tests", "t,sign", "-o", out,
                               "--json", "--progress"], capsys)
    assert status == 0 and err == ""
    summary = json.loads(stdout)
    table = read_parquet(out)
    assert summary["command"] == "compare" and summary["outputs"] == {"--out": str(out)}
    assert summary["comparisons"] == len(table) == 12
    assert summary["tests"] == ["t", "sign"]
    assert summary["significant"] == int(table["reject"].sum())
    assert summary["significant_by_test"] == {
        t: int(g["reject"].sum()) for t, g in table.groupby("test", sort=False)}
    assert summary["alpha"] == RunRequest().alpha and summary["correction"] == "holm"


def test_rank_json_holds_the_clusters(study_file, tmp_path, capsys):
    out = tmp_path / "k.parquet"
    status, stdout, err = run(["rank", study_file, "--n-resamples", "199", "-o", out,
                               "--json"], capsys)
    assert status == 0 and err == ""
    summary = json.loads(stdout)
    board = read_parquet(out)
    (entry,) = summary["leaderboards"]
    assert (entry["dataset"], entry["metric"]) == ("d", "m")
    got = {(m["system"], c) for c, members in enumerate(entry["clusters"], 1)
           for m in members}
    assert got == set(zip(board["system"], board["cluster"]))
    assert summary["n_resamples"] == 199 and summary["test"] == "bootstrap"


def test_json_without_recorded_fields_keeps_the_messages(tmp_path, capsys):
    status, stdout, _ = run(["demo-data", "--out", tmp_path, "--json"], capsys)
    summary = json.loads(stdout)
    assert status == 0 and summary["command"] == "demo-data"
    assert summary["outputs"] == {"--out": str(tmp_path)}
    assert any(line.startswith("wrote ") for line in summary["messages"])


def test_quiet_keeps_a_printed_result(capsys):
    """A power solver's printed table is its only output: --quiet keeps it."""
    status, stdout, _ = run(["power", "paired-t", "--effect-size", "0.3", "--n", "100",
                             "-q"], capsys)
    assert status == 0 and "power" in stdout
    status, stdout, _ = run(["power", "paired-t", "--effect-size", "0.3", "--n", "100",
                             "--json"], capsys)
    assert json.loads(stdout)["power"] == pytest.approx(0.8439471027374158)


def test_progress_on_compare_and_rank(study_file, tmp_path, capsys):
    for argv in (["compare", study_file, "--tests", "bootstrap", "--n-resamples", "999"],
                 ["rank", study_file, "--n-resamples", "199"]):
        status, _, err = run([*argv, "-o", tmp_path / "x.parquet", "--progress"], capsys)
        label = "multistat compare" if argv[0] == "compare" else "multistat rank"
        assert status == 0 and label in err and "100%" in err, err
        status, _, err = run([*argv, "-o", tmp_path / "x.parquet", "--progress", "-q"],
                             capsys)
        assert (status, err) == (0, "")


@pytest.mark.parametrize("module, label, argv", [
    ("multistat.cli.preferences", "preferences", "preferences"),
    ("multistat.cli.metaeval", "meta-evaluate", "meta-evaluate"),
    ("multistat.cli.power", "power curve", "power curve"),
])
def test_resampling_commands_show_progress(module, label, argv, monkeypatch, tmp_path,
                                           capsys):
    """preferences, meta-evaluate and power curve run their resampling inside
    `working(label)`; the stop after it (an error raised in the block) keeps this fast."""
    import importlib

    mod = importlib.import_module(module)
    seen = []

    class Stop(Exception):
        pass

    def fake_working(name, enabled=None):
        seen.append(name)
        raise Stop

    monkeypatch.setattr(mod, "working", fake_working)
    battles = tmp_path / "battles.csv"
    pd.DataFrame({"model_a": ["x", "y", "x"], "model_b": ["y", "z", "z"],
                  "winner": ["model_a", "model_b", "tie"]}).to_csv(battles, index=False)
    args = {"preferences": ["preferences", battles, "-o", tmp_path / "p.csv"],
            "meta-evaluate": ["meta-evaluate", tmp_path / "none.nc", "--human", "h",
                              "-o", tmp_path / "m.csv"],
            "power curve": ["power", "curve", "--delta", "0.1", "--sd", "1",
                            "--sample-sizes", "10,20"]}[argv]
    with pytest.raises(Stop):
        from multistat.cli import app as the_app

        the_app(args=[str(a) for a in args], standalone_mode=False, prog_name="multistat")
    assert seen == [label]


def test_working_draws_only_when_allowed(capsys):
    token = _conventions._STATE.set(_conventions._State(quiet=True))
    try:
        assert _conventions.show_progress(True) is False
        with _conventions.working("x"):
            pass
    finally:
        _conventions._STATE.reset(token)
    assert capsys.readouterr().err == ""
    assert _conventions.show_progress(True) is True
    assert _conventions.show_progress(False) is False
