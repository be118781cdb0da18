"""Multiple-comparison corrections over declared families (statsmodels ``multipletests``).

A *family* is a set of rows of the compare table whose p-values are corrected together.
Default: each ``dataset x metric x test`` is one family (all pairs of one metric on one
test set, tested one way). ``family="all"`` pools every row; a list of column names
declares families by those columns (e.g. ``["dataset", "test"]`` pools the metrics).
NaN p-values are not counted as tests (their ``p_adjusted`` is NaN, ``reject`` False).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from multistat._validation import check_probability
from multistat.errors import ParameterError

METHODS = ("bonferroni", "sidak", "holm-sidak", "holm", "simes-hochberg", "hommel",
           "fdr_bh", "fdr_by", "fdr_tsbh", "fdr_tsbky")
DEFAULT_FAMILY = ("dataset", "metric", "test")


def family_columns(table: pd.DataFrame, family) -> list[str]:
    """The columns that define families (``[]`` for one pooled family)."""
    if family is None:
        return [c for c in DEFAULT_FAMILY if c in table.columns]
    if family == "all":
        return []
    cols = [family] if isinstance(family, str) else list(family)
    unknown = [c for c in cols if c not in table.columns]
    if unknown:
        raise ParameterError(f"`family`: unknown column(s) {unknown}; use None, 'all' or "
                             f"columns of the table such as {list(DEFAULT_FAMILY)}")
    return cols


def family_keys(table: pd.DataFrame, cols: list[str]) -> pd.Series:
    """Readable family key per row (``"newstest | bleu | t"``), built column-wise (a
    row-wise join costs seconds on 10^5 rows)."""
    keys = table[cols[0]].astype(str)
    for c in cols[1:]:
        keys = keys + " | " + table[c].astype(str)
    return keys


def family_groups(table: pd.DataFrame, cols: list[str]):
    """``(group, labels)``: a family number per row (-1 where the key is missing) and
    the readable key of each family (:func:`family_keys` text), computed on the distinct
    combinations of ``cols`` only - one string per family, not per row."""
    combo = np.zeros(len(table), dtype=np.int64)
    for c in cols:
        codes, uniques = pd.factorize(table[c], use_na_sentinel=False)
        combo = pd.factorize(combo * len(uniques) + codes)[0].astype(np.int64)
    combo_codes, first = np.unique(combo, return_index=True)
    if all(table[c].dtype == "str" for c in cols):
        # str columns: astype(str) keeps the text (and NaN), so the key is the join
        parts = zip(*(table[c].iloc[first].to_numpy(dtype=object) for c in cols))
        text = pd.Series([None if any(isinstance(v, float) for v in vals)
                          else " | ".join(vals) for vals in parts], dtype="str")
    else:
        text = family_keys(table[cols].iloc[first], cols)  # the same text as row by row
    group, labels = pd.factorize(text, use_na_sentinel=True)
    row_group = np.asarray(group, dtype=np.intp)[np.searchsorted(combo_codes, combo)]
    return row_group, pd.array(np.asarray(labels, dtype=object), dtype=text.dtype)


def holm(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down adjustment, same numbers as statsmodels' ``method="holm"``.

    Written here because statsmodels runs a full ``gc.collect()`` inside every Holm call
    (about 0.15 s each with dask loaded: seconds for a study with many families).
    ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` over the sorted p-values.
    """
    m = len(p)
    order = np.argsort(p, kind="mergesort")
    adj_sorted = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(m, 0, -1)))
    adj = np.empty(m)
    adj[order] = adj_sorted
    # reject: every hypothesis before the first sorted p above alpha / (m - j + 1)
    above = p[order] > alpha / np.arange(m, 0, -1)
    first = np.argmax(above) if above.any() else m
    reject = np.zeros(m, bool)
    reject[order[:first]] = True
    return reject, adj


def adjust_groups(p: np.ndarray, group: np.ndarray, *, method: str | None,
                  alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(p_adjusted, reject)`` of p-values ``p`` corrected within families: ``group`` is
    a family number per row (-1: no family, left NaN/False, as groupby drops NaN keys);
    NaN p-values are not counted. The core of :func:`adjust`, for callers that already
    know the families (:func:`multistat.compare`, whose blocks are its default families)."""
    p_adj = np.full(len(p), np.nan)
    reject = np.zeros(len(p), dtype=bool)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    for idx in np.split(order, bounds) if len(order) else []:
        if group[idx[0]] < 0:  # a missing key: no family
            continue
        pi = p[idx]
        ok = ~np.isnan(pi)
        if not ok.any():
            continue
        if method is None:
            r, pa = pi[ok] <= alpha, pi[ok]
        elif method == "holm":
            r, pa = holm(pi[ok], alpha)
        else:
            # imported here: statsmodels.stats pulls scipy.stats (0.35 s), which
            # None and Holm (compare's default) never need
            from statsmodels.stats.multitest import multipletests

            r, pa, _, _ = multipletests(pi[ok], alpha=alpha, method=method)
        sel = idx[ok]
        p_adj[sel] = pa
        reject[sel] = r
    return p_adj, reject


def adjust(table: pd.DataFrame, *, method: str | None = "holm", family=None,
           alpha: float = 0.05) -> pd.DataFrame:
    """Add ``family, correction, p_adjusted, reject, alpha`` to a table with ``p_value``.

    Parameters
    ----------
    table : pandas.DataFrame
        DataFrame with a ``p_value`` column (e.g. :func:`multistat.compare` output)
    method : str, optional
        a statsmodels ``multipletests`` method (``"holm"`` default, ``"bonferroni"``,
        ``"hommel"``, ``"sidak"``, ``"holm-sidak"``, ``"simes-hochberg"``, ``"fdr_bh"``,
        ``"fdr_by"``, ``"fdr_tsbh"``, ``"fdr_tsbky"``), or None for no correction
        (``p_adjusted = p_value``)
    family : optional
        None (dataset x metric x test), ``"all"``, or column name(s)
    alpha : float, optional
        Family-wise error rate / false discovery rate.

    Returns
    -------
    DataFrame
        A copy with ``family`` (a readable key), ``correction``, ``p_adjusted``,
        ``reject`` (``p_adjusted <= alpha``; decided by statsmodels) and ``alpha``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"p_value": [0.01, 0.04, 0.03, float("nan")]})
    >>> adjust(t, method="holm", family="all")["p_adjusted"].round(2).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    alpha = check_probability("alpha", alpha)
    if isinstance(method, str) and method.startswith("westfall-young"):
        raise ParameterError(f"`correction` {method!r} needs the resampling plan of the "
                             "tests, not only their p-values: use "
                             f"multistat.compare(..., correction={method!r})")
    if method is not None and method not in METHODS:
        raise ParameterError(f"`correction` must be one of {', '.join(METHODS)} or None; got "
                             f"{method!r}")
    cols = family_columns(table, family)
    out = table  # not modified: the result is a new frame
    p = out["p_value"].to_numpy(dtype=float)
    if cols:
        group, labels = family_groups(out, cols)
        keys = labels.take(group, allow_fill=True)  # the readable key of every row
    else:
        group = np.zeros(len(out), dtype=np.intp)
    p_adj, reject = adjust_groups(p, group, method=method, alpha=alpha)
    added = {"family": keys if cols else "all",
             "correction": "none" if method is None else method,
             "p_adjusted": p_adj, "reject": reject, "alpha": alpha}
    if any(c in out.columns for c in added):  # re-adjusting: replace, in a copy
        out = out.copy()
        for c, v in added.items():
            out[c] = v
        return out
    new = pd.DataFrame({c: v for c, v in added.items()}, index=out.index)
    return pd.concat([out, new], axis=1).__finalize__(table)
