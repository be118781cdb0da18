"""Run a row-wise test over chunks of rows, so its working memory is set by a budget.

The rank tests (:func:`~multistat.significance.rank.wilcoxon`,
:func:`~multistat.significance.sign.sign_test`) compute every row (pair x metric) on its
own, so splitting the leading axes into chunks changes no result. :func:`chunked` does the
split for direct calls with large batches; ``compare`` already hands them chunks of pairs
sized by its budget.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from multistat._budget import Budget


def rows_per_chunk(n: int, bytes_per_value: float, memory_limit=None) -> int:
    """Rows of ``n`` values that fit in ``memory_limit`` at ``bytes_per_value`` (>= 1).

    ``memory_limit``: bytes, a size string (``"512MiB"``), a
    :class:`multistat._budget.Budget` or None (the engine's default budget).
    """
    return Budget.of(memory_limit).rows(max(1, n) * float(bytes_per_value))


def chunked(func, x, y, kwargs, *, bytes_per_value, memory_limit=None):
    """``func(x, y, **kwargs)`` (a :class:`TestResult`) computed over chunks of rows.

    One call when everything fits. Otherwise the leading axes are flattened and cut into
    chunks of :func:`rows_per_chunk` rows; the fields (and ``extra`` arrays and the
    other-level interval ``confidence_interval(level)``) are stacked back into the leading
    shape. Warnings are collected and each distinct one raised once.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim < 2:
        return func(x, y, **kwargs)  # the function reports shape problems itself
    lead, n = x.shape[:-1], x.shape[-1]
    rows = int(np.prod(lead))
    step = rows_per_chunk(n, bytes_per_value, memory_limit)
    if rows <= step:
        return func(x, y, **kwargs)
    xf, yf = x.reshape(rows, n), y.reshape(rows, n)
    parts: list[Any] = []
    seen: dict[Any, Any] = {}
    for s in range(0, rows, step):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parts.append(func(xf[s:s + step], yf[s:s + step], **kwargs))
        for w in caught:
            seen.setdefault((w.category, str(w.message)), None)
    for category, message in seen:
        warnings.warn(message, category, stacklevel=3)

    def stack(values):
        out = [np.broadcast_to(np.asarray(v), (len(range(s, min(s + step, rows))),))
               for s, v in zip(range(0, rows, step), values)]
        return np.concatenate(out).reshape(lead)

    first = parts[0]
    fields = {f: stack([getattr(p, f) for p in parts])
              for f in ("statistic", "p_value", "estimate", "ci_low", "ci_high", "n",
                        "note")}
    extra = {k: stack([p.extra[k] for p in parts]) for k in first.extra}

    def ci(level):
        ends = [p.confidence_interval(level) for p in parts]
        return stack([e[0] for e in ends]), stack([e[1] for e in ends])

    return dataclasses.replace(first, **fields, extra=extra, _ci_fn=ci)
