"""A module imported on first attribute access (layer 1: imports nothing of multistat).

``stats = lazy_module("scipy.stats")`` at the top of a module costs nothing at import;
the first ``stats.t`` imports :mod:`scipy.stats`. Used where a module needs a heavy
library only on some of its paths, so that a process whose first ``compare`` runs only
the t test does not import :mod:`scipy.stats` and :mod:`statsmodels` (0.35 s together,
measured in ``benchmarks/bench_first_call.py``).
"""

from __future__ import annotations

from importlib import import_module


class LazyModule:
    """Stands for the module ``name``; imports it when an attribute is first read."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> LazyModule:
    """The module ``name`` (e.g. ``"scipy.stats"``), imported on first attribute access."""
    return LazyModule(name)
