"""Command-line stages for corpus metrics: ``multistat load-mt`` and ``multistat load-labels``.

Mounted by :mod:`multistat.cli` (``app.command("load-mt")(load_mt_command)``); both write
a study file (NetCDF) that ``compare``, ``report`` and the pipelines read. This module
imports only :mod:`multistat._cli_common`, never :mod:`multistat.cli` (no import cycle).
"""

from __future__ import annotations

import glob
import gzip
from pathlib import Path
from typing import Annotated

import typer

from multistat._cli_common import (
    echo_summary,
    guard_outputs,
    save_study,
    split_names,
    study_output,
)
from multistat.errors import InputFileError, ParameterError, show

_TEXT_SUFFIXES = (".txt", ".gz")


def _system_files(spec: str) -> dict[str, Path] | None:
    """``{system: file}`` for a folder or a glob pattern; None for a table file."""
    path = Path(spec)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    elif any(ch in spec for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(spec) if Path(p).is_file())
    else:
        return None
    if not files:
        raise InputFileError(f"HYPOTHESES {spec}: no system files found")
    out: dict[str, Path] = {}
    for f in files:
        name = f.name
        for suffix in _TEXT_SUFFIXES:
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
        if name in out:
            raise InputFileError(f"HYPOTHESES {spec}: two files give system name {name!r} "
                                 f"({out[name].name}, {f.name})")
        out[name] = f
    return out


def _first_line(path: Path) -> str:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            return fh.readline()
    except OSError:
        return ""


def _refuse_plain_text(path: Path, system_col: str) -> None:
    """One plain-text file given as HYPOTHESES (a table needs a header naming the
    system column): say what load-mt wants instead of a missing-column error."""
    if not path.is_file():
        return
    header = _first_line(path)
    fields = {f.strip().strip('"') for sep in ("\t", ",") for f in header.split(sep)}
    if system_col in fields or path.suffix.lower() in (".parquet", ".jsonl", ".json"):
        return
    raise InputFileError(
        f"HYPOTHESES {show(str(path))} looks like one plain-text file (its first line has "
        f"no {system_col!r} column): give a folder or a quoted glob of plain-text files, "
        f"one per system (the system name is the file name), e.g. 'outputs/*.txt', or a "
        f"table with columns system, segment, hypothesis")


def _progress_printer():
    """load-mt progress lines on stderr ("ter: 1,200 of 6,000 distinct hypotheses...")."""
    def echo(line: str) -> None:
        typer.echo(f"load-mt: {line}", err=True)
    return echo


def _parse_options(items) -> dict:
    from multistat.corpus import _parse_value

    out = {}
    for item in items or ():
        if "=" not in item:
            raise ParameterError(f"--sacrebleu-option {item!r}: expected KEY=VALUE, e.g. "
                                 f"chrf_word_order=2")
        key, value = item.split("=", 1)
        out[key.strip()] = _parse_value(value)
    return out


def load_mt_command(
    hypotheses: Annotated[str, typer.Argument(
        help="system outputs: a table (system, segment, hypothesis; TSV/CSV/JSONL/Parquet, "
             ".gz ok), or a folder / quoted glob of plain-text files, one per system, one "
             "segment per line (system name = file name without .txt/.gz)")],
    references: Annotated[Path, typer.Argument(
        help="a table (segment, reference) or, with plain-text systems, the plain-text "
             "reference file")],
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
    Path("study.nc"),
    metrics: Annotated[str, typer.Option(help="comma-separated: bleu, chrf, chrf++, ter")] =
    "bleu,chrf",
    dataset: Annotated[str | None, typer.Option(
        help="dataset name (default: folder of the hypotheses table, or 'translations')")] =
    None,
    system_col: Annotated[str, typer.Option(help="system column of the table")] = "system",
    segment_col: Annotated[str, typer.Option(help="segment column of both tables")] =
    "segment",
    text_col: Annotated[str, typer.Option(help="hypothesis column")] = "hypothesis",
    reference_col: Annotated[str, typer.Option(
        help="reference column(s), comma-separated for several references")] = "reference",
    tokenize: Annotated[str | None, typer.Option(
        help="BLEU tokenizer (sacrebleu: 13a, intl, zh, char, none, ...)")] = None,
    lowercase: Annotated[bool, typer.Option(
        help="lowercase before BLEU and chrF (sacrebleu -lc)")] = False,
    smooth_method: Annotated[str | None, typer.Option(
        help="BLEU smoothing: exp | floor | add-k | none")] = None,
    smooth_value: Annotated[float | None, typer.Option(
        help="value for floor / add-k smoothing")] = None,
    sacrebleu_option: Annotated[list[str] | None, typer.Option(
        help="any other sacrebleu metric option KEY=VALUE (repeatable), e.g. "
             "chrf_word_order=2, ter_case_sensitive=true")] = None,
    n_jobs: Annotated[int, typer.Option(
        help="worker processes for the statistics extraction (helps TER on idle cores)")] =
    1,
    progress: Annotated[bool, typer.Option(
        help="report progress on stderr (TER on thousands of segments takes minutes)")] =
    True,
):
    """Machine translation outputs -> a study with corpus BLEU / chrF / TER (sacrebleu)."""
    from multistat.adapters import load_translations

    files = _system_files(hypotheses)
    guard_outputs([*(files.values() if files is not None else [hypotheses]), references],
                  {"--out": out})
    study_output(out)
    if files is None:
        _refuse_plain_text(Path(hypotheses), system_col)
    options = _parse_options(sacrebleu_option)
    for key, value in (("tokenize", tokenize), ("smooth_method", smooth_method),
                       ("smooth_value", smooth_value)):
        if value is not None:
            options[key] = value
    if lowercase:
        options["lowercase"] = True
    refs = split_names(reference_col, "--reference-col")
    study = load_translations(
        files if files is not None else Path(hypotheses), references, metrics=metrics,
        system_col=system_col, segment_col=segment_col, text_col=text_col,
        reference_col=refs[0] if len(refs) == 1 else refs, dataset=dataset,
        n_jobs=n_jobs, progress=_progress_printer() if progress else None, **options)
    save_study(study, out)
    echo_summary(study)
    typer.echo(f"wrote {out}")


def load_labels_command(
    path: Annotated[Path, typer.Argument(
        help="table with one row per (system, instance): gold and predicted label")],
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
    Path("study.nc"),
    metrics: Annotated[str, typer.Option(
        help="comma-separated: accuracy, macro_f1, micro_f1, macro_precision, "
             "macro_recall, micro_precision, micro_recall, precision, recall, f1 (one per "
             "class) or f1[<class>]")] = "accuracy,macro_f1",
    dataset: Annotated[str | None, typer.Option(help="dataset name (default: stem)")] =
    None,
    gold_col: Annotated[str, typer.Option(help="gold label column")] = "gold",
    pred_col: Annotated[str, typer.Option(help="predicted label column")] = "prediction",
    system_col: Annotated[str, typer.Option(help="system column")] = "system",
    instance_col: Annotated[str, typer.Option(help="instance column")] = "instance",
):
    """Classification outputs -> a study with accuracy, precision, recall and F1."""
    from multistat.adapters import load_labels

    guard_outputs([path], {"--out": out})
    study_output(out)
    study = load_labels(path, gold_col=gold_col, pred_col=pred_col, system_col=system_col,
                        instance_col=instance_col, metrics=metrics, dataset=dataset)
    save_study(study, out)
    echo_summary(study)
    typer.echo(f"wrote {out}")
