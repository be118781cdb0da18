"""One memory budget for the engine: how many rows of work fit at once.

:func:`multistat.compare` takes ``memory_limit=`` (bytes, or a string such as ``"2GiB"``,
``"500MB"``); the default is a safe share of the machine's physical memory
(:func:`default_limit`). Every place that materialises something proportional to the
number of pairs or to the number of instances asks a :class:`Budget` how many rows fit
(:meth:`Budget.rows`) or for the chunks themselves (:meth:`Budget.chunks`), so the peak
memory is set by the budget, not by the study: it does not grow with the number of pairs,
and grows at most linearly in the number of instances (one row of the largest object
must fit, whatever the budget).

Chunk sizes never change a result: every kernel computes each row (pair, resample) on its
own, and the resampling plans are generated in the same order whatever the chunk
(:mod:`multistat.engine`), so tables are bit-identical for every ``memory_limit``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from multistat.errors import CostLimitError, ParameterError

#: smallest budget accepted (below this the fixed overheads of numpy dominate)
MIN_LIMIT = 16 * 2**20
#: the default share of physical memory, and its bounds
DEFAULT_SHARE = 1 / 8
DEFAULT_MIN = 256 * 2**20
DEFAULT_MAX = 2**30

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20,
          "gib": 2**30, "tib": 2**40}


def physical_memory() -> int | None:
    """Bytes of physical memory, or None if the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return None


def default_limit() -> int:
    """``physical memory / 8``, at least 256 MiB and at most 1 GiB.

    The engine's working memory is this budget plus the study itself and the (pair x
    metric) result arrays; the share leaves room for the rest of the process and for other
    work on the machine (dask threads run blocks concurrently and share the budget).
    """
    mem = physical_memory()
    if mem is None:  # pragma: no cover
        return DEFAULT_MIN * 4
    return int(min(DEFAULT_MAX, max(DEFAULT_MIN, mem * DEFAULT_SHARE)))


def parse_memory(value, name: str = "memory_limit") -> int:
    """Bytes from an int/float or a string ``"2GiB"``, ``"1.5 GB"``, ``"512MiB"``, ``"800M"``.

    Decimal units (kB, MB, GB, TB; K, M, G, T) are powers of 10, binary units (KiB, MiB,
    GiB, TiB) powers of 2. ``None`` gives :func:`default_limit`.
    """
    if value is None:
        return default_limit()
    if isinstance(value, bool):
        raise ParameterError(f"`{name}` must be a number of bytes or a size such as '2GiB'; "
                             f"got {value!r}")
    if isinstance(value, (int, float)):
        nbytes = float(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise ParameterError(
                f"`{name}`: cannot read {value[:100]!r} as a size; write bytes or a number "
                "with a unit, e.g. '2GiB', '1.5GB', '512MiB'")
        nbytes = float(m.group(1)) * _UNITS[unit]
    else:
        raise ParameterError(f"`{name}` must be a number of bytes or a size such as '2GiB'; "
                             f"got {type(value).__name__}")
    if not nbytes >= MIN_LIMIT:  # also NaN
        raise ParameterError(f"`{name}` must be at least {MIN_LIMIT // 2**20} MiB; got "
                             f"{value!r}")
    return int(nbytes)


@dataclass(frozen=True)
class Budget:
    """A memory budget in bytes, shared out as chunks of rows.

    ``workers`` concurrent tasks (dask threads/processes) each get ``nbytes / workers``
    through :meth:`per_worker`.
    """

    nbytes: int

    @classmethod
    def of(cls, memory_limit=None) -> Budget:
        if isinstance(memory_limit, Budget):
            return memory_limit
        return cls(parse_memory(memory_limit))

    def per_worker(self, workers: int | None = None) -> Budget:
        """The share of one of ``workers`` concurrent tasks (default: the CPU count)."""
        w = max(1, int(workers or os.cpu_count() or 1))
        return Budget(max(1, self.nbytes // w))

    def rows(self, bytes_per_row: float, total: int | None = None, *, multiple: int = 1
             ) -> int:
        """How many rows of ``bytes_per_row`` fit (at least one, at most ``total``),
        rounded down to a multiple of ``multiple`` when more than one multiple fits."""
        k = int(self.nbytes // max(1.0, float(bytes_per_row)))
        if multiple > 1:
            k = max(multiple, k - k % multiple)
        k = max(1, k)
        return k if total is None else max(1, min(k, int(total)))

    def chunks(self, total: int, bytes_per_row: float, *, multiple: int = 1) -> list[slice]:
        """Consecutive slices covering ``range(total)``, each within the budget."""
        if total <= 0:
            return []
        step = self.rows(bytes_per_row, total, multiple=multiple)
        return [slice(s, min(s + step, total)) for s in range(0, total, step)]


def as_budget(memory_limit) -> Budget:
    """:class:`Budget` from ``memory_limit`` (None, bytes, a size string or a Budget)."""
    return Budget.of(memory_limit)


# ------------------------------------------------------------------ the work budget
#: default limit on the estimated number of elementary operations of one request
#: (compare, rank, a power simulation): about two days of bootstrap on one core
DEFAULT_MAX_COST = 1e13
#: operations per second of a bootstrap on one core (measured, :mod:`multistat._cost`)
OPS_PER_SECOND = 5e7


def check_cost(estimate: float, max_cost: float | None = DEFAULT_MAX_COST, *,
               option: str = "max_cost=", what: str = "this comparison") -> float:
    """Raise :class:`CostLimitError` when ``estimate`` exceeds ``max_cost`` (``None`` or
    ``inf``: no limit). ``option`` is how the caller raises the limit (``--max-cost`` on
    the command line, ``max_cost=`` in Python)."""
    if max_cost is None or estimate <= max_cost:
        return estimate
    hours = estimate / OPS_PER_SECOND / 3600
    raise CostLimitError(
        f"{what} would take about {estimate:.2g} operations (~{hours:,.0f} hours on one "
        f"core at the {OPS_PER_SECOND:.0e} per second a bootstrap runs), beyond the limit "
        f"{max_cost:.2g}; reduce the resamples, pairs, metrics or tests, or raise the limit "
        f"with {option}")
