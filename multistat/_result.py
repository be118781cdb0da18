"""The one protocol of multistat's result objects.

Every result class (frozen dataclasses: :class:`~multistat.significance.TestResult`,
:class:`~multistat.meta.pooling.MetaResult`, ...) inherits :class:`Result` and so has

* ``to_frame()`` -- a tidy :class:`pandas.DataFrame` (one row of the scalar fields unless
  the class has a table of its own, e.g. one row per study or per system);
* ``to_dict()`` -- the scalar fields as a plain ``dict`` (JSON-ready values);
* ``summary()`` -- the same as text, for a terminal or a log;
* ``_repr_html_()`` -- the same as an HTML table, for notebooks;

and ``confidence_interval()`` where the result has an interval. Classes override
``to_frame`` (and ``_title``) only; the rest comes from here.
"""

from __future__ import annotations

import dataclasses
import html
import math
from numbers import Number

import numpy as np
import pandas as pd

__all__ = ["Result"]

#: rows shown by ``summary()`` and ``_repr_html_()`` before the table is cut
MAX_ROWS = 30


def _scalar(value) -> bool:
    return value is None or isinstance(value, (Number, str, bool, np.generic))


def _plain(value):
    """A JSON-ready Python value (numpy scalars to Python numbers)."""
    return value.item() if isinstance(value, np.generic) else value


class Result:
    """Mixin of every result class: ``to_frame``, ``to_dict``, ``summary`` and
    ``_repr_html_`` (see the module notes).

    Examples
    --------
    >>> import multistat
    >>> res = multistat.significance.paired_t([0.6, 0.7, 0.9, 0.8], [0.5, 0.6, 0.7, 0.8])
    >>> list(res.to_frame().columns[:3])
    ['test', 'statistic', 'p_value']
    >>> print(res.summary().splitlines()[0])
    TestResult
    """

    #: the heading of ``summary()`` and ``_repr_html_()`` (default: the class name)
    _title: str | None = None

    def _fields(self) -> dict:
        if not dataclasses.is_dataclass(self):  # a result class that is no dataclass
            raise TypeError(f"{type(self).__name__} is not a dataclass: define _fields()")
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_dict(self) -> dict:
        """The result's scalar fields (numbers, text, flags) as a plain ``dict``;
        tables and arrays are left to :meth:`to_frame`."""
        return {k: _plain(v) for k, v in self._fields().items() if _scalar(v)}

    def to_frame(self) -> pd.DataFrame:
        """The result as a tidy DataFrame: here one row of :meth:`to_dict`."""
        return pd.DataFrame([self.to_dict()])

    def _heading(self) -> str:
        return self._title or type(self).__name__

    def summary(self) -> str:
        """The result as text: a heading line and :meth:`to_frame` (at most
        ``MAX_ROWS`` rows; wide one-row tables are shown one field per line)."""
        frame = self.to_frame()
        if len(frame) == 1 and frame.shape[1] > 6:
            row = frame.iloc[0]
            width = max(len(str(k)) for k in row.index)
            body = "\n".join(f"{str(k):<{width}}  {_fmt(v)}" for k, v in row.items())
        else:
            body = frame.to_string(max_rows=MAX_ROWS, index=False)
        return f"{self._heading()}\n{body}"

    def _repr_html_(self) -> str:
        frame = self.to_frame()
        table = frame.to_html(max_rows=MAX_ROWS, index=False, escape=True, border=0)
        return f"<p><strong>{html.escape(self._heading())}</strong></p>{table}"


def _fmt(value) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.6g}"
    return str(value)
