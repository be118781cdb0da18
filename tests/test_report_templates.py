"""The pipelines/ templates: rendered by real DVC, every command and flag exists."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_checked

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(args, cwd) -> subprocess.CompletedProcess:
    return run_checked(args, cwd, timeout=300)


def _init(project: Path) -> None:
    _run(["git", "init", "-q"], project)
    _run([str(BIN / "dvc"), "init", "-q"], project)
    _run([str(BIN / "dvc"), "config", "core.analytics", "false"], project)


def _cli_options(words: list[str]) -> set[str]:
    """Option names the ``multistat`` subcommand named by ``words`` accepts."""
    import typer

    from multistat import cli

    cmd = typer.main.get_command(cli.app)
    while words and hasattr(cmd, "commands") and words[0] in cmd.commands:
        cmd = cmd.commands[words.pop(0)]
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("template", ["two-systems", "shared-task", "power-planning"])
def test_templates_render_to_valid_commands(template, tmp_path):
    # every ${...} resolves (DVC renders the stages) and every flag exists in the CLI
    project = tmp_path / "repo"
    shutil.copytree(ROOT / "pipelines" / template, project / "pipelines" / template)
    _init(project)
    code = ("from dvc.repo import Repo\n"
            "for s in Repo('.').index.stages: print(s.addressing, '\\t', s.cmd)")
    out = _run([sys.executable, "-c", code], project / "pipelines" / template)
    cmds = dict(line.split(" \t ", 1) for line in out.stdout.strip().splitlines())
    # the version stage is checked below (test_every_multistat_stage_reruns_...)
    cmds = {n: c for n, c in cmds.items() if n.split(":")[-1] != "multistat_version"}
    names = {n.split(":")[-1].split("@")[0] for n in cmds}
    expected = {"load", "units", "analyze", "compare", "power", "report"}
    if template == "shared-task":  # its leaderboard's tiers (the ranking decides)
        expected.add("rank")
    assert names == expected
    for name, cmd in cmds.items():
        assert "${" not in cmd, name
        words = cmd.split()
        assert words[0] == "multistat"
        sub = [w for w in words[1:3] if not w.startswith("-") and "/" not in w
               and "." not in w]
        flags = {w for w in words if w.startswith("--")}
        assert flags <= _cli_options(sub), (name, flags - _cli_options(sub))


@pytest.mark.parametrize("template", sorted(p.parent.name for p in
                                            (ROOT / "pipelines").glob("*/dvc.yaml")))
def test_every_multistat_stage_reruns_when_multistat_changes(template):
    """A template is copied into a user's project, where multistat is installed, not a
    folder: its ``multistat_version`` stage records ``multistat --version`` on every run
    (``always_changed``), and every stage that runs multistat depends on that file."""
    import yaml

    stages = yaml.safe_load((ROOT / "pipelines" / template / "dvc.yaml").read_text())["stages"]
    version = stages["multistat_version"]
    assert version["always_changed"] is True
    assert "multistat --version > reports/multistat-version.txt" in version["cmd"]
    runs = {name: st.get("do", st) for name, st in stages.items()
            if name != "multistat_version"
            and " multistat " in f" {st.get('do', st)['cmd']} ".replace("\n", " ")}
    assert runs, "no stage runs multistat"
    for name, st in runs.items():
        assert "reports/multistat-version.txt" in st.get("deps", []), name
