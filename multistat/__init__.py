"""multistat: which NLP systems really beat which, by how much, and was the test set big
enough to tell — for a whole evaluation study at once.

Public API (explicit; no star imports). Heavier modules load on first use. No submodule
shares a name with a public function (the batch driver lives in ``comparison.py``), so
``multistat.compare`` is always the function, whatever was imported before.
"""

from __future__ import annotations

from importlib import import_module

#: the version, written only here (pyproject.toml reads it: ``dynamic = ["version"]``)
__version__ = "0.2.0"

# Type checkers and IDEs see every public name through these imports; at run time they
# are skipped and ``__getattr__`` below imports each name on first use. (A module-level
# ``TYPE_CHECKING = False`` rather than ``typing.TYPE_CHECKING``: mypy and pyright treat
# any ``TYPE_CHECKING`` as true, and ``import multistat`` does not import :mod:`typing`.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    # `name as name`: an explicit re-export (mypy's no_implicit_reexport)
    from multistat import pfloor as pfloor
    from multistat import power as power
    from multistat import report as report
    from multistat import significance as significance
    from multistat.adapters import from_statistics as from_statistics
    from multistat.adapters import load_labels as load_labels
    from multistat.adapters import load_translations as load_translations
    from multistat.analysis import analyze as analyze
    from multistat.comparison import compare as compare
    from multistat.comparison import system_scores as system_scores
    from multistat.corpus import CORPUS_METRICS as CORPUS_METRICS
    from multistat.corpus import register_corpus_metric as register_corpus_metric
    from multistat.correct import adjust as adjust
    from multistat.cube import from_frame as from_frame
    from multistat.cube import load as load
    from multistat.cube import open_study as open_study
    from multistat.cube import save as save_study  # noqa: F401 (the public name)
    from multistat.effect import effect_sizes as effect_sizes
    from multistat.human.agreement import agreement as agreement
    from multistat.human.agreement import krippendorff_alpha as krippendorff_alpha
    from multistat.human.preferences import bradley_terry as bradley_terry
    from multistat.human.preferences import preference_test as preference_test
    from multistat.human.ratings import standardize as standardize
    from multistat.human.ratings import variance_components as variance_components
    from multistat.io import read_parquet as read_parquet
    from multistat.io import read_scores as read_scores
    from multistat.io import read_table as read_table
    from multistat.io import write_parquet as write_parquet
    from multistat.leaderboard.across import friedman as friedman
    from multistat.leaderboard.across import replicability as replicability
    from multistat.leaderboard.export import to_eee as to_eee
    from multistat.leaderboard.ranking import rank as rank
    from multistat.leaderboard.ranking import rank_with_pairs as rank_with_pairs
    from multistat.meta.evaluation import compare_metrics as compare_metrics
    from multistat.meta.evaluation import meta_evaluate as meta_evaluate
    from multistat.meta.evaluation import metric_correlation as metric_correlation
    from multistat.meta.evaluation import wmt_clusters as wmt_clusters
    from multistat.meta.pooling import meta_analysis as meta_analysis
    from multistat.meta.pooling import meta_regression as meta_regression
    from multistat.meta.pooling import pool_studies as pool_studies
    from multistat.request import RunRequest as RunRequest
    from multistat.significance.aso import aso as aso
    from multistat.units import evaluation_units as evaluation_units

_LAZY = {
    "read_scores": ("multistat.io", "read_scores"),
    "write_parquet": ("multistat.io", "write_parquet"),
    "read_parquet": ("multistat.io", "read_parquet"),
    "read_table": ("multistat.io", "read_table"),
    "load": ("multistat.cube", "load"),
    "RunRequest": ("multistat.request", "RunRequest"),
    "open_study": ("multistat.cube", "open_study"),
    "save_study": ("multistat.cube", "save"),
    "from_frame": ("multistat.cube", "from_frame"),
    "evaluation_units": ("multistat.units", "evaluation_units"),
    "analyze": ("multistat.analysis", "analyze"),
    "compare": ("multistat.comparison", "compare"),
    "rank": ("multistat.leaderboard.ranking", "rank"),
    "adjust": ("multistat.correct", "adjust"),
    "effect_sizes": ("multistat.effect", "effect_sizes"),
    "load_translations": ("multistat.adapters", "load_translations"),
    "load_labels": ("multistat.adapters", "load_labels"),
    "from_statistics": ("multistat.adapters", "from_statistics"),
    "register_corpus_metric": ("multistat.corpus", "register_corpus_metric"),
    "CORPUS_METRICS": ("multistat.corpus", "CORPUS_METRICS"),
    "system_scores": ("multistat.comparison", "system_scores"),
    "friedman": ("multistat.leaderboard.across", "friedman"),
    "replicability": ("multistat.leaderboard.across", "replicability"),
    "aso": ("multistat.significance.aso", "aso"),
    "meta_analysis": ("multistat.meta.pooling", "meta_analysis"),
    "meta_regression": ("multistat.meta.pooling", "meta_regression"),
    "pool_studies": ("multistat.meta.pooling", "pool_studies"),
    "bradley_terry": ("multistat.human.preferences", "bradley_terry"),
    "preference_test": ("multistat.human.preferences", "preference_test"),
    "to_eee": ("multistat.leaderboard.export", "to_eee"),
    "power": ("multistat.power", None),
    "report": ("multistat.report", None),
    "significance": ("multistat.significance", None),
    "krippendorff_alpha": ("multistat.human.agreement", "krippendorff_alpha"),
    "agreement": ("multistat.human.agreement", "agreement"),
    "standardize": ("multistat.human.ratings", "standardize"),
    "variance_components": ("multistat.human.ratings", "variance_components"),
    "rank_with_pairs": ("multistat.leaderboard.ranking", "rank_with_pairs"),
    "pfloor": ("multistat.pfloor", None),
    "metric_correlation": ("multistat.meta.evaluation", "metric_correlation"),
    "compare_metrics": ("multistat.meta.evaluation", "compare_metrics"),
    "meta_evaluate": ("multistat.meta.evaluation", "meta_evaluate"),
    "wmt_clusters": ("multistat.meta.evaluation", "wmt_clusters"),
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'multistat' has no attribute {name!r}") from None
    mod = import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__():
    return __all__
