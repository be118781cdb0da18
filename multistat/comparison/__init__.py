"""The batch driver: every pair x metric x dataset x test in one call, one tidy table.

For each dataset, metrics that share the same set of scored instances form a group (a
:class:`~multistat.significance.Slab`); every requested test runs through its registry
spec's batch entry (:meth:`~multistat.significance.TestSpec.run`), so this module names no
test. One resampling plan per ``(seed, dataset, kind, block)`` serves all systems, metrics
and pairs of the dataset (:mod:`multistat.engine`); closed-form tests and effect sizes
run vectorized over chunks of pairs sized by one memory budget (:mod:`multistat._budget`),
from per-system quantities where the statistic allows (means and the Gram matrix for t and
d_z); the p-values are corrected over declared families (:mod:`multistat.correct`).

Length (about 870 lines): `compare`, its per-system companions (`system_scores`,
`system_bootstrap`, `system_distributions`) and the run metadata share one walk
over datasets and metric groups (`_Dataset`, `_walk`);
the table-building helpers already live in :mod:`multistat._table`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from multistat import __version__, _table, cube
from multistat import engine as eng
from multistat._budget import Budget
from multistat._centre import centred_means, levels, metric_centres
from multistat._cluster import dataset_codes, group_codes
from multistat._cost import check_cost, study_cost
from multistat._progress import Progress as _Progress
from multistat._progress import _Null as _NoProgress
from multistat.significance._proportion import (
    BINARY_INTERVALS,
    METHOD_NAMES,
    binomial_interval,
    counts_of,
)
from multistat._table import Coded as _Coded
from multistat._table import final_columns as _final_columns
from multistat._table import join_notes as _join_notes
from multistat._table import labels as _labels
from multistat._typing import DEFAULT_N_RESAMPLES
from multistat._validation import check_choice, check_int, check_probability, check_seed
from multistat.comparison import _holes, equivalence, stepdown
from multistat.comparison._groups import (
    EFFECT_COLUMNS,
    EFFECT_SE_COLUMNS,
    mde,
    mde_multiplier,
    run_group,
    test_contexts,
)
from multistat.corpus import get_corpus_metric
from multistat.correct import adjust, adjust_groups
from multistat.pfloor import floor_notes
from multistat.errors import (
    ParameterError,
    ResamplingFloorWarning,
    SkippedTestWarning,
    TestNotApplicableError,
    UnknownSystemError,
    show,
)
from multistat.request import DEFAULT_TESTS, STEPDOWN_CORRECTIONS, RunRequest, build_request
from multistat.significance import _holes as _holes_data
from multistat.significance._batch import Slab, accepted_keywords, background

__all__ = ["COLUMNS", "DEFAULT_TESTS", "compare", "run", "study_hash", "system_distributions",
           "system_scores"]

DEFAULT_FAMILY_COLUMNS = ("dataset", "metric", "test")  # correct.DEFAULT_FAMILY
COLUMNS = ("dataset", "metric", "system_a", "system_b", "n", "statistic_kind", "estimate",
           "se", "ci_low", "ci_high", "confidence_level", "test", "alternative", "null_value",
           "statistic", "p_value", "family", "correction", "p_adjusted", "reject", "alpha",
           *EFFECT_COLUMNS, *EFFECT_SE_COLUMNS, "power", "mde", "n_resamples", "seed", "note",
           "higher_is_better", "score_a", "score_b")


def _check_study(study, req: RunRequest) -> None:
    """What the request asks of this study, before anything is computed: the systems its
    ``pairs`` name in every selected dataset, binary metrics for binary-only tests, the
    estimated work (:mod:`multistat._cost`) within ``max_cost``, and a resampling test
    without its own batch able to take the plan."""
    chosen, metric_names = cube.select(study, datasets=req.datasets, metrics=req.metrics)
    binary_only = [s.name for s in req.specs if s.binary_only]
    for name, ds in chosen.items():
        try:
            cube.pair_indices(ds.system.values, req.pairs)
        except UnknownSystemError as exc:
            raise UnknownSystemError(f"dataset {name!r}: {exc}") from None
        for t in binary_only:
            for m, kind in zip(ds.metric.values, ds.kind.values):
                # a corpus metric's rows are NaN with a note (no per-instance 0/1 scores)
                if ((metric_names is None or str(m) in metric_names)
                        and kind not in ("binary", "corpus")):
                    raise TestNotApplicableError(
                        f"{t} needs a binary (0/1) metric; metric {show(m)} of dataset "
                        f"{show(name)} is {show(kind)}: choose binary metrics with "
                        f"`metrics` or drop {t} from `tests`")
    if req.max_cost is not None:

        check_cost(study_cost(study, tests=req.tests, n_resamples=req.n_resamples,
                              statistic=req.statistic, pairs=req.pairs,
                              metrics=req.metrics, datasets=req.datasets),
                   req.max_cost, option="max_cost=")
    for spec in req.specs:
        _check_resampling_signature(spec)


class _Dataset:
    """One dataset of a study, as every statistic walks it: instances in canonical order
    (sorted by label, so resampling plans, which are tied to instance positions, do not
    depend on the order of the input rows), split into metric groups.

    ``ds`` holds the variables other than the scores in canonical order; ``score`` is
    the study's own ``(S, M, n)`` array and ``order`` the canonical order of its
    instances, so the cube is gathered only where a group needs it
    (:meth:`canonical`, or lazily by :class:`~multistat.significance.Slab`). The
    gathered cube is ``score[..., order]``, the array (and memory layout) an xarray
    ``isel`` gives, on which every statistic has always run."""

    __slots__ = ("_canonical", "ds", "holes", "name", "order", "score", "sysnames")

    def __init__(self, name, ds):
        if not all(getattr(v, "_in_memory", False) for v in ds.variables.values()):
            ds = ds.compute()  # dask-backed or lazily read variables: loaded once, here
        self.order = _label_order(ds)
        self.score = np.asarray(ds[cube.SCORE].values)
        # read with missing="keep": instances only some systems have
        self.holes = _holes_data.has_holes(ds, self.score)
        self.name = name
        self.ds = ds.drop_vars(cube.SCORE).isel(instance=self.order)
        self.sysnames = self.ds.system.values.astype(str)
        self._canonical = None

    def canonical(self) -> np.ndarray:
        """The scores in canonical order ``(S, M, n)`` (gathered once)."""
        if self._canonical is None:
            self._canonical = self.score[..., self.order]
        return self._canonical

    def groups(self, metrics=None):
        """``(kind, metric indices, valid-instance mask)``: mean/binary metrics sharing a
        mask (canonical order) form one group; each corpus metric is its own group.
        ``metrics``: keep only these names (groups left empty are skipped)."""
        first = self.score[0]
        keyed: dict = {}
        out = []
        for m, kind in enumerate(self.ds.kind.values):
            valid = ~np.isnan(first[m])[self.order]
            if self.holes:  # any system's instances, the whole pattern as key
                valid, key = _holes_data.presence_key(self.score[:, m], self.order)
            if kind == "corpus":
                out.append(("corpus", [m], valid))
                continue
            key = key if self.holes else valid.tobytes()
            if key not in keyed:
                keyed[key] = ("mean", [], valid)
                out.append(keyed[key])
            keyed[key][1].append(m)
        for kind, ms, valid in out:
            if metrics is not None:
                ms = [m for m in ms if str(self.ds.metric.values[m]) in metrics]
                if not ms:
                    continue
            yield kind, ms, valid

    def group_scores(self, ms, valid) -> np.ndarray:
        """The group's ``(S, len(ms), n_valid)`` scores in canonical order (a copy)."""
        return self.canonical()[:, ms][:, :, valid]


def _label_strings(ds, dim) -> list:
    """The labels of ``dim`` as Python strings: from a pandas ``str`` index directly
    (the same strings, without converting 10^4 labels to a numpy array first: ~1 ms of
    the hash thread holding the GIL), else ``str()`` of each (numpy strings: tolist)."""
    index = ds.indexes.get(dim)
    if index is not None and index.dtype == "str":
        return index.tolist()
    labels = ds[dim].values
    return labels.tolist() if labels.dtype.kind == "U" else [str(v) for v in labels]


def _label_order(ds) -> np.ndarray:
    """The canonical instance order: labels sorted as strings (stable). A pandas ``str``
    index sorts itself (code-point order, as numpy's unicode sort) without the 1-2 ms
    conversion to a numpy array that ``ds.instance.values`` makes at 10^4 labels."""
    index = ds.indexes.get("instance")
    if index is not None and index.dtype == "str":
        return np.asarray(index.argsort(kind="stable"), dtype=np.intp)
    return np.argsort(ds.instance.values.astype(str), kind="stable")


def _walk(all_ds):
    """The selected datasets (:func:`multistat.cube.select`) as :class:`_Dataset`, built
    one at a time as the walk reaches them: the one walk over datasets and metric groups
    (:meth:`_Dataset.groups`) of :func:`compare`, :func:`system_scores` and
    :func:`system_distributions`."""
    for name, ds in all_ds.items():
        yield _Dataset(name, ds)


def _group_bootstrap(d, kind, ms, valid, **run):
    """:func:`system_bootstrap` of one group of a :class:`_Dataset`: ``(observed (S, M),
    distribution (B, S, M), n)``."""
    X = d.group_scores(ms, valid)
    n = X.shape[-1]
    if d.holes:  # each system over its own instances
        cs = _corpus_stats(d.ds, ms, valid) if kind == "corpus" else None
        return _holes.group_bootstrap(X, cs and (cs[0].fn, cs[1]), dataset=d.name, **run)
    return (*system_bootstrap(d.ds, kind, ms, valid, X, n=n, dataset=d.name, **run), n)


def _pair_arrays(systems, pairs) -> tuple[np.ndarray, np.ndarray]:
    """``(ia, ib)`` of :func:`multistat.cube.pair_indices` as index arrays; ``"all"``
    without a Python tuple per pair (tens of thousands of them at leaderboard scale, and
    they trigger full garbage collections)."""
    if isinstance(pairs, str) and pairs == "all":
        ia, ib = np.triu_indices(len(systems), 1)  # (0, 1), (0, 2), ..., as pair_indices
        return ia.astype(np.intp), ib.astype(np.intp)
    idx = cube.pair_indices(systems, pairs)
    return (np.array([a for a, _ in idx], dtype=np.intp),
            np.array([b for _, b in idx], dtype=np.intp))


class _FromRequest:
    """The default of ``compare``'s common keywords: the request's value."""

    def __repr__(self) -> str:
        return "<from request>"


FROM_REQUEST = _FromRequest()


def compare(study, request=None, *, tests=FROM_REQUEST, pairs=FROM_REQUEST,
            metrics=FROM_REQUEST, datasets=FROM_REQUEST, alpha=FROM_REQUEST,
            n_resamples=FROM_REQUEST, seed=FROM_REQUEST, correction=FROM_REQUEST,
            return_systems=False, **overrides):
    """Paired tests for every pair of systems, metric and dataset of a study.

    ``compare`` runs in three stages: the options are validated once into a
    :class:`~multistat.request.RunRequest` (``request``, with the keywords given here
    applied over it), then the walk (dataset -> metric group -> test, the equivalence
    tests included) and the assembly (the tidy table, corrected over its families).
    Every keyword below is a field of the request: give it here, in ``request``, or both
    (the keyword wins).

    Parameters
    ----------
    study : xarray.DataTree or path
        A study (``multistat.load``, ``multistat.evaluation_units``,
        ``multistat.load_translations``) or a path ``multistat.load`` reads.
    request : RunRequest, optional
        A :class:`~multistat.request.RunRequest` (default: every default below)
    tests : tuple of str, optional
        Registry names: ``"t"``, ``"wilcoxon"``, ``"sign"``, ``"bootstrap"``,
        ``"permutation"``, ``"mcnemar"`` (binary metrics only), ``"aso"`` (Almost
        Stochastic Order of the per-run scores when the study has runs, else of the
        instance scores; ``statistic`` = eps_min of a over b, extra columns ``eps_min``,
        ``eps_min_reverse``, ``violation_ratio``, no p-value: :func:`multistat.aso`), or
        any test added with :func:`multistat.significance.register` (it runs with the
        options given here). With runs (``read_scores(..., run_col=...)``) every other
        test uses the run-averaged scores: the ``n_runs`` column and the ``note`` say
        so.
    pairs : str or list of tuple, optional
        ``"all"`` (every pair once), ``"baseline:<system>"`` or a list of ``(a, b)``.
    metrics, datasets : list of str, optional
        Restrict to these names.
    alpha : float, optional
        Level for ``reject`` (after correction) and the default interval level.
    n_resamples : int, optional
        Resamples for bootstrap and permutation.
    seed : int, optional
        Non-negative int, 0 included; the same seed gives bit-identical tables whatever
        ``scheduler``, ``n_chunks`` and ``memory_limit``.
    correction : str or None, optional
        Statsmodels ``multipletests`` method, ``"westfall-young"`` (resampling step-down
        over the shared plan, :mod:`multistat.comparison.stepdown`: max-T for means,
        min-P for corpus metrics; ``"westfall-young-maxT"``/``"-minP"`` to choose; only
        with the bootstrap and permutation tests — closed-form tests are refused, as
        they have no joint null on a shared plan), or ``"none"``/None.
    return_systems : bool, optional
        Also return the per-system table (score with bootstrap percentile interval),
        used by leaderboards; computed only when asked for (not a request field: what to
        return, not how to test)
    **overrides
        Any other field of :class:`~multistat.request.RunRequest`:

        ``statistic``
            ``"mean"`` or ``"median"`` — what the bootstrap and permutation tests
            compare (t is always about the mean; sign about the median; Wilcoxon about
            the pseudo-median); corpus metrics always compare the corpus metric.
        ``alternative``
            ``"two-sided" | "less" | "greater"`` for theta(a - b) vs ``null_value``.
        ``null_value``
            Delta, the margin of H0 (metric units)
        ``confidence_level``
            Interval level (default ``1 - alpha``)
        ``family``
            None (dataset x metric x test), ``"all"``, or column name(s)
        ``scheduler``
            ``"threads"``, ``"processes"``, ``"synchronous"``, a dask.distributed
            address (``"tcp://..."``) or a ``distributed.Client``.
        ``n_chunks``
            Dask tasks per resampling run (default one per block of 1000 resamples; an
            integer >= 1)
        ``max_cost``
            Stop before starting when the estimated work
            (:func:`multistat._cost.study_cost`, in elementary operations) exceeds this;
            default 1e13 (about two days of bootstrap on one core); None or inf: no
            limit.
        ``ci_method``
            Bootstrap interval: ``"basic"`` (default; the inversion of the shifted
            p-value, so ``reject`` and the interval agree), ``"bca"``, ``"percentile"``,
            ``"studentized"``.
        ``bootstrap_pvalue``
            ``"shifted"`` (correct, default), ``"berg-kirkpatrick"`` or ``"sacrebleu"``
            (compatibility; warns)
        ``effect_sizes``
            Add Cohen's d_z, Hedges' g, Wilcoxon r, Hodges-Lehmann with intervals.
        ``power``
            False; True (power of the paired t test to detect the *observed* mean
            difference — retrospective, says so in ``note``); or a number: the
            difference in metric units the test should detect (column ``power``)
        ``progress``
            Show a progress bar (advances per slab of pairs and per resampling block,
            with the time left); runs estimated over about 5 minutes first print what
            will be computed and the estimate.
        ``memory_limit``
            Working-memory budget: bytes or a size such as ``"2GiB"``; default a safe
            share of physical memory (:func:`multistat._budget.default_limit`). Slabs of
            pairs and of resampling-plan rows are sized by it; results are bit-identical
            for every limit when the BLAS's products do not depend on their shape
            (OpenBLAS's Haswell kernels: ``OPENBLAS_CORETYPE=Haswell`` in the
            environment before Python starts, as the command line does;
            :mod:`multistat._blas`)
        ``test_options``
            ``{test: {option: value}}``, options of one test, e.g. ``{"wilcoxon":
            {"zero_method": "pratt", "correction": True, "method": "approx"}}`` or
            ``{"bootstrap": {"ci_method": "percentile"}}``; recorded in the metadata.
        ``mde_power``
            The power at which column ``mde`` is computed (default 0.8)
        ``equivalence_margin``
            Delta > 0 (metric units): add TOST columns ``p_equivalence``,
            ``p_equivalence_adjusted`` and ``equivalent`` (tied within +-delta after the
            correction; :mod:`multistat.comparison.equivalence`) for the tests whose
            spec has ``equivalence=True`` (t, Wilcoxon, bootstrap, permutation): their
            two one-sided tests run in the same walk, on the same slabs, chunks of pairs
            and plans, with the test's options.
        ``cluster``
            None, or ``"group"``: the bootstrap and permutation tests resample whole
            groups of instances (documents; the study's ``group`` coordinate from
            ``read_scores(..., group_col=...)``): the cluster bootstrap, and sign flips
            of whole groups (:mod:`multistat._cluster`). Closed-form tests still treat
            instances as independent (their ``note`` says so); for them make one unit
            per group with ``evaluation_units(study, by="group")``.

    Returns
    -------
    pandas.DataFrame
        One row per dataset x metric x pair x test with the columns :data:`COLUMNS`:
        ``estimate`` is theta(a - b) in metric units (``statistic_kind`` says which theta);
        ``ci_low/ci_high`` its interval at ``confidence_level``; ``statistic`` the test's
        own statistic; ``p_value`` raw, ``p_adjusted``/``reject`` after ``correction``
        within ``family``; ``se`` the standard error of ``estimate`` where the test
        defines one (t: sd(a - b)/sqrt(n), the interval's half-width over its
        t-quantile; bootstrap: the standard deviation of the bootstrap distribution, also
        for corpus metrics and medians), NaN for the others (rank, sign, permutation,
        McNemar tests) - the input of :func:`multistat.meta_analysis`; effect columns
        (NaN for corpus metrics, with a note), with ``cohens_d_se``/``hedges_g_se``
        their large-sample standard errors (:func:`multistat.effect.cohens_dz_se`);
        ``mde`` the minimum detectable difference: the smallest true difference in metric
        units the test would detect with probability ``mde_power`` at level ``alpha``
        (uncorrected) with this ``n`` and the observed variance — for closed-form tests
        the paired-t closed form ``d_z(n, alpha, power) * sd(a - b)``
        (:func:`multistat.power.analytic.mde_paired_t`), for resampling tests the same
        multiplier times ``sqrt(n)`` times the resampled standard error (standard
        deviation of the bootstrap distribution, or of the permutation null), which also
        covers corpus metrics; ``score_a/score_b`` each system's mean (or corpus) score;
        ``note`` why a value is NaN or how it was computed. ``table.attrs["multistat"]``
        holds the run metadata.

    Notes
    -----
    A study read with ``missing="keep"`` whose systems lack some instances (an incomplete
    design) runs every paired test on each pair's joint instances (``n`` per row; equal
    to the test on the complete study restricted to them, resampling plans included)
    and the unpaired and mixed tests on each system's own scores
    (:mod:`multistat.significance._holes`); Westfall-Young corrections are refused.
    """
    given = {k: v for k, v in (("tests", tests), ("pairs", pairs), ("metrics", metrics),
                               ("datasets", datasets), ("alpha", alpha),
                               ("n_resamples", n_resamples), ("seed", seed),
                               ("correction", correction)) if v is not FROM_REQUEST}
    req = build_request(request, **given, **overrides)
    out = run(study, req, return_systems=return_systems)
    table = out[0] if return_systems else out
    notes = []
    for test in req.tests:  # the rule rank follows: say when a family cannot reject
        notes += floor_notes(table[table["test"] == test], test=test,
                             correction=req.correction, alpha=req.alpha,
                             n_resamples=req.n_resamples)
    table.attrs["multistat"]["floor_notes"] = notes
    for note in notes:
        warnings.warn(note, ResamplingFloorWarning, stacklevel=2)
    skipped = table.attrs["multistat"]["skipped_tests"]
    if skipped:  # one line for all of them
        where = next(iter(skipped.values())).rsplit("skipped on ", 1)[1]
        warnings.warn(f"{', '.join(skipped)}: default tests that cannot test a corpus "
                      f"metric (they need per-instance scores), skipped on {where}; name "
                      "them in `tests` to run them anyway (their rows are then NaN with a "
                      "note)", SkippedTestWarning, stacklevel=2)
    return out


def run(study, req: RunRequest, *, return_systems: bool = False, resampled=None):
    """:func:`compare` of a validated request: the walk and the assembly.

    ``resampled``: a dict filled with every resampling test's per-system arrays on its
    shared plan (:attr:`~multistat.significance.BatchResult.resampled`,
    ``{(dataset, test, metric): stepdown.GroupArrays}``, :func:`stepdown.metric_nulls`):
    the arrays the Westfall-Young step-down forms its joint null from, and from which
    :func:`multistat.rank` takes the bootstrap's per-system scores instead of redrawing
    the plan. Kept until this returns: ``(B, S, M)`` per metric group and test, nothing
    per pair.
    """
    # lazily: a study larger than memory (a Zarr store) is streamed chunk by chunk
    from multistat.io._zarr import ZarrStudy, is_zarr_path, open_zarr

    if not isinstance(study, ZarrStudy) and not hasattr(study, "children") and is_zarr_path(
            study):
        study = open_zarr(study)
    if isinstance(study, ZarrStudy):
        if return_systems:
            raise ParameterError("per-system scores (`return_systems`, --systems-out) are "
                                 "not streamed on a .zarr study; use `multistat rank`")
        # lazily: the streamed walk
        from multistat.comparison._streamed import run_zarr

        return run_zarr(study, req, walk=(_pair_arrays, _block, _assemble),
                        resampled=resampled)
    if not hasattr(study, "children"):
        study = cube.load(study)
    _check_study(study, req)
    walk = _walk_request(study, req, resampled, want_systems=return_systems)
    table = _assemble(walk.parts, walk.families, req, walk.kept, walk.equivalence)
    table.attrs["multistat"] = _metadata(study, req, walk.input_hash)
    table.attrs["multistat"]["skipped_tests"] = {
        test: (f"a default test that cannot test a corpus metric (it needs per-instance "
               f"scores); skipped on {', '.join(where)}")
        for test, where in walk.skipped.items()}
    if return_systems:
        systems = (pd.concat(walk.systems, ignore_index=True) if walk.systems else
                   system_scores(study, n_resamples=req.n_resamples, seed=req.seed,
                                 confidence_level=req.level, scheduler=req.scheduler,
                                 metrics=req.metrics, datasets=req.datasets,
                                 memory_limit=req.budget))
        return table, systems
    return table


@dataclass
class _Walked:
    """What the walk gives the assembly: the table's blocks (one per dataset x metric group
    x test), their default families, the per-system resampled arrays kept for the
    step-down, the equivalence p-values per block (or None), the per-system rows."""

    parts: list
    families: list
    kept: dict
    equivalence: list | None
    systems: list
    input_hash: Any
    #: default tests skipped on corpus metrics: test -> ["dataset / metric", ...]
    skipped: dict = dataclasses.field(default_factory=dict)


def _walk_request(study, req: RunRequest, resampled, want_systems: bool) -> _Walked:
    """Dataset -> metric group -> test: every block of the table."""
    specs = req.specs
    base_ctx, ctxs = test_contexts(req)
    all_ds, metrics = cube.select(study, datasets=req.datasets, metrics=req.metrics)
    input_hash = _HashLater(study)  # started after the first group's moments
    bar = _Progress.start(req.progress, all_ds, specs, metrics, req.pairs, req.n_resamples,
                          req.effect_sizes, req.budget)
    walked = _Walked([], [], {} if resampled is None else resampled,
                     [] if req.equivalence_margin is not None else None, [], input_hash)
    # the resampling tests' per-system arrays of every metric group, for the Westfall-Young
    # step-down and the caller (rank): (B, S, M) per group and test, nothing per pair
    keep = req.stepdown or resampled is not None
    for d in _walk(all_ds):
        name, ds, sysnames = d.name, d.ds, d.sysnames
        try:
            ia, ib = _pair_arrays(ds.system.values, req.pairs)
        except UnknownSystemError as exc:
            raise UnknownSystemError(f"dataset {name!r}: {exc}") from None
        sys_labels = _labels(sysnames)
        codes = None
        if req.cluster is not None:

            codes = dataset_codes(ds, name)
        n_runs = int(ds.sizes.get("run", 1)) if cube.RUN_SCORE in ds else 1
        for kind, ms, valid in d.groups(metrics):
            slab = _slab(d, kind, ms, valid, codes)
            # the mde multiplier (a root solve, ~10 ms for a new n) runs while the tests
            # do; it emits no warnings (tested), so none can land in a test's notes
            mult_later = background(mde_multiplier, slab.n, req.alpha, req.mde_power,
                                    req.alternative, name="multistat-mde")
            sys_obs = slab.observed()
            input_hash.start()
            base = {
                "dataset": name,
                "metric": _Coded(_labels(slab.metrics), np.tile(np.arange(len(ms)), len(ia))),
                "system_a": _Coded(sys_labels, np.repeat(ia, len(ms))),
                "system_b": _Coded(sys_labels, np.repeat(ib, len(ms))),
                "higher_is_better": np.tile(ds.higher_is_better.values[ms].astype(bool),
                                            len(ia)),
                "score_a": sys_obs[ia].ravel(), "score_b": sys_obs[ib].ravel(),
            }
            group_specs = specs
            if slab.is_corpus and req.tests == DEFAULT_TESTS:
                # the default tests that cannot test a corpus metric are skipped (and
                # said so), not run into rows of NaN; a test asked for by name still runs
                group_specs = [s for s in specs if s.supports_corpus]
                for s in specs:
                    if not s.supports_corpus:
                        walked.skipped.setdefault(s.name, []).extend(
                            f"{name} / {m}" for m in slab.metrics)
            if slab.present is None:
                results, extra = run_group(slab, ia, ib, group_specs, ctxs, base_ctx, bar,
                                           req.effect_sizes, req.power, req.budget)
            else:  # paired tests on each pair's joint instances
                results, extra = _holes.run_group(
                    slab, ia, ib, group_specs, ctxs, base_ctx, bar, req.effect_sizes,
                    req.power, req.budget, refuse_stepdown=req.stepdown,
                    mde_design=(req.alpha, req.mde_power, req.alternative))
            mult = mult_later()
            have_systems = False
            for spec in group_specs:
                res = results[spec.name]
                if keep:  # no second pass over the plan, for the step-down or rank
                    walked.kept.update(stepdown.metric_nulls(spec.name, res, slab))
                if want_systems and res.systems is not None and not have_systems:
                    have_systems = True
                    walked.systems.append(_system_rows(
                        name, ds, ms, sysnames, sys_obs, res.systems, req.level, slab.n,
                        binary=slab.scores if _has_binary(ds, kind, ms) and n_runs == 1
                        else None))
                walked.parts.append(_block(spec, res, base, extra, ctxs[spec.name], slab,
                                           mult, n_runs, req.cluster, len(ia) * len(ms)))
                # the block's default families (dataset x metric x test): one per metric
                walked.families.append(
                    None if {"dataset", "metric"} & set(res.arrays) else
                    ((name, slab.metrics, spec.name), len(ia)))
                margin = req.equivalence_margin
                if walked.equivalence is not None and margin is not None:  # TOST in the walk
                    walked.equivalence.append(equivalence.block_pvalues(
                        spec, slab, ia, ib, ctxs[spec.name], margin,
                        run=None if slab.present is None else _holes_side(slab, base_ctx)))
        bar.finish(name)
    bar.close()
    if not walked.parts:
        raise ParameterError("nothing to compare: no dataset/metric left after the "
                             "`datasets`/`metrics` selection")
    return walked


def _holes_side(slab, base_ctx):
    """How a TOST side runs on a slab with holes: every pair on its joint instances, as
    the main rows (:func:`multistat.comparison._holes.run_group`)."""
    def run(spec, ia, ib, ctx):
        results, _ = _holes.run_group(
            slab, ia, ib, [spec], {spec.name: ctx}, base_ctx, _NoProgress(), False, False,
            ctx.budget)
        return results[spec.name]
    return run


def _block(spec, res, base, extra, ctx, slab, mult, n_runs, cluster, n_rows) -> dict:
    """One test's columns on one metric group (the rows of every pair x metric)."""
    rows = dict(base)
    arrays = dict(res.arrays)
    se = arrays.pop("se", None)  # standard error of the estimate, if any
    null_sd = arrays.pop("null_sd", None)  # a permutation null's sd
    rows.update({k: _table.flat(v) for k, v in arrays.items()})
    rows["se"] = np.nan if se is None else _table.flat(se).astype(float)
    rows.update(test=spec.name, alternative=ctx.alternative, null_value=ctx.null_value,
                confidence_level=ctx.confidence_level)
    if "n_resamples" not in arrays:
        rows["n_resamples"] = 0
    if "seed" not in arrays:
        rows["seed"] = -1
    rows.update({k: v for k, v in extra.items() if k not in ("_note", "_sd")})
    if "mde" not in arrays:  # (a slab with holes: per row)
        rows["mde"] = mde(spec, slab, mult, extra.get("_sd"),
                           null_sd if null_sd is not None else se if spec.resampling else None)
    if extra.get("_note") is not None:
        rows["note"] = _join_notes(rows["note"], extra["_note"])
    rows["n_runs"] = n_runs
    rows["cluster"] = cluster or ""
    run_note = _runs_cluster_note(spec, n_runs, slab)
    if run_note:
        rows["note"] = _join_notes(rows["note"], run_note)
    return _table.columns(rows, n_rows)


def _assemble(parts, families, req: RunRequest, kept, equivalent) -> pd.DataFrame:
    """The table from its blocks (one per dataset x metric group x test) with the
    corrected p-values and, when the request has an equivalence margin, the TOST columns
    from ``equivalent`` (:func:`multistat.comparison.equivalence.block_pvalues` per block), in the
    final column order.

    With the default families (dataset x metric x test) and a ``multipletests``
    correction the families are known from the blocks - each block's metrics, one family
    each - so the columns are concatenated once and corrected as arrays
    (:func:`multistat.correct.adjust_groups`), and the frame is built once; otherwise the
    blocks' frames are concatenated and corrected by :func:`multistat.correct.adjust` /
    :func:`multistat.comparison.stepdown.adjust_table`. Both give the same table."""
    table = _corrected(parts, families, req.correction, req.family, req.alpha, kept,
                       plain=equivalent is None)
    if equivalent is not None:
        table = equivalence.add_columns(table, equivalent, req)
        table = _final_columns(table, COLUMNS)
    return table


def _corrected(parts, families, correction, family, alpha, kept, plain) -> pd.DataFrame:
    """The blocks' table with ``p_adjusted``/``reject`` (final column order when
    ``plain``)."""
    cols = _table.concat(parts)
    added = ("family", "correction", "p_adjusted", "reject", "alpha")
    if (cols is None or family is not None or correction in STEPDOWN_CORRECTIONS
            or None in families or any(c in cols for c in added)
            or not all(isinstance(cols.get(c), pd.api.extensions.ExtensionArray)
                       for c in DEFAULT_FAMILY_COLUMNS)):
        table = (pd.DataFrame(cols) if cols is not None else
                 pd.concat([pd.DataFrame(p) for p in parts], ignore_index=True))
        if correction in STEPDOWN_CORRECTIONS:  # Westfall-Young over the shared plan
            table = stepdown.adjust_table(table, kept, method=correction, alpha=alpha,
                                          family=family)
        else:
            table = adjust(table, method=correction, family=family, alpha=alpha)
        return _final_columns(table, COLUMNS) if plain else table
    # family number per row: block offset + metric code (rows are pair-major, metrics
    # tiled); its readable key is adjust's "dataset | metric | test"
    group = np.concatenate([off + np.tile(np.arange(len(ms)), P) for off, ((_, ms, _), P)
                            in zip(np.cumsum([0] + [len(f[0][1]) for f in families]),
                                   families)])
    keys = _labels([f"{d} | {m} | {t}" for (d, ms, t), _ in families for m in ms])
    p_adj, reject = adjust_groups(np.asarray(cols["p_value"], dtype=float), group,
                                  method=correction, alpha=alpha)
    n_rows = len(group)
    cols.update(_table.columns({"family": _Coded(keys, group),
                                "correction": "none" if correction is None else correction,
                                "p_adjusted": p_adj, "reject": reject, "alpha": alpha},
                               n_rows))
    return pd.DataFrame(_table.final_order(cols, COLUMNS, n_rows) if plain else cols)


def _check_resampling_signature(spec) -> None:
    """A registered resampling test without its own batch must take ``seed`` and
    ``n_resamples``, or compare could not record the plan it used."""
    if not spec.resampling or spec.batch is not None:
        return
    names = accepted_keywords(spec.func)
    missing = [k for k in ("seed", "n_resamples") if names is not None and k not in names]
    if missing:
        raise ParameterError(
            f"registered resampling test {spec.name!r} does not accept "
            f"{' or '.join(repr(m) for m in missing)}; compare passes the plan it was given "
            "and records it, so the function must take them (or give the spec a `batch`)")


def _runs_cluster_note(spec, n_runs, slab) -> str:
    """What was done with runs and groups, for the ``note`` column."""
    notes = []
    if n_runs > 1 and not spec.uses_runs:
        notes.append(f"scores averaged over {n_runs} runs")
    if slab.clusters is not None:
        G = int(slab.clusters.max()) + 1
        if not spec.cluster_resampling:
            notes.append(f"{spec.name}: instances treated as independent despite "
                         f"cluster='group' ({G} groups); see the bootstrap/permutation "
                         "rows or units by group")
    return "; ".join(notes)


def _slab(d, kind, ms, valid, codes=None) -> Slab:
    ds, name, order = d.ds, d.name, None
    if valid.all() and list(ms) == list(range(d.score.shape[1])):
        X = d.score.view()  # the study's own array, read-only, gathered when needed
        X.flags.writeable = False
        order = d.order
    else:
        X = d.canonical()[:, ms]  # (S, M, n), a copy
        if not valid.all():
            X = X[:, :, valid]
    corpus = None
    kinds = tuple(str(ds.kind.values[m]) for m in ms)
    clusters = None
    if codes is not None:

        clusters = group_codes(codes[valid])  # renumbered over the scored instances
    runs = None
    if cube.RUN_SCORE in ds:
        runs = np.asarray(ds[cube.RUN_SCORE].values)[:, ms][:, :, valid]  # (S, M, n, R)
    ratings = None
    if cube.RATING in ds:
        ratings = np.asarray(ds[cube.RATING].values)[:, ms][:, :, valid]  # (S, M, n, raters)
    slab = Slab(X, dataset=name, metrics=tuple(ds.metric.values[ms].astype(str)),
                systems=tuple(d.sysnames), metric_kinds=kinds, clusters=clusters,
                run_scores=runs, ratings=ratings, order=order,
                higher_is_better=tuple(ds.higher_is_better.values[ms].astype(bool)))
    if kind != "corpus" and X.size and np.max(slab.absmax()) > 8.9e307:
        # some a - b may overflow: the largest difference over systems tells
        from multistat.significance._base import overflow_check

        overflow_check(X.max(0), X.min(0), where=f" in dataset {name!r}")
    if kind == "corpus":
        cm, stats = _corpus_stats(ds, ms, valid)
        corpus = (cm.fn, stats)
        slab.corpus = corpus
        slab.corpus_observed = cm.fn(stats.sum(1))[:, None]
    if d.holes:  # slab.present, the instances each system has
        _holes_data.mark(slab)
    return slab


def _has_binary(ds, kind, ms) -> bool:
    """A per-instance metric group with a binary (0/1) metric in it."""
    return kind != "corpus" and bool(np.any(np.asarray(ds.kind.values[ms]) == "binary"))


def _system_rows(name, ds, ms, sysnames, sys_obs, sysdist, confidence_level, n,
                 binary=None, binary_interval="wilson"):
    """The per-system table of one metric group: bootstrap percentile intervals, and for
    a binary metric whose scores are 0/1 counts (``binary``: the group's ``(S, M, n)``
    scores, NaN where not scored) the ``binary_interval`` of its count
    (:mod:`multistat.significance._proportion`), which keeps its coverage on few questions."""
    lo_q, hi_q = (1 - confidence_level) / 2, 1 - (1 - confidence_level) / 2
    lo, hi = np.quantile(sysdist, [lo_q, hi_q], axis=0)  # (S, M)
    S, M = sys_obs.shape
    method = np.full((S, M), METHOD_NAMES["bootstrap"], dtype=object)
    if binary is not None and binary_interval != "bootstrap":
        k, n_s, ok = counts_of(binary)
        ok &= (np.asarray(ds.kind.values[ms]) == "binary")[None, :]
        if ok.any():
            blo, bhi = binomial_interval(np.where(ok, k, 0.0), np.maximum(n_s, 1),
                                         confidence_level, binary_interval)
            lo, hi = np.where(ok, blo, lo), np.where(ok, bhi, hi)
            method[ok] = METHOD_NAMES[binary_interval]
    return pd.DataFrame({
        "dataset": name, "metric": np.tile(ds.metric.values[ms].astype(str), S),
        "system": np.repeat(sysnames, M), "score": sys_obs.ravel(),
        "ci_low": lo.ravel(), "ci_high": hi.ravel(), "confidence_level": confidence_level,
        "n": n, "higher_is_better": np.tile(ds.higher_is_better.values[ms].astype(bool), S),
        "n_resamples": sysdist.shape[0], "ci_method": method.ravel()})


def _corpus_stats(ds, ms, valid):
    """``(corpus metric, statistics (S, n, K))`` of a corpus metric's group."""

    cm = get_corpus_metric(str(ds.corpus_fn.values[ms[0]]))
    return cm, np.asarray(ds[cube.STATS].values)[:, ms[0]][:, valid][..., :cm.n_stats]


def system_observed(ds, kind, ms, valid, X) -> np.ndarray:
    """Each system's observed score ``(S, M)`` for one metric group: the mean of ``X``,
    or the corpus metric of the summed statistics (``X`` unused)."""
    if kind == "corpus":
        cm, stats = _corpus_stats(ds, ms, valid)
        return cm.fn(stats.sum(1))[:, None]

    k = metric_centres(X)  # mean(x - k) + k, as Slab.means
    return levels(centred_means(X, k), k)


def system_bootstrap(ds, kind, ms, valid, X, **run):
    """Each system's observed score and its bootstrap distribution for one metric group.

    ``X`` ``(S, M, n)`` holds the group's scores on its valid instances; ``run`` goes to
    :func:`multistat.engine.resample` (``n``, ``n_resamples``, ``seed``, ``dataset``,
    scheduler options). Mean metrics: resampled means (one BLAS product per block);
    corpus metrics: the corpus metric of resampled summed statistics. Returns
    ``(observed (S, M), distribution (B, S, M))`` on the shared plan.
    """

    if kind == "corpus":
        cm, stats = _corpus_stats(ds, ms, valid)
        dist = cm.fn(eng.resample("bootstrap", eng.corpus_sums_kernel, stats,
                                  **run))[..., None]
        return cm.fn(stats.sum(1))[:, None], dist
    # the resampled means of x - k, plus k: as compare's bootstrap test
    from multistat._centre import levels, metric_centres

    k = metric_centres(X)
    dist = eng.resample("bootstrap", functools.partial(eng.mean_kernel, centre=k), X, **run)
    return system_observed(ds, kind, ms, valid, X), levels(dist, k)


def system_distributions(study, *, n_resamples=DEFAULT_N_RESAMPLES, seed=0, metrics=None,
                         datasets=None, scheduler="threads", n_chunks=None, known=None):
    """Each system's bootstrap distribution, per metric group: the seam a leaderboard
    uses for rank intervals.

    Yields ``(dataset, metric names, higher_is_better, observed (S, M), resampled
    (B, S, M), system names)`` per metric group, on the shared bootstrap plan (the same
    plan, instance order and grouping as :func:`multistat.compare` and
    :func:`multistat.system_scores`). ``known``: ``{(dataset, metric names): (B, S, M)}``
    already drawn (by ``compare``'s bootstrap test), reused instead of redrawn."""
    all_ds, metrics = cube.select(study, datasets=datasets, metrics=metrics)
    for d in _walk(all_ds):
        name, ds = d.name, d.ds
        for kind, ms, valid in d.groups(metrics):
            names = tuple(ds.metric.values[ms].astype(str))
            hib = ds.higher_is_better.values[ms].astype(bool)
            if known and (name, names) in known:
                X = None if kind == "corpus" else d.group_scores(ms, valid)
                yield (name, np.array(names), hib, system_observed(ds, kind, ms, valid, X),
                       known[(name, names)], d.sysnames)
                continue
            obs, dist, _ = _group_bootstrap(d, kind, ms, valid, n_resamples=n_resamples,
                                            seed=seed, scheduler=scheduler,
                                            n_chunks=n_chunks)
            yield (name, ds.metric.values[ms].astype(str),
                   ds.higher_is_better.values[ms].astype(bool), obs, dist, d.sysnames)


def system_scores(study, *, n_resamples=DEFAULT_N_RESAMPLES, seed=0, confidence_level=0.95,
                  scheduler="threads", metrics=None, datasets=None, memory_limit=None,
                  binary_interval="wilson") -> pd.DataFrame:
    """Each system's score (mean or corpus metric) with a confidence interval: the
    bootstrap percentile interval, or for a binary (0/1) metric the interval of its count.

    Uses the same plans as :func:`compare`'s bootstrap (same seed, same resamples).

    Parameters
    ----------
    study : xarray.DataTree or path
        A study or a path :func:`multistat.load` reads.
    n_resamples, seed : int, optional
        The bootstrap plan (as in :func:`compare`).
    confidence_level : float, optional
        Level of the intervals.
    scheduler, memory_limit : optional
        As in :func:`compare`.
    metrics, datasets : list of str, optional
        Restrict to these names.
    binary_interval : {"wilson", "exact", "bootstrap"}
        The interval of a binary (0/1) metric (per-instance 0/1 scores without runs;
        averaged runs are not counts and keep the bootstrap): Wilson (default),
        Clopper-Pearson (``"exact"``) or the percentile bootstrap. On few questions the
        percentile bootstrap of an accuracy undercovers and collapses to a point at 0 % or
        100 %; the binomial intervals keep their level (:mod:`multistat.significance._proportion`).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset``, ``metric``, ``system``, ``score``, ``ci_low``, ``ci_high``,
        ``confidence_level``, ``n``, ``higher_is_better``, ``n_resamples`` and
        ``ci_method`` (which interval each row has).
    """
    binary_interval = check_choice("binary_interval", binary_interval, BINARY_INTERVALS)
    if not hasattr(study, "children"):
        study = cube.load(study)
    confidence_level = check_probability("confidence_level", confidence_level)
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    seed = check_seed(seed)
    budget = Budget.of(memory_limit)
    parts = []
    all_ds, metrics = cube.select(study, datasets=datasets, metrics=metrics)
    for d in _walk(all_ds):
        for kind, ms, valid in d.groups(metrics):
            obs, dist, n = _group_bootstrap(d, kind, ms, valid, n_resamples=n_resamples,
                                            seed=seed, scheduler=scheduler, budget=budget)
            counted = (_has_binary(d.ds, kind, ms) and binary_interval != "bootstrap"
                       and cube.RUN_SCORE not in d.ds)
            parts.append(_system_rows(d.name, d.ds, ms, d.sysnames, obs, dist,
                                      confidence_level, n,
                                      binary=d.group_scores(ms, valid) if counted else None,
                                      binary_interval=binary_interval))
    return pd.concat(parts, ignore_index=True)


def study_hash(study) -> str:
    """SHA-256 of the study's scores (and statistics), for the run metadata."""
    h = hashlib.sha256()
    for name, ds in cube.datasets(study).items():
        h.update(name.encode())
        for var in (cube.SCORE, cube.STATS):
            if var in ds:
                # the buffer itself (tobytes() would copy the whole cube)
                buf = np.ascontiguousarray(np.asarray(ds[var].values))
                h.update(buf.data.cast("B") if buf.size else b"")
        for dim in ("system", "metric", "instance"):
            h.update("\x1f".join(_label_strings(ds, dim)).encode())
    return h.hexdigest()


class _HashLater:
    """:func:`study_hash` of a study, computed on a background thread once :meth:`start`
    is called, when every score array is already in memory (hashlib releases the GIL on
    large buffers, and nothing is materialised twice); otherwise (dask-backed or lazily
    loaded studies), or if never started, when called. ``compare`` starts it after the
    first group's per-system moments, so the hash (~16 ms for a 16 MB cube) fills the
    second core while the table is formed in Python, instead of competing with the two
    Gram threads."""

    __slots__ = ("_wait", "study")

    def __init__(self, study):
        self.study, self._wait = study, None

    def start(self) -> None:
        if self._wait is not None:
            return
        try:
            in_memory = all(getattr(ds[var].variable, "_in_memory", False)
                            for ds in cube.datasets(self.study).values()
                            for var in (cube.SCORE, cube.STATS) if var in ds)
        except Exception:  # noqa: BLE001 - an unusual study: hash on demand, as before
            in_memory = False
        self._wait = (background(study_hash, self.study, name="multistat-study-hash")
                      if in_memory else (lambda: study_hash(self.study)))

    def __call__(self) -> str:
        self.start()
        return self._wait()


def _metadata(study, req: RunRequest, input_sha256=None) -> dict:
    """The table's run metadata: the request, the input's hash, sacrebleu signatures."""

    meta = {"multistat_version": __version__, **req.metadata(),
            "input_sha256": input_sha256() if callable(input_sha256) else
            input_sha256 if input_sha256 is not None else study_hash(study),
            **_sacrebleu_signatures(study), "cluster": req.cluster or "none"}
    if req.equivalence_margin is not None:
        meta.update(equivalence_margin=req.equivalence_margin,
                    equivalence_correction="holm" if req.stepdown else
                    req.correction or "none")
    return meta


def _sacrebleu_signatures(study) -> dict:
    """``{"sacrebleu": {dataset: {metric: signature}}}`` for datasets built from sacrebleu
    metrics (the study keeps them in the dataset attribute ``sacrebleu``); else ``{}``."""

    out = {}
    for name, ds in cube.datasets(study).items():
        sig = ds.attrs.get("sacrebleu")
        if sig:
            out[str(name)] = json.loads(sig) if isinstance(sig, str) else dict(sig)
    return {"sacrebleu": out} if out else {}
