"""A module imported on first attribute access, and the optional extras (layer 1: imports
only :mod:`multistat.errors`).

``stats = lazy_module("scipy.stats")`` at the top of a module costs nothing at import;
the first ``stats.t`` imports :mod:`scipy.stats`. Used where a module needs a heavy
library only on some of its paths, so that a process whose first ``compare`` runs only
the t test does not import :mod:`scipy.stats` and :mod:`statsmodels` (0.35 s together,
measured in ``benchmarks/bench_first_call.py``).

:func:`require_extra` checks, before an optional dependency is imported, that the extra
which installs it is there: ``pip install multistat`` gives the API and the command line
for loading, comparing, ranking and power; the figures and the report, a dask.distributed
cluster, the machine-translation metrics and the compiled kernels are extras
(:data:`EXTRAS`; pyproject.toml declares the same).
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

from multistat.errors import MissingExtraError

#: each optional extra -> (the modules it installs, what needs them)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "report": (("matplotlib", "seaborn", "PIL", "jinja2", "markupsafe"),
               "figures, tables and the HTML report"),
    "distributed": (("distributed",), "a dask.distributed scheduler"),
    "mt": (("sacrebleu",), "machine-translation metrics (BLEU, chrF, TER)"),
    "fast": (("numba",), "the compiled rank kernels"),
    "pipeline": (("dvc",), "the DVC pipeline"),
    "large": (("zarr",), "studies larger than memory (.zarr stores)"),
}


def require_extra(extra: str) -> None:
    """Raise :class:`~multistat.errors.MissingExtraError` (one line naming the extra to
    install) unless every module of the optional ``extra`` of :data:`EXTRAS` is
    installed. Checks without importing them.

    Parameters
    ----------
    extra : str
        A key of :data:`EXTRAS`: ``"report"``, ``"distributed"``, ``"mt"``, ``"fast"``,
        ``"pipeline"`` or ``"large"``.

    Returns
    -------
    None

    Examples
    --------
    >>> from multistat._lazy import require_extra
    >>> require_extra("report")  # matplotlib, seaborn and pillow are installed here
    """
    modules, what = EXTRAS[extra]
    for name in modules:
        try:
            found = find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, a broken module
            found = False
        if not found:
            raise MissingExtraError(f"{what}: the '{extra}' extra is not installed ({name} "
                                    f"is missing); pip install 'multistat[{extra}]'")


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
