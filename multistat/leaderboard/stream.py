"""Leaderboard decisions without a compare table: the Westfall-Young step-down of every
pair, streamed over pairs, for :func:`multistat.rank`.

``rank`` needs one decision per pair (its corrected ``reject`` and direction), not the
compare table with an interval per pair: at 5,000 systems that table has 12.5 million
rows, and the bootstrap's per-pair intervals, p-values and step-down formed pairs x
resamples values chunk by chunk, several times. Here the per-system bootstrap means of
the shared plan (the arrays ``compare``'s bootstrap test draws, same seed, same bits) are
kept as ``(S, B)`` rows, and every pair is formed from two rows inside a compiled kernel
(:mod:`multistat.leaderboard._pair_kernels`), one pair at a time:

1. **pair statistics** (one kernel call per chunk of pairs, on worker threads): the
   bootstrap test's shifted p-value, the step-down's own p-value, the sd of the pair's
   null distribution (numpy's pairwise summation, so the same bits as
   :func:`multistat.stepdown.westfall_young`), its studentized observed statistic
   ``t_j`` and largest studentized null value ``u_j = max_b t*_bj``; ``P`` values each;
2. **order**: pairs by ``t_j``, most significant first (ties by pair index, as the
   step-down);
3. **counts**: ``c_k = #{b : max_{l >= k} t*_{b, j_l} >= t_{j_k}}``. Where
   ``t_{j_k}`` exceeds ``max_{l >= k} u_{j_l}`` no resample reaches it: ``c_k = 0``
   without touching a resample. From the first position where it does not, the
   successive maxima are carried from the least significant end, ``B`` values of state
   (split over threads by resamples), exactly as the step-down's slabs carry them;
4. ``p_adjusted`` = the running maximum of ``(c + 1) / (B + 1)``, at least the
   step-down's and the test's own p-value: the numbers ``compare(...,
   correction="westfall-young")`` gives, bit for bit (``tests/test_rank_stream.py``).

Memory: the ``(B, S)`` means and their ``(S, B)`` copy, and a few arrays of one value per
pair (8 bytes each); time: two passes of ``B`` per pair in the kernel, plus the carried
pass over the pairs the bound cannot settle.

It serves the requests :func:`applicable` accepts (the bootstrap of the mean with the
max-T step-down, two-sided; mean metrics scored by every system); others take the
compare table (:func:`multistat.leaderboard.ranking.run_ranking`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from multistat import cube
from multistat import engine as eng
from multistat._centre import centred_means, levels
from multistat.comparison import _slab, _walk

#: pairs per kernel call of the first pass (a few MB of outputs per call)
PAIR_CHUNK = 65_536


class NotFinite(ArithmeticError):
    """A resampled or observed mean is not finite: the compare table's path handles
    those pairs (it leaves them untested, with a note)."""


@dataclass(frozen=True)
class Decisions:
    """The step-down decisions of one metric: pairs ``(ia, ib)`` (positions in
    ``systems``), each with ``estimate`` (mean a - mean b), ``p_value`` (the bootstrap
    test's), ``p_adjusted`` and ``reject``."""

    dataset: str
    metric: str
    systems: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    estimate: np.ndarray
    score_diff: np.ndarray
    p_value: np.ndarray
    p_adjusted: np.ndarray
    reject: np.ndarray
    #: instances the metric was scored on
    n: int


def applicable(study, req) -> bool:
    """Whether :func:`decide` gives what the compare table would: the bootstrap test of
    the mean, max-T Westfall-Young over the default families, two-sided with the shifted
    p-value, every pair, no clusters of instances, no equivalence margin, and only mean
    metrics scored by every system; and numba (the ``fast`` extra) for the compiled pair
    kernels -- without it the ranking takes the compare table's path."""
    if importlib.util.find_spec("numba") is None:
        return False
    if (req.tests != ("bootstrap",) or req.correction not in ("westfall-young",
                                                              "westfall-young-maxT")
            or req.statistic != "mean" or req.alternative != "two-sided"
            or req.bootstrap_pvalue != "shifted" or req.family is not None
            or req.cluster is not None or req.equivalence_margin is not None
            or not (isinstance(req.pairs, str) and req.pairs == "all")
            or req.test_options):
        return False

    all_ds, metrics = cube.select(study, datasets=req.datasets, metrics=req.metrics)
    for d in _walk(all_ds):
        if d.holes or cube.RUN_SCORE in d.ds or cube.RATING in d.ds:
            return False
        for kind, _, _ in d.groups(metrics):
            if kind != "mean":
                return False
    return True


def _threads(req) -> int:
    if req.scheduler == "synchronous":
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def decide(study, req):
    """Yield ``(dataset, metric names, higher_is_better, observed levels (S, M),
    resampled levels (B, S, M), system names, [Decisions per metric])`` per metric group
    of a request :func:`applicable` accepts, on the shared bootstrap plan."""


    all_ds, metrics = cube.select(study, datasets=req.datasets, metrics=req.metrics)
    for d in _walk(all_ds):
        S = len(d.sysnames)
        ia, ib = np.triu_indices(S, 1)
        ia, ib = ia.astype(np.intp), ib.astype(np.intp)
        for kind, ms, valid in d.groups(metrics):
            slab = _slab(d, kind, ms, valid)
            k = slab.centres()
            X = slab.scores
            # compare's bootstrap test: the same plan, kernel and centre (same bits)
            cdist = eng.resample("bootstrap", functools.partial(eng.mean_kernel, centre=k),
                                 X, n=slab.n, n_resamples=req.n_resamples, seed=req.seed,
                                 dataset=d.name, scheduler=req.scheduler,
                                 n_chunks=req.n_chunks, budget=req.budget)
            sys_obs = centred_means(X, k)  # (S, M), as the test's estimates
            if not (np.isfinite(cdist).all() and np.isfinite(sys_obs).all()):
                raise NotFinite(f"dataset {d.name!r}: non-finite resampled means")
            means = slab.means()  # levels: the table's score_a / score_b
            out = []
            for j, metric in enumerate(slab.metrics):
                est = sys_obs[ia, j] - sys_obs[ib, j]
                diff = means[ia, j] - means[ib, j]
                DT = np.ascontiguousarray(cdist[:, :, j].T)  # (S, B)
                p_test, p_adj = _stepdown(DT, ia, ib, est, req)
                del DT
                out.append(Decisions(d.name, metric, d.sysnames, ia, ib, est, diff, p_test,
                                     p_adj, p_adj <= req.alpha, slab.n))
            yield (d.name, np.asarray(slab.metrics), np.asarray(slab.higher_is_better,
                                                                 dtype=bool),
                   slab.means(), levels(cdist, k), d.sysnames, out)


def _separated(DT, ia, ib, est):
    """``(separated, kappa)`` per pair without touching a pair's resamples.

    ``separated``: no resample's null value reaches the observed difference,
    ``max_i |x_i| < |est|`` with a margin, proved from per-system ranges: with ``c_i``
    the mean of resample ``i`` over the systems, ``D_a,i - D_b,i`` lies in ``[lo_a -
    hi_b, hi_a - lo_b]`` (``lo``/``hi``: each system's range of ``D_s,i - c_i``; the shared
    per-resample shift cancels), and rounding is monotone, so every computed ``x_i``
    lies within the bounds (widened by a few units in the last place of the largest
    value). Such a pair's test and step-down p-values are at their floor and its largest
    studentized null value is below its own statistic. ``kappa``: a lower bound of its
    studentized statistic ``|est| / sd`` from an upper bound of the sd (``sqrt(sum x^2 /
    (B - 1))``, from the Gram matrix of the centred rows; 1e-8 relative margins).
    """
    S, B = DT.shape
    common = DT.mean(axis=0)
    mu = DT.mean(axis=1)
    lo, hi = np.empty(S), np.empty(S)
    step = max(1, (64 * 2**20) // (8 * B))
    gram = np.empty((S, S))
    centred = DT - mu[:, None]  # (S, B): the Gram matrix of the centred rows
    np.dot(centred, centred.T, out=gram)
    del centred
    for r in range(0, S, step):
        block = DT[r:r + step] - common
        lo[r:r + step], hi[r:r + step] = block.min(axis=1), block.max(axis=1)
    big = float(np.max(np.abs(DT))) if DT.size else 0.0
    ulp = 1e-13 * max(big, float(np.max(np.abs(est))) if len(est) else 0.0)
    diag = np.diag(gram).copy()
    P = len(ia)
    separated = np.zeros(P, dtype=bool)
    kappa = np.zeros(P)
    for s in range(0, P, 1 << 20):
        sl = slice(s, min(P, s + (1 << 20)))
        a, b, e = ia[sl], ib[sl], est[sl]
        ae = np.abs(e)
        low = (lo[a] - hi[b] - ulp) - e
        high = (hi[a] - lo[b] + ulp) - e
        x = np.maximum(np.abs(low), np.abs(high)) * (1 + 1e-12) + ulp
        separated[sl] = x < ae * (1 - 1e-9) - 4e-12 * np.maximum(1.0, ae)
        q = np.maximum(diag[a] + diag[b] - 2 * gram[a, b], 0.0) + 1e-8 * (diag[a] + diag[b])
        ybar = np.abs(mu[a] - mu[b] - e) + ulp
        sd_up = np.sqrt((q + B * ybar * ybar) / max(B - 1, 1)) * (1 + 1e-8) + ulp
        with np.errstate(divide="ignore"):
            kappa[sl] = np.where(sd_up > 0, ae / sd_up, np.inf)
    return separated, kappa


def _stepdown(DT, ia, ib, est, req):
    """``(p_value, p_adjusted)`` of every pair: the bootstrap test's p-value and the
    max-T step-down's adjusted p (module notes)."""
    # lazily: numba compiles (or loads) the kernels on first use
    from multistat.leaderboard._pair_kernels import (
        pair_statistics,
        pairwise_plan,
        successive_counts,
    )

    P, B = len(ia), DT.shape[1]
    p_test, raw, scale, key, top = (np.full(P, np.nan) for _ in range(5))
    nv = float(req.null_value)
    plan = pairwise_plan(B)
    workers = _threads(req)

    def statistics(idx):
        """The kernel's exact statistics of the pairs ``idx``."""
        outs = [np.empty(len(idx)) for _ in range(5)]
        a, b, e = ia[idx], ib[idx], est[idx]
        chunks = [slice(s, min(len(idx), s + PAIR_CHUNK))
                  for s in range(0, len(idx), PAIR_CHUNK)]

        def run(sl):
            pair_statistics(DT, a[sl], b[sl], e[sl], nv, 0, True, *plan,
                            *(o[sl] for o in outs))

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run, chunks))
        for full, part in zip((p_test, raw, scale, key, top), outs):
            full[idx] = part

    # pairs whose every resample stays short of the observed difference, with a
    # statistic above every other pair's largest null value, have p-values at the floor
    # and never enter another pair's count: only the others need their resamples
    if B > 1 and nv == 0:
        separated, kappa = _separated(DT, ia, ib, est)
    else:
        separated, kappa = np.zeros(P, dtype=bool), np.zeros(P)
    exact = ~separated
    done = np.zeros(P, dtype=bool)
    while True:
        fresh = np.flatnonzero(exact & ~done)
        if len(fresh):
            statistics(fresh)
            done[fresh] = True
        reach = float(np.max(top[exact])) if exact.any() else -np.inf
        late = separated & ~exact & ~(kappa > reach * (1 + 1e-9) + 1e-9)
        if not late.any():
            break
        exact |= late
    # the step-down's order and thresholds among the others (multistat.stepdown)
    idx = np.flatnonzero(exact)
    order = idx[np.lexsort((idx, -key[idx]))]
    t = key[order]
    thresh = t - 1e-12 * np.maximum(1.0, np.abs(t))
    reach = np.maximum.accumulate(top[order][::-1])[::-1]  # max_{l >= k} u_{j_l}
    counts = np.zeros(len(order), dtype=np.int64)  # by position
    unsettled = np.flatnonzero(thresh <= reach)
    if len(unsettled):
        start = int(unsettled[0])
        sub = order[start:]
        a, b, e, s = (np.ascontiguousarray(v[sub]) for v in (ia, ib, est, scale))
        th = thresh[start:]
        bounds = np.linspace(0, B, workers + 1).astype(int)
        parts = [np.zeros(len(sub), dtype=np.int64) for _ in range(workers)]

        def carried(w):
            successive_counts(DT, a, b, e, s, th, 0, bounds[w], bounds[w + 1], parts[w])

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(carried, range(workers)))
        counts[start:] = np.sum(parts, axis=0)
    adj = np.full(P, 1 / (B + 1))  # the separated pairs: no resample reaches them
    adj[order] = np.maximum.accumulate((counts + 1) / (B + 1))
    sep = ~exact
    p_test[sep] = min(1.0, 2.0 * min(1 / (B + 1), (B + 1) / (B + 1)))
    raw[sep] = 1 / (B + 1)
    p_adj = np.minimum(1.0, np.maximum(adj, raw))
    # never below the test's own p-value (multistat.stepdown.adjust_table)
    return p_test, np.fmax(p_adj, p_test)
