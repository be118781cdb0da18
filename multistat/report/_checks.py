"""Checks of the report's inputs that must fail with one line, not a traceback or a silent
drop: the figure resolution, and a study that does not match the results."""

from __future__ import annotations

import pandas as pd

from multistat.errors import DataValidationError, ParameterError

#: PNG resolution limits: below 20 the figures are unreadable; above 1200 one figure takes
#: hundreds of MB of memory and minutes to encode (the command line checks the same range)
DPI_RANGE = (20, 1200)


def check_dpi(value, name: str = "dpi") -> int:
    """``value`` as an int within :data:`DPI_RANGE`, else a one-line ParameterError that
    names ``name`` (the command line passes ``"--dpi"``)."""
    from multistat._validation import check_int

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
