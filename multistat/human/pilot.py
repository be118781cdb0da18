"""The numbers of a study with ratings by rater, as tables: its design, the raters'
agreement, the variance components of Card et al.'s crossed model and the power of other
raters x items designs for the study's own effect size.

:func:`rating_tables` runs them for every dataset x metric with ratings; the report's
"Human evaluation" section draws these tables (``multistat report --study`` or
:func:`multistat.stages.report_inputs` run this stage when the tables are not given).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from multistat import cube
from multistat.human.agreement import agreement
from multistat.human.ratings import variance_components
from multistat.power import simulate_likert

__all__ = ["GRID_ITEMS", "GRID_RATERS", "design_table", "power_grid", "rating_tables"]

#: the raters x items grid of the power table
GRID_RATERS = (3, 5, 10, 20)
GRID_ITEMS = (50, 100, 200, 400, 800)

#: Card et al.'s five standard deviations, in the components table's order
COMPONENTS = ("worker_intercept", "worker_slope", "item_intercept", "item_slope", "sigma")


def design_table(ds) -> pd.DataFrame:
    """One row per metric x system of one dataset with ratings: raters, items rated,
    ratings, ratings per item.

    Parameters
    ----------
    ds : xarray.Dataset
        One dataset of a study with ratings by rater (``cube.RATING``).

    Returns
    -------
    pandas.DataFrame
        Columns ``metric, system, raters, items, ratings, ratings_per_item``.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, pandas as pd, multistat
    >>> from multistat import cube
    >>> rng = np.random.default_rng(0)
    >>> path = os.path.join(tempfile.mkdtemp(), "ratings.csv")
    >>> pd.DataFrame([(s, i, r, float(rng.integers(1, 6))) for s in "ab" for i in range(20)
    ...               for r in range(3)], columns=["system", "item", "rater", "likert"]
    ...              ).to_csv(path, index=False)
    >>> study = multistat.load(path, score_col="likert", instance_col="item",
    ...                        rater_col="rater")
    >>> ds = next(v for v in cube.datasets(study).values() if cube.RATING in v)
    >>> int(design_table(ds)["raters"].max())
    3
    """
    r = ds[cube.RATING].transpose(*cube.RATING_DIMS).values
    rows = []
    for m, metric in enumerate(ds.metric.values):
        for s, system in enumerate(ds.system.values):
            present = ~np.isnan(r[s, m])
            items = int(present.any(axis=1).sum())
            rows.append({"metric": str(metric), "system": str(system),
                         "raters": int(present.any(axis=0).sum()), "items": items,
                         "ratings": int(present.sum()),
                         "ratings_per_item": present.sum() / items if items else np.nan})
    return pd.DataFrame(rows)


def power_grid(variance, effect: float, *, raters=GRID_RATERS, items=GRID_ITEMS,
               n_simulations: int = 500, alpha: float = 0.05, seed: int = 0
               ) -> pd.DataFrame:
    """Power of the crossed design for every raters x items cell
    (:func:`multistat.power.simulate_likert`, one seed for every cell).

    Parameters
    ----------
    variance : multistat.power.LikertVariance
        The pilot's variance components (``variance_components(...).variance``).
    effect : float
        The true effect (``beta_1``) to detect.
    raters, items : sequences of int
        The grid.
    n_simulations : int
        Simulated studies per cell.
    alpha : float
        Level of the test.
    seed : int
        Seed of every cell's simulation.

    Returns
    -------
    pandas.DataFrame
        Long table ``raters, items, power``.

    Examples
    --------
    >>> from multistat.power import LIKERT_PRESETS
    >>> g = power_grid(LIKERT_PRESETS["low"], 0.2, raters=(3,), items=(50,),
    ...                n_simulations=20)
    >>> list(g.columns)
    ['raters', 'items', 'power']
    """
    rows = []
    for w in raters:
        for i in items:
            r = simulate_likert(n_items=i, n_workers=w, effect=effect, variance=variance,
                                n_simulations=n_simulations, alpha=alpha, seed=seed)
            rows.append({"raters": w, "items": i, "power": r.power})
    return pd.DataFrame(rows)


def rating_tables(study, results: pd.DataFrame | None = None, *,
                  n_resamples: int = 1000, seed: int = 0,
                  n_simulations: int = 500) -> dict[str, pd.DataFrame]:
    """The tables of the report's "Human evaluation" section, for every dataset with
    ratings by rater.

    Parameters
    ----------
    study : xarray.DataTree
        The study (``cube.load``).
    results : pandas.DataFrame, optional
        The compare table: its ``"mixed"`` rows' fits are reused for the variance
        components (not refitted).
    n_resamples, seed : int
        Bootstrap of Krippendorff's alpha over items (interval level).
    n_simulations : int
        Simulated studies per cell of the power grid.

    Returns
    -------
    dict
        ``{"human_design", "human_agreement", "human_components", "human_power"}``, each
        a long table with ``dataset`` (and ``metric``) columns; empty dict when no
        dataset has ratings by rater. ``human_components`` has one row per component
        (``component, sd, effect, note``; ``note`` says why a design could not be fitted,
        with ``sd`` NaN); ``human_power`` has ``raters, items, power, effect``.

    Examples
    --------
    >>> from multistat import cube
    >>> from multistat.demo import demo_frame
    >>> rating_tables(cube.from_frame(demo_frame()))  # no ratings by rater
    {}
    """
    nodes = {k: v for k, v in cube.datasets(study).items() if cube.RATING in v}
    if not nodes:
        return {}
    design, agree, comps, grids = [], [], [], []
    for name, ds in nodes.items():
        design.append(design_table(ds).assign(dataset=name))
        for metric in map(str, ds.metric.values):
            a = agreement(ds.sel(metric=[metric]), "interval", n_resamples=n_resamples,
                          seed=seed)
            agree.append(a.assign(dataset=name, metric=metric))
            try:
                # the compare table's own mixed fits, when the run had them (not refitted)
                vc = variance_components(study, dataset=name, metric=metric, fits=results)
            except Exception as exc:  # noqa: BLE001 - a design the model cannot fit: said
                comps.append({"dataset": name, "metric": metric, "component": "",
                              "sd": np.nan, "effect": np.nan, "note": str(exc)})
                continue
            comps += [{"dataset": name, "metric": metric,
                       "component": k.replace("worker", "rater"),
                       "sd": float(getattr(vc.variance, k)), "effect": float(vc.effect),
                       "note": ""} for k in COMPONENTS]
            effect = max(vc.effect, 1e-12)
            grids.append(power_grid(vc.variance, effect, n_simulations=n_simulations)
                         .assign(dataset=name, metric=metric, effect=effect))
    first = ["dataset", "metric"]

    def tidy(parts, empty):
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=empty)
        return frame[[*[c for c in first if c in frame], *[c for c in frame
                                                          if c not in first]]]

    return {"human_design": tidy(design, ["dataset", "metric"]),
            "human_agreement": tidy(agree, ["dataset", "metric"]),
            "human_components": pd.DataFrame(comps, columns=["dataset", "metric",
                                                             "component", "sd", "effect",
                                                             "note"]),
            "human_power": tidy(grids, ["dataset", "metric", "raters", "items", "power",
                                        "effect"])}
