"""compare() holds as few copies of the score cube as it can (issue 9: the 200 x 10 x
50,000 cube is 800 MB on its own)."""

import hashlib
import tracemalloc

import numpy as np

from multistat import cube
from multistat.comparison import compare, study_hash


def _study(S, M, n, labels, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(S, M, n)) + np.linspace(0, 0.3, S)[:, None, None], 3)
    return cube.make_study({"d": cube.make_dataset(
        "d", X, systems=[f"s{i}" for i in range(S)], metrics=[f"m{j}" for j in range(M)],
        instances=labels(n))})


def test_study_hash_reads_the_buffer():
    """The hash of the buffer equals the hash of its bytes (no ``tobytes`` copy)."""
    st = _study(3, 2, 20, lambda n: range(n))
    ds = cube.datasets(st)["d"]
    h = hashlib.sha256(b"d")
    h.update(np.ascontiguousarray(ds["score"].values).tobytes())
    h.update("\x1f".join(map(str, ds.system.values)).encode())
    h.update("\x1f".join(map(str, ds.metric.values)).encode())
    h.update("\x1f".join(map(str, ds.instance.values)).encode())
    assert study_hash(st) == h.hexdigest()


def test_peak_memory_is_about_two_cubes():
    """Python-side peak allocations of a t-test compare over a 12.8 MB cube (no pairs
    formed: the t test uses the Gram matrix): the canonical copy (labels not sorted as
    strings) and the slab, plus the Gram chunks and the table."""
    S, M, n = 40, 4, 10_000
    st = _study(S, M, n, lambda n: range(n))  # '0', '1', '10', ...: reordered
    cube_bytes = S * M * n * 8
    compare(st, tests=("t",), effect_sizes=False, correction=None)  # imports, caches
    tracemalloc.start()
    try:
        compare(st, tests=("t",), effect_sizes=False, correction=None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.8 * cube_bytes, peak / cube_bytes
