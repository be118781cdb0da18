"""The resampling engine: shared plans and vectorized kernels.

Plans are drawn once per ``(seed, dataset, kind, block)`` from a
:class:`numpy.random.SeedSequence` and shared by every system, metric and pair, so
resampled statistics are paired by construction and identical whatever the chunking,
scheduler or worker count (a block is always ``BLOCK_SIZE`` resamples, the last one
shorter; its generator depends only on its index).

Plans
-----
* bootstrap: an integer **count matrix** ``C`` (resamples x instances), ``C[b, i]`` the
  number of times instance ``i`` is drawn in resample ``b``; row sums are ``n``.
* sign flips (paired permutation / approximate randomization): a **+-1 matrix** ``S``;
  swapping a and b on instance ``i`` flips the sign of ``d_i = a_i - b_i``.

Row chunks
---------
A block of 1000 resamples over ``n`` instances is a ``(1000, n)`` matrix: 7.5 GiB of
indices at ``n = 2,000,000``. When a block does not fit in the memory budget
(:mod:`multistat._budget`) it is generated and consumed in chunks of rows
(:func:`plan_chunks`): the chunks draw from the block's one generator in order, so their
concatenation is the block itself, bit for bit. This holds because the index draws
(int32/int64 bounded integers) take one 32-bit value per draw whatever the call, and the
sign-flip bytes (uint8, drawn four per 32-bit value with a buffer that restarts at every
call) are split only at multiples of 4 bytes: chunks are multiples of 4 rows
(``tests/test_engine.py`` checks both). Kernels work row by row, so results do not
depend on the chunk either.
"""

from __future__ import annotations

import contextlib
import logging
import os
import zlib
from collections.abc import Iterator

import numpy as np
from threadpoolctl import threadpool_limits

from multistat._budget import Budget
from multistat._lazy import require_extra
from multistat._scheduler import blas_core, check_task_blas, match_workers_blas
from multistat._validation import check_int, check_seed

BLOCK_SIZE = 1000
KINDS = ("bootstrap", "permutation", "power", "units")


def _key(text: str) -> int:
    return zlib.crc32(str(text).encode("utf-8"))


def block_rng(seed, dataset: str, kind: str, block: int) -> np.random.Generator:
    """Generator for one block of one plan; depends only on its arguments.

    ``seed`` may be an int (0 is a seed) or a SeedSequence (its entropy is used).
    """
    seed = check_seed(seed)
    entropy = seed.entropy if isinstance(seed, np.random.SeedSequence) else seed
    ss = np.random.SeedSequence(entropy, spawn_key=(_key(dataset), _key(kind), int(block)))
    return np.random.default_rng(ss)


def block_bounds(n_resamples: int, block_size: int = BLOCK_SIZE) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``range(n_resamples)`` in fixed-size blocks."""
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    return [(s, min(s + block_size, n_resamples)) for s in range(0, n_resamples, block_size)]


def bootstrap_counts(rng: np.random.Generator, size: int, n: int, *, rows=None
                     ) -> np.ndarray:
    """Count matrix ``(size, n)`` (float64, exact integers) of ``size`` bootstrap resamples.

    Row ``b`` counts how often each instance is drawn in ``n`` draws with replacement
    (indices drawn uniformly, then counted with ``bincount``). ``rows``: draw only the
    next ``rows`` rows of a block of ``size`` (the index type stays the block's), see
    :func:`plan_chunks`.
    """
    dtype = np.int32 if size * n < 2**31 else np.int64
    rows = size if rows is None else rows
    idx = rng.integers(0, n, size=(rows, n), dtype=dtype)
    # counted a few rows at a time (~2**17 counters, 1 MiB, stay in cache; one bincount
    # over the whole block scattered into 16 MB at W1 and took twice as long) and
    # written straight into the float64 plan: no int64 copy of the block
    out = np.empty((rows, n))
    step = max(1, 2**17 // n)
    offsets = (np.arange(min(step, rows), dtype=np.intp) * n)[:, None]
    for r in range(0, rows, step):
        k = min(step, rows - r)
        out[r:r + k] = np.bincount((idx[r:r + k] + offsets[:k]).ravel(),
                                   minlength=k * n).reshape(k, n)
    return out


def sign_flips(rng: np.random.Generator, size: int, n: int, *, rows=None) -> np.ndarray:
    """+-1 matrix ``(size, n)`` (float64): each instance's difference flipped w.p. 1/2.

    Built from random bytes unpacked into bits (8 fair coin flips per byte). ``rows``:
    the next ``rows`` rows only (a multiple of 4 except for the last chunk).
    """
    rows = size if rows is None else rows
    raw = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
    # 1 - 2 * bit, a few rows at a time (in cache) and in place: 1.0 - 2.0 * bits made
    # two float64 copies through a mixed-type ufunc, 4x slower at W1; same values
    out = np.empty((rows, n))
    step = max(1, 2**17 // n)
    for r in range(0, rows, step):
        block = out[r:r + step]
        block[...] = np.unpackbits(raw[r:r + step], axis=1, count=n)
        block *= -2.0
        block += 1.0
    return out


_PLAN_FUNCS = {"bootstrap": bootstrap_counts, "permutation": sign_flips}
#: bytes per plan row and instance while a row chunk is generated and consumed: the
#: float64 plan, the int32/int64 indices and a kernel's temporaries of the same size
PLAN_BYTES_PER_VALUE = 32
#: chunks are multiples of this many rows (keeps the uint8 sign-flip stream intact)
CHUNK_ROW_MULTIPLE = 4


def plan_chunks(kind: str, n: int, n_resamples: int, seed, dataset: str, block: int,
               max_rows: int | None = None) -> Iterator[np.ndarray]:
    """Block ``block`` of the plan in consecutive row chunks of at most ``max_rows`` rows
    (a multiple of 4); their concatenation is :func:`plan_block` bit for bit."""
    start, stop = block_bounds(n_resamples)[block]
    size = stop - start
    step = size if max_rows is None else max(CHUNK_ROW_MULTIPLE,
                                             int(max_rows) - int(max_rows) % CHUNK_ROW_MULTIPLE)
    rng = block_rng(seed, dataset, kind, block)
    make = _PLAN_FUNCS[kind]
    for r in range(0, size, step):
        yield make(rng, size, n, rows=min(step, size - r))


def plan_blocks(kind: str, n: int, n_resamples: int, seed, dataset: str = "") -> Iterator[
        np.ndarray]:
    """Yield the plan of ``kind`` block by block (memory: one block at a time)."""
    make = _PLAN_FUNCS[kind]
    for b, (start, stop) in enumerate(block_bounds(n_resamples)):
        yield make(block_rng(seed, dataset, kind, b), stop - start, n)


def plan_block(kind: str, n: int, n_resamples: int, seed, dataset: str, block: int
               ) -> np.ndarray:
    """Block ``block`` of the plan alone (what a dask task computes)."""
    start, stop = block_bounds(n_resamples)[block]
    return _PLAN_FUNCS[kind](block_rng(seed, dataset, kind, block), stop - start, n)


def exact_sign_flips(n: int) -> np.ndarray:
    """All ``2**n`` sign vectors ``(2**n, n)``; row 0 is the identity (all +1)."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    return 1.0 - 2.0 * bits.astype(np.float64)


# ----------------------------------------------------------------------------- kernels
# Plain numpy functions of ONE plan block; instances on the last axis of the data.

def linear_kernel(plan: np.ndarray, data: np.ndarray) -> np.ndarray:
    """``plan @ data`` over the instance axis: data ``(..., n)`` -> ``(Bb, ...)``.

    With a count plan and data divided by ``n`` this is every resampled mean of every
    column at once (one BLAS product); with a sign plan it is every sign-flipped sum.
    """
    lead = data.shape[:-1]
    out = plan @ data.reshape(-1, data.shape[-1]).T
    return out.reshape((plan.shape[0],) + lead)


#: column chunks of :func:`mean_kernel` are multiples of this many data rows
MEAN_CHUNK_ROWS = 8


def _column_chunks(rows: int, width: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` of ``width`` rows (a multiple of :data:`MEAN_CHUNK_ROWS`),
    the last one merged with a shorter remainder: a GEMM over a chunk then computes each
    column as the GEMM over all rows did (same blocking of the columns, no narrow tail
    product that BLAS would run through another kernel, e.g. gemv for one column)."""
    bounds = list(range(0, rows, width)) + [rows]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] < width:
        del bounds[-2]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def mean_kernel(plan: np.ndarray, data: np.ndarray, *, ones: bool = False,
                centre: np.ndarray | None = None) -> np.ndarray:
    """``linear_kernel(plan, data / n)`` bit for bit, without the scaled copy of ``data``.

    With a count plan this is every resampled mean of every column, with a sign plan every
    sign-flipped mean. The scaled rows exist one column chunk at a time, never more rows
    than the plan chunk has (kernel temporaries of the plan's size are part of
    :data:`PLAN_BYTES_PER_VALUE`), or 15 rows when the plan chunk is smaller: at 200
    systems x 10 metrics x 50,000 instances the full ``data / n`` was an 800 MB copy.
    Chunks are multiples of 8 rows with the remainder in the last one
    (:func:`_column_chunks`), which gives the single product's bits
    (``tests/test_engine.py`` checks shapes and chunk widths).
    ``ones=True``: ``data`` ``(S, ..., n)`` gets a last system of ones, i.e. the result
    is ``linear_kernel(plan, concatenate([data, ones((1,) + data.shape[1:])]) / n)``
    (``(Bb, S + 1, ...)``; the permutation's sum of signs).
    ``centre``: constants ``data.shape[1:-1]`` (one per metric, common to the systems,
    :mod:`multistat._centre`) subtracted from every system's scores first: the result is
    then the resampled means of ``data - centre`` (the rows of ones are not centred);
    rows whose constant is 0 are computed as without it, bit for bit.
    """
    n = data.shape[-1]
    flat = data.reshape(-1, n)
    shift = None
    if centre is not None and np.any(centre):
        shift = np.broadcast_to(np.asarray(centre, dtype=float),
                                data.shape[:-1]).reshape(-1, 1)
    extra = int(np.prod(data.shape[1:-1], dtype=np.int64)) if ones else 0
    lead = ((data.shape[0] + 1,) + data.shape[1:-1]) if ones else data.shape[:-1]
    rows = flat.shape[0] + extra
    # a chunk has < 2 * width rows (remainder merged): at most the plan's rows
    width = max(MEAN_CHUNK_ROWS, plan.shape[0] // 2 // MEAN_CHUNK_ROWS * MEAN_CHUNK_ROWS)
    out = None
    for start, stop in _column_chunks(rows, width):
        part = flat[start:min(stop, flat.shape[0])]
        fresh = False  # part is a temporary of this chunk: scaled in place
        if shift is not None:  # x - k (k = 0 leaves x as it is)
            part, fresh = part - shift[start:min(stop, flat.shape[0])], True
        if stop > flat.shape[0]:  # the chunk with the rows of ones
            part = np.concatenate([part, np.ones((stop - max(start, flat.shape[0]), n))])
            fresh = True
        if fresh:
            part /= n
        else:
            part = part / n
        prod = plan @ part.T
        if stop - start == rows:
            return prod.reshape((plan.shape[0],) + lead)
        if out is None:
            out = np.empty((plan.shape[0], rows))
        out[:, start:stop] = prod
    if out is None:  # no rows at all
        out = np.empty((plan.shape[0], rows))
    return out.reshape((plan.shape[0],) + lead)


def weighted_median(values_sorted: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Medians of resamples given as integer weights over sorted values.

    ``values_sorted`` ``(..., n)`` ascending; ``weights`` ``(Bb, ..., n)`` counts summing
    to ``n`` per resample. The median of a resample of ``n`` values is the mean of its
    order statistics ``ceil(n/2)`` and ``floor(n/2) + 1`` (1-based), as numpy.median.
    """
    n = values_sorted.shape[-1]
    cum = np.cumsum(weights, axis=-1)
    lo_rank = (n + 1) // 2  # 1-based rank of the lower middle value
    hi_rank = n // 2 + 1
    lo = np.argmax(cum >= lo_rank, axis=-1)
    hi = np.argmax(cum >= hi_rank, axis=-1)
    v = np.broadcast_to(values_sorted, weights.shape)
    lo_v = np.take_along_axis(v, lo[..., None], -1)[..., 0]
    hi_v = np.take_along_axis(v, hi[..., None], -1)[..., 0]
    return 0.5 * (lo_v + hi_v)


KERNEL_BYTES = 64 * 2**20  # working memory of one (resamples x pairs x instances) chunk


def _pair_chunks(plan: np.ndarray, n_pairs: int) -> list[slice]:
    step = max(1, KERNEL_BYTES // (plan.shape[0] * plan.shape[1] * 8))
    return [slice(s, min(s + step, n_pairs)) for s in range(0, n_pairs, step)]


def median_bootstrap_kernel(plan: np.ndarray, diffs: np.ndarray) -> np.ndarray:
    """Bootstrap medians of paired differences ``(P, n)`` -> ``(Bb, P)``.

    Each row of differences is sorted once; the counts are permuted into that order
    and the weighted median read off the cumulative counts (no resample is built).
    Pairs are processed in chunks of bounded memory, all resamples at once.
    """
    order = np.argsort(diffs, axis=-1)
    srt = np.take_along_axis(diffs, order, -1)
    out = np.empty((plan.shape[0], diffs.shape[0]))
    for sl in _pair_chunks(plan, diffs.shape[0]):
        out[:, sl] = weighted_median(srt[sl], plan[:, order[sl]])  # (Bb, p, n) counts
    return out


def median_signflip_kernel(plan: np.ndarray, diffs: np.ndarray) -> np.ndarray:
    """Medians of sign-flipped differences ``(P, n)`` -> ``(Bb, P)`` (pairs in chunks)."""
    out = np.empty((plan.shape[0], diffs.shape[0]))
    for sl in _pair_chunks(plan, diffs.shape[0]):
        out[:, sl] = np.median(plan[:, None, :] * diffs[sl][None], axis=-1)
    return out


def corpus_sums_kernel(plan: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """``plan @ stats`` for statistics ``(S, n, K)`` -> summed statistics ``(Bb, S, K)``."""
    s, n, k = stats.shape
    flat = np.moveaxis(stats, 1, -1).reshape(s * k, n)  # (S*K, n)
    return (plan @ flat.T).reshape(plan.shape[0], s, k)


# ----------------------------------------------------------------------------- driver
_WORKER_BLAS_LIMITED = False


def _block_task(kind, n, n_resamples, seed, dataset, blocks, kernel, data, exact,
                parent_pid, max_rows=None, blas=None):
    global _WORKER_BLAS_LIMITED
    if blas is not None:  # a dask.distributed worker: the client's BLAS kernels or nothing

        check_task_blas(blas)
    if os.getpid() != parent_pid and not _WORKER_BLAS_LIMITED:
        # a worker process (dask processes / distributed): BLAS on one thread, as in the
        # caller's process (see `resample`), so every block gives the same bits everywhere

        threadpool_limits(limits=1, user_api="blas")
        _WORKER_BLAS_LIMITED = True
    out = []
    for b in blocks:
        if exact:
            out.append(kernel(exact_sign_flips(n), data))
            continue
        parts = [kernel(plan, data) for plan in plan_chunks(kind, n, n_resamples, seed,
                                                            dataset, b, max_rows)]
        out.append(parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0))
    return out


@contextlib.contextmanager
def get_client(scheduler):
    """A ``dask.distributed.Client`` for an address or Client, else None (a context).

    A Client made here from an address is closed on exit: left open, its connection and
    background threads outlive the call (one more per call).
    """
    if scheduler is None or scheduler in ("threads", "processes", "synchronous",
                                          "sync", "single-threaded"):
        yield None
        return
    require_extra("distributed")
    # heavy: distributed, dask, lazily
    from distributed import Client

    if isinstance(scheduler, Client):
        match_workers_blas(scheduler)  # the workers compute with this process's kernels
        yield scheduler
    elif isinstance(scheduler, str):
        client = Client(scheduler, set_as_default=False)
        try:
            match_workers_blas(client)
            yield client
        except BaseException:
            # the run failed (e.g. the scheduler died): close without distributed's own
            # reconnect tracebacks on stderr, so the caller's one-line error stands alone
            _close_quietly(client)
            raise
        client.close()
    else:
        raise TypeError(f"`scheduler` must be 'threads', 'processes', 'synchronous', a "
                        f"dask.distributed address or Client; got {scheduler!r}")


def _close_quietly(client) -> None:
    names = ["distributed"] + [n for n in logging.root.manager.loggerDict
                               if n.startswith("distributed.")]
    loggers = [logging.getLogger(n) for n in names]
    saved = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing a client whose scheduler is gone
        pass
    finally:
        for lg, was in zip(loggers, saved, strict=True):
            lg.disabled = was


def resample(kind: str, kernel, data, *, n: int, n_resamples: int, seed, dataset: str = "",
             scheduler="threads", n_chunks: int | None = None, exact: bool = False,
             budget=None, progress=None) -> np.ndarray:
    """Apply ``kernel(plan_block, data)`` to every block of a plan and stack the results.

    Blocks are grouped into ``n_chunks`` dask tasks (default: one per block, at most 64);
    the grouping and the scheduler do not change a single bit of the result, because
    every block's plan depends only on ``(seed, dataset, kind, block index)`` and every
    block's products run with one BLAS thread (a multi-threaded GEMM rounds differently
    with the thread count); blocks run concurrently instead. Row chunks (a small
    ``budget``) keep the bits when the BLAS's products do not depend on their shape:
    OpenBLAS's Haswell kernels, which the command line and ``make`` select
    (:mod:`multistat._blas`; its AVX-512 kernels round small and chunked products
    differently). With them bit-identity also holds across x86-64 machines.
    ``exact=True`` (sign flips only) enumerates all ``2**n`` sign vectors instead.

    ``budget`` (:class:`multistat._budget.Budget`, default: the default memory limit)
    bounds each concurrent task's plan: a block that does not fit is generated and
    consumed in row chunks (:func:`plan_chunks`), which changes no bit. ``progress(units)``
    is called with the number of blocks as each task finishes.
    """
    # heavy: dask, lazily
    import dask

    budget = Budget.of(budget) if not isinstance(budget, Budget) else budget
    # row chunks: every concurrent task keeps one chunk of (rows x n) plan values alive
    max_rows = budget.per_worker().rows(n * PLAN_BYTES_PER_VALUE,
                                        multiple=CHUNK_ROW_MULTIPLE)
    max_rows = None if max_rows >= BLOCK_SIZE else max_rows

    if exact:
        groups = [[0]]
    else:
        nb = len(block_bounds(n_resamples))
        k = min(nb, 64) if n_chunks is None else max(1, min(int(n_chunks), nb))
        groups = [list(g) for g in np.array_split(np.arange(nb), k) if len(g)]

    pid = os.getpid()
    # One BLAS thread per block everywhere: a multi-threaded GEMM splits the product
    # differently with the thread count and changes the last bits; parallelism comes from
    # running blocks concurrently instead.

    with get_client(scheduler) as client, threadpool_limits(limits=1, user_api="blas"):
        if client is not None:
            parts = _cluster_run(client, data, groups, progress, lambda g, data_f: (
                client.submit(_block_task, kind, n, n_resamples, seed, dataset, g, kernel,
                              data_f, exact, pid, max_rows, blas_core() or None,
                              pure=False)))
        elif len(groups) == 1 or scheduler in ("synchronous", "sync", "single-threaded"):
            parts = []
            for g in groups:
                parts.append(_block_task(kind, n, n_resamples, seed, dataset, g, kernel, data,
                                         exact, pid, max_rows))
                if progress is not None:
                    progress(len(g))
        else:
            tasks = [dask.delayed(_block_task, pure=False)(kind, n, n_resamples, seed,
                                                            dataset, g, kernel, data, exact,
                                                            pid, max_rows)
                     for g in groups]
            if progress is None:
                parts = dask.compute(*tasks, scheduler=scheduler)
            else:
                with _TaskTicks(progress, n_resamples):
                    parts = dask.compute(*tasks, scheduler=scheduler)
    return np.concatenate([blk for part in parts for blk in part], axis=0)


#: attempts of a run on a dask.distributed cluster (:func:`_cluster_run`)
CLUSTER_ATTEMPTS = 3


def _cluster_run(client, data, groups, progress, submit) -> list:
    """Every group of blocks run on a dask.distributed cluster, in group order.

    hash=False in the scatter: a key of its own per call. With content keys, two calls on
    the same array (bootstrap, then permutation, of one cube) share a key, and the first
    call's release can reach the scheduler after the second scatter: "lost dependencies"
    (seen in CI).

    The data go to every worker, but the scheduler's active memory manager drops the
    replicas no waiting task needs; a worker that dies with the last copy takes the data
    with it, and the scheduler forgets every task that needed them (``FutureCancelledError``
    "already forgotten", reproduced by killing the one worker of a cluster mid-run). The
    data are then scattered again and the groups not yet finished submitted again, up to
    :data:`CLUSTER_ATTEMPTS` times in all: a block's plan depends only on its key, so
    the result is the same bit for bit. A lost scheduler ("scheduler-connection-lost"), or
    a task that kills its workers (``KilledWorker``), is not retried.
    """
    # heavy: distributed, dask, lazily
    from distributed import as_completed

    # heavy: distributed, dask, lazily
    from distributed.client import FutureCancelledError

    done: dict = {}
    attempt = 0
    while True:
        attempt += 1
        data_f = client.scatter(data, broadcast=True, hash=False)
        futures = {submit(g, data_f): i for i, g in enumerate(groups) if i not in done}
        try:
            for fut in as_completed(futures, loop=client.loop):  # not the default client
                i = futures[fut]
                done[i] = fut.result()
                if progress is not None:
                    progress(len(groups[i]))
        except FutureCancelledError as exc:
            if (attempt == CLUSTER_ATTEMPTS or client.status != "running"
                    or getattr(exc, "reason", "") == "scheduler-connection-lost"):
                raise
            client.cancel(list(futures))  # what is left of this attempt
            continue
        return [done[i] for i in range(len(groups))]


def _task_ticks():
    # heavy: dask, lazily
    from dask.callbacks import Callback

    class TaskTicks(Callback):
        """Advance a progress callback as each block task finishes (local schedulers)."""

        def __init__(self, progress, n_resamples):
            super().__init__()
            self._progress = progress

        def _posttask(self, key, result, dsk, state, worker_id):
            if isinstance(result, list):
                self._progress(len(result))

    return TaskTicks


def _TaskTicks(progress, n_resamples):  # noqa: N802 - a class factory (lazy dask import)
    return _task_ticks()(progress, n_resamples)


# ----------------------------------------------------------------------------- p-values
def null_scale(null: np.ndarray, *, absolute: np.ndarray | None = None) -> np.ndarray:
    """``max |null|`` along axis 0, with non-finite maxima (NaN, inf) taken as 0: the
    null's share of the tie tolerance (:func:`_tolerance`). ``absolute``: ``|null|``
    when the caller has it already (saves a pass over the null)."""
    with np.errstate(invalid="ignore"):
        m = np.max(np.abs(null) if absolute is None else absolute, axis=0)
    return np.where(np.isfinite(m), m, 0.0)


def pair_differences(arr: np.ndarray, ia, ib) -> np.ndarray:
    """``arr[:, ia] - arr[:, ib]`` for per-system arrays ``(B, S, ...)``, C-contiguous.

    The same values bit for bit, but ``arr[:, ia]`` (an index array after a slice) comes
    out of numpy with the pair axis outermost in memory, so every later reduction along
    the resample axis walked the array in strides of a few values (4-20x slower);
    ``np.take`` gives ``(B, P, ...)`` in C order.
    """
    out = np.take(arr, ia, axis=1)
    out -= np.take(arr, ib, axis=1)
    return out


def _tolerance(observed, null=None, *, scale=None) -> np.ndarray:
    """Ties with the observed statistic count as "as extreme" (scipy permutation_test):
    within 1e-12 of the scale of the statistic, max(|observed|, max |null|) -- relative,
    so that p-values do not depend on the units of the scores.
    ``scale``: :func:`null_scale` of the null when the caller has it already."""
    scale_obs = np.abs(observed)
    if scale is None and null is not None:
        scale = null_scale(null)
    if scale is not None:
        scale_obs = np.maximum(scale_obs, scale)
    return 1e-12 * scale_obs


def pvalues_from_null(null: np.ndarray, observed: np.ndarray, alternative: str, *,
                      exact: bool = False, symmetric: bool = False, scale=None
                      ) -> np.ndarray:
    """p-values of ``observed`` against a null distribution along axis 0.

    ``null`` ``(B, ...)`` and ``observed`` ``(...)`` on the same (centred) scale.
    ``greater``: ``(#{null >= obs} + 1) / (B + 1)``; ``less``: ``#{null <= obs}``;
    ``two-sided``: ``min(1, 2 * min(p_less, p_greater))`` — sign-aware, never half of a
    one-sided p taken without looking at the direction (Phipson & Smyth 2010). With
    ``symmetric=True`` (a null symmetric about 0 by construction, as sign flips are) the
    two-sided p counts ``#{|null| >= |obs|}`` instead: the same quantity, estimated with
    less Monte Carlo error. For an exact enumeration (the observed arrangement is in
    ``null``) no +1 is added. ``scale``: :func:`null_scale` of ``null`` if known.

    Reductions run along axis 0; a C-contiguous ``null`` (:func:`pair_differences`) keeps
    them fast.
    """
    b = null.shape[0]
    add = 0 if exact else 1
    if alternative == "two-sided" and symmetric:
        absolute = np.abs(null)
        if scale is None:
            scale = null_scale(null, absolute=absolute)
        tol = _tolerance(observed, scale=scale)
        return np.minimum(1.0, (np.sum(absolute >= np.abs(observed) - tol, axis=0) + add)
                          / (b + add))
    tol = _tolerance(observed, null, scale=scale)
    ge = (np.sum(null >= observed - tol, axis=0) + add) / (b + add)
    le = (np.sum(null <= observed + tol, axis=0) + add) / (b + add)
    if alternative == "greater":
        return ge
    if alternative == "less":
        return le
    return np.minimum(1.0, 2.0 * np.minimum(ge, le))
