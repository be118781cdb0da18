"""The conventions every ``multistat`` subcommand shares: ``--quiet``, ``--json`` and
progress on stderr.

:func:`conventions` wraps a command function when the app mounts it and adds two flags
to its signature (typer reads the signature):

- ``--quiet`` / ``-q``: no progress and no information lines. A command that writes files
  then prints nothing on stdout; one whose printed result is its only output (a power
  solver) still prints the result. Warnings and errors still go to stderr.
- ``--json``: stdout is one JSON object instead of the text summary: ``command``,
  ``multistat_version``, ``outputs`` (every output path the command was given, by flag),
  the fields the command recorded with :func:`record` (the numbers of its summary), and
  ``messages`` (its text lines, for commands that recorded nothing). Commands that
  already print their result as JSON with their own ``--json`` (``power``) keep it.

Every command that resamples or simulates (:data:`RESAMPLING`) shows progress on stderr
and has ``--progress/--no-progress``: ``compare`` and ``rank`` a bar in estimated seconds
(:mod:`multistat._progress`), the others (whose library calls report no steps) a line
``multistat NAME: working, N s`` while they run (:func:`working`). Commands ask
:func:`show_progress` whether to draw: ``--progress``/``--no-progress`` when given, else
when stderr is a terminal, never with ``--quiet`` or ``--json``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import io
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from multistat import __version__

QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="no progress and no information lines (warnings and errors still "
                          "go to stderr)")]
JsonFlag = Annotated[bool, typer.Option(
    "--json", help="print one JSON object summarising the run on stdout instead of the "
                   "text summary")]
ProgressOpt = Annotated[bool | None, typer.Option(
    "--progress/--no-progress", help="progress on stderr (default: when stderr is a "
                                     "terminal; never with --quiet or --json)")]

#: the commands that resample or simulate: each shows progress on stderr and takes
#: ``--progress/--no-progress`` (``compare`` and ``rank`` declare their own)
RESAMPLING = frozenset({
    "compare", "rank", "preferences", "meta-evaluate", "agreement", "power curve",
    "power mcnemar-sim", "power bleu-sim", "power likert-sim", "power likert",
    "power preference-sim"})


#: the options whose help lists choices of the library: ``{command: {parameter: names}}``,
#: each name a ``module:ATTRIBUTE`` tuple of allowed values (or a mapping: its keys); the
#: ``{choices}`` of the option's help becomes them, joined by `` | `` (:func:`fill_choices`)
LIBRARY_CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "compare": {"statistic": ("multistat._typing:STATISTICS",),
                "alternative": ("multistat._typing:ALTERNATIVES",),
                "ci_method": ("multistat.request:CI_METHODS",),
                "bootstrap_pvalue": ("multistat.request:BOOTSTRAP_PVALUES",),
                "correction": ("multistat.correct:METHODS",
                               "multistat.request:STEPDOWN_CORRECTIONS")},
    "load": {"format": ("multistat.io._sources:FORMATS",)},
    "units": {"statistic": ("multistat._typing:STATISTICS",),
              "remainder": ("multistat.units:REMAINDERS",)},
    "agreement": {"level": ("multistat.human.agreement:LEVELS",)},
    "meta": {"method": ("multistat.meta.pooling:METHODS",)},
    "meta-evaluate": {"level": ("multistat.meta.evaluation:LEVELS",),
                      "statistic": ("multistat.meta.evaluation:STATISTICS",),
                      "average_by": ("multistat.meta.evaluation:AVERAGES",),
                      "test": ("multistat.meta.evaluation:TESTS",),
                      "cluster_rule": ("multistat.meta.evaluation:CLUSTER_RULES",)},
    "friedman": {"posthoc": ("multistat.leaderboard.across:POSTHOCS",)},
    "replicability": {"method": ("multistat.leaderboard.across:REPLICABILITY_METHODS",)},
    "preferences": {"ties": ("multistat.human.preferences:TIES",)},
    **{f"power {name}": {"alternative": ("multistat._typing:ALTERNATIVES",)}
       for name in ("paired-t", "t-cluster", "sign")},
    "power two-proportions": {"alternative": ("multistat._typing:ALTERNATIVES",),
                              "method": ("multistat.power.analytic:PROPORTION_METHODS",)},
    "power mcnemar": {"alternative": ("multistat._typing:ALTERNATIVES",),
                      "method": ("multistat.power.analytic:MCNEMAR_METHODS",)},
    "power mde": {"method": ("multistat.power.analytic:MCNEMAR_METHODS",),
                  "agreement_model": ("multistat.power.analytic:AGREEMENT_MODELS",)},
    "power curve": {"method": ("multistat.power.retrospective:CURVE_METHODS",),
                    "alternative": ("multistat._typing:ALTERNATIVES",),
                    "format": ("multistat.io._sources:FORMATS",)},
    **{f"power {name}": {"preset": ("multistat.power.scenarios:LIKERT_PRESETS",),
                         "method": ("multistat.power.scenarios:LIKERT_METHODS",)}
       for name in ("likert-sim", "likert")},
}


def library_choices(names) -> tuple[str, ...]:
    """The allowed values named by ``names`` (``module:ATTRIBUTE``, in order, once each).

    Examples
    --------
    >>> library_choices(["multistat._typing:ALTERNATIVES"])
    ('two-sided', 'less', 'greater')
    """
    values: list[str] = []
    for name in names:
        module, _, attr = name.partition(":")
        values += [str(v) for v in getattr(importlib.import_module(module), attr)]
    return tuple(dict.fromkeys(values))


def fill_choices(command, choices) -> None:
    """Write the library's values into the help of ``command``'s options named in
    ``choices`` (``{parameter: names}``): ``{choices}`` becomes ``a | b | c`` (the help
    as written stays in the option's ``multistat_template``). The library is imported
    here, once the command line has pinned the BLAS kernels, so ``multistat --help``
    stays fast."""
    for name, param in inspect.signature(command).parameters.items():
        if name in choices:
            info = param.annotation.__metadata__[0]
            if "{choices}" in info.help:
                info.multistat_template = info.help
                info.help = info.help.replace("{choices}",
                                              " | ".join(library_choices(choices[name])))


class _State:
    __slots__ = ("fields", "json", "progress", "quiet")

    def __init__(self, quiet: bool = False, as_json: bool = False,
                 progress: bool | None = None) -> None:
        self.quiet = quiet
        self.json = as_json
        self.progress = progress
        self.fields: dict = {}


_STATE: contextvars.ContextVar[_State] = contextvars.ContextVar("multistat_cli_state")
_OUTSIDE = _State()  # outside a command (the library called directly): the defaults


def _state() -> _State:
    return _STATE.get(_OUTSIDE)


def record(**fields) -> None:
    """Fields of the running command's ``--json`` summary (JSON-able values; NaN and
    infinities become null)."""
    _state().fields.update(fields)


def show_progress(flag: bool | None = None) -> bool:
    """Whether to draw progress on stderr: never with ``--quiet`` or ``--json``; else
    ``flag`` (a command's own ``--progress/--no-progress``) or the running command's
    ``--progress/--no-progress`` when given; else when stderr is a terminal."""
    state = _state()
    if state.quiet or state.json:
        return False
    if flag is None:
        flag = state.progress
    return sys.stderr.isatty() if flag is None else bool(flag)


@contextlib.contextmanager
def working(label: str, enabled: bool | None = None):
    """While the block runs, ``multistat LABEL: working, N s`` on stderr, drawn at once
    and redrawn each second (when :func:`show_progress` allows, or ``enabled``), cleared
    at the end."""
    enabled = show_progress() if enabled is None else enabled
    if not enabled:
        yield
        return
    stop = threading.Event()
    start = time.monotonic()

    def line() -> None:
        sys.stderr.write(f"\r\x1b[Kmultistat {label}: working, "
                         f"{time.monotonic() - start:.0f} s")
        sys.stderr.flush()

    def draw() -> None:
        while not stop.wait(1.0):
            line()

    line()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return _jsonable(value.item())
    if isinstance(value, Path):
        return str(value)
    return value


def _output_flags(sig: inspect.Signature) -> dict[str, str]:
    """``{parameter: flag}`` of the parameters that name an output file or folder
    (``out``, ``*_out``, ``out_*``)."""
    out = {}
    for name in sig.parameters:
        if name == "out" or name.endswith("_out") or name.startswith("out_"):
            out[name] = "--" + name.replace("_", "-")
    return out


def conventions(fn, name: str):
    """``fn`` (a typer command function) with ``--quiet``; unless it has its own (an
    ``as_json`` parameter), ``--json``; and for a command of :data:`RESAMPLING` without
    its own (a ``progress`` parameter), ``--progress/--no-progress``. A function already
    wrapped is returned as it is."""
    if getattr(fn, "multistat_conventions", False):
        return fn
    sig = inspect.signature(fn, eval_str=True)
    own_json = "as_json" in sig.parameters
    extra = [inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False,
                               annotation=QuietOpt)]
    if not own_json:
        extra.append(inspect.Parameter("json_summary", inspect.Parameter.KEYWORD_ONLY,
                                       default=False, annotation=JsonFlag))
    if name in RESAMPLING and "progress" not in sig.parameters:
        extra.append(inspect.Parameter("progress_flag", inspect.Parameter.KEYWORD_ONLY,
                                       default=None, annotation=ProgressOpt))
    params = list(sig.parameters.values())
    new_sig = sig.replace(parameters=params + extra)
    outputs = _output_flags(sig)

    @functools.wraps(fn)
    def command(*args: Any, quiet: bool = False, json_summary: bool = False,
                progress_flag: bool | None = None, **kwargs: Any) -> Any:
        as_json = json_summary or bool(kwargs.get("as_json"))
        state = _State(quiet=quiet, as_json=as_json, progress=progress_flag)
        token = _STATE.set(state)
        given_outputs = {flag: kwargs.get(p) for p, flag in outputs.items()
                         if kwargs.get(p) is not None}
        silence = json_summary or (quiet and not as_json and bool(given_outputs))
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text) if silence else contextlib.nullcontext():
                result = fn(*args, **kwargs)
        finally:
            _STATE.reset(token)
        if json_summary:
            summary = {"command": name, "multistat_version": __version__,
                       "outputs": given_outputs, **state.fields}
            if not state.fields:
                summary["messages"] = text.getvalue().splitlines()
            typer.echo(json.dumps(_jsonable(summary), allow_nan=False))
        return result

    wrapped: Any = command  # typer reads the signature and annotations set here
    wrapped.multistat_conventions = True
    wrapped.__signature__ = new_sig
    wrapped.__annotations__ = {p.name: p.annotation for p in new_sig.parameters.values()
                               if p.annotation is not inspect.Parameter.empty}
    if new_sig.return_annotation is not inspect.Signature.empty:
        wrapped.__annotations__["return"] = new_sig.return_annotation
    return wrapped


__all__ = ["LIBRARY_CHOICES", "RESAMPLING", "JsonFlag", "ProgressOpt", "QuietOpt",
           "conventions", "fill_choices", "library_choices", "record", "show_progress",
           "working"]
