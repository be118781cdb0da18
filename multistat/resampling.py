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
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np

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


def bootstrap_counts(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """Count matrix ``(size, n)`` (float64, exact integers) of ``size`` bootstrap resamples."""
    idx = rng.integers(0, n, size=(size, n))
    flat = (idx + (np.arange(size) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)


def sign_flips(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """+-1 matrix ``(size, n)`` (float64): each instance's difference flipped w.p. 1/2."""
    return 1.0 - 2.0 * rng.integers(0, 2, size=(size, n)).astype(np.float64)


_PLAN_FUNCS = {"bootstrap": bootstrap_counts, "permutation": sign_flips}


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
