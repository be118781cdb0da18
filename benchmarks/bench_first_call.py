"""The first ``compare`` call of a fresh process (issue 23.8) beside scipy reading the
same files.

A user runs ``multistat compare`` once, not in a warm loop. The study of the leaderboard
benchmark's t row (100 systems x 2 metrics x 10,000 instances, scores rounded to 4
decimals, ``bench_leaderboard.make_study``) is written once as wide Parquet files, one per
metric. Then, ``--runs`` times (default 5), alternating, each in a fresh interpreter:

* multistat: ``multistat.load({metric: file})`` (not timed), then the first
  ``multistat.compare(study, tests=("t",), effect_sizes=False)`` of the process, timed
  with everything it triggers (the lazy import of ``multistat.comparison`` and of what
  the t path needs, thread start-up, the BLAS controller), then the same call again (the
  warm call: what the first one pays beyond it is first-call cost). The import of
  ``multistat.comparison`` alone is timed in a second process of each run, before its
  call, so the table can show call = import + compute.
* scipy: ``pandas.read_parquet`` of the same files (not timed), then
  ``from scipy import stats`` and ``scipy.stats.ttest_rel`` over chunks of 1,000 pairs
  (timed: "scipy, import included"; also without the import). Its p-values are compared
  with multistat's (max |difference| printed).

Byte code is cached as in an installed package (``PYTHONDONTWRITEBYTECODE`` is dropped for
the children and one untimed run writes multistat's ``.pyc`` files first; scipy's come
with its wheel). Medians over the runs are printed and written to ``benchmarks/results/first_call.json``.
Run: ``.venv/bin/python benchmarks/bench_first_call.py [--runs 5]``. The machine may be
shared: the two sides alternate, so contention hits both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, table

S, M, N = 100, 2, 10_000


def write_files(folder: Path) -> dict[str, str]:
    """The t row's study as wide Parquet files ``m0.parquet, m1.parquet`` (one column
    per system, one row per instance)."""
    import pandas as pd
    from bench_leaderboard import make_study

    X = make_study(S, M, N)["lb"].ds["score"].values
    paths = {}
    for m in range(M):
        path = folder / f"m{m}.parquet"
        pd.DataFrame({f"s{i:03d}": X[i, m] for i in range(S)}).to_parquet(path)
        paths[f"m{m}"] = str(path)
    return paths


MULTISTAT = r"""
import json, sys, time
import numpy as np
import multistat
files = json.loads(sys.argv[1])
study = multistat.load(files)                       # not timed: the study from files
out = {}
if sys.argv[2] == "import":                         # the lazy import alone, then the call
    t = time.perf_counter()
    import multistat.comparison                     # noqa: F401
    out["import_s"] = time.perf_counter() - t
t = time.perf_counter()
tab = multistat.compare(study, tests=("t",), effect_sizes=False)
out["call_s"] = time.perf_counter() - t
out["scipy_stats_imported"] = "scipy.stats" in sys.modules
out["statsmodels_imported"] = "statsmodels" in sys.modules
out["numba_imported"] = "numba" in sys.modules
out["scipy_optimize_imported"] = "scipy.optimize" in sys.modules
out["multistat_power_imported"] = "multistat.power" in sys.modules
t = time.perf_counter()                             # the same call again: what a warm
multistat.compare(study, tests=("t",), effect_sizes=False)  # process pays
out["warm_s"] = time.perf_counter() - t
if len(sys.argv) > 3:
    np.save(sys.argv[3], tab.sort_values(["metric", "system_a", "system_b"])["p_value"]
            .to_numpy())
print(json.dumps(out))
"""

SCIPY = r"""
import json, sys, time
import numpy as np
import pandas as pd
files = json.loads(sys.argv[1])
X = np.stack([pd.read_parquet(p).to_numpy().T for p in files.values()], axis=1)  # (S, M, n)
S, M = X.shape[:2]
a, b = np.triu_indices(S, 1)
t0 = time.perf_counter()
from scipy import stats
t1 = time.perf_counter()
p = np.empty((M, len(a)))
for m in range(M):
    for s in range(0, len(a), 1000):
        sl = slice(s, s + 1000)
        p[m, sl] = stats.ttest_rel(X[a[sl], m], X[b[sl], m], axis=-1).pvalue
t2 = time.perf_counter()
if len(sys.argv) > 2:
    np.save(sys.argv[2], p.ravel())
print(json.dumps({"import_s": t1 - t0, "compute_s": t2 - t1, "call_s": t2 - t0}))
"""


def _child(code: str, *args) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    # byte code cached as in an installed package (pip compiles it; scipy's is): with
    # PYTHONDONTWRITEBYTECODE every fresh process would compile multistat's sources again
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, check=False)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = json.dumps(write_files(tmp))
        _child(MULTISTAT, files, "call")  # writes multistat's .pyc files (not timed)
        ms, ms_imp, sp = [], [], []
        for r in range(args.runs):
            dump = [str(tmp / "ms.npy"), str(tmp / "sp.npy")] if r == 0 else []
            ms.append(_child(MULTISTAT, files, "call", *dump[:1]))
            sp.append(_child(SCIPY, files, *dump[1:]))
            ms_imp.append(_child(MULTISTAT, files, "import"))
        # pairs in the same order: metric, then system_a < system_b (s000 < s001 ...)
        dp = float(np.max(np.abs(np.load(tmp / "ms.npy") - np.load(tmp / "sp.npy"))))

    def med(rows, key):
        return float(np.median([r[key] for r in rows]))

    rows = [
        {"side": "multistat first compare (lazy imports included)",
         "median_s": med(ms, "call_s"), "runs_s": [r["call_s"] for r in ms]},
        {"side": "  of which: import multistat.comparison",
         "median_s": med(ms_imp, "import_s"), "runs_s": [r["import_s"] for r in ms_imp]},
        {"side": "  the call after that import",
         "median_s": med(ms_imp, "call_s"), "runs_s": [r["call_s"] for r in ms_imp]},
        {"side": "multistat second compare of the same process (warm)",
         "median_s": med(ms, "warm_s"), "runs_s": [r["warm_s"] for r in ms]},
        {"side": "scipy: import scipy.stats + chunked ttest_rel",
         "median_s": med(sp, "call_s"), "runs_s": [r["call_s"] for r in sp]},
        {"side": "scipy: chunked ttest_rel (import not timed)",
         "median_s": med(sp, "compute_s"), "runs_s": [r["compute_s"] for r in sp]},
    ]
    first = rows[0]["median_s"]
    summary = {
        "study": f"{S}x{M}x{N:,} (4,950 pairs per metric), wide Parquet, one file per metric",
        "runs": args.runs, "machine": machine(),
        "speedup_import_included": rows[4]["median_s"] / first,
        "speedup_vs_scipy_without_import": rows[5]["median_s"] / first,
        "max_abs_dp": dp,
        "multistat_imports_scipy_stats": any(r["scipy_stats_imported"] for r in ms),
        "multistat_imports_statsmodels": any(r["statsmodels_imported"] for r in ms),
        "multistat_imports_numba": any(r["numba_imported"] for r in ms),
        "multistat_imports_scipy_optimize": any(r["scipy_optimize_imported"] for r in ms),
        "multistat_imports_multistat_power": any(r["multistat_power_imported"] for r in ms),
        "rows": rows,
    }
    print(f"first call of a fresh process, {summary['study']}; {args.runs} runs, fresh "
          f"interpreters, alternating; {summary['machine']}")
    print(table([{**r, "runs_s": ", ".join(f"{v:.3f}" for v in r["runs_s"])} for r in rows],
                ["side", "median_s", "runs_s"]))
    print(f"speedup (both sides' imports timed): {summary['speedup_import_included']:.1f}x; "
          f"against scipy without its import: "
          f"{summary['speedup_vs_scipy_without_import']:.1f}x; max |dp| {dp:.1e}; "
          f"multistat imported scipy.stats: {summary['multistat_imports_scipy_stats']}, "
          f"statsmodels: {summary['multistat_imports_statsmodels']}, numba: "
          f"{summary['multistat_imports_numba']}, scipy.optimize: "
          f"{summary['multistat_imports_scipy_optimize']}, multistat.power: "
          f"{summary['multistat_imports_multistat_power']}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "first_call.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
