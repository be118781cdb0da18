"""``compare`` on a study larger than memory (a Zarr store): the walk of
:func:`multistat.comparison.run` over one streamed slab.

The store's one dataset and its metrics form one metric group; its moments and the
bootstrap's resampled means are accumulated chunk by chunk
(:mod:`multistat.significance._streamed`), locally or on the workers of a
dask.distributed cluster; the tests, effect sizes, corrections (Westfall-Young
included) and the table are compare's own, on those arrays. The table has compare's
columns; Wilcoxon r and Hodges-Lehmann (which need every pair's differences) are NaN
with a note, and ``input_sha256`` is the SHA-256 of the chunks' SHA-256 digests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from typing import Any

import numpy as np

from multistat import __version__
from multistat._table import Coded as _Coded
from multistat._table import labels as _labels
from multistat.comparison import stepdown
from multistat.comparison._groups import (
    EFFECT_COLUMNS,
    mde_multiplier,
    run_group,
    test_contexts,
)
from multistat.errors import ParameterError, SkippedTestWarning
from multistat.request import DEFAULT_TESTS, RunRequest
from multistat.significance._streamed import STREAMED_TESTS, check_streamable, streamed_slab
from multistat.significance.parametric import pair_constant, pair_mean_sd

#: the note of the rank-based effect sizes on a streamed study
EFFECT_NOTE = ("wilcoxon_r, hodges_lehmann: not computed on a .zarr study (they need "
               "every pair's differences in memory)")


def streamed_request(req: RunRequest) -> tuple[RunRequest, list[str]]:
    """The request a Zarr study runs, and the default tests it skips: with the default
    tests, those not streamed are skipped (and said so); named ones are refused."""
    skipped: list[str] = []
    if req.tests == DEFAULT_TESTS:
        skipped = [t for t in req.tests if t not in STREAMED_TESTS]
        req = dataclasses.replace(req, tests=tuple(t for t in req.tests
                                                   if t in STREAMED_TESTS))
    check_streamable(req)
    return req, skipped


def metric_positions(study, req: RunRequest) -> list[int]:
    """Positions of the request's metrics in the store (all by default)."""
    if req.datasets is not None and study.dataset not in req.datasets:
        raise ParameterError(f"`datasets`: the store holds dataset {study.dataset!r}; got "
                             f"{list(req.datasets)}")
    if req.metrics is None:
        return list(range(len(study.metrics)))
    unknown = [m for m in req.metrics if m not in study.metrics]
    if unknown:
        raise ParameterError(f"`metrics`: unknown {unknown}; the store holds "
                             f"{list(study.metrics)}")
    return [i for i, m in enumerate(study.metrics) if m in req.metrics]


def chunk_hash(slab) -> str:
    """SHA-256 over the per-chunk SHA-256 digests of the scores and the names."""
    h = hashlib.sha256()
    h.update(slab.dataset.encode())
    for digest in slab._memo["chunk_digests"]:
        h.update(digest)
    h.update("\x1f".join(slab.systems).encode())
    h.update("\x1f".join(slab.metrics).encode())
    return h.hexdigest()


def run_zarr(study, req: RunRequest, *, walk, resampled=None):
    """:func:`multistat.comparison.run` of a Zarr study (:class:`ZarrStudy`).

    Parameters
    ----------
    study : multistat.io._zarr.ZarrStudy
        The store.
    req : RunRequest
        The validated request (its scheduler runs the chunk tasks, its budget bounds
        each task's memory).
    walk : tuple
        compare's own ``(_pair_arrays, _block, _assemble)`` (:mod:`multistat.comparison`
        passes them: it imports this module, which therefore does not import it).
    resampled : dict, optional
        Filled with the bootstrap's per-system arrays, as :func:`run` does.

    Returns
    -------
    pandas.DataFrame
        compare's table.

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> from multistat.io._zarr import write_zarr, open_zarr
    >>> from multistat.request import build_request
    >>> tmp = tempfile.mkdtemp()
    >>> rng = np.random.default_rng(2)
    >>> x = rng.normal(size=400)
    >>> pd.DataFrame({"a": x + 0.3, "b": x + rng.normal(size=400)}).to_parquet(
    ...     os.path.join(tmp, "acc.parquet"))
    >>> study = open_zarr(write_zarr([os.path.join(tmp, "acc.parquet")],
    ...                              os.path.join(tmp, "s.zarr"), chunk=100))
    >>> req = build_request(tests=("t", "bootstrap"), n_resamples=1000)
    >>> from multistat.comparison import run
    >>> table = run(study, req)  # compare's run hands a Zarr study to run_zarr
    >>> list(table["test"])
    ['t', 'bootstrap']
    """
    _pair_arrays, _block, _assemble = walk
    req, skipped = streamed_request(req)
    ms = metric_positions(study, req)
    ia, ib = _pair_arrays(np.asarray(study.systems), req.pairs)
    specs = req.specs
    base_ctx, ctxs = test_contexts(req)
    slab = streamed_slab(study, ms, scheduler=req.scheduler, budget=req.budget)
    sys_obs = slab.means()
    name = study.dataset
    base = {
        "dataset": name,
        "metric": _Coded(_labels(slab.metrics), np.tile(np.arange(len(ms)), len(ia))),
        "system_a": _Coded(_labels(slab.systems), np.repeat(ia, len(ms))),
        "system_b": _Coded(_labels(slab.systems), np.repeat(ib, len(ms))),
        "higher_is_better": np.tile(np.asarray(slab.higher_is_better, dtype=bool), len(ia)),
        "score_a": sys_obs[ia].ravel(), "score_b": sys_obs[ib].ravel(),
    }
    results, extra = run_group(slab, ia, ib, specs, ctxs, base_ctx, _NoBar(), False,
                               req.power, req.budget)
    if req.effect_sizes:
        effects = moment_effects(slab, ia, ib, req.level)
        if extra.get("_note"):
            effects["_note"] = f"{extra['_note']}; {effects['_note']}"
        extra.update(effects)
    mult = mde_multiplier(slab.n, req.alpha, req.mde_power, req.alternative)
    kept = {} if resampled is None else resampled
    parts, families = [], []
    for spec in specs:
        res = results[spec.name]
        if req.stepdown or resampled is not None:
            kept.update(stepdown.metric_nulls(spec.name, res, slab))
        parts.append(_block(spec, res, base, extra, ctxs[spec.name], slab, mult, 1, None,
                            len(ia) * len(ms)))
        families.append(None if {"dataset", "metric"} & set(res.arrays) else
                        ((name, slab.metrics, spec.name), len(ia)))
    if req.equivalence_margin is not None:
        raise ParameterError("`equivalence_margin`: TOST is not streamed on a .zarr study")
    table = _assemble(parts, families, req, kept, None)
    table.attrs["multistat"] = {
        "multistat_version": __version__, **req.metadata(),
        "input_sha256": chunk_hash(slab), "cluster": "none",
        "streamed": {"store": study.path, "chunk": study.chunk,
                     "chunks": len(study.bounds())},
        "skipped_tests": {},
        "skipped_not_streamed": {t: f"a default test not streamed on a .zarr study; "
                                    f"skipped on {name}" for t in skipped}}
    if skipped:
        warnings.warn(f"{', '.join(skipped)}: default tests that cannot run on a .zarr "
                      f"study (they need every pair's differences in memory), skipped; the "
                      f"tests streamed are {', '.join(STREAMED_TESTS)}",
                      SkippedTestWarning, stacklevel=3)
    return table


def moment_effects(slab, ia, ib, level: float) -> dict:
    """The effect-size columns a streamed study gives: Cohen's d_z and Hedges' g from
    the moments (:func:`multistat.effect.effect_sizes_batch`'s formulas), Wilcoxon r and
    Hodges-Lehmann NaN with :data:`EFFECT_NOTE`."""
    # heavy: multistat.effect imports scipy.stats (first-call time)
    from multistat.effect import _dz_from_moments, cohens_dz_se, hedges_correction

    n = slab.n
    mean, sd = pair_mean_sd(slab, ia, ib)
    const = pair_constant(slab, ia, ib, mean, sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d, low, high = _dz_from_moments(mean, sd, const, n, level)
    size = mean.size
    out: dict[str, Any] = {c: np.full(size, np.nan) for c in EFFECT_COLUMNS}
    out.update(cohens_d=np.asarray(d, float).ravel(),
               cohens_d_ci_low=np.asarray(low, float).ravel(),
               cohens_d_ci_high=np.asarray(high, float).ravel())
    g = hedges_correction(n - 1)
    out.update(hedges_g=g * out["cohens_d"], hedges_g_ci_low=out["cohens_d_ci_low"],
               hedges_g_ci_high=out["cohens_d_ci_high"])
    out["cohens_d_se"] = cohens_dz_se(out["cohens_d"], n)
    out["hedges_g_se"] = g * out["cohens_d_se"]
    out["_note"] = EFFECT_NOTE
    return out


class _NoBar:
    """The progress bar run_group ticks (none on a streamed study)."""

    def tick(self, *args) -> None:
        return None

    def share(self, *args):
        return None
