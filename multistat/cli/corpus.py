"""Command-line stages for corpus metrics: ``multistat load-mt`` and ``multistat load-labels``.

Mounted by :mod:`multistat.cli` (``app.command("load-mt")(load_mt_command)``); both write
a study file (NetCDF) that ``compare``, ``report`` and the pipelines read. This module
imports only :mod:`multistat.cli._common` and :mod:`multistat.cli._conventions`, never
:mod:`multistat.cli` (no import cycle).
"""

from __future__ import annotations

import glob
import gzip
import re
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import (
    echo_summary,
    guard_outputs,
    save_study,
    split_names,
    study_output,
)
from multistat.cli._conventions import record
from multistat.errors import InputFileError, ParameterError, show

_TEXT_SUFFIXES = (".gz", ".txt")  # in this order: X.txt.gz -> X
#: --canary choices (multistat.io._mt_text.CANARY_CHOICES, not imported: --help stays fast)
CANARY_CHOICES = ("auto", "keep")


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
    # heavy: numpy, lazily
    from multistat.corpus import parse_value

    out = {}
    for item in items or ():
        if "=" not in item:
            raise ParameterError(f"--sacrebleu-option {item!r}: expected KEY=VALUE, e.g. "
                                 f"chrf_word_order=2")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def _system_names(files: dict[str, Path], spec: str | None) -> dict[str, Path]:
    """``--system-name-from``: each file's system name from a regular expression (the
    named group ``system``, else group 1, else the whole match, searched in the file
    name) or from a table file (columns ``file, system``: a file name with or without
    its .txt/.gz suffix -> its system)."""
    if spec is None:
        return files
    table = Path(spec)
    if table.is_file():
        # heavy: pyarrow, pandas, lazily
        from multistat.io._parsing import read_table

        frame = read_table(table)
        if not {"file", "system"} <= set(frame.columns):
            raise InputFileError(f"--system-name-from {show(spec)}: the table needs columns "
                                 f"'file' and 'system'; it has {list(frame.columns)[:10]}")
        mapping = dict(zip(frame["file"].astype(str), frame["system"].astype(str)))

        def name_of(stem: str, f: Path) -> str:
            for key in (f.name, stem):
                if key in mapping:
                    return mapping[key]
            raise InputFileError(f"--system-name-from {show(spec)}: no row for system file "
                                 f"{f.name!r} (column 'file' lists "
                                 f"{', '.join(sorted(mapping)[:5])}...)")
    else:
        try:
            pattern = re.compile(spec)
        except re.error as exc:
            raise ParameterError(f"--system-name-from {show(spec)}: neither a file nor a "
                                 f"regular expression ({exc})") from None

        def name_of(stem: str, f: Path) -> str:
            m = pattern.search(f.name)
            if m is None:
                raise InputFileError(f"--system-name-from: the pattern {spec!r} does not "
                                     f"match system file {f.name!r}")
            if "system" in pattern.groupindex:
                return m.group("system") or ""
            return m.group(1) if pattern.groups else m.group(0)
    out: dict[str, Path] = {}
    for stem, f in files.items():
        name = name_of(stem, f)
        if not name.strip():
            raise InputFileError(f"--system-name-from {show(spec)} gives system file "
                                 f"{f.name!r} an empty name")
        if name in out:
            raise InputFileError(f"--system-name-from {show(spec)} gives two files the "
                                 f"system name {name!r} ({out[name].name}, {f.name})")
        out[name] = f
    return out


def _reference_files(specs: list[str]) -> list[Path]:
    """Plain-text reference files: each spec a file, a folder (its files, sorted) or a
    quoted glob, in the order given (read_scores' expansion of paths)."""
    # heavy: pyarrow, pandas, lazily
    from multistat.io._reader import expand_paths

    return expand_paths(list(specs))[0]


def _parse_test_sets(items: list[str]) -> list[tuple[str, str, list[str]]]:
    """``--test-set NAME=HYPS:REF[,REF...]`` -> (name, hypotheses, reference specs)."""
    out = []
    for item in items:
        name, eq, rest = item.partition("=")
        hyps, colon, refs = rest.partition(":")
        if not eq or not colon or not name.strip() or not hyps or not refs:
            raise ParameterError(f"--test-set {item!r}: expected NAME=HYPOTHESES:REFERENCES, "
                                 f"e.g. newstest2017=outputs/wmt17/:refs/newstest2017.de "
                                 f"(several references comma-separated)")
        out.append((name.strip(), hyps, [r for r in refs.split(",") if r]))
    names = [n for n, _, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ParameterError(f"--test-set: test set {twice[0]!r} is given twice")
    return out


def _parse_domains(items, names: list, named: bool) -> dict:
    """``--domains`` -> ``{test set: domain file}``."""
    if not items:
        return {}
    out = {}
    for item in items:
        name, eq, path = item.partition("=")
        if not named:
            if len(items) > 1:
                raise ParameterError("--domains: one domain file for one test set (with "
                                     "--test-set: NAME=FILE per test set)")
            out[names[0]] = Path(item)
            continue
        if not eq or name.strip() not in names:
            raise ParameterError(f"--domains {item!r}: with --test-set give NAME=FILE, NAME "
                                 f"one of {', '.join(map(repr, names))}")
        out[name.strip()] = Path(path)
    return out


def _split_choice(by: str | None, have_domains: bool) -> str:
    choices = ("test-set", "domain", "both")
    if by is None:
        return "domain" if have_domains else "test-set"
    if by not in choices:
        raise ParameterError(f"--by must be one of {', '.join(choices)}; got {by!r}")
    if by != "test-set" and not have_domains:
        raise ParameterError(f"--by {by} needs each segment's domain: --domains FILE "
                             f"(plain-text files) or --domain-col COLUMN (a references table)")
    return by


def _check_inputs(name, hyps, files, refs, domain_file, canary, *, where, system_col,
                  segment_col, reference_cols, domain_col):
    """Read and check one test set's inputs before any metric is computed:
    ``(TextTestSet or None, domain per kept segment or None, segments to drop, the line
    saying which canary lines were skipped or None)``."""
    # heavy: the readers, lazily
    from multistat.io._mt_text import CANARY_DOMAIN, is_canary, read_test_set

    if files is not None:
        texts = read_test_set(name, files, refs, domain_file, canary=canary, where=where)
        said = None
        if texts.skipped:
            lines = ", ".join(map(str, texts.skipped[:5])) + (
                f" and {len(texts.skipped) - 5} more" if len(texts.skipped) > 5 else "")
            said = (f"load-mt: {name}: skipped the canary line(s) {lines} of every file "
                    f"({len(texts.files)} files; --canary keep keeps them)")
        return texts, texts.domains, set(), said
    prefix = f"{where} " if where else ""
    for path, what in ((Path(hyps), "HYPOTHESES"), (Path(refs), "REFERENCES")):
        if not path.is_file():
            raise InputFileError(f"{prefix}{what} {str(path)!r}: no such file")
    _refuse_plain_text(Path(hyps), system_col)
    if domain_col is None and canary == "keep":
        return None, None, set(), None
    # heavy: pyarrow, pandas, lazily
    from multistat.io._parsing import read_table

    table = read_table(Path(refs), keep_empty=True)
    need = [segment_col, *reference_cols] + ([domain_col] if domain_col else [])
    lacking = [c for c in need if c not in table.columns]
    if lacking:
        raise InputFileError(f"{prefix}REFERENCES {str(refs)!r} lacks column(s) "
                             f"{lacking}; it has {list(map(str, table.columns))[:10]}")
    segments = table[segment_col].astype(str).tolist()
    drop = set()
    if canary == "auto":
        first = table[reference_cols[0]].astype(str)
        drop = {s for s, t in zip(segments, first) if is_canary(t)}
        if domain_col:
            drop |= {s for s, d in zip(segments, table[domain_col].astype(str))
                     if d.strip().lower() == CANARY_DOMAIN}
        said = (f"load-mt: {name}: skipped {len(drop)} canary segment(s) "
                f"({', '.join(sorted(drop)[:5])}); --canary keep keeps them") if drop else None
    domains = None
    if domain_col:
        empty = [s for s, d in zip(segments, table[domain_col].astype(str)) if not d.strip()]
        if empty:
            raise InputFileError(f"{prefix}REFERENCES {str(refs)!r}: column "
                                 f"{domain_col!r} is empty for segment(s) {empty[:5]}")
        domains = {s: str(d).strip() for s, d in zip(segments, table[domain_col])}
    return None, domains, drop, said


def _split_nodes(ds, name: str, domains, drop: set, split: str) -> dict:
    """The test set's dataset(s): the whole set, one per domain, or both; canary segments
    of a table (``drop``) removed. ``domains``: a list per kept segment (plain text) or a
    ``{segment: domain}`` mapping (table)."""
    segments = [str(s) for s in ds.instance.values]
    keep = [i for i, s in enumerate(segments) if s not in drop]
    if len(keep) < len(segments):
        ds = ds.isel(instance=keep)
        segments = [segments[i] for i in keep]
    out = {}
    if split in ("test-set", "both") or domains is None:  # a set without domains: whole
        out[name] = ds
    if split in ("domain", "both") and domains is not None:
        labels = (list(domains) if not isinstance(domains, dict)
                  else [domains[s] for s in segments])
        positions: dict[str, list[int]] = {}
        for i, d in enumerate(labels):
            positions.setdefault(d, []).append(i)
        for d, idx in positions.items():
            out[f"{name}-{d}"] = ds.isel(instance=idx)
    return out


def echo_corpus_scores(study) -> None:
    """One table per dataset: each system's corpus score per metric (the metric of the
    summed statistics, as sacrebleu reports it), best first by the first metric."""
    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    # heavy: numpy, lazily
    from multistat.corpus import get_corpus_metric

    scores = []
    for name, ds in cube.datasets(study).items():
        metrics = [str(m) for m in ds.metric.values]
        cols = []
        for j, fn in enumerate(ds.corpus_fn.values):
            cm = get_corpus_metric(str(fn))
            cols.append(cm.score(ds[cube.STATS].values[:, j, :, :cm.n_stats], axis=-2))
        first = cols[0] if ds.higher_is_better.values[0] else -cols[0]
        order = sorted(range(len(first)), key=lambda i: -first[i])
        systems = [str(s) for s in ds.system.values]
        width = max(len(s) for s in systems + ["system"])
        typer.echo(f"corpus scores, dataset {name} ({ds.sizes['instance']} segments):")
        typer.echo("  " + "system".ljust(width) + "".join(f"{m:>10}" for m in metrics))
        for i in order:
            typer.echo("  " + systems[i].ljust(width)
                       + "".join(f"{c[i]:>10.2f}" for c in cols))
        scores.append({"dataset": str(name), "systems": [
            {"system": systems[i], **{m: float(c[i]) for m, c in zip(metrics, cols)}}
            for i in order]})
    record(corpus_scores=scores)


def load_mt_command(
    hypotheses: Annotated[str | None, typer.Argument(
        help="system outputs: a table (system, segment, hypothesis; TSV/CSV/JSONL/Parquet, "
             ".gz ok), or a folder / quoted glob of plain-text files, one per system, one "
             "segment per line (system name = file name without .txt/.gz, or see "
             "--system-name-from); omit it with --test-set")] = None,
    references: Annotated[list[str] | None, typer.Argument(
        help="a table (segment, reference; several references: --reference-col a,b) or, "
             "with plain-text systems, the plain-text reference file(s): several files, a "
             "folder or a quoted glob give several references of every segment")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
    Path("study.nc"),
    test_set: Annotated[list[str] | None, typer.Option(
        "--test-set", help="NAME=HYPOTHESES:REFERENCES, repeatable: one dataset per test "
                           "set in the one study written (REFERENCES comma-separated for "
                           "several; each part as the arguments above), e.g. "
                           "newstest2017=out17/:ref17.de")] = None,
    system_name_from: Annotated[str | None, typer.Option(
        help="system names of plain-text files: a regular expression searched in the file "
             "name (named group 'system', else group 1, else the match), e.g. "
             "'newstest2017\\.(.+)\\.\\d+\\.en-de', or a table file with columns "
             "file, system")] = None,
    metrics: Annotated[str, typer.Option(help="comma-separated: bleu, chrf, chrf++, ter")] =
    "bleu,chrf",
    dataset: Annotated[str | None, typer.Option(
        help="dataset name (default: folder of the hypotheses table, or 'translations'); "
             "with --test-set the test sets' names")] =
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
    domains: Annotated[list[str] | None, typer.Option(
        "--domains", help="each segment's domain, one line per line of the references: "
                          "WMT's documents/<pair>.docs (domain TAB document) or "
                          "metadata/<pair>.jsonl (a 'domain' key); with --test-set "
                          "NAME=FILE, repeatable")] = None,
    domain_col: Annotated[str | None, typer.Option(
        help="with a references table: its column of each segment's domain")] = None,
    by: Annotated[str | None, typer.Option(
        help="datasets written: test-set (one per test set), domain (one per test set x "
             "domain, named TESTSET-DOMAIN) or both; default: domain when domains are "
             "given, else test-set")] = None,
    canary: Annotated[str, typer.Option(
        help="auto: drop WMT's canary lines (a reference line 'CANARY GUID ...' or domain "
             "'canary', the first line of WMT24 files) from every file, and say so; keep: "
             "keep every line")] = "auto",
    n_jobs: Annotated[int, typer.Option(
        help="worker processes for the statistics extraction (helps TER on idle cores)")] =
    1,
    progress: Annotated[bool, typer.Option(
        help="report progress on stderr (TER on thousands of segments takes minutes)")] =
    True,
):
    """Machine translation outputs -> a study with corpus BLEU / chrF / TER (sacrebleu);
    one dataset per test set (or per test set x domain); prints each system's corpus
    scores. Every input file is read and checked (files exist, line counts match,
    references present) before any metric is computed."""
    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    # heavy: pyarrow, xarray, lazily
    from multistat.adapters import load_translations

    sets: list[tuple[str | None, str, list[str]]]
    if test_set:
        if hypotheses is not None or references:
            raise ParameterError("give HYPOTHESES REFERENCES or --test-set NAME=HYPS:REFS "
                                 "(repeatable), not both")
        if dataset is not None:
            raise ParameterError("--test-set names each dataset; drop --dataset")
        sets = list(_parse_test_sets(test_set))
    else:
        if hypotheses is None or not references:
            raise ParameterError("give HYPOTHESES and REFERENCES, or --test-set "
                                 "NAME=HYPS:REFS (repeatable)")
        sets = [(dataset, hypotheses, list(references))]
    options = _parse_options(sacrebleu_option)
    for key, value in (("tokenize", tokenize), ("smooth_method", smooth_method),
                       ("smooth_value", smooth_value)):
        if value is not None:
            options[key] = value
    if lowercase:
        options["lowercase"] = True
    refs_cols = split_names(reference_col, "--reference-col")
    if canary not in CANARY_CHOICES:
        raise ParameterError(f"--canary must be one of {', '.join(CANARY_CHOICES)}; got "
                             f"{canary!r}")
    domain_files = _parse_domains(domains, [n for n, _, _ in sets], bool(test_set))
    if domain_col is not None and domain_files:
        raise ParameterError("give --domains (files beside plain-text systems) or "
                             "--domain-col (a column of the references table), not both")
    split = _split_choice(by, bool(domain_files) or domain_col is not None)
    plan, inputs = [], []
    refs: Path | list[Path]
    for name, hyps, ref_specs in sets:
        where = f"--test-set {name}:" if test_set else "REFERENCES"
        files = _system_files(hyps)
        if files is None:
            if system_name_from is not None:
                raise ParameterError("--system-name-from names plain-text system files; "
                                     "a table has its system column (--system-col)")
            if len(ref_specs) != 1:
                raise ParameterError(f"{where} with a hypotheses table give one references "
                                     f"table (several references: --reference-col a,b)")
            if name in domain_files:
                raise ParameterError("--domains goes with plain-text system files; with a "
                                     "references table name its domain column "
                                     "(--domain-col)")
            refs = Path(ref_specs[0])
            inputs += [hyps, refs]
        else:
            if domain_col is not None:
                raise ParameterError("--domain-col names a column of a references table; "
                                     "with plain-text files give --domains FILE")
            files = _system_names(files, system_name_from)
            refs = _reference_files(ref_specs)
            inputs += [*files.values(), *refs]
        plan.append((name, hyps, files, refs))
    inputs += list(domain_files.values())
    guard_outputs(inputs, {"--out": out})
    study_output(out)
    # every input read and checked before any metric is computed
    checked = [_check_inputs(name, hyps, files, refs, domain_files.get(name), canary,
                             where=f"--test-set {name}:" if test_set else "",
                             system_col=system_col, segment_col=segment_col,
                             reference_cols=refs_cols, domain_col=domain_col)
               for name, hyps, files, refs in plan]
    for *_, said in checked:  # said once every input has passed its checks
        if said:
            typer.echo(said, err=True)
    nodes = {}
    for (name, hyps, files, refs), (texts, domains_of, dropped, _) in zip(plan, checked):
        if texts is not None:
            source, reference_texts = texts.hypotheses, texts.references
        else:
            source, reference_texts = Path(hyps), refs
        study = load_translations(
            source, reference_texts, metrics=metrics,
            system_col=system_col, segment_col=segment_col, text_col=text_col,
            reference_col=refs_cols[0] if len(refs_cols) == 1 else refs_cols, dataset=name,
            n_jobs=n_jobs, progress=_progress_printer() if progress else None, **options)
        (loaded, ds), = cube.datasets(study).items()  # one dataset, default-named
        for node_name, node in _split_nodes(ds, loaded, domains_of, dropped,
                                            split).items():
            if node_name in nodes:
                raise ParameterError(f"two datasets are named {node_name!r} (test set x "
                                     f"domain); rename a test set")
            nodes[node_name] = node
    study = cube.make_study(nodes)
    save_study(study, out)
    echo_summary(study)
    echo_corpus_scores(study)
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
    # heavy: pyarrow, xarray, lazily
    from multistat.adapters import load_labels

    guard_outputs([path], {"--out": out})
    study_output(out)
    study = load_labels(path, gold_col=gold_col, pred_col=pred_col, system_col=system_col,
                        instance_col=instance_col, metrics=metrics, dataset=dataset)
    save_study(study, out)
    echo_summary(study)
    typer.echo(f"wrote {out}")
