"""Shared helpers for the side-by-side benchmarks (not timed tests)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the real data slices shipped with the tests (tests/data/README.md)
TEST_DATA = ROOT / "tests" / "data"


def timed(fn, *args, repeat: int = 1, **kwargs):
    """(best wall seconds over ``repeat`` runs, last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t)
    return best, out


def run_isolated(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it must print one JSON object last.
    Adds ``peak_rss_mib`` (the child's maximum resident set size)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ))
    if proc.returncode:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.setdefault("peak_rss_mib", usage.ru_maxrss / 1024)
    return out


def table(rows: list[dict], cols: list[str]) -> str:
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in cols}
    head = "  ".join(c.ljust(widths[c]) for c in cols)
    lines = [head, "  ".join("-" * widths[c] for c in cols)]
    for r in rows:
        lines.append("  ".join(_fmt(r.get(c)).ljust(widths[c]) for c in cols))
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def machine() -> str:
    import numpy as np
    from threadpoolctl import threadpool_info

    blas = [f"{i['internal_api']} {i.get('version')} {i.get('architecture') or ''} "
            f"kernels ({i.get('num_threads')} threads)"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    return (f"python {sys.version.split()[0]}, numpy {np.__version__}, cores {os.cpu_count()},"
            f" BLAS {', '.join(blas)}")
