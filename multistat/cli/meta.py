"""``multistat meta``: pool compare tables across studies.

Mounted in :mod:`multistat.cli` with ``app.command("meta")(meta_command)``. Errors are
:class:`~multistat.errors.MultistatError` and become one line on stderr with exit
status 2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import guard_outputs, split_names, table_kind, write_table
from multistat.cli._conventions import record
from multistat.errors import ParameterError, show

HELP = ("Meta-analysis across studies: pool each metric x pair x test of compare tables "
        "across datasets (fixed, DL, PM, ML, REML; Knapp-Hartung), with tau^2, I^2 and "
        "prediction intervals (Parquet).")


def meta_command(
    inputs: Annotated[list[Path], typer.Argument(
        help="compare table(s) (Parquet from `multistat compare`, which has the `se` "
             "column) or folders of them (every *.parquet inside, e.g. several DVC "
             "experiments); several files add a `source` column")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="pooled table: .parquet (with run metadata), .csv or "
                            ".jsonl")] = Path("pooled.parquet"),
    study: Annotated[str, typer.Option(
        help="column naming the study pooled across (dataset; `source`: each input file "
             "is a study)")] = "dataset",
    by: Annotated[str, typer.Option(
        help="comma-separated columns of one pooled effect")] =
    "metric,system_a,system_b,test",
    method: Annotated[str, typer.Option(
        help="{choices} (pm: Paule-Mandel; dl: DerSimonian-Laird)")] = "reml",
    knha: Annotated[bool, typer.Option(
        "--knha", help="Hartung-Knapp-Sidik-Jonkman inference (t on k - 1 df) instead of "
                       "z")] = False,
    effect: Annotated[str, typer.Option(
        help="column pooled: estimate (standard errors from `se`) or an effect size such "
             "as cohens_d (from cohens_d_se)")] = "estimate",
    tests: Annotated[str | None, typer.Option(
        help="only these tests' rows, comma-separated (default: every test with a "
             "standard error; the others are left out with a warning)")] = None,
    confidence_level: Annotated[float, typer.Option(
        help="level of the confidence, tau^2 and prediction intervals")] = 0.95,
):
    """Pool the rows of compare tables across studies (random- or fixed-effects
    meta-analysis, as R's metafor rma()) and write one row per metric x pair x test."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from multistat.meta.pooling import pool_studies, read_tables

    guard_outputs(inputs, {"--out": out})
    table_kind(out)
    by_cols = split_names(by, "--by")
    frame = read_tables(inputs[0] if len(inputs) == 1 else inputs)
    if tests is not None:
        chosen = split_names(tests, "--tests")
        have = set(frame["test"].astype(str)) if "test" in frame else set()
        unknown = [t for t in chosen if t not in have]
        if unknown:
            raise ParameterError(f"--tests {show(unknown)}: not in the table (tests: "
                                 f"{show(sorted(have))})")
        frame = frame[frame["test"].astype(str).isin(chosen)]
    # rows without a standard error: one warning line (multistat.cli.main shows it)
    pooled = pool_studies(frame, study=study, by=by_cols, method=method,
                          test="knha" if knha else "z",
                          confidence_level=confidence_level, effect=effect)
    meta = dict(pooled.attrs["multistat"], inputs=[str(p) for p in inputs])
    write_table(pooled, out, metadata=meta)
    n_studies = frame[study].nunique()
    typer.echo(f"pooled {int((pooled['k'] >= 2).sum())} of {len(pooled)} groups across "
               f"{n_studies} studies ({study}); {method}, "
               f"{'knha' if knha else 'z'} inference")
    cols = [*(by_cols or ()), "k", "estimate", "ci_low", "ci_high", "p_value", "tau2", "i2"]
    record(method=method, inference="knha" if knha else "z", study=study,
           n_studies=int(n_studies), groups=len(pooled),
           pooled_groups=int((pooled["k"] >= 2).sum()),
           rows=pooled[cols].to_dict(orient="records"))
    if len(pooled):
        typer.echo(pooled[cols].to_string(index=False, max_rows=30,
                                          float_format=lambda v: f"{v:.4g}"))
    typer.echo(f"wrote {out}")
