"""The batch entry of every registered test: study slab + pairs + context -> BatchResult.

:func:`multistat.compare` knows no test by name. For every dataset it builds one
:class:`Slab` per group of metrics sharing the same scored instances, and for every
registered :class:`~multistat.significance._base.TestSpec` it asks, through
:meth:`TestSpec.run`, for one :class:`BatchResult`: named arrays over (pair, metric).

* A **closed-form** spec (``all_pairs=False``, the default) is called by the driver once
  per slab of pairs, the slab sized by the memory budget; its default batch
  (:func:`closed_form_batch`) calls the vectorized test function on ``x = X[ia]``,
  ``y = X[ib]`` (shape ``(pairs, metrics, instances)``). Specs with a pair-free kernel
  (paired t from the Gram matrix, McNemar from products of 0/1 matrices) provide their
  own ``batch``; the Wilcoxon test's ``batch`` is this one reading the slab's shared
  differences and their sort instead of ``X[ia]``, ``X[ib]`` (``call=``).
* A **resampling** spec sets ``all_pairs=True``: it receives every pair of the group at
  once, because one plan per ``(seed, dataset, kind, block)`` serves all systems and
  pairs, and cuts the pairs into chunks itself with ``ctx.budget``. A registered resampling test
  that gives only ``func`` is called per pair slab with the ``seed``, ``n_resamples``
  (and every other :class:`Context` field its signature names) that ``compare`` was
  given, so the table records what was used.

Shared quantities (per-system means, the Gram matrix of centred scores, the differences
of a pair slab and the sort of their absolute values) are computed once per slab by
:class:`Slab` and handed to kernels explicitly; nothing is cached at module level.

Length (about 620 lines): the four pieces every spec's ``run`` meets -- :class:`Context`
(the options ``compare`` was given), :class:`Slab` (the shared per-slab quantities),
:class:`BatchResult` (the one result shape from kernel to table) and the default
closed-form batch -- kept together because each is read by all the others.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from multistat._budget import Budget
from multistat._centre import candidate_positions, centre_of, centred_means, levels
from multistat._table import constant_string
from multistat._typing import DEFAULT_N_RESAMPLES
from multistat.significance._signrank import signed_rank_info

#: fields every BatchResult holds, each an array (pairs, metrics)
FIELDS = ("statistic", "p_value", "estimate", "ci_low", "ci_high", "n", "note",
          "statistic_kind")
#: instances summed at once in the Gram matrix (fixed, so results do not depend on the
#: memory budget): (systems x GRAM_CHUNK) float64 per metric, two metrics at a time
GRAM_CHUNK = 1 << 16
#: bytes of the blocks of a gathered metric scaled and centred while in cache
CACHE_BLOCK = 1 << 18


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS, built once.

    threadpoolctl resolves the real path of every shared library of the process (~160
    after ``multistat.load``: 8 ms of a fresh process's first ``compare``) and
    keeps those whose file name starts with a prefix it knows; on Linux only the
    libraries whose name in ``/proc/self/maps`` (the kernel's resolved path) has such a
    prefix are handed to it (the same controllers: tests/test_first_call.py). Elsewhere,
    or if threadpoolctl changes, its full scan."""
    # lazily: threadpoolctl's controller, built once on first use
    from threadpoolctl import ThreadpoolController

    class _Prefiltered(ThreadpoolController):
        def _find_libraries_with_linux(self):
            with open("/proc/self/maps", "rb") as f:
                paths = set(self._PATH_RE.findall(f.read()))
            for path in paths:
                name = os.path.basename(path).decode("utf-8", "replace").lower()
                if name.startswith(_THREADPOOL_LIBS):
                    self._make_controller_from_path(path.decode("utf-8"))

    try:
        return _Prefiltered()
    except (AttributeError, OSError, TypeError):  # threadpoolctl's internals changed
        return ThreadpoolController()


#: the file-name prefixes of the libraries threadpoolctl controls (its controllers'
#: ``filename_prefixes``, threadpoolctl 3.6)
_THREADPOOL_LIBS = ("libblas", "libblis", "libflexiblas", "libgomp", "libiomp", "libomp",
                    "libopenblas", "libscipy_openblas", "libmkl_rt")


# ----------------------------------------------------------------------------- context
@dataclass(frozen=True)
class Context:
    """Everything ``compare`` passes to every test (frozen; derive with :meth:`replace`).

    Attributes
    ----------
    alternative, null_value, confidence_level, alpha : the hypothesis and levels
    mde_power : the power at which a test that fills its own ``mde`` column solves it
    statistic : ``"mean"`` or ``"median"`` for tests that compare either
    n_resamples, seed : the resampling plan: blocks of 1000 resamples, one generator per
        ``(seed, dataset, kind, block)`` (:mod:`multistat.engine`)
    scheduler, n_chunks : where the plan blocks run
    ci_method, bootstrap_pvalue : bootstrap options
    budget : :class:`multistat._budget.Budget`, the working memory of one step
    options : this test's own keyword options (``compare(test_options={name: {...}})``):
        keys naming a field of this class override it for this test, the others are
        passed to the test function (e.g. ``zero_method`` of the Wilcoxon test)
    progress : ``progress(units)`` advances the progress bar, or None

    Equivalence (TOST) and other nulls: call ``spec.run(slab, ia, ib,
    ctx.replace(null_value=margin, alternative="less"))`` and again with ``-margin`` and
    ``"greater"``; every spec is callable at any null value and alternative.
    """

    alternative: str = "two-sided"
    null_value: float = 0.0
    confidence_level: float = 0.95
    alpha: float = 0.05
    mde_power: float = 0.8
    statistic: str = "mean"
    n_resamples: int = DEFAULT_N_RESAMPLES
    seed: Any = 0
    scheduler: Any = "threads"
    n_chunks: int | None = None
    ci_method: str = "basic"
    bootstrap_pvalue: str = "shifted"
    budget: Budget = field(default_factory=lambda: Budget.of(None))
    options: Mapping = field(default_factory=dict)
    progress: Callable[[float], None] | None = field(default=None, repr=False,
                                                     compare=False)

    def replace(self, **changes) -> Context:
        return dataclasses.replace(self, **changes)

    def for_test(self, options: Mapping | None) -> Context:
        """This context with a test's own options applied (fields overridden, the rest
        kept in :attr:`options`)."""
        if not options:
            return self.replace(options={})
        names = {f.name for f in dataclasses.fields(self)} - {"options", "budget",
                                                              "progress"}
        over = {k: v for k, v in options.items() if k in names}
        rest = {k: v for k, v in options.items() if k not in names}
        return self.replace(options=rest, **over)

    def tick(self, units: float = 1.0) -> None:
        if self.progress is not None:
            self.progress(units)


# ----------------------------------------------------------------------------- slab
def _scale_centre(xc: np.ndarray, inv: np.ndarray, mu: np.ndarray) -> None:
    """``xc = xc * inv[:, None] - mu[:, None]`` in place for ``xc`` ``(S, n)`` with its
    instances outermost (``xc.T`` C-contiguous, as a gathered metric is): block by block
    of instances, each block multiplied and centred while it is in cache, and viewed as
    a few long rows (``r`` instances each, against ``inv`` and ``mu`` tiled ``r`` times)
    so that numpy's loops run over thousands of values instead of one system's ``S``.
    The same two roundings of every value as the two whole-array operations, bit for
    bit; another layout takes them whole."""
    rows = xc.T  # (n, S): one instance per row
    n, S = rows.shape
    if not rows.flags.c_contiguous or not S:
        xc *= inv[:, None]
        xc -= mu[:, None]
        return
    r = max(1, 2048 // S)  # instances per long row
    block = max(r, CACHE_BLOCK // 8 // S // r * r)  # instances per block, a multiple of r
    inv_r, mu_r = np.tile(inv, r), np.tile(mu, r)
    for s in range(0, n, block):
        part = rows[s:s + block]
        k = part.shape[0] // r * r
        if k:
            v = part[:k].reshape(k // r, r * S)
            v *= inv_r
            v -= mu_r
        if k < part.shape[0]:  # the last few instances
            part[k:] *= inv
            part[k:] -= mu


@dataclass(eq=False)
class Slab:
    """One group of one dataset: metrics scored on the same instances.

    Attributes
    ----------
    scores : ``(systems, metrics, instances)`` float64 (instances sorted by label)
    dataset : dataset name (part of every plan's key)
    metrics, systems : names
    metric_kinds : ``"mean"``, ``"binary"`` or ``"corpus"`` per metric
    corpus : ``(fn, stats)`` for a corpus metric (``stats`` ``(systems, n, K)``), else None
    corpus_observed : ``(systems, 1)`` corpus-metric scores, for a corpus metric
    clusters : group code per instance when ``compare(cluster="group")`` (resampling
        tests then resample whole groups, :mod:`multistat._cluster`), else None
    run_scores : ``(systems, metrics, instances, runs)`` per-run scores when the study has
        runs (NaN where a system lacks a run), else None; ``scores`` are their run means
    ratings : ``(systems, metrics, instances, raters)`` human ratings by rater when the
        study has them (NaN where a rater did not rate), else None; ``scores`` are their
        means over the raters present
    higher_is_better : per metric
    order : None, or the canonical instance order of the array given as ``scores``
        (instances sorted by label): the scores are then the study's own array, and
        ``scores`` is gathered in that order (``given[..., order]``) on first use.
        Per-system means and the Gram matrix (:meth:`means`, :meth:`gram_scaled`) gather
        one metric at a time instead, so a t test does not copy the whole cube. The
        values are those of the gathered array, bit for bit: each metric's rows are
        gathered with the memory layout they have in it (instances outermost), on which
        numpy's sums run in the same order.
    present : None for a complete group; for a group with holes (a study read with
        ``missing="keep"``) ``(systems, instances)`` bool, the instances each system has
        (``scores`` is NaN elsewhere): ``compare`` then runs paired tests on each pair's
        joint instances (:mod:`multistat.significance._holes`)
    """

    scores: np.ndarray
    dataset: str = ""
    metrics: tuple = ()
    systems: tuple = ()
    metric_kinds: tuple = ()
    corpus: tuple | None = None
    corpus_observed: np.ndarray | None = None
    clusters: np.ndarray | None = None
    run_scores: np.ndarray | None = None
    ratings: np.ndarray | None = None
    higher_is_better: tuple = ()
    order: np.ndarray | None = field(default=None, repr=False)
    present: np.ndarray | None = field(default=None, repr=False)
    _memo: dict = field(default_factory=dict, repr=False)

    def _given(self) -> np.ndarray:
        """The scores as given (instances in :attr:`order` still to be gathered)."""
        return self.__dict__["_scores"]

    @property
    def n(self) -> int:
        return self._given().shape[-1]

    @property
    def shape(self) -> tuple[int, int, int]:
        return self._given().shape

    def system_scores(self, systems) -> np.ndarray:
        """``scores[systems]`` ``(k, M, n)`` (a lazy :attr:`order` gathers only these
        systems: the values of the gathered cube's rows)."""
        if self.__dict__.get("order") is not None:
            return self._given()[systems][..., self.order]
        return self.scores[systems]

    @property
    def is_corpus(self) -> bool:
        return self.corpus is not None

    @property
    def all_binary(self) -> bool:
        return bool(self.metric_kinds) and all(k == "binary" for k in self.metric_kinds)

    def _extremes(self) -> tuple[np.ndarray, np.ndarray]:
        """min and max score per system and metric ``(S, M)`` (computed once; NaN if a
        score is NaN)."""
        if "extremes" not in self._memo:
            X = self._given()  # max and min do not depend on the instance order
            S, M, n = X.shape
            lo, hi = np.zeros((S, M)), np.zeros((S, M))
            if n:
                def metric(m):  # two reductions, no |X| temporary (numpy drops the GIL)
                    X[:, m].min(-1, out=lo[:, m])
                    X[:, m].max(-1, out=hi[:, m])

                self._per_metric(metric, M, S, n)
            self._memo["extremes"] = lo, hi
        return self._memo["extremes"]

    def absmax(self) -> np.ndarray:
        """max |score| per system and metric ``(S, M)`` (computed once; NaN if a score
        is NaN)."""
        if "absmax" not in self._memo:
            lo, hi = self._extremes()
            self._memo["absmax"] = np.maximum(hi, -lo)
        return self._memo["absmax"]

    def centres(self) -> np.ndarray:
        """The per-metric constant ``k`` ``(M,)`` every sum over instances subtracts
        first: the lower median of every system's scores on a few instances, or 0
        (:mod:`multistat._centre`: shift invariance)."""
        if "centres" not in self._memo:

            pos = candidate_positions(self.n)
            order = self.__dict__.get("order")
            given = self._given()  # the canonical positions, without gathering the cube
            cand = given[..., pos if order is None else order[pos]]
            self._memo["centres"] = centre_of(cand, *self._extremes(), self.n)
        return self._memo["centres"]

    def spread(self) -> np.ndarray:
        """max |score - k| per system and metric ``(S, M)`` (:meth:`centres`; NaN if a
        score is NaN): :meth:`absmax` where ``k`` is 0."""
        k = self.centres()
        if not np.any(k):
            return self.absmax()
        if "spread" not in self._memo:
            lo, hi = self._extremes()
            self._memo["spread"] = np.maximum(hi - k, k - lo)
        return self._memo["spread"]

    def scales(self) -> np.ndarray:
        """Per-system power-of-two scales ``(S, M)`` of the centred scores: ``c = 2^e``
        with ``max |x - k| / c`` in ``[1/2, 1)`` (:meth:`spread`; 1 where it is 0, NaN or
        not finite). Dividing by a power of two is exact, so sums and products of the
        scaled scores are the unscaled ones times a power of two, bit for bit, without
        overflow or underflow at any scale."""
        if "scales" not in self._memo:
            m = self.spread()
            ok = (m > 0) & np.isfinite(m)
            _, e = np.frexp(np.where(ok, m, 1.0))
            self._memo["scales"] = np.where(ok, np.ldexp(1.0, e), 1.0)
        return self._memo["scales"]

    def means(self) -> np.ndarray:
        """Per-system mean scores ``(S, M)``: :meth:`centred_means` plus the metric's
        :meth:`centres` (one rounding at the level's own magnitude)."""
        if "levels" not in self._memo:

            self._memo["levels"] = levels(self.centred_means(), self.centres())
        return self._memo["levels"]

    def observed(self) -> np.ndarray:
        """Each system's observed score per metric ``(S, M)``: the corpus metric's score
        (:attr:`corpus_observed`) for a corpus slab, else :meth:`means`."""
        if self.corpus is None:
            return self.means()
        if self.corpus_observed is None:
            raise ValueError("a corpus slab without its corpus_observed scores")
        return self.corpus_observed

    def centred_means(self) -> np.ndarray:
        """Per-system means of the centred scores ``mean(x - k)`` ``(S, M)`` (computed
        once; :meth:`centres`). Scores so large that their sum could overflow are
        averaged after dividing by :meth:`scales` (the same bits wherever the plain sum
        does not overflow; such scores are not centred)."""
        if "means" not in self._memo:
            if self._gathers_moments():
                self._gathered_moments()
                return self._memo["means"]

            X, k = self.scores, self.centres()
            if self._big_sums():
                c = self.scales()
                out = np.empty(X.shape[:-1])
                for m in range(X.shape[1]):  # as _gathered_moments: (x - k) / c
                    xm = X[:, m] - k[m] if k[m] else X[:, m]
                    out[:, m] = (xm / c[:, m, None]).mean(-1) * c[:, m]
                self._memo["means"] = out
            else:
                self._memo["means"] = centred_means(X, k)
        return self._memo["means"]

    def _big_sums(self) -> bool:
        """Scores so large that a sum over the instances could overflow (those are not
        centred: :mod:`multistat._centre`)."""
        X = self._given()
        return bool(X.size and np.nanmax(self.absmax(), initial=0.0) * max(X.shape[-1], 1)
                    > 2.0 ** 1000)

    def _gathers_moments(self) -> bool:
        """Means and Gram matrix from one gathered metric at a time (a lazy
        :attr:`order`, and one Gram chunk: the means need whole rows)."""
        return self.order is not None and 0 < self.n <= GRAM_CHUNK

    def _per_metric(self, work, M: int, S: int, n: int) -> None:
        """``work(m)`` for every metric: two metrics at a time on one BLAS thread each.

        One BLAS thread per product, as in the resampling engine: the product is small
        (100 systems x 10^4 instances: 20 ms), and a 2-thread OpenBLAS product took
        0.3-1.3 s whenever the other core was busy (measured on a loaded 2-core
        machine); parallelism comes from two metrics at a time instead (the bits are the
        same either way)."""
        workers = min(M, 2, os.cpu_count() or 1)
        with _blas_controller().limit(limits=1, user_api="blas"):
            if workers > 1 and S * n >= 1 << 18:
                # the odd metrics on one helper thread, the even ones here (no pool to
                # build and tear down: one thread start instead of two)
                odd = background(lambda: [work(m) for m in range(1, M, 2)],
                                 name="multistat-gram")
                try:
                    for m in range(0, M, 2):
                        work(m)
                finally:
                    odd()
            else:
                for m in range(M):
                    work(m)

    def _gathered_moments(self) -> None:
        """:meth:`means` and :meth:`gram_scaled` from the scores as given, gathering one
        metric's rows in :attr:`order` at a time (``(S, n)``, contiguous, as the slice of
        the gathered cube) and centring them in place: the same operations on the same
        values as the two methods on the gathered cube, without the cube."""
        X, order, c, k = self._given(), self.order, self.scales(), self.centres()
        S, M, n = X.shape
        inv = 1.0 / c  # powers of two: exact
        big = self._big_sums()
        means = np.empty((S, M))
        G = np.zeros((M, S, S))

        def metric(m):  # numpy releases the GIL: metrics run side by side
            # (S, n) with instances outermost, as scores[:, m] and scores[:, m] * inv
            xc = X[:, m][:, order]
            if k[m]:  # centred in place: x - k, as centred_means and gram_scaled do
                xc -= k[m]
            mean = (xc / c[:, m, None]).mean(-1) * c[:, m] if big else xc.mean(-1)
            means[:, m] = mean
            _scale_centre(xc, inv[:, m], mean / c[:, m])
            G[m] += xc @ xc.T

        self._per_metric(metric, M, S, n)
        self._memo["means"] = means
        self._memo["gram"] = G

    def gram_scaled(self) -> tuple[np.ndarray, np.ndarray]:
        """Gram matrices of the centred scores divided by the per-system :meth:`scales`
        ``c``: ``(Gs (M, S, S), c (S, M))`` with ``Gs[m, a, b] = sum_i (x_ai - xbar_a)
        (x_bi - xbar_b) / (c_am c_bm)`` - one BLAS product per metric, summed over fixed
        chunks of :data:`GRAM_CHUNK` instances (computed once). Scale-free: neither
        1e300 nor 1e-300 scores overflow or underflow, and ``Gs * c_a * c_b`` is the
        unscaled Gram matrix bit for bit wherever that does not overflow."""
        if "gram" not in self._memo:
            if self._gathers_moments():
                self._gathered_moments()
                return self._memo["gram"], self.scales()
            X, c, k = self.scores, self.scales(), self.centres()
            mu = self.centred_means() / c
            inv = 1.0 / c  # powers of two: exact
            S, M, n = X.shape
            G = np.zeros((M, S, S))

            def metric(m):  # numpy releases the GIL: metrics run side by side
                for s in range(0, n, GRAM_CHUNK):
                    if k[m]:  # (x - k) / c: the centred scores, scaled exactly
                        xc = X[:, m, s:s + GRAM_CHUNK] - k[m]
                        xc *= inv[:, m, None]
                    else:
                        xc = X[:, m, s:s + GRAM_CHUNK] * inv[:, m, None]
                    xc -= mu[:, m, None]
                    G[m] += xc @ xc.T

            self._per_metric(metric, M, S, n)
            self._memo["gram"] = G
        return self._memo["gram"], self.scales()

    def gram(self) -> np.ndarray:
        """Gram matrices of the centred scores ``(M, S, S)``: ``G[m, a, b] =
        sum_i (x_ai - xbar_a)(x_bi - xbar_b)`` (from :meth:`gram_scaled`; entries overflow
        to inf for scores near the float range - kernels use the scaled form)."""
        G, c = self.gram_scaled()
        ct = c.T  # (M, S)
        with np.errstate(over="ignore", invalid="ignore"):
            return G * ct[:, :, None] * ct[:, None, :]

    def _pair_key(self, ia, ib):
        return (np.asarray(ia).tobytes(), np.asarray(ib).tobytes())

    def diff(self, ia, ib) -> np.ndarray:
        """``X[ia] - X[ib]`` ``(p, M, n)`` for one slab of pairs (the last one is kept)."""
        key = ("diff",) + self._pair_key(ia, ib)
        hit = self._memo.get("diff")
        if hit is None or hit[0] != key:
            self._memo.pop("rank_info", None)
            self._memo.pop("diff", None)  # (its memory is free before the next one)
            X = self.scores
            ia, ib = np.asarray(ia, dtype=np.intp), np.asarray(ib, dtype=np.intp)
            if X[:1].size < 4096:  # short rows: one vectorized gather is cheaper
                d = X[ia] - X[ib]
            else:  # one pair at a time from the rows of X, without gathered copies of
                # X[ia] and X[ib] (the same subtraction, so the same bits); one pass over
                # memory: 29 ms for 600 pairs of 2 x 10^4 values, against 58 ms for
                # np.take(X, ia) then chunked -= X[ib] (three passes)
                d = np.empty((ia.size,) + X.shape[1:])
                for p, (a, b) in enumerate(zip(ia.tolist(), ib.tolist())):
                    np.subtract(X[a], X[b], out=d[p])
            self._memo["diff"] = (key, d)
        return self._memo["diff"][1]

    def rank_info(self, ia, ib):
        """Sort information of ``X[ia] - X[ib]`` for rank statistics
        (:func:`multistat.significance._signrank.signed_rank_info`), shared by the
        Wilcoxon test, Wilcoxon r and Hodges-Lehmann of one slab of pairs (kept for the
        last slab)."""
        key = ("rank",) + self._pair_key(ia, ib)
        hit = self._memo.get("rank_info")
        if hit is None or hit[0] != key:
            self._memo["rank_info"] = (key, signed_rank_info(self.diff(ia, ib)))
        return self._memo["rank_info"][1]

    def for_pairs(self, name: str, ia, ib, make):
        """``make()``, a quantity of one slab of pairs, computed once for that slab (the
        last one is kept): e.g. the pairs' mean and sd of differences, which the t test
        and the effect-size/``mde`` columns both need."""
        key = (name,) + self._pair_key(ia, ib)
        hit = self._memo.get(("pairs", name))
        if hit is None or hit[0] != key:
            hit = self._memo[("pairs", name)] = (key, make())
        return hit[1]

    def release_pairs(self) -> None:
        """Drop the per-pair-slab quantities (differences, sorts, :meth:`for_pairs`)."""
        self._memo.pop("diff", None)
        self._memo.pop("rank_info", None)
        for k in [k for k in self._memo if isinstance(k, tuple) and k[0] == "pairs"]:
            del self._memo[k]


def _scores_get(self) -> np.ndarray:
    X = self.__dict__["_scores"]
    if self.__dict__.get("order") is not None:  # gathered once, on first use
        X = X[..., self.order]  # the layout of an xarray isel: instances outermost
        X.flags.writeable = False
        self.__dict__["_scores"] = X
        self.__dict__["order"] = None
    return X


def _scores_set(self, value) -> None:
    self.__dict__["_scores"] = value
    self.__dict__.pop("order", None)


#: ``(systems, metrics, instances)`` float64, instances in canonical order (a property
#: over the dataclass field: a lazy :attr:`Slab.order` is gathered on first use)
Slab.scores = property(  # type: ignore[assignment]  # the field becomes a property here
    _scores_get, _scores_set, doc="(systems, metrics, instances) float64 scores, instances "
    "sorted by label")


# ----------------------------------------------------------------------------- result
@dataclass
class BatchResult:
    """One test's results over (pair, metric): named arrays of shape ``(P, M)``.

    ``arrays`` always holds :data:`FIELDS` (``note`` and ``statistic_kind`` as object
    arrays; a batch may give one string for every row, ``np.array("", dtype=object)``,
    which stays one broadcast string into the table); further keys (e.g.
    ``n_resamples``, ``seed``, ``se``) become table columns.
    ``systems``: optionally the per-system resampled statistic ``(B, S, M)`` (bootstrap),
    used for the per-system table when it is asked for.
    ``resampled``: optionally the per-system arrays on the test's shared plan from which
    every pair's resampled statistic is formed (bootstrap ``{"dist": (B, S, M)}``;
    permutation ``{"flips": (B, S + 1, M)}``, the last row the flipped sum of ones, or
    ``{"swapped": (B, S, K), "total": (S, K)}`` for a corpus metric): the
    Westfall-Young step-down (:mod:`multistat.comparison.stepdown`) forms its joint null from them
    instead of drawing the plan again.
    """

    test: str
    arrays: dict
    systems: np.ndarray | None = None
    resampled: dict | None = None

    def __post_init__(self):
        shape = None
        for k, v in list(self.arrays.items()):
            v = np.asarray(v)
            if v.ndim == 2:
                shape = v.shape
                break
        if shape is None:
            raise ValueError("BatchResult needs at least one (pairs, metrics) array")
        for k, v in list(self.arrays.items()):
            self.arrays[k] = np.broadcast_to(np.asarray(v), shape)
        for k in FIELDS:
            if k not in self.arrays:
                fill = "" if k in ("note", "statistic_kind") else np.nan
                self.arrays[k] = np.full(shape, fill, dtype=object if isinstance(fill, str)
                                         else float)

    @property
    def shape(self) -> tuple[int, int]:
        return self.arrays["p_value"].shape

    def __getitem__(self, key):
        return self.arrays[key]

    def __contains__(self, key):
        return key in self.arrays

    @classmethod
    def concat(cls, parts: list[BatchResult]) -> BatchResult:
        """Stack results over consecutive chunks of pairs."""
        if len(parts) == 1:
            return parts[0]
        keys = [k for k in parts[0].arrays if all(k in p.arrays for p in parts)]

        def stack(k):  # a string every part broadcasts stays one broadcast string
            c = constant_string(parts[0].arrays[k])
            if c is not None and all(constant_string(p.arrays[k]) == c for p in parts):
                return np.array(c, dtype=object)
            return np.concatenate([p.arrays[k] for p in parts])

        return cls(parts[0].test, {k: stack(k) for k in keys},
                   systems=parts[0].systems, resampled=parts[0].resampled)

    def to_frame(self, pairs=None, metrics=None) -> pd.DataFrame:
        """Tidy frame, one row per pair x metric (pair-major), with ``pair`` and
        ``metric`` labels (indices unless given) and every array as a column."""
        P, M = self.shape
        pl = np.arange(P) if pairs is None else np.asarray(
            [f"{a}-{b}" if isinstance(a, str) else (a, b) for a, b in pairs]
            if pairs is not None and np.ndim(pairs) == 2 else pairs, dtype=object)
        ml = np.arange(M) if metrics is None else np.asarray(metrics, dtype=object)
        out = {"test": self.test, "pair": np.repeat(pl, M), "metric": np.tile(ml, P)}
        for k, v in self.arrays.items():
            out[k] = np.asarray(v).reshape(P * M)
        return pd.DataFrame(out)


def not_applicable(test: str, shape, note: str, statistic_kind: str = "mean"
                   ) -> BatchResult:
    """All-NaN result with a note (e.g. a per-instance test on a corpus metric)."""
    return BatchResult(test, {"n": np.zeros(shape, dtype=np.int64),
                              "note": np.full(shape, note, dtype=object),
                              "statistic_kind": np.full(shape, statistic_kind,
                                                        dtype=object)})


def from_test_result(res, shape, default_kind: str, caught=()) -> dict:
    """Arrays ``(P, M)`` from a :class:`TestResult` over a (pairs, metrics) batch."""
    def one(text):  # one broadcast string (BatchResult, _table.flat)
        return np.broadcast_to(np.array(str(text), dtype=object), shape)

    out = {"n": np.broadcast_to(np.asarray(res.n), shape),
           "statistic_kind": one(res.statistic_kind or default_kind)}
    for k in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
        out[k] = np.broadcast_to(np.asarray(getattr(res, k), dtype=float), shape)
    note = np.asarray(res.note, dtype=object)
    out["note"] = np.broadcast_to(note, shape) if note.ndim else one(note.item())
    if caught and not np.any(out["note"] != ""):
        out["note"] = one("; ".join(sorted({str(w.message) for w in caught}))[:300])
    return out


# ----------------------------------------------------------------------------- defaults
def accepted_keywords(func) -> set[str] | None:
    """Keyword names ``func`` accepts (None: it takes ``**kwargs``)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {name for name, p in sig.parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"x", "y"}


#: Context fields passed to a test function whose signature names them
PASSED_FIELDS = ("alternative", "null_value", "confidence_level", "statistic",
                 "n_resamples", "seed", "ci_method", "bootstrap_pvalue")


def call_kwargs(func, ctx: Context) -> dict:
    """Keywords for ``func``: the context fields it names, then the test's options."""
    names = accepted_keywords(func)
    kw = {k: getattr(ctx, k) for k in PASSED_FIELDS if names is None and k in (
        "alternative", "null_value", "confidence_level") or names is not None and k in names}
    kw.update(ctx.options)
    return kw


def closed_form_batch(spec, slab: Slab, ia, ib, ctx: Context, call=None) -> BatchResult:
    """Default batch: the vectorized ``spec.func`` on ``(X[ia], X[ib])`` of one pair slab.

    Warnings raised by the function become the rows' note when it gave none. ``call``:
    ``call(slab, ia, ib, kw) -> TestResult`` replaces ``spec.func(X[ia], X[ib], **kw)``
    for a spec whose ``batch`` reads the slab's shared differences instead of gathering
    the scores again (:func:`differences_batch`: the Wilcoxon and sign tests).
    """
    shape = (len(ia), slab.shape[1])
    kw = call_kwargs(spec.func, ctx)
    names = accepted_keywords(spec.func)
    if names is not None and "memory_limit" in names and "memory_limit" not in kw:
        kw["memory_limit"] = ctx.budget  # compare's budget, inside the test too
    if names is not None and "info" in names and "info" not in kw:
        info = slab.rank_info(ia, ib)  # one sort of |a - b| shared with the effect sizes
        if info is not None:
            kw["info"] = info
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if call is None:
            res = spec.func(slab.scores[ia], slab.scores[ib], **kw)
        else:
            res = call(slab, ia, ib, kw)
    out = from_test_result(res, shape, spec.statistic_kinds[0], caught)
    if spec.resampling:
        out["n_resamples"] = np.full(shape, ctx.n_resamples)
        out["seed"] = np.full(shape, ctx.seed if isinstance(ctx.seed, int) else -1)
    return BatchResult(spec.name, out)


def differences_batch(name: str, public, private, get_spec: Callable):
    """The ``batch`` of the rank test registered as ``name``: :func:`closed_form_batch`
    computing ``private`` on the slab's differences and their sort
    (:meth:`Slab.rank_info`, shared with the effect sizes and the other rank tests of the
    slab) instead of ``public(X[ia], X[ib])``, which would gather and subtract again: the
    same numbers, so the same result bit for bit.

    ``private(d, None, _diff=True, info=info, **keywords)`` gets ``public``'s keyword
    defaults overridden by the batch's keywords, those its signature names. Differences
    that are all finite mean finite scores and no overflow, all the input checks ask;
    otherwise ``public`` runs on the scores and names the problem. The pair slab is
    already sized by ``compare``'s budget.
    """
    defaults = {k: p.default for k, p in inspect.signature(public).parameters.items()
                if p.default is not p.empty}
    names = accepted_keywords(private)

    def call(slab, ia, ib, kw):
        info = slab.rank_info(ia, ib)
        if info is None or not info.all_finite:  # (checked once for the slab's tests)
            X = slab.scores
            return public(X[ia], X[ib], **kw)
        args = {**defaults, **kw, "info": info}
        return private(info.d, None, _diff=True,
                       **{k: v for k, v in args.items() if names is None or k in names})

    def batch(slab, ia, ib, ctx):  # get_spec(name): the spec registered as ``name``
        return closed_form_batch(get_spec(name), slab, ia, ib, ctx, call=call)

    return batch


def background(fn, *args, name="multistat-background"):
    """``fn(*args)`` started on a daemon thread; returns a zero-argument callable that
    waits for it and gives its value (or raises its exception in the caller's thread)."""

    box: dict = {}

    def work():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()

    def result():
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result
