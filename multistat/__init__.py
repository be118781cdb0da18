"""multistat: which NLP systems really beat which, by how much, and was the test set big
enough to tell — for a whole evaluation study at once.

Public API (explicit; no star imports). Heavier modules load on first use. No submodule
shares a name with a public function (the batch driver lives in ``comparison.py``), so
``multistat.compare`` is always the function, whatever was imported before.
"""

from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"

_LAZY = {
    "read_scores": ("multistat.io", "read_scores"),
    "write_parquet": ("multistat.io", "write_parquet"),
    "read_parquet": ("multistat.io", "read_parquet"),
    "load": ("multistat.cube", "load"),
    "RunRequest": ("multistat.request", "RunRequest"),
    "open_study": ("multistat.cube", "open_study"),
    "save_study": ("multistat.cube", "save"),
    "from_frame": ("multistat.cube", "from_frame"),
    "evaluation_units": ("multistat.units", "evaluation_units"),
    "analyze": ("multistat.analysis", "analyze"),
    "compare": ("multistat.comparison", "compare"),
    "rank": ("multistat.ranking", "rank"),
    "adjust": ("multistat.correct", "adjust"),
    "effect_sizes": ("multistat.effect", "effect_sizes"),
    "load_translations": ("multistat.adapters", "load_translations"),
    "load_labels": ("multistat.adapters", "load_labels"),
    "from_statistics": ("multistat.adapters", "from_statistics"),
    "register_corpus_metric": ("multistat.corpus", "register_corpus_metric"),
    "CORPUS_METRICS": ("multistat.corpus", "CORPUS_METRICS"),
    "system_scores": ("multistat.comparison", "system_scores"),
    "to_eee": ("multistat.export", "to_eee"),
    "friedman": ("multistat.across", "friedman"),
    "replicability": ("multistat.across", "replicability"),
    "aso": ("multistat.stochastic_order", "aso"),
    "meta_analysis": ("multistat.meta", "meta_analysis"),
    "meta_regression": ("multistat.meta", "meta_regression"),
    "bradley_terry": ("multistat.preferences", "bradley_terry"),
    "preference_test": ("multistat.preferences", "preference_test"),
    "power": ("multistat.power", None),
    "report": ("multistat.report", None),
    "significance": ("multistat.significance", None),
    "krippendorff_alpha": ("multistat.agreement", "krippendorff_alpha"),
    "standardize": ("multistat.human", "standardize"),
    "variance_components": ("multistat.human", "variance_components"),
    "rank_with_pairs": ("multistat.ranking", "rank_with_pairs"),
    "pfloor": ("multistat.pfloor", None),
    "metric_correlation": ("multistat.metaeval", "metric_correlation"),
    "compare_metrics": ("multistat.metaeval", "compare_metrics"),
    "meta_evaluate": ("multistat.metaeval", "meta_evaluate"),
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
