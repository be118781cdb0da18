"""Human ratings by rater: per-rater standardisation and the variance components of a pilot.

A study read with ``rater_col=`` (:func:`multistat.read_scores`) keeps every rating as
``rating(system, metric, instance, rater)`` and tests the item means (``score``). This
module works on those ratings:

* :func:`standardize` turns each rater's ratings into z-scores, as WMT's direct
  assessment does, so that harsh and lenient raters count alike;
* :func:`variance_components` fits Card et al.'s (2020, appendix H.3) crossed model to a
  pilot and returns the five standard deviations their Table 16 tabulates, ready for
  :func:`multistat.power.simulate_likert` to plan the real study.

The test itself is the registered ``"mixed"`` test (:mod:`multistat.significance.mixed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from multistat import cube
from multistat._result import Result
from multistat._validation import check_choice, check_int
from multistat.errors import DataValidationError, ParameterError

if TYPE_CHECKING:  # the power package's class, imported where it is made
    from multistat.power import LikertVariance


def _nodes(study) -> dict[str, xr.Dataset]:
    nodes = cube.datasets(study)
    for name, ds in nodes.items():
        if cube.RATING not in ds:
            raise DataValidationError(
                f"dataset {name!r} has no ratings by rater: read the scores with "
                "rater_col= (CLI --rater-col)")
    return nodes


def standardize(study, by: str = "rater", *, ddof: int = 1) -> xr.DataTree:
    """Per-rater z-scores of every rating (WMT direct assessment's standardisation).

    Parameters
    ----------
    study : xarray.DataTree or path
        a study with ratings by rater (``read_scores(..., rater_col=...)``)
    by : {"rater"}
        What the z-scores are computed within: each rater's ratings of one metric in one
        dataset, over every system and item the rater rated.
    ddof : int
        Delta degrees of freedom of the standard deviation (1: the sample SD).

    Returns
    -------
    xarray.DataTree
        A new study: ``rating`` holds the z-scores and carries the transformation in its
        attributes (``standardized``, ``ddof``); the variables ``rater_mean`` and
        ``rater_sd`` on ``(metric, rater)`` keep each rater's mean and SD, so the raw
        ratings are ``rating * rater_sd + rater_mean``; ``score`` is the mean z-score
        over the raters present (every metric's kind becomes ``"mean"``).

    Raises
    ------
    DataValidationError
        A rater with fewer than two ratings of a metric, or whose ratings are all equal
        (no SD to divide by), named with the dataset and metric: drop that rater's
        ratings or keep the raw scale.

    References
    ----------
    Y. Graham, T. Baldwin, A. Moffat and J. Zobel (2017). Can machine translation systems
    be evaluated by the crowd alone? Natural Language Engineering 23(1), 3-30.
    https://doi.org/10.1017/S1351324915000339
    """
    by = check_choice("by", by, ("rater",))
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise ParameterError(f"`ddof` must be a non-negative integer; got {ddof!r}")
    out = {}
    for name, ds in _nodes(study).items():
        r = ds[cube.RATING].transpose(*cube.RATING_DIMS).values  # (S, M, n, R)
        present = ~np.isnan(r)
        count = present.sum(axis=(0, 2))                           # (M, R)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nansum(r, axis=(0, 2)) / count
            dev = np.where(present, r - mean[None, :, None, :], 0.0)
            sd = np.sqrt((dev**2).sum(axis=(0, 2)) / (count - ddof))
        bad = (count > 0) & ~((count > ddof) & (sd > 0))
        if bad.any():
            m, q = (int(v) for v in np.argwhere(bad)[0])
            why = (f"{int(count[m, q])} rating(s)" if count[m, q] <= ddof
                   else "all its ratings equal")
            raise DataValidationError(
                f"dataset {name!r}, metric {str(ds.metric.values[m])!r}: rater "
                f"{str(ds.rater.values[q])!r} has {why}, so its ratings have no z-score "
                f"({int(bad.sum())} such rater x metric in this dataset); drop that rater's "
                f"ratings or compare the raw ratings")
        z = dev / np.where(sd > 0, sd, 1.0)[None, :, None, :]
        z = np.where(present, z, np.nan)
        new = cube.make_dataset(
            name, cube.run_mean(z), systems=ds.system.values, metrics=ds.metric.values,
            instances=ds.instance.values, higher_is_better=ds.higher_is_better.values,
            kind=["mean"] * ds.sizes["metric"],
            group=ds["group"].values if "group" in ds.coords else None,
            rating=z, raters=ds.rater.values)
        new[cube.RATING].attrs.update(standardized="z-score by rater", ddof=int(ddof))
        new["rater_mean"] = (("metric", "rater"), mean)
        new["rater_sd"] = (("metric", "rater"), sd)
        out[name] = new
    return cube.make_study(out)


@dataclass(frozen=True)
class VarianceComponents(Result):
    """Variance components of a pilot (Card et al. Table 16) and its fixed effects.

    Attributes
    ----------
    variance : multistat.power.LikertVariance
        Standard deviations of the rater (``worker_*``) and item intercepts and slopes
        and of the residual, in the units of the ratings, with the system coded -1/+1
        as :func:`multistat.power.simulate_likert` simulates it.
    intercept : float
        The grand mean rating (``beta_0``).
    effect : float
        The system coefficient ``beta_1`` (half the difference of the two systems'
        means); with more than two systems, the mean of ``|beta_1|`` over the pairs.
    n_raters, n_items, n_ratings : int
        Of the pilot (over the systems used).
    pairs : pandas.DataFrame
        One row per pair of systems fitted: ``system_a, system_b`` and the five SDs,
        ``intercept``, ``effect``, ``n_ratings`` and ``note`` (the fit's: a boundary
        (singular) fit, or why the pair was left out); the reported components pool the
        variances of the pairs that could be fitted (their mean, then the square root).
    dataset, metric : str
    note : str
        The pairs left out of the pooling and why ("" when none).
    """

    variance: LikertVariance
    intercept: float
    effect: float
    n_raters: int
    n_items: int
    n_ratings: int
    pairs: pd.DataFrame
    dataset: str
    metric: str
    note: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row per pair of systems fitted (:attr:`pairs`), with the dataset and
        metric."""
        return self.pairs.assign(dataset=self.dataset, metric=self.metric)


#: pairs :func:`variance_components` fits by default (a balanced subsample beyond that)
MAX_PAIRS = 120


def balanced_pairs(n: int, max_pairs: int | None) -> list[tuple[int, int]]:
    """At most ``max_pairs`` pairs of ``n`` systems, every system in (about) as many pairs.

    All ``n (n - 1) / 2`` pairs when they are no more than ``max_pairs`` (or it is None).
    Else whole rounds of the cyclic design: the pairs ``(i, i + k mod n)`` of the offsets
    ``k = 1, 2, ...`` in turn; each round is ``n`` pairs (``n / 2`` when ``k = n / 2``)
    that put every system in exactly two pairs (one), with systems ``k`` apart, so a round
    never favours a system and the subsample is a fixed function of ``n`` (no seed). At
    least one round is taken.

    Parameters
    ----------
    n : int
        Number of systems (at least 2).
    max_pairs : int or None
        Largest number of pairs; None for all.

    Returns
    -------
    list of tuple
        ``(i, j)`` with ``i < j``, sorted.

    Examples
    --------
    >>> balanced_pairs(4, None)
    [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    >>> balanced_pairs(6, 6)          # one round: every system in two pairs
    [(0, 1), (0, 5), (1, 2), (2, 3), (3, 4), (4, 5)]
    """
    total = n * (n - 1) // 2
    if max_pairs is None or total <= max_pairs:
        return list(combinations(range(n), 2))
    chosen: set = set()
    for k in range(1, n // 2 + 1):
        round_ = {tuple(sorted((i, (i + k) % n))) for i in range(n)}
        if chosen and len(chosen) + len(round_) > max_pairs:
            break
        chosen |= round_
    return sorted(chosen)


def variance_components(study, *, dataset=None, metric=None, systems=None, fits=None,
                        max_pairs: int | None = MAX_PAIRS) -> VarianceComponents:
    """Estimate Card et al.'s five standard deviations from a pilot of human ratings.

    Fits ``rating ~ system + (1 + system || rater) + (1 + system || item)`` (system coded
    -1/+1) by REML to each pair of ``systems``
    (:func:`multistat.significance.mixed.fit_crossed`) and pools the pairs' variances.
    Feed ``.variance`` to :func:`multistat.power.simulate_likert` (``variance=``) to plan
    the real study, with the planned ``effect`` in the same units.

    Parameters
    ----------
    study : xarray.DataTree or path
        a study with ratings by rater
    dataset, metric : str, optional
        Which one; needed when the study has several.
    systems : list of str, optional
        At least two systems (default: all of the dataset's).
    fits : optional
        a compare table, optional
        Its ``"mixed"`` rows of this dataset and metric (``compare(tests=("mixed",))``
        on the same study) hold every pair's fit (``intercept``, ``estimate``, ``sd_*``):
        they are pooled instead of fitting the pairs again (the same numbers; the report
        passes its table). Pairs it lacks are fitted.
    max_pairs : int or None, default 120
        Fit at most this many pairs: with more systems, a balanced subsample of whole
        rounds of the cyclic design (:func:`balanced_pairs`: every system in the same
        number of pairs; 60 systems: 120 of 1,770 pairs, each system in 4), and the note
        says so. The pooled standard deviations are a mean over pairs, so a balanced
        subsample estimates the same quantity at a fraction of the cost (one REML fit per
        pair). None fits every pair.

    Returns
    -------
    VarianceComponents
        The variance components of the pilot (``variance``: rater, item and residual
        standard deviations, what :func:`multistat.power.simulate_likert` takes), the
        fixed effects (``intercept``, ``effect``) and the pilot's sizes.

    Raises
    ------
    DataValidationError
        Fewer than two raters (no rater variance can be estimated), or no pair whose
        ratings vary beyond the two systems' means.

    Examples
    --------
    >>> import multistat  # doctest: +SKIP
    >>> pilot = multistat.load("ratings.csv", rater_col="rater")  # doctest: +SKIP
    >>> vc = multistat.variance_components(pilot)  # doctest: +SKIP
    >>> multistat.power.simulate_likert(n_items=200, n_workers=10, effect=0.05,
    ...                                 variance=vc.variance)  # doctest: +SKIP
    """
    # heavy: scipy.special, numpy, lazily
    from multistat.power import LikertVariance

    # heavy: scipy.special, numpy, lazily
    from multistat.significance.mixed import DEGENERATE_NOTE, fit_crossed

    nodes = _nodes(study)
    name = _pick("dataset", dataset, list(nodes))
    ds = nodes[name]
    met = _pick("metric", metric, [str(m) for m in ds.metric.values])
    names = [str(s) for s in ds.system.values]
    if systems is None:
        systems = names
    systems = [str(s) for s in systems]
    unknown = [s for s in systems if s not in names]
    if unknown:
        raise ParameterError(f"`systems`: unknown system(s) {unknown} in dataset {name!r}; "
                             f"it has {names}")
    if len(set(systems)) < 2:
        raise ParameterError(f"`systems` needs at least two different systems; got {systems}")
    r = ds[cube.RATING].sel(metric=met).transpose("system", "instance", "rater")
    rated = ~np.isnan(r.sel(system=systems).values).all(axis=(0, 1))
    if rated.sum() < 2:
        who = [str(v) for v in r.rater.values[rated]]
        raise DataValidationError(
            f"variance_components needs ratings by at least 2 raters to estimate rater "
            f"variances; dataset {name!r}, metric {met!r} has {int(rated.sum())} "
            f"({', '.join(repr(w) for w in who)})")
    rows = []
    raters_used: set = set()
    items_used: set = set()
    n_ratings = 0
    done = _fitted_pairs(fits, name, met)
    if max_pairs is not None:
        max_pairs = check_int("max_pairs", max_pairs, minimum=1)
    chosen = balanced_pairs(len(systems), max_pairs)
    for i, j in chosen:
        a, b = systems[i], systems[j]
        ya, yb = r.sel(system=a).values, r.sel(system=b).values
        pa, pb = ~np.isnan(ya), ~np.isnan(yb)
        grid = np.indices(ya.shape)
        items, raters = grid[0], grid[1]
        raters_used |= set(np.unique(np.concatenate([raters[pa], raters[pb]])))
        items_used |= set(np.unique(np.concatenate([items[pa], items[pb]])))
        if (a, b) in done:  # compare's own fit of this pair
            rows.append({"system_a": a, "system_b": b, **done[(a, b)],
                         "n_ratings": int(pa.sum() + pb.sum())})
            continue
        n_r = np.unique(np.concatenate([raters[pa], raters[pb]])).size
        n_i = np.unique(np.concatenate([items[pa], items[pb]])).size
        if n_r < 2 or n_i < 2 or pa.sum() < 2 or pb.sum() < 2:
            rows.append({"system_a": a, "system_b": b, **dict.fromkeys(_SDS, np.nan),
                         "intercept": np.nan, "effect": np.nan,
                         "n_ratings": int(pa.sum() + pb.sum()),
                         "note": "left out: fewer than 2 raters, 2 items or 2 ratings per "
                                 "system"})
            continue
        fit = fit_crossed(np.concatenate([ya[pa], yb[pb]]),
                          np.concatenate([np.ones(pa.sum()), -np.ones(pb.sum())]),
                          np.concatenate([raters[pa], raters[pb]]),
                          np.concatenate([items[pa], items[pb]]))
        if fit.note == DEGENERATE_NOTE:
            rows.append({"system_a": a, "system_b": b, **dict.fromkeys(_SDS, np.nan),
                         "intercept": float(fit.beta[0]), "effect": float(fit.beta[1]),
                         "n_ratings": fit.n, "note": "left out: " + fit.note})
            continue
        rows.append({"system_a": a, "system_b": b, **fit.sd,
                     "intercept": float(fit.beta[0]), "effect": float(fit.beta[1]),
                     "n_ratings": fit.n, "note": fit.note})
    for s in systems:
        n_ratings += int((~np.isnan(r.sel(system=s).values)).sum())
    pairs = pd.DataFrame(rows)
    if "note" not in pairs:
        pairs["note"] = ""
    pairs["note"] = pairs["note"].fillna("")
    fitted = pairs[np.isfinite(pairs["sigma"]) & (pairs["sigma"] > 0)]
    if fitted.empty:
        why = "; ".join(sorted(set(pairs["note"])))
        raise DataValidationError(
            f"variance_components: no pair of systems of dataset {name!r}, metric {met!r} "
            f"could be fitted ({why})" if why and "do not vary" not in why else
            f"variance_components: the ratings of dataset {name!r}, metric {met!r} do not "
            f"vary beyond the systems' means: no variance to estimate")
    left_out = pairs.loc[~pairs.index.isin(fitted.index)]
    note = "" if left_out.empty else (
        f"{len(left_out)} of {len(pairs)} pairs left out of the pooling: "
        + "; ".join(f"{a} vs {b} ({n.removeprefix('left out: ')})" for a, b, n in zip(
            left_out["system_a"], left_out["system_b"], left_out["note"])))
    total = len(systems) * (len(systems) - 1) // 2
    if len(chosen) < total:
        per = np.bincount(np.asarray(chosen).ravel(), minlength=len(systems))
        sub = (f"pooled over a balanced subsample of {len(chosen)} of {total} pairs (whole "
               f"rounds of the cyclic design, each system in {per.min()}"
               + (f"-{per.max()}" if per.max() > per.min() else "")
               + " pairs; max_pairs=None fits all)")
        note = f"{sub}; {note}" if note else sub
    pooled = {k: float(np.sqrt(np.mean(fitted[k] ** 2))) for k in _SDS}
    variance = LikertVariance(worker_intercept=pooled["rater_intercept"],
                              worker_slope=pooled["rater_slope"],
                              item_intercept=pooled["item_intercept"],
                              item_slope=pooled["item_slope"], sigma=pooled["sigma"])
    effect = (float(fitted["effect"].iloc[0]) if len(fitted) == 1
              else float(fitted["effect"].abs().mean()))
    return VarianceComponents(variance=variance,
                              intercept=float(fitted["intercept"].mean()),
                              effect=effect, n_raters=len(raters_used),
                              n_items=len(items_used), n_ratings=n_ratings, pairs=pairs,
                              dataset=name, metric=met, note=note)


#: the five standard deviations of a fit, as ``variance_components`` pools them
_SDS = ("rater_intercept", "rater_slope", "item_intercept", "item_slope", "sigma")


def _fitted_pairs(fits, dataset, metric) -> dict:
    """``{(a, b): fit columns}`` of the ``"mixed"`` rows of a compare table (both
    orders of a pair; the effect is beta_1 = estimate / 2, signed for the order asked)."""
    if fits is None or "test" not in fits or "sd_sigma" not in fits:
        return {}
    rows = fits[(fits["test"] == "mixed") & (fits["dataset"].astype(str) == dataset)
                & (fits["metric"].astype(str) == metric)]
    out = {}
    for r in rows.to_dict("records"):
        if not np.isfinite(r.get("sd_sigma", np.nan)):
            continue
        sd = {k: float(r[f"sd_{k}"]) for k in ("rater_intercept", "rater_slope",
                                                "item_intercept", "item_slope", "sigma")}
        a, b, beta1 = str(r["system_a"]), str(r["system_b"]), float(r["estimate"]) / 2
        note = str(r.get("note", "") or "")
        note = ("left out: " + note.removeprefix("mixed: ") if not sd["sigma"] > 0
                else note.split("; ", 1)[1] if "; " in note else "")
        common = {**sd, "intercept": float(r["intercept"]), "note": note}
        out[(a, b)] = {**common, "effect": beta1}
        out[(b, a)] = {**common, "effect": -beta1}
    return out


def _pick(what, value, options):
    if value is None:
        if len(options) != 1:
            raise ParameterError(f"the study has {len(options)} {what}s ({options[:10]}); "
                                 f"name one with `{what}=`")
        return options[0]
    if value not in options:
        raise ParameterError(f"`{what}`: unknown {what} {value!r}; the study has {options}")
    return value
