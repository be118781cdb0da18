"""Sufficient statistics of a study larger than memory, accumulated chunk by chunk.

A study in a Zarr store (:mod:`multistat.io._zarr`) is never held whole: its instance
chunks are read one at a time, by the process that runs the work or by the workers of a
dask.distributed cluster, which open the store themselves (the driver sends the store's
path, chunk bounds, centres and plan keys; no scores). What the tests need is summed
over the chunks, in chunk order, so the result does not depend on where a chunk ran:

* **moments** (the t test, effect sizes, ``score_a``/``score_b``): per system and metric
  the minimum, maximum and sum of ``x - k`` (first pass), then the Gram matrix of the
  centred scores divided by their power-of-two scales (second pass), the quantities
  :class:`~multistat.significance.Slab` computes in memory (:meth:`Slab.gram_scaled`);
* **the bootstrap's per-system resampled means** on the shared plan: block ``b`` of the
  plan is the count matrix :func:`multistat.engine.bootstrap_counts` draws from the
  block's one generator (:func:`multistat.engine.block_rng`), row after row, exactly as
  in memory (same seed, same counts). A row's counts need all of its ``n`` draws, so a
  block's rows are drawn in groups that fit the memory budget (kept as 8-bit counts),
  and each group meets every chunk of the store: ``sum_c C[:, c] @ ((x_c - k) / n)``.

Equality with the in-memory run: the plans are the same counts; the sums are the same
terms added in another order (per chunk, then across chunks, where the in-memory kernel
runs one product over all instances), so means, Gram matrices and resampled means agree
to a few units in the last place (about 1e-15 relative) and the tables to float
tolerance; p-values count resampled values beyond a tie tolerance of 1e-12 relative and
are equal. Between two streamed runs -- any memory limit, local threads or a cluster --
the order is fixed by the store's chunks and the tables are identical, bit for bit.

Tests streamed: ``t`` and ``bootstrap`` (the mean; basic or percentile interval, shifted
or Berg-Kirkpatrick p-value). Others need the per-instance differences of every pair
(ranks, signs, medians, BCa's jackknife) and are refused (:data:`STREAMED_TESTS`).
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from multistat import engine as eng
from multistat._budget import Budget
from multistat._centre import HUGE, candidate_positions, centre_of
from multistat._scheduler import blas_core, check_task_blas
from multistat.errors import ParameterError, TestNotApplicableError
from multistat.significance._batch import Slab

#: the tests a streamed study runs
STREAMED_TESTS = ("t", "bootstrap")
#: the bootstrap options a streamed study runs
STREAMED_CI = ("basic", "percentile")
STREAMED_PVALUES = ("shifted", "berg-kirkpatrick")
#: plan rows drawn at once inside a group (a multiple of 4, as engine.plan_chunks)
DRAW_ROWS = 4


# ----------------------------------------------------------------------------- tasks
def _limited(fn, blas, *args):
    """``fn(*args)`` with one BLAS thread (the engine's rule: same bits everywhere);
    on a worker, refuse other BLAS kernels than the driver's (``blas``)."""
    if blas is not None:
        check_task_blas(blas)
    with threadpool_limits(limits=1, user_api="blas"):
        return fn(*args)


def map_tasks(fn, argsets: list[tuple], scheduler="threads") -> list:
    """``[fn(*args) for args in argsets]``, run where ``scheduler`` says, in order.

    ``"synchronous"``: here, one after the other; ``"threads"``/``"processes"``: on
    threads of this process (numpy and the store's codecs release the GIL); a
    dask.distributed address or Client: as tasks on its workers, each reading its own
    chunks (``args`` hold the store's description, never scores). Results come back in
    the order of ``argsets`` whatever ran them, so sums over them are the same bits.
    """
    if not argsets:
        return []
    with eng.get_client(scheduler) as client:
        if client is not None:
            blas = blas_core() or None
            futures = [client.submit(_limited, fn, blas, *args, pure=False, retries=2)
                       for args in argsets]
            out = client.gather(futures)
            client.cancel(futures)
            return out
    if scheduler in ("synchronous", "sync", "single-threaded") or len(argsets) == 1:
        return [_limited(fn, None, *args) for args in argsets]
    with ThreadPoolExecutor(max_workers=max(1, min(len(argsets), os.cpu_count() or 1)),
                            thread_name_prefix="multistat-stream") as pool:
        return list(pool.map(lambda a: _limited(fn, None, *a), argsets))


def _first_pass(study, ms, start, stop, k):
    """Per chunk: min, max and sum of ``x - k`` per system and metric ``(S, M)``, and
    the SHA-256 digest of the chunk's scores."""
    x = study.read(start, stop, ms)
    digest = hashlib.sha256(memoryview(x).cast("B")).digest()
    lo, hi = x.min(-1), x.max(-1)
    for j in range(len(ms)):
        if k[j]:
            x[:, j] -= k[j]
    return lo, hi, x.sum(-1), digest


def _gram_pass(study, ms, start, stop, k, inv, mu):
    """Per chunk: ``sum_i y_ai y_bi`` with ``y = (x - k) / c - xbar / c`` ``(M, S, S)``."""
    x = study.read(start, stop, ms)
    S, M = x.shape[:2]
    G = np.empty((M, S, S))
    for j in range(M):
        xc = np.ascontiguousarray(x[:, j])
        if k[j]:
            xc -= k[j]
        xc *= inv[:, j, None]
        xc -= mu[:, j, None]
        G[j] = xc @ xc.T
    return G


def plan_group_rows(study, n_metrics: int, budget: Budget) -> int:
    """Plan rows of a block held at once (8-bit counts over every instance) in one
    task's share of ``budget``: what is left after one chunk of scores (read, centred,
    a product) and the draw of :data:`DRAW_ROWS` rows; a multiple of 4, at least 4."""
    S, n, L = len(study.systems), study.n, min(study.chunk, study.n)
    share = budget.per_worker().nbytes
    fixed = 3 * S * n_metrics * L * 8 + DRAW_ROWS * n * 12
    per_row = n + L * 8 + S * n_metrics * 8
    rows = int(max(0, share - fixed) // per_row)
    return max(4, min(eng.BLOCK_SIZE, rows - rows % 4))


def _bootstrap_block(study, ms, k, n_resamples, seed, block, group_rows):
    """Resampled means of ``x - k`` of block ``block`` of the bootstrap plan,
    ``(rows, S, M)``: the rows of :func:`multistat.engine.plan_block` (drawn
    :data:`DRAW_ROWS` at a time from the block's generator, kept as 8-bit counts,
    ``group_rows`` at a time) times every chunk of the store."""
    start, stop = eng.block_bounds(n_resamples)[block]
    size = stop - start
    S, M, n = len(study.systems), len(ms), study.n
    rng = eng.block_rng(seed, study.dataset, "bootstrap", block)
    out = np.empty((size, S * M))
    bounds = study.bounds()
    for g0 in range(0, size, group_rows):
        rows = min(group_rows, size - g0)
        counts = np.empty((rows, n), dtype=np.uint8)
        for r0 in range(0, rows, DRAW_ROWS):
            part = eng.bootstrap_counts(rng, size, n, rows=min(DRAW_ROWS, rows - r0))
            if part.max(initial=0) > 255:  # P < 1e-500 for n > 255; n <= 255 cannot
                raise ArithmeticError("a bootstrap count above 255")
            counts[r0:r0 + part.shape[0]] = part
            del part
        acc = np.zeros((rows, S * M))
        for c0, c1 in bounds:
            x = study.read(c0, c1, ms)
            for j in range(M):  # (x - k) / n, as engine.mean_kernel
                if k[j]:
                    x[:, j] -= k[j]
            x /= n
            acc += counts[:, c0:c1].astype(np.float64) @ x.reshape(S * M, c1 - c0).T
            del x
        out[g0:g0 + rows] = acc
        del counts
    return out.reshape(size, S, M)


# ----------------------------------------------------------------------------- slab
class StreamedSlab(Slab):
    """A :class:`~multistat.significance.Slab` of a Zarr study: its moments computed
    chunk by chunk (:func:`streamed_slab`), no score array in memory.

    ``scores``, :meth:`diff` and :meth:`rank_info` (what tests other than
    :data:`STREAMED_TESTS` read) raise :class:`~multistat.errors.TestNotApplicableError`;
    :meth:`system_scores` reads a few systems' rows from the store (the t test's
    degenerate pairs), within the budget; :meth:`bootstrap_means` gives the bootstrap's
    per-system resampled means on the shared plan.
    """

    def __init__(self, study, ms, *, scheduler="threads", budget=None):
        S, n = len(study.systems), study.n
        ms = [int(m) for m in ms]
        super().__init__(np.broadcast_to(np.float64(np.nan), (S, len(ms), n)),
                         dataset=study.dataset,
                         metrics=tuple(study.metrics[m] for m in ms),
                         systems=tuple(study.systems),
                         metric_kinds=tuple(study.kind[m] for m in ms),
                         higher_is_better=tuple(study.higher_is_better[m] for m in ms))
        self.study, self.ms = study, ms
        self.scheduler = scheduler
        self.budget = Budget.of(budget)

    def _shape_only(self):
        return self.__dict__["_scores"]

    def _refuse(self, what="the per-instance scores of every pair"):
        raise TestNotApplicableError(
            f"{self.study.path}: this needs {what} in memory, which a .zarr study does not "
            f"load; the tests streamed over its chunks are {', '.join(STREAMED_TESTS)} "
            "(load the study into a .nc file for the others)")

    scores = property(lambda self: self._refuse(),
                      lambda self, value: self.__dict__.__setitem__("_scores", value))

    def diff(self, ia, ib):
        self._refuse()

    def rank_info(self, ia, ib):
        self._refuse()

    def system_scores(self, systems) -> np.ndarray:
        idx = np.asarray(systems, dtype=np.intp)
        need = idx.size * len(self.ms) * self.n * 8
        if need > self.budget.nbytes:
            self._refuse(f"the scores of {idx.size} systems ({need / 2**20:,.0f} MiB, beyond "
                         "the memory limit)")
        return self.study.read_systems(idx, self.ms)

    def bootstrap_means(self, n_resamples: int, seed) -> tuple[np.ndarray, np.ndarray]:
        """``(resampled means of x - k (B, S, M), observed means of x - k (S, M))`` on
        the bootstrap plan of ``(seed, dataset)``: the arrays the in-memory bootstrap
        test computes with :func:`multistat.engine.mean_kernel`."""
        key = ("boot", int(n_resamples), repr(seed))
        if key not in self._memo:
            k = self.centres()
            rows = plan_group_rows(self.study, len(self.ms), self.budget)
            blocks = range(len(eng.block_bounds(n_resamples)))
            parts = map_tasks(_bootstrap_block, [
                (self.study, self.ms, k, n_resamples, seed, b, rows) for b in blocks],
                self.scheduler)
            self._memo[key] = np.concatenate(parts, axis=0)
        return self._memo[key], self.centred_means()


def streamed_slab(study, ms, *, scheduler="threads", budget=None) -> StreamedSlab:
    """The :class:`StreamedSlab` of metrics ``ms`` of a Zarr study with its moments: two
    passes over the chunks (extremes and sums; then the scaled Gram matrices).

    Parameters
    ----------
    study : multistat.io._zarr.ZarrStudy
        The store.
    ms : sequence of int
        Metric positions.
    scheduler : str or distributed.Client
        Where the chunk tasks run (:func:`map_tasks`).
    budget : Budget, int or str, optional
        The memory limit.

    Returns
    -------
    StreamedSlab

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> from multistat.io._zarr import write_zarr, open_zarr
    >>> tmp = tempfile.mkdtemp()
    >>> rng = np.random.default_rng(1)
    >>> pd.DataFrame({"a": rng.normal(size=500), "b": rng.normal(size=500)}).to_parquet(
    ...     os.path.join(tmp, "m.parquet"))
    >>> study = open_zarr(write_zarr([os.path.join(tmp, "m.parquet")],
    ...                              os.path.join(tmp, "s.zarr"), chunk=128))
    >>> slab = streamed_slab(study, [0], scheduler="synchronous")
    >>> x = study.read(0, study.n)
    >>> bool(np.allclose(slab.means(), x.mean(-1), rtol=1e-14, atol=0))
    True
    """
    slab = StreamedSlab(study, ms, scheduler=scheduler, budget=budget)
    ms, n = slab.ms, study.n
    cand = study.read_at(candidate_positions(n), ms)  # (S, M, C)
    k = centre_of(cand, cand.min(-1), cand.max(-1), n)
    bounds = study.bounds()
    first = map_tasks(_first_pass, [(study, ms, a, b, k) for a, b in bounds], scheduler)
    lo = np.minimum.reduce([f[0] for f in first])
    hi = np.maximum.reduce([f[1] for f in first])
    sums = first[0][2].copy()
    for f in first[1:]:
        sums += f[2]
    big = np.max(np.maximum(np.abs(lo), np.abs(hi)), initial=0.0) * n
    if big > HUGE or not np.array_equal(centre_of(cand, lo, hi, n), k):
        raise ParameterError(f"{study.path}: scores so large that a sum over the "
                             f"{n} instances could overflow; a .zarr study streams sums "
                             "of scores below 2^1000 / n")
    slab._memo.update(extremes=(lo, hi), centres=k, means=sums / n,
                      chunk_digests=[f[3] for f in first])
    c = slab.scales()
    inv, mu = 1.0 / c, slab.centred_means() / c
    grams = map_tasks(_gram_pass, [(study, ms, a, b, k, inv, mu) for a, b in bounds],
                      scheduler)
    G = grams[0].copy()
    for g in grams[1:]:
        G += g
    slab._memo["gram"] = G
    return slab


def check_streamable(req) -> None:
    """Refuse, before any work, the options a streamed study cannot run: tests other than
    :data:`STREAMED_TESTS`, the median, BCa/studentized intervals, clusters, holes."""
    bad = [t for t in req.tests if t not in STREAMED_TESTS]
    if bad:
        raise ParameterError(
            f"`tests`: {', '.join(bad)} cannot run on a .zarr study (they need every pair's "
            f"per-instance differences in memory); the tests streamed over its chunks are "
            f"{', '.join(STREAMED_TESTS)}")
    if "bootstrap" in req.tests:
        if req.statistic != "mean":
            raise ParameterError("`statistic`: a .zarr study streams the bootstrap of the "
                                 f"mean; got {req.statistic!r}")
        if req.ci_method not in STREAMED_CI:
            raise ParameterError(f"`ci_method`: a .zarr study streams the "
                                 f"{' and '.join(STREAMED_CI)} intervals; got "
                                 f"{req.ci_method!r}")
        if req.bootstrap_pvalue not in STREAMED_PVALUES:
            raise ParameterError(f"`bootstrap_pvalue`: a .zarr study streams "
                                 f"{' and '.join(STREAMED_PVALUES)}; got "
                                 f"{req.bootstrap_pvalue!r}")
    if req.cluster is not None:
        raise ParameterError("`cluster`: a .zarr study holds no instance groups")
