"""The ``multistat`` command line: one subcommand per pipeline stage, one module per
command group (``study``: load/units/analyze/demo-data; ``compare``; ``corpus``:
load-mt/load-labels; ``rank``; ``report``; ``across``: friedman/replicability; ``meta``;
``preferences``; ``metaeval``; ``merge``; ``power``), their shared options and writers in
``_common``. This module builds the app and runs it (:func:`main`).

Every subcommand reads and writes explicit paths, so DVC stages can call them. Bad input
prints one line ``multistat: error: ...`` on stderr and exits with status 2 (no
traceback).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from typing import Annotated

import typer

# typer (>= 0.26) vendors click: its usage errors are typer's own classes, and click
# itself is neither imported nor a dependency
from typer._click import exceptions as _click_exceptions

from multistat import __version__
from multistat._blas import pin_kernels
from multistat.cli._conventions import LIBRARY_CHOICES, conventions, fill_choices
from multistat.cli._signals import end_run, restore, terminate_on_sigterm, terminated
from multistat.cli.across import friedman_command, replicability_command
from multistat.cli.compare import compare_cmd
from multistat.cli.compare import fill_library_choices as fill_compare_choices
from multistat.cli.corpus import load_labels_command, load_mt_command
from multistat.cli.human import (
    AGREEMENT_HELP,
    COMPONENTS_HELP,
    agreement_command,
    components_command,
)
from multistat.cli.merge import merge_command
from multistat.cli.meta import HELP as META_HELP
from multistat.cli.meta import meta_command
from multistat.cli.metaeval import meta_evaluate_command
from multistat.cli.power import power_app
from multistat.cli.preferences import preferences_command
from multistat.cli.rank import fill_library_choices as fill_rank_choices
from multistat.cli.rank import rank_command
from multistat.cli.report import fill_library_choices as fill_report_choices
from multistat.cli.report import report_command
from multistat.cli.study import analyze, demo_data, load, units
from multistat.errors import MultistatError

app = typer.Typer(
    name="multistat", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # every subcommand too
    help="Paired significance tests, effect sizes and power for whole NLP evaluation "
         "studies (many systems x metrics x test sets).")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"multistat {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="print the version and exit")] = False) -> None:
    """Paired significance tests, effect sizes and power for whole NLP evaluation
    studies (many systems x metrics x test sets)."""


#: the mounted command functions whose help the library completes (fill_library_choices)
_MOUNTED: dict = {}


def _mount_commands():
    """One module per command group; the commands in the order ``--help`` lists them."""

    app.command()(conventions(load, "load"))
    app.command()(conventions(units, "units"))
    app.command()(conventions(analyze, "analyze"))
    app.command("demo-data")(conventions(demo_data, "demo-data"))
    app.command("compare")(_MOUNTED.setdefault("compare", conventions(compare_cmd, "compare")))
    app.command("load-mt", help="Machine-translation outputs + references -> a study of "
                "corpus BLEU/chrF/TER sufficient statistics (sacrebleu), one dataset per "
                "test set (--test-set); prints each system's corpus scores."
                )(conventions(load_mt_command, "load-mt"))
    app.command("load-labels", help="Gold and predicted labels -> a study of accuracy, "
                "precision/recall/F1 statistics.")(
        conventions(load_labels_command, "load-labels"))
    app.command("report", help="Heatmaps, leaderboards, Markdown/LaTeX tables and a "
                "self-contained HTML report from a compare table; with --ranking alone, "
                "a one-page leaderboard of any size.")(
        _MOUNTED.setdefault("report", conventions(report_command, "report")))
    app.command("rank", help="Leaderboard: significance clusters, rank ranges, bootstrap "
                "rank intervals (Parquet).")(
        _MOUNTED.setdefault("rank", conventions(rank_command, "rank")))
    app.command("friedman", help="Friedman test across test sets x metrics with Nemenyi, "
                "Bonferroni-Dunn or Wilcoxon-Holm post-hoc tests and a critical-difference "
                "diagram.")(conventions(friedman_command, "friedman"))
    app.command("replicability", help="On how many test sets, and which, an effect holds "
                "(Dror et al. 2017).")(
        conventions(replicability_command, "replicability"))
    app.command("meta", help=META_HELP)(conventions(meta_command, "meta"))
    app.command("preferences", help="Bradley-Terry leaderboard (Elo scale) from pairwise "
                "battles, with bootstrap score/rank intervals and clusters.")(
        conventions(preferences_command, "preferences"))
    app.command("agreement", help=AGREEMENT_HELP)(conventions(agreement_command, "agreement"))
    app.command("components", help=COMPONENTS_HELP)(
        conventions(components_command, "components"))
    app.command("meta-evaluate", help="Metric meta-evaluation: each metric's agreement "
                "with human scores, intervals, metric clusters (PERM-BOTH, bootstrap, "
                "Williams).")(conventions(meta_evaluate_command, "meta-evaluate"))
    app.command("merge", help="Several studies -> one study with all their datasets "
                "(test sets).")(conventions(merge_command, "merge"))

    for info in power_app.registered_commands:  # --quiet (they have their own --json)
        sub = info.name or info.callback.__name__.replace("_", "-")
        info.callback = conventions(info.callback, f"power {sub}")
    app.add_typer(power_app, name="power", help="Prospective, retrospective and "
                  "simulation power analysis (Card et al. 2020 scenarios).")


_mount_commands()


def command_functions() -> dict:
    """``{command path: its mounted function}`` of every command (``"power curve"``)."""
    out = {}
    groups = [("", app)] + [(f"{g.name} ", g.typer_instance) for g in app.registered_groups
                            if g.typer_instance is not None]
    for prefix, group in groups:
        for info in group.registered_commands:
            if info.callback is not None:
                name = info.name or info.callback.__name__.replace("_", "-")
                out[prefix + name] = info.callback
    return out


def fill_library_choices(argv=None) -> None:
    """The library's choices and defaults written into the help of the commands that
    take them (the registry's tests and the run request's defaults in ``compare`` and
    ``rank``; the section inputs in ``report``; the allowed values of
    :data:`~multistat.cli._conventions.LIBRARY_CHOICES` everywhere): for the commands
    ``argv`` names, or all of them (None). They import numpy, so the command line calls
    this after pinning the BLAS kernels, and only for those commands (``multistat --help``
    stays fast)."""
    fillers = {"compare": fill_compare_choices, "rank": fill_rank_choices,
               "report": fill_report_choices}
    for name, fill in fillers.items():
        if argv is None or name in argv:
            fill(_MOUNTED[name])
    functions = command_functions()
    for path, choices in LIBRARY_CHOICES.items():
        if argv is None or all(part in argv for part in path.split()):
            fill_choices(functions[path], choices)


def _invoked_options(argv) -> dict[str, str]:
    """``{python parameter name: its long flag}`` of the subcommand ``argv`` invokes."""
    command = typer.main.get_command(app)
    for arg in argv:
        if arg.startswith("-"):
            continue
        sub = getattr(command, "commands", {}).get(arg)
        if sub is None:
            break
        command = sub
    out = {}
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") == "option" and param.name:
            longs = [o for o in param.opts if o.startswith("--")]
            if longs:
                out[param.name] = max(longs, key=len)
    return out


_NUMPY_REPR = re.compile(r"np\.[a-z_]+[0-9]*_?\(('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|"
                         r"[^()]*)\)")
_MESSAGE_LIMIT = 600  # characters of a whole message (values are cut at the source)


def cli_message(text: object, argv=()) -> str:
    """A library error message as the command line shows it: one line; Python
    parameter names (`` `metrics` ``, ``metrics=[...]``) replaced by the invoked
    subcommand's flags (``--metrics``); no numpy reprs; at most 600 characters (the
    values a message echoes are cut to ~100 characters where it is written, with
    :func:`multistat.errors.show`)."""
    text = " ".join(str(text).split())
    text = _NUMPY_REPR.sub(r"\1", text)
    for name, flag in sorted(_invoked_options(list(argv)).items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"`{re.escape(name)}`", f"`{flag}`", text)
        text = re.sub(rf"(?<![\w-]){re.escape(name)}=\[\.\.\.\]", flag, text)
        if "_" in name:  # snake_case parameter names are never prose: system_col -> flag
            text = re.sub(rf"(?<![\w`'\"./-]){re.escape(name)}(?![\w'\"])=?", flag, text)
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "..."


def _fail(message: str, status: int = 2):
    if sys.stderr.isatty():  # a progress bar may hold the line: clear it
        typer.echo("\r\x1b[K", err=True, nl=False)
    typer.echo(f"multistat: error: {message}", err=True)
    sys.exit(status)


def main(argv=None) -> int:
    """Console entry point: errors -> one line on stderr, exit status 2 (no traceback).

    An unexpected exception (a bug) is one line too, with exit status 1; set
    ``MULTISTAT_TRACEBACK=1`` to see its traceback."""

    pin_kernels()  # before numpy loads OpenBLAS: products bit-identical for every chunk
    args = list(sys.argv[1:] if argv is None else argv)
    fill_library_choices(args)

    def show_warning(message, category, filename, lineno, file=None, line=None):
        typer.echo(f"multistat: warning: {cli_message(message, args)}", err=True)

    # SIGTERM unwinds like Ctrl-C and ends every process of the run (_signals)
    previous = terminate_on_sigterm()
    try:
        _run(args, show_warning)
    finally:
        end_run()  # after SIGTERM: the children stopped, then this process ends by it
        restore(previous)
    return 0


def _run(args, show_warning) -> None:
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning  # one line per warning, no source line
            status = app(args=args, standalone_mode=False, prog_name="multistat")
        if status == 130:  # typer turns Ctrl-C into Exit(130) and returns it here
            raise KeyboardInterrupt
    except MultistatError as exc:
        _fail(cli_message(exc, args))
    except _click_exceptions.UsageError as exc:
        if exc.format_message():  # empty when no arguments: the help was shown
            _fail(cli_message(exc.format_message()))
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        if not terminated():  # SIGTERM ends the process silently, as its default does
            typer.echo("multistat: aborted", err=True)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except MemoryError:
        _fail("out of memory; lower --memory-limit, or compare fewer pairs/metrics/"
              "resamples at once")
    except Exception as exc:  # the last line of defence: one line, no traceback
        if _interrupted(exc):  # raised while Ctrl-C unwound a library (h5py closing a file)
            if not terminated():
                typer.echo("multistat: aborted", err=True)
            sys.exit(130)
        lost = _scheduler_loss(exc)
        if lost is not None:
            _fail(lost)
        if isinstance(exc, OSError):  # an output that is a folder, not writable, disk full
            _fail(cli_message(exc))
        if os.environ.get("MULTISTAT_TRACEBACK"):
            raise
        _fail(f"internal error {type(exc).__name__}: {cli_message(exc)} (a bug in "
              f"multistat: please report it; MULTISTAT_TRACEBACK=1 shows the traceback)", 1)


def _interrupted(exc: BaseException | None) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled (anywhere
    in its chain of causes and contexts): then the run was aborted, not a bug."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _scheduler_loss(exc: BaseException) -> str | None:
    """One line for a lost dask.distributed scheduler, else None.

    ``Client.gather`` raises ``FutureCancelledError`` ("scheduler-connection-lost") when
    the scheduler dies mid-run; nothing has been written then (outputs are written only
    after the computation, atomically).
    """
    mod = type(exc).__module__ or ""
    text = " ".join(str(exc).split())
    if mod.startswith("distributed") or "scheduler-connection-lost" in text:
        first = text.split(". ")[0][:200]
        return (f"lost the dask scheduler during the run ({type(exc).__name__}: {first}); "
                "nothing was written")
    return None
