"""BLAS kernels whose products do not depend on their shape: what bit-identity needs.

The resampling engine multiplies a plan (resamples x instances) by scores (instances x
columns). Under a small memory limit a plan block is consumed in row chunks, and the
studentized bootstrap forms its pairs in chunks; each chunk's product must give every entry
the bits the whole product gives, so that tables are bit-identical for every memory limit.

OpenBLAS's Haswell kernels (AVX2 + FMA) do: each entry is summed in an order fixed by the
instance count alone. Its AVX-512 kernels (SkylakeX and later, which it picks on such CPUs)
do not: a product with ``M N K <= 100**3`` runs through small-matrix kernels that sum in
another order, and in larger products an entry's last bit depends on where its column
falls in the blocking. Measured on this project's AVX-512 machine (OpenBLAS 0.3.31,
2026-11-24, ``benchmarks/blas_shapes.py``): 20,022 of 28,056 row chunks of 1,000 x n count
plans (n 7 to 20,000, 2 to 700 columns, chunks of 4 to 500 rows) differed from the whole
product in at least one bit with the AVX-512 kernels, none with the Haswell kernels; and
with the Haswell kernels the README's resampled numbers are those of the AVX2 machine
they were first printed on.

``OPENBLAS_CORETYPE=Haswell`` selects those kernels, and OpenBLAS reads it once, when numpy
loads it. The command line sets it before numpy is imported (:func:`pin_kernels`), and
``make test`` / ``make report`` export it; a library user who wants tables bit-identical
across memory limits (and across x86-64 machines) sets it in the environment before
Python starts. :func:`shape_consistent` says whether the BLAS of this process is
shape-independent. The cost: GEMMs 1.25-1.6 times slower than with AVX-512 kernels (the
script above times one: 0.074 s against 0.059 s).
"""

from __future__ import annotations

import functools
import os
import platform
import sys

#: the OpenBLAS core whose products are shape-independent (see the module docstring)
CORETYPE = "Haswell"


def _cpu_has_avx2_fma() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"avx2", "fma"} <= flags
    except OSError:
        pass
    return False


def can_pin() -> bool:
    """Whether this machine runs OpenBLAS's Haswell kernels: x86-64 Linux, AVX2 and FMA."""
    return platform.machine().lower() in ("x86_64", "amd64") and _cpu_has_avx2_fma()


def pin_kernels(environ=None) -> bool:
    """Set ``OPENBLAS_CORETYPE=Haswell`` in ``environ`` (default ``os.environ``) when it is
    unset, numpy is not loaded yet (OpenBLAS reads it at load) and the CPU is x86-64 Linux
    with AVX2 and FMA (the kernels' instructions). Returns whether the variable now names
    :data:`CORETYPE`. A value the user set is kept."""
    environ = os.environ if environ is None else environ
    if "OPENBLAS_CORETYPE" not in environ and "numpy" not in sys.modules and can_pin():
        environ["OPENBLAS_CORETYPE"] = CORETYPE
    return environ.get("OPENBLAS_CORETYPE") == CORETYPE


@functools.lru_cache(maxsize=1)
def shape_consistent() -> bool:
    """Whether this process's BLAS gives row chunks and small products the bits of the whole
    product (one BLAS thread, as the engine runs it): a 64 x 3,000 count plan times 303
    columns, whole against chunks of 4 and 40 rows and a 4 x 4 corner; a few milliseconds,
    once per process."""
    # heavy: numpy, lazily
    import numpy as np

    # lazily: `multistat --help` does not load it (startup time)
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    plan = rng.integers(0, 3, (64, 3000)).astype(np.float64)
    data = rng.normal(size=(303, 3000))
    with threadpool_limits(limits=1, user_api="blas"):
        whole = plan @ data.T
        if not np.array_equal(plan[:4] @ data[:4].T, whole[:4, :4]):
            return False
        for rows in (4, 40):
            for start in range(0, 64, rows):
                part = plan[start:start + rows] @ data.T
                if not np.array_equal(part, whole[start:start + rows]):
                    return False
    return True
