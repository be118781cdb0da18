"""Checks of the report's inputs that must fail with one line, not a traceback or a silent
drop: the figure resolution, and a study that does not match the results."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pandas as pd

from multistat._validation import check_int
from multistat.errors import DataValidationError, DroppedDataWarning, ParameterError
from multistat.io import read_parquet
from multistat.report._inputs import check_table, numeric_cells

#: PNG resolution limits: below 20 the figures are unreadable; above 1200 one figure takes
#: hundreds of MB of memory and minutes to encode (the command line checks the same range)
DPI_RANGE = (20, 1200)


def check_dpi(value, name: str = "dpi") -> int:
    """``value`` as an int within :data:`DPI_RANGE`, else a one-line ParameterError that
    names ``name`` (the command line passes ``"--dpi"``)."""

    value = check_int(name, value)
    lo, hi = DPI_RANGE
    if not lo <= value <= hi:
        raise ParameterError(f"`{name}` must be between {lo} and {hi} (dots per inch of the "
                             f"figures); got {value}")
    return value


def check_study_matches(res: pd.DataFrame, study, name: str = "study") -> None:
    """Raise when ``study`` lacks a dataset, metric or system of the results (instead of
    silently dropping its histograms and intervals); ``name`` is the option to blame."""
    if study is None:
        return
    # heavy: xarray, lazily
    from multistat import cube

    dss = cube.datasets(study)
    missing_ds = sorted(set(res["dataset"]) - set(dss))
    if missing_ds:
        raise DataValidationError(
            f"`{name}` does not match the results: it lacks dataset(s) "
            f"{_cut(missing_ds)} (it has {_cut(sorted(dss))}); pass the study the results "
            f"were computed on")
    for (ds, metric), g in res.groupby(["dataset", "metric"], sort=False):
        node = dss[ds]
        if metric not in {str(m) for m in node["metric"].values}:
            raise DataValidationError(
                f"`{name}` does not match the results: dataset {ds!r} has no metric "
                f"{metric!r} (it has {_cut([str(m) for m in node['metric'].values])})")
        have = {str(x) for x in node["system"].values}
        need = set(g["system_a"]) | set(g["system_b"])
        if need - have:
            raise DataValidationError(
                f"`{name}` does not match the results: dataset {ds!r} lacks system(s) "
                f"{_cut(sorted(need - have))}")


def _cut(items, limit: int = 100) -> str:
    text = repr(list(items))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(res: pd.DataFrame, i: int) -> str:
    row = res.iloc[i]
    return (f"row {i} ({row['dataset']} / {row['metric']}, {row['system_a']} vs "
            f"{row['system_b']}, {row['test']})")


def _numbers(res: pd.DataFrame, col: str, name: str):
    """The column as floats; a cell that is neither a number nor missing is refused."""
    raw = res[col]
    values, junk = numeric_cells(raw)
    if values is None:
        raise DataValidationError(f"`{name}`: column {col!r} holds booleans, not numbers")
    if junk.size:
        i = int(junk[0])
        raise DataValidationError(f"`{name}`: {_where(res, i)}: {col} {raw.iloc[i]!r} is not "
                                  f"a number")
    return values


def check_values(res: pd.DataFrame, name: str = "results") -> None:
    """Refuse a compare table whose numbers cannot be: a p-value (``p_value``,
    ``p_adjusted``) outside [0, 1], ``alpha`` outside (0, 1), or a ``reject`` that
    disagrees with ``p_adjusted <= alpha`` (NaN ``p_adjusted``: never rejected). A
    disagreement within a relative 1e-9 of ``alpha`` is rounding, not an error: Holm's
    decision compares ``p <= alpha / k``, its adjusted p is ``k p``. The message names the
    row (dataset, metric, pair, test)."""
    # heavy: numpy, lazily
    import numpy as np

    ids = ("dataset", "metric", "system_a", "system_b", "test")
    if not isinstance(res, pd.DataFrame) or not all(c in res for c in ids):
        return  # not a compare table at all: check_results says what is missing
    for col in ("p_value", "p_adjusted"):
        if col in res:
            p = _numbers(res, col, name)
            out = np.flatnonzero((p < 0) | (p > 1))
            if out.size:
                i = int(out[0])
                raise DataValidationError(
                    f"`{name}`: {_where(res, i)}: {col} {p[i]!r} is outside [0, 1] "
                    f"({out.size} such row(s)); not a table multistat compare wrote")
    alpha = _numbers(res, "alpha", name) if "alpha" in res else None
    if alpha is not None:
        out = np.flatnonzero(~((alpha > 0) & (alpha < 1)) & ~np.isnan(alpha))
        if out.size:
            i = int(out[0])
            raise DataValidationError(f"`{name}`: {_where(res, i)}: alpha {alpha[i]!r} is "
                                      f"outside (0, 1)")
    if "reject" not in res:
        return
    try:
        reject = res["reject"].astype("boolean")
    except (TypeError, ValueError):
        raise DataValidationError(f"`{name}`: column 'reject' must hold True/False; got "
                                  f"values such as {res['reject'].iloc[0]!r}") from None
    if "p_adjusted" not in res or alpha is None:
        return
    p = _numbers(res, "p_adjusted", name)
    rej = reject.fillna(False).to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        wrong = ((rej & ~(p <= alpha * (1 + 1e-9)))
                 | (~rej & (p < alpha * (1 - 1e-9))))
    wrong &= ~np.isnan(alpha)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise DataValidationError(
            f"`{name}`: {_where(res, i)}: reject is {bool(rej[i])} but p_adjusted "
            f"{p[i]!r} {'>' if rej[i] else '<'} alpha {alpha[i]!r} ({int(wrong.sum())} "
            f"such row(s)); the decisions do not follow from the p-values")


def check_systems_matches(res: pd.DataFrame, scores, name: str = "systems") -> None:
    """Refuse a per-system score table from another study than the results: a different
    study hash in the two tables' metadata (``input_sha256``), or a dataset × metric ×
    system of the results that it lacks (its leaderboard scores would be blank)."""
    if scores is None:
        return
    mine = (res.attrs.get("multistat") or {}).get("input_sha256")
    theirs = (scores.attrs.get("multistat") or {}).get("input_sha256")
    if mine and theirs and mine != theirs:
        raise DataValidationError(
            f"`{name}` comes from another study than the results (study hash "
            f"{str(theirs)[:12]}… against {str(mine)[:12]}…); pass the --systems-out table "
            f"of the same compare run")
    need = [c for c in ("dataset", "metric", "system", "score") if c not in scores]
    if need:
        raise DataValidationError(f"`{name}` lacks column(s) {need}; has "
                                  f"{list(scores.columns)}")
    have = set(zip(scores["dataset"].astype(str), scores["metric"].astype(str),
                   scores["system"].astype(str)))
    for col in ("system_a", "system_b"):
        keys = set(zip(res["dataset"], res["metric"], res[col]))
        missing = sorted(keys - have)
        if missing:
            ds, metric, system = missing[0]
            raise DataValidationError(
                f"`{name}` does not match the results: it has no score for system "
                f"{system!r} of dataset {ds!r}, metric {metric!r} ({len(missing)} such); "
                f"pass the --systems-out table of the same compare run")


# the ranking table (report/clusters.py draws it; report/_files.py writes its DVC plots)
NEEDED = ("dataset", "metric", "system", "score", "ci_low", "ci_high", "rank",
          "rank_ci_low", "rank_ci_high", "expected_rank", "p_best", "rank_range_low",
          "rank_range_high", "cluster", "beats", "beaten_by")


def check_ranking(board) -> pd.DataFrame:
    """The ranking table (DataFrame or Parquet path), with its columns checked."""
    if not isinstance(board, pd.DataFrame):
        board = read_parquet(board)
    missing = [c for c in NEEDED if c not in board.columns]
    if missing:
        raise DataValidationError(f"ranking table lacks column(s) {missing} (write it with "
                                  "`multistat rank` / multistat.rank)")
    return check_table(board, "ranking")


def stored_pairs(ranking_path) -> pd.DataFrame | None:
    """The pair decisions a ranking file carries: the table its metadata names
    (``pairs_file``, relative to the ranking's folder; ``multistat rank --out`` writes it
    beside the ranking), checked against the ``pairs_sha256`` recorded with it. None when
    the ranking names no pair table (a ranking streamed without one) or when the file it
    names is missing (with a :class:`~multistat.errors.DroppedDataWarning`): the report then
    takes the compare table's rows of the ranking's test, correction and alpha."""
    ranking_path = Path(ranking_path)
    meta = read_parquet(ranking_path).attrs.get("multistat", {})
    name = meta.get("pairs_file")
    if not name:
        return None
    path = ranking_path.parent / str(name)
    if not path.is_file():  # e.g. a DVC checkout of the ranking alone: say so, go on
        warnings.warn(f"{ranking_path}: its pair decisions {path} are missing (`multistat "
                      "rank` wrote them beside the ranking; copy both files, or pass "
                      "--ranking-pairs); the decisions come from the compare table's rows "
                      "of the ranking's test, correction and alpha", DroppedDataWarning,
                      stacklevel=2)
        return None
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if meta.get("pairs_sha256") and digest.hexdigest() != meta["pairs_sha256"]:
        raise DataValidationError(
            f"{path} is not the pair table {ranking_path} was written with (its SHA-256 "
            "differs); rerun `multistat rank`, or pass --ranking-pairs")
    return read_parquet(path)
