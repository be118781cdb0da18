"""``multistat merge``: several study files -> one study, one dataset per test set.

Mounted by :mod:`multistat.cli`. Each input is a study file (``.nc``) or a score file
``multistat load`` reads with its defaults; their datasets go into one study in the order
given. Two inputs holding a dataset of the same name are an error naming both files (a
test set is one dataset; rename with ``--dataset`` when loading). This module imports
only :mod:`multistat.cli._common` and lower layers, never :mod:`multistat.cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import echo_summary, guard_outputs, save_study, study_output
from multistat.errors import DataValidationError


def merge_studies(paths) -> object:
    """One study (DataTree) holding every dataset of the studies at ``paths``, in order;
    a dataset name found in two inputs raises :class:`DataValidationError` naming both."""
    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    nodes: dict = {}
    origin: dict = {}
    for path in paths:
        for name, ds in cube.datasets(cube.load(path)).items():
            if name in nodes:
                raise DataValidationError(
                    f"dataset {name!r} is in both {origin[name]} and {path}; each test set "
                    f"must be one dataset (name them apart with --dataset or --test-set "
                    f"when loading)")
            nodes[name], origin[name] = ds, path
    return cube.make_study(nodes)


def merge_command(
    studies: Annotated[list[Path], typer.Argument(
        help="study files (.nc, e.g. from load-mt or load) or score files, each with one or "
             "more datasets (test sets)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
    Path("study.nc"),
):
    """Several studies -> one study with all their datasets (one per test set)."""
    guard_outputs(studies, {"--out": out})
    study_output(out)
    study = merge_studies(studies)
    save_study(study, out)
    echo_summary(study)
    typer.echo(f"wrote {out}")
