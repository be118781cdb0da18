"""Evaluation units: groups of adjacent instances summarised by their mean or median.

NLPStatTest (manual section 3.1 and appendix C.1) averages sentence-level scores over
*evaluation units* before testing. The default partition is NLPStatTest's: the instances
(after an optional seeded shuffle, identical for every system so pairs stay paired) are
split with :func:`numpy.array_split` into ``k = n // size`` consecutive units, so units
hold ``ceil(n / k)`` (the first ``n mod k``) or ``floor(n / k)`` instances: ``size`` or
``size + 1`` whenever ``n >= size**2``, more when few units share the remainder
(``n = 13, size = 5``: units of 7 and 6). ``remainder="drop"`` instead keeps the
``k`` full units of exactly ``size`` instances and leaves out the last ``n - k * size``.

Corpus metrics (``kind == "corpus"``) have their sufficient statistics *summed* within a
unit (the unit is a small corpus); their informative ``score`` becomes the unit mean.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from multistat import cube
from multistat._typing import STATISTICS
from multistat._validation import check_choice, check_int, check_seed
from multistat.engine import block_rng
from multistat.errors import DataValidationError, ParameterError


def partition(n: int, size: int, remainder: str = "spread") -> list[np.ndarray]:
    """Index arrays of the units of ``n`` instances (see module docstring)."""
    k = n // size
    if k < 2:  # a study needs two instances (here: units) to compare anything
        raise DataValidationError(f"evaluation unit size {size} is too large: {n} instances "
                                  f"make {k} unit(s), at least 2 are needed (size <= "
                                  f"{n // 2})")
    if remainder == "spread":
        return np.array_split(np.arange(n), k)
    return [np.arange(i * size, (i + 1) * size) for i in range(k)]


def _unit_reduce(values: np.ndarray, groups: list[np.ndarray], statistic: str) -> np.ndarray:
    """Reduce the last axis of ``values`` over ``groups`` (vectorized per group length)."""
    out = np.full(values.shape[:-1] + (len(groups),), np.nan)
    lengths = np.array([len(g) for g in groups])
    for length in np.unique(lengths[lengths > 0]):  # an empty group stays NaN
        which = np.flatnonzero(lengths == length)
        idx = np.stack([groups[w] for w in which])  # (units, length)
        block = values[..., idx]  # (..., units, length)
        out[..., which] = block.mean(-1) if statistic == "mean" else np.median(block, -1)
    return out


def _order(name: str, n: int, seed) -> np.ndarray:
    return np.arange(n) if seed is None else block_rng(seed, name, "units", 0).permutation(n)


def _metric_groups(valid_m: np.ndarray, groups_all, size, remainder):
    """Units of one metric: the valid instances re-partitioned (``size`` units), or each
    group restricted to its valid instances (``size=None``: units by group; a group with
    none left is an empty unit, NaN)."""
    keep = np.flatnonzero(valid_m)
    if len(keep) == len(valid_m):
        return groups_all
    if size is None:
        return [g[valid_m[g]] for g in groups_all]
    return [keep[g] for g in partition(len(keep), size, remainder)]


def _unit_values(score: np.ndarray, kinds, size, statistic: str, remainder: str,
                 groups_all=None) -> np.ndarray:
    """Units of an already ordered ``(system, metric, instance)`` block (``size=None``:
    the given ``groups_all``, one unit per group)."""
    if groups_all is None:
        groups_all = partition(score.shape[-1], size, remainder)
    out = np.full(score.shape[:2] + (len(groups_all),), np.nan)
    valid = ~np.isnan(score[0])  # (metric, instance); NaN covers all systems
    for m in range(score.shape[1]):
        groups = _metric_groups(valid[m], groups_all, size, remainder)
        stat = "mean" if kinds[m] == "corpus" else statistic
        out[:, m, : len(groups)] = _unit_reduce(score[:, m, :], groups, stat)
    return out


def _unit_stats(stats: np.ndarray, valid, kinds, size, remainder, groups_all=None
                ) -> np.ndarray:
    """Sum corpus statistics ``(system, metric, instance, stat)`` within units."""
    if groups_all is None:
        groups_all = partition(stats.shape[2], size, remainder)
    out = np.zeros(stats.shape[:2] + (len(groups_all), stats.shape[3]))
    for m in range(stats.shape[1]):
        if kinds[m] != "corpus":
            continue
        groups = _metric_groups(valid[m], groups_all, size, remainder)
        s = np.moveaxis(stats[:, m], -1, 1)  # (system, stat, instance)
        summed = _unit_reduce(s, groups, "mean") * np.array([len(g) for g in groups])
        out[:, m, : len(groups)] = np.nan_to_num(np.moveaxis(summed, 1, -1))
    return out


def _units_of_dataset(ds: xr.Dataset, size: int, statistic: str, seed, remainder: str
                      ) -> xr.Dataset:
    name = ds.attrs.get("dataset", "")
    n = ds.sizes["instance"]
    order = _order(name, n, seed)
    kinds = ds.kind.values
    score = ds[cube.SCORE].values[..., order]
    units = _unit_values(score, kinds, size, statistic, remainder)
    stats = None
    if cube.STATS in ds:
        stats = _unit_stats(ds[cube.STATS].values[:, :, order], ~np.isnan(score[0]), kinds,
                            size, remainder)
    groups_all = partition(n, size, remainder)
    labels = [f"unit-{i:05d}" for i in range(len(groups_all))]
    # a unit of several 0/1 scores holds a proportion: the metric is no longer binary
    out_kinds = np.where((kinds == "binary") & (size > 1), "mean", kinds)
    out = cube.make_dataset(
        name, units, systems=ds.system.values, metrics=ds.metric.values, instances=labels,
        higher_is_better=ds.higher_is_better.values, kind=out_kinds,
        corpus_fn=ds.corpus_fn.values, stats=stats)
    sizes = np.array([len(g) for g in groups_all])
    return out.assign_coords(unit_n=("instance", sizes)).assign_attrs(
        unit_size=size, unit_statistic=statistic, unit_seed=_seed_attr(seed),
        unit_remainder=remainder, instances_before_units=n)


#: what ``remainder`` does with the instances past the last full unit
REMAINDERS = ("spread", "drop")
GROUP = "group"  # coordinate on ``instance``: the document / talk / dialogue of each instance


def groups_of(ds: xr.Dataset, coord: str = GROUP) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(labels, index arrays)`` of the groups of a dataset's instances, labels sorted
    (so the units do not depend on the order of the input rows)."""
    name = ds.attrs.get("dataset", "?")
    if coord not in ds.coords or ds[coord].dims != ("instance",):
        raise DataValidationError(
            f"dataset {name!r} has no {coord!r} coordinate on its instances: read the scores "
            f"with read_scores(..., group_col=...) (or assign_coords({coord}=('instance', "
            "labels))) to make units by group")
    labels = np.asarray(ds[coord].values).astype(str)
    uniq, inverse = np.unique(labels, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(uniq)))[:-1]
    return uniq, np.split(order, bounds)


def _group_units_of_dataset(ds: xr.Dataset, statistic: str) -> xr.Dataset:
    """One unit per group (``by="group"``)."""
    name = ds.attrs.get("dataset", "")
    labels, groups = groups_of(ds)
    if len(groups) < 2:
        raise DataValidationError(f"dataset {name!r}: all {ds.sizes['instance']} instances "
                                  f"are in one group ({labels[0]!r}); units by group need "
                                  "at least 2 groups")
    kinds = ds.kind.values
    score = np.asarray(ds[cube.SCORE].values)
    units = _unit_values(score, kinds, None, statistic, "spread", groups_all=groups)
    stats = None
    if cube.STATS in ds:
        stats = _unit_stats(np.asarray(ds[cube.STATS].values), ~np.isnan(score[0]), kinds,
                            None, "spread", groups_all=groups)
    runs = {}
    if cube.RUN_SCORE in ds:  # each run's unit values: ASO over runs works on units too
        rs = np.asarray(ds[cube.RUN_SCORE].values)
        runs = {"run_score": np.stack([_unit_values(rs[..., r], kinds, None, statistic,
                                                    "spread", groups_all=groups)
                                       for r in range(rs.shape[-1])], axis=-1),
                "runs": ds.run.values}
    sizes = np.array([len(g) for g in groups])
    out_kinds = np.where((kinds == "binary") & (sizes.max() > 1), "mean", kinds)
    out = cube.make_dataset(
        name, units, systems=ds.system.values, metrics=ds.metric.values, instances=labels,
        higher_is_better=ds.higher_is_better.values, kind=out_kinds,
        corpus_fn=ds.corpus_fn.values, stats=stats, **runs)
    return out.assign_coords(unit_n=("instance", sizes)).assign_attrs(
        unit_size=-1, unit_by=GROUP, unit_statistic=statistic, unit_seed=-1,
        unit_remainder="", instances_before_units=ds.sizes["instance"])


def _seed_attr(seed):
    """The seed as a NetCDF-storable attribute: -1 for none, a SeedSequence's entropy
    (as text when it does not fit in int64)."""
    if seed is None:
        return -1
    if isinstance(seed, np.random.SeedSequence):
        seed = seed.entropy
        return int(seed) if isinstance(seed, int) and seed < 2**63 else str(seed)
    return seed


def evaluation_units(study: xr.DataTree, *, size: int | None = None, by: str | None = None,
                     statistic: str = "mean", seed=None, remainder: str = "spread"
                     ) -> xr.DataTree:
    """Group instances into evaluation units of ``size``, or one unit per group.

    Parameters
    ----------
    study : xarray.DataTree or path
        the study (:func:`multistat.load`)
    size : optional
        instances per unit ``m`` (``1`` returns the study unchanged); give ``size`` or
        ``by``
    by : optional
        ``"group"``: one unit per value of the instances' ``group`` coordinate
        (documents, talks, dialogues: ``read_scores(..., group_col=...)``), units labelled
        by the group, sorted; a metric's missing instances are left out of their group
    statistic : str, optional
        ``"mean"`` or ``"median"`` of the instances in a unit
    seed : optional
        None (no shuffle, NLPStatTest's default) or a non-negative int: shuffle the
        instances with this seed first, identically for every system and metric
    remainder : str, optional
        ``"spread"`` (``numpy.array_split`` into ``n // size`` units that share
        the remainder, NLPStatTest-compatible) or ``"drop"`` (only full units)

    Returns
    -------
    xarray.DataTree
        Same systems and metrics; the ``instance`` dimension now indexes units
        (labels ``unit-00000``..., or the group labels; coordinate ``unit_n`` = instances
        per unit, attribute ``unit_by`` = ``"group"`` for units by group). Dask-backed
        input gives dask-backed output (the work stays lazy until computed). With
        ``size > 1`` a ``binary`` metric becomes ``mean`` (its units are proportions).

    Examples
    --------
    >>> import numpy as np
    >>> np.array_split(np.arange(7), 7 // 3)   # units of a 7-instance set with size 3
    [array([0, 1, 2, 3]), array([4, 5, 6])]
    """
    check_choice("statistic", statistic, STATISTICS)
    if by is not None:
        check_choice("by", by, (GROUP,))
        if size is not None or seed is not None:
            raise ParameterError("`by='group'` makes one unit per group: give neither "
                                 f"`size` (got {size!r}) nor `seed` (got {seed!r})")
        return cube.make_study({name: _group_units_of_dataset(ds.compute(), statistic)
                                for name, ds in cube.datasets(study).items()})
    if size is None:
        raise ParameterError("give `size` (instances per unit) or `by='group'`")
    size = check_int("size", size, minimum=1)
    check_choice("remainder", remainder, REMAINDERS)
    if seed is not None:
        seed = check_seed(seed)
    if size == 1 and seed is None:
        return study
    out = {}
    for name, ds in cube.datasets(study).items():
        if ds[cube.SCORE].chunks is not None:
            out[name] = _lazy_units(ds, size, statistic, seed, remainder)
        else:
            out[name] = _units_of_dataset(ds, size, statistic, seed, remainder)
    return cube.make_study(out)


def _lazy_units(ds, size, statistic, seed, remainder):
    """Dask path: units computed block by block over the (system, metric) chunks."""
    # heavy: dask, lazily
    import dask.array as da

    if cube.STATS in ds:
        return _units_of_dataset(ds.compute(), size, statistic, seed, remainder)
    name = ds.attrs.get("dataset", "")
    n = ds.sizes["instance"]
    order = _order(name, n, seed)
    kinds = ds.kind.values
    k = len(partition(n, size, remainder))
    # dask (system, metric, instance); a unit may span instance chunks: make it one chunk
    score = ds[cube.SCORE].data.rechunk({2: -1})

    def block(x, block_info=None):
        m0, m1 = block_info[0]["array-location"][1]
        return _unit_values(x[..., order], kinds[m0:m1], size, statistic, remainder)

    lazy = da.map_blocks(block, score, chunks=score.chunks[:2] + ((k,),), dtype=np.float64)
    # coordinates and attributes of the result depend only on n, size and the metadata:
    # build them from a zero block instead of computing two systems' scores
    head = ds.isel(system=[0, 1])
    head = head.assign({cube.SCORE: (cube.DIMS, np.zeros(head[cube.SCORE].shape))})
    template = _units_of_dataset(head, size, statistic, seed, remainder)
    out = template.drop_vars(cube.SCORE).assign_coords(system=ds.system.values)
    return out.assign({cube.SCORE: (cube.DIMS, lazy)})
