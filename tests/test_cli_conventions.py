"""Command-line conventions: ``--version``, ``-h``, ``--quiet``, ``--json`` on every
command that prints a summary, progress on every command that resamples, and choices and
defaults taken from the library (the test registry, the run request), never retyped."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
import pytest
import typer
from conftest import run_cli as run

import multistat
from multistat import cube
from multistat.cli import _conventions, app, fill_library_choices
from multistat.io import read_parquet, write_parquet
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


def test_json_without_recorded_fields_keeps_the_messages(capsys):
    """A command that records no fields: its --json summary holds its text lines."""
    def hello(out: Annotated[Path, typer.Option("--out")] = Path("x.txt")) -> None:
        typer.echo("first line")
        typer.echo(f"wrote {out}")

    one = typer.Typer()
    one.command()(_conventions.conventions(hello, "hello"))
    one.command("other")(lambda: None)  # two commands: `hello` is a subcommand
    one(args=["hello", "--json"], standalone_mode=False)
    summary = json.loads(capsys.readouterr().out)
    assert summary["command"] == "hello" and summary["outputs"] == {"--out": "x.txt"}
    assert summary["messages"] == ["first line", "wrote x.txt"]


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


# ------------------------------------------------------- progress on every resampling command
@pytest.fixture(scope="module")
def inputs(tmp_path_factory, study_file):
    """Small real inputs of every command: a study with a human metric (meta-evaluate),
    one with ratings by rater (agreement, components), pairwise battles (preferences),
    a score table (load, load-labels), a two-test-set study and its compare table
    (friedman, replicability, meta)."""
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(5)
    quality = rng.normal(size=(5, 1, 30)) + np.arange(5)[:, None, None] / 2
    scores = np.concatenate([quality, quality + rng.normal(scale=0.5, size=quality.shape),
                             quality + rng.normal(scale=2.0, size=quality.shape)], axis=1)
    ds = cube.make_dataset("d", scores, systems=[f"s{k}" for k in range(5)],
                           metrics=["human", "m1", "m2"],
                           instances=[f"i{k}" for k in range(30)])
    human = cube.save(cube.make_study([ds]), root / "human.nc")
    rating = rng.normal(size=(2, 1, 20, 3)) + np.array([0.0, 0.5])[:, None, None, None]
    rds = cube.make_dataset("pilot", cube.run_mean(rating), systems=["a", "b"],
                            metrics=["likert"], instances=[f"i{j}" for j in range(20)],
                            rating=rating, raters=["r0", "r1", "r2"])
    ratings = cube.save(cube.make_study({"pilot": rds}), root / "ratings.nc")
    battles = root / "battles.csv"
    pairs = [("x", "y"), ("y", "z"), ("x", "z")] * 8
    winners = ["model_a", "model_b", "tie", "model_a"] * 6
    pd.DataFrame({"model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs],
                  "winner": winners}).to_csv(battles, index=False)
    labels = root / "labels.csv"
    pd.DataFrame({"system": np.repeat(["p", "q", "r"], 20),
                  "instance": np.tile([f"i{k}" for k in range(20)], 3),
                  "gold": np.tile(["A", "B"], 30),
                  "prediction": rng.choice(["A", "B"], 60)}).to_csv(labels, index=False)
    sets = [cube.make_dataset(f"t{j}", rng.normal(size=(4, 1, 25)) + np.arange(4)[:, None,
                                                                                  None] / 3,
                              systems=list("abce"), metrics=["m"],
                              instances=[f"i{k}" for k in range(25)]) for j in range(3)]
    several = cube.save(cube.make_study(sets), root / "several.nc")
    table = root / "several.parquet"
    write_parquet(multistat.compare(cube.load(several), tests=("t",)), table)
    return {"human": human, "ratings": ratings, "battles": battles, "labels": labels,
            "several": several, "table": table, "study": study_file, "root": root}


def _argv(name, d, tmp_path):
    """A small real run of command ``name`` (without its output flag's value clash)."""
    return {
        "preferences": ["preferences", d["battles"], "-o", tmp_path / "p.csv",
                        "--n-resamples", "50"],
        "meta-evaluate": ["meta-evaluate", d["human"], "--human", "human", "--level",
                          "system", "--n-resamples", "50", "-o", tmp_path / "m.csv"],
        "agreement": ["agreement", d["ratings"], "-o", tmp_path / "a.csv",
                      "--n-resamples", "50"],
        "power curve": ["power", "curve", d["study"], "--a", "c", "--b", "a", "--delta",
                        "0.5", "--n-simulations", "20", "--sample-sizes", "10,20"],
        "power mcnemar-sim": ["power", "mcnemar-sim", "--n", "60", "--delta", "0.1",
                              "--agreement", "0.8", "--n-simulations", "200"],
        "power bleu-sim": ["power", "bleu-sim", "--n", "60", "--n-simulations", "4",
                           "--n-permutations", "20"],
        "power likert-sim": ["power", "likert-sim", "--n-items", "20",
                             "--n-simulations", "20"],
        "power likert": ["power", "likert", "--n-items", "20", "--n-simulations", "20"],
        "power preference-sim": ["power", "preference-sim", "--n", "40", "--p-a", "0.6",
                                 "--n-simulations", "200"],
    }[name]


def test_every_resampling_command_has_the_progress_flags():
    fill_library_choices()
    commands = {" ".join(path): cmd for path, cmd in _commands()}
    for name in _conventions.RESAMPLING:
        assert {"--progress", "--no-progress", "--quiet"} <= _flags(commands[name]), name


@pytest.mark.parametrize("name", sorted(_conventions.RESAMPLING - {"compare", "rank"}))
def test_resampling_commands_show_progress_and_quiet_silences_it(name, inputs, tmp_path,
                                                                 capsys):
    argv = _argv(name, inputs, tmp_path)
    label = name if name != "power likert" else "power likert-sim"
    status, _, err = run([*argv, "--progress"], capsys)
    assert status == 0 and f"multistat {label}: working, 0 s" in err, err
    status, _, err = run([*argv, "--progress", "--quiet"], capsys)
    assert (status, err) == (0, "")
    status, _, err = run([*argv, "--no-progress"], capsys)
    assert status == 0 and "working" not in err


# --------------------------------------------------- --json on every command with a summary
def _json_run(argv, capsys):
    status, stdout, err = run([*argv, "--json"], capsys)
    assert status == 0, err
    summary = json.loads(stdout)
    assert summary["command"] == argv[0] and summary["multistat_version"] == multistat.__version__
    assert "messages" not in summary  # the command recorded its numbers
    return summary


def _sizes(study):
    return [{"dataset": name, "systems": ds.sizes["system"],
             "instances": ds.sizes["instance"],
             "metrics": [str(m) for m in ds.metric.values]}
            for name, ds in cube.datasets(study).items()]


def _shown(summary):
    return [{"dataset": d["dataset"], "systems": d["systems"], "instances": d["instances"],
             "metrics": [m["metric"] for m in d["metrics"]]} for d in summary["datasets"]]


def test_json_of_the_loaders_and_merge(inputs, tmp_path, capsys):
    """load, load-labels, units and merge: the datasets of the study each writes."""
    for argv in (["load", inputs["labels"].with_name("x.csv"), "-o", tmp_path / "l.nc"],):
        pd.DataFrame({"system": ["a"] * 5 + ["b"] * 5, "instance": list(range(5)) * 2,
                      "score": np.arange(10.0)}).to_csv(argv[1], index=False)
    runs = {"load": ["load", inputs["labels"].with_name("x.csv"), "-o", tmp_path / "l.nc"],
            "load-labels": ["load-labels", inputs["labels"], "-o", tmp_path / "b.nc"],
            "units": ["units", inputs["study"], "--size", "4", "-o", tmp_path / "u.nc"],
            "merge": ["merge", inputs["several"], inputs["human"], "-o", tmp_path / "m.nc"]}
    for name, argv in runs.items():
        summary = _json_run(argv, capsys)
        assert _shown(summary) == _sizes(cube.load(argv[-1])), name
        assert summary["outputs"] == {"--out": str(argv[-1])} and summary["dropped"] == []


def test_json_of_analyze_and_demo_data(inputs, tmp_path, capsys):
    out = tmp_path / "an.csv"
    summary = _json_run(["analyze", inputs["study"], "-o", out], capsys)
    table = pd.read_csv(out)
    assert len(summary["rows"]) == len(table) == 6
    assert [r["recommended"] for r in summary["rows"]] == table["recommended"].tolist()
    summary = _json_run(["demo-data", "--out", tmp_path / "demo"], capsys)
    assert summary["files"] and all(Path(f).exists() for f in summary["files"])


def test_json_of_the_human_commands(inputs, tmp_path, capsys):
    out = tmp_path / "a.parquet"
    summary = _json_run(["agreement", inputs["ratings"], "-o", out, "--n-resamples", "50"],
                        capsys)
    table = read_parquet(out)
    assert [r["alpha"] for r in summary["rows"]] == table["alpha"].tolist()
    out = tmp_path / "c.parquet"
    summary = _json_run(["components", inputs["ratings"], "-o", out], capsys)
    assert summary["pooled"] == multistat.read_table(out)[1]["pooled"]
    assert summary["n_raters"] == 3 and summary["n_items"] == 20
    out = tmp_path / "p.parquet"
    summary = _json_run(["preferences", inputs["battles"], "-o", out, "--n-resamples",
                         "50"], capsys)
    assert summary["n_battles"] == 24
    assert [r["system"] for r in summary["leaderboard"]] == read_parquet(out)["system"].tolist()


def test_json_of_meta_evaluate_and_the_across_commands(inputs, tmp_path, capsys):
    out = tmp_path / "m.parquet"
    summary = _json_run(["meta-evaluate", inputs["human"], "--human", "human", "--level",
                         "system", "--n-resamples", "50", "-o", out], capsys)
    board = read_parquet(out)
    assert {m["metric"] for c in summary["clusters"]["d"] for m in c} == set(board["metric"])
    out = tmp_path / "f.parquet"
    summary = _json_run(["friedman", inputs["several"], "-o", out], capsys)
    meta = read_parquet(out).attrs["multistat"]
    assert summary["statistic"] == pytest.approx(meta["statistic"], rel=1e-15)
    assert summary["n_blocks"] == 3 and summary["posthoc"] == "nemenyi"
    out = tmp_path / "r.parquet"
    summary = _json_run(["replicability", inputs["table"], "-o", out], capsys)
    assert summary["claims"] == len(read_parquet(out))
    summary = _json_run(["replicability", "--p-values", "0.01,0.02,0.6"], capsys)
    assert summary["k"] == 2 and summary["n_test_sets"] == 3
    out = tmp_path / "pooled.parquet"
    summary = _json_run(["meta", inputs["table"], "-o", out], capsys)
    pooled = read_parquet(out)
    assert summary["groups"] == len(pooled) and summary["n_studies"] == 3
    assert [r["estimate"] for r in summary["rows"]] == pooled["estimate"].tolist()


def test_json_of_load_mt_has_the_corpus_scores(tmp_path, capsys):
    pytest.importorskip("sacrebleu")
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "a.txt").write_text("the cat sat on the mat\na dog barks\n")
    (tmp_path / "sys" / "b.txt").write_text("the cat sat\ndog barks loudly\n")
    (tmp_path / "ref.txt").write_text("the cat sat on the mat\na dog barks loudly\n")
    summary = _json_run(["load-mt", tmp_path / "sys", tmp_path / "ref.txt", "-o",
                         tmp_path / "s.nc", "--metrics", "bleu"], capsys)
    (scores,) = summary["corpus_scores"]
    assert [s["system"] for s in scores["systems"]] == ["a", "b"]  # best first
    assert scores["systems"][0]["bleu"] > scores["systems"][1]["bleu"]


# ------------------------------------------------------ choices and defaults from the library
def test_every_choice_list_in_the_help_comes_from_the_library():
    """The options of LIBRARY_CHOICES list the library's values, in its order; and no
    other option's help lists values by hand (``a | b``), except the ones that are no
    closed set of the library (scheduler addresses, a probability's bar)."""
    fill_library_choices()
    commands = {" ".join(path): cmd for path, cmd in _commands()}
    declared = set()
    for name, choices in _conventions.LIBRARY_CHOICES.items():
        params = {p.name: p for p in commands[name].params}
        for param, names in choices.items():
            values = _conventions.library_choices(names)
            assert len(values) >= 2, (name, param)
            assert " | ".join(values) in params[param].help, (name, param)
            declared.add((name, param))
    from multistat.cli import command_functions

    for name, fn in command_functions().items():  # a templated help: declared for each
        for param, p in inspect.signature(fn).parameters.items():  # command that uses it
            info = next(iter(getattr(p.annotation, "__metadata__", ())), None)
            if "{choices}" in getattr(info, "multistat_template", getattr(info, "help", "")
                                      or ""):
                assert (name, param) in declared, (name, param)
    listed = re.compile(r"(?<![\w(])[\w-]+ \| [\w-]+")
    for name, cmd in commands.items():
        for p in cmd.params:
            assert "{choices}" not in (p.help or ""), (name, p.name)
            if listed.search(p.help or "") and (name, p.name) not in declared:
                # dask's scheduler names or an address; pair syntax; P(a | no tie);
                # sacrebleu's own smoothing methods (the mt extra, imported on use)
                assert p.name in ("scheduler", "pairs", "item_sd", "rater_sd", "p",
                                  "smooth_method"), (name, p.name)


def test_meta_evaluate_lists_every_statistic_of_the_library():
    """The hand-typed list had drifted: soft_pairwise_accuracy was missing."""
    from multistat.meta.evaluation import STATISTICS

    fill_library_choices(["meta-evaluate"])
    params = {p.name: p for p in typer.main.get_command(app).commands["meta-evaluate"].params}
    assert "soft_pairwise_accuracy" in STATISTICS
    assert all(s in params["statistic"].help for s in STATISTICS)


LIBRARY_FUNCTIONS = {
    "agreement": "multistat.human.agreement:agreement",
    "components": "multistat.human.ratings:variance_components",
    "preferences": "multistat.human.preferences:bradley_terry",
    "meta": "multistat.meta.pooling:pool_studies",
    "meta-evaluate": "multistat.meta.evaluation:meta_evaluate",
    "friedman": "multistat.leaderboard.across:friedman",
    "replicability": "multistat.leaderboard.across:replicability",
    "units": "multistat.units:evaluation_units",
    "analyze": "multistat.analysis:analyze",
    "power paired-t": "multistat.power:power_paired_t",
    "power two-proportions": "multistat.power:power_two_proportions",
    "power mcnemar": "multistat.power:power_mcnemar",
    "power curve": "multistat.power:power_curve",
    "power mcnemar-sim": "multistat.power:simulate_mcnemar",
    "power bleu-sim": "multistat.power:simulate_bleu",
    "power likert-sim": "multistat.power:simulate_likert",
    "power preference-sim": "multistat.power:simulate_preference",
}


def test_defaults_shown_are_the_library_functions():
    """Every option of these commands named as a keyword of the library function it
    calls has that keyword's default (or none: the library decides)."""
    import importlib

    commands = {" ".join(path): cmd for path, cmd in _commands()}
    checked = 0
    for name, where in LIBRARY_FUNCTIONS.items():
        module, _, attr = where.partition(":")
        fn = getattr(importlib.import_module(module), attr)
        fn = getattr(fn, "__wrapped__", fn)
        library = {k: p.default for k, p in inspect.signature(fn).parameters.items()
                   if p.default is not inspect.Parameter.empty}
        for p in commands[name].params:
            if p.name in library and p.default is not None and library[p.name] is not None:
                want = library[p.name]
                shown = p.default
                if isinstance(shown, str) and isinstance(want, tuple):  # --by a,b
                    shown = tuple(shown.split(","))
                elif isinstance(shown, str) and isinstance(want, float):  # --epsilon 0
                    shown = float(shown)
                assert shown == want, (name, p.name, p.default, want)
                checked += 1
    assert checked >= 40
