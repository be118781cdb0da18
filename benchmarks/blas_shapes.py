"""Do this process's BLAS products depend on their shape? (the source of multistat/_blas.py)

The resampling engine's products are ``plan @ scores.T``; under a small memory limit a
plan block of 1,000 rows is consumed in row chunks. This script multiplies random count
plans (1,000 x n, entries 0-2) by random scores (columns x n) once whole and once chunk by
chunk (chunks of 4 to 500 rows, as ``resample`` cuts them), with one BLAS thread as the
engine runs, and counts the chunks whose product is not the whole product's rows bit for
bit, and times one product of the engine's size (1,000 x 10,000 plan by 200 columns, the
median of 5, one thread) for the kernels' cost. Run it with and without ``OPENBLAS_CORETYPE=Haswell`` (about a minute each)::

    .venv/bin/python benchmarks/blas_shapes.py
    OPENBLAS_CORETYPE=Haswell .venv/bin/python benchmarks/blas_shapes.py
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

N_VALUES = (7, 50, 300, 1000, 2000, 5000, 20000)
COLUMNS = (2, 3, 9, 17, 49, 101, 303, 700)
SLAB_ROWS = (4, 8, 12, 40, 100, 200, 500)


def count_differing_chunks(seed: int = 1) -> tuple[int, int, dict]:
    rng = np.random.default_rng(seed)
    bad = total = 0
    by_shape: dict = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for n in N_VALUES:
            for c in COLUMNS:
                plan = rng.integers(0, 3, (1000, n)).astype(float)
                scores = rng.normal(size=(c, n)) * rng.choice([1e-3, 1.0, 1e4], size=(c, 1))
                whole = plan @ scores.T
                for rows in SLAB_ROWS:
                    for start in range(0, 1000, rows):
                        total += 1
                        part = plan[start:start + rows] @ scores.T
                        if not np.array_equal(part, whole[start:start + rows]):
                            bad += 1
                            by_shape[(n, c)] = by_shape.get((n, c), 0) + 1
    return bad, total, by_shape


def gemm_seconds(repeat: int = 5) -> float:
    import time

    rng = np.random.default_rng(0)
    plan = rng.integers(0, 3, (1000, 10_000)).astype(float)
    scores = rng.normal(size=(200, 10_000))
    times = []
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(repeat):
            t = time.perf_counter()
            plan @ scores.T
            times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    kernels = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
               for i in threadpool_info() if i.get("user_api") == "blas"]
    bad, total, by_shape = count_differing_chunks()
    print(f"BLAS {', '.join(kernels)}: {bad} of {total} row chunks differ from the whole "
          f"product in at least one bit; a 1,000 x 10,000 x 200 product takes "
          f"{gemm_seconds():.3f} s")
    for (n, c), k in sorted(by_shape.items()):
        print(f"  n = {n:>6}, {c:>3} columns: {k} chunks")


if __name__ == "__main__":
    main()
