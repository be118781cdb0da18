"""Loading a leaderboard-size study from wide Parquet files (issue 23.7).

200 systems x 10 metrics x ``--n`` instances (default 12,500; the issue's full size is
``--n 50000``), one wide Parquet file per metric (an ``instance`` column, then one float64
column per system; scores as ``bench_leaderboard.make_study`` draws them, rounded to 4
decimals). Each row runs in a fresh interpreter, so its peak resident memory
(``getrusage`` ``ru_maxrss`` of that process) is its own:

=========  ==========================================================================
read       ``pandas.read_parquet`` of every file (what reading the files costs; the
           frames kept, as a loader must hold the values)
load       ``multistat.load({metric: file})``: the cube built from the wide files
           (:mod:`multistat.io._wide_cube`)
long       ``cube.from_frame(read_scores({metric: file}))``: the long frame the loader
           used before (``--no-long`` skips it; 6.3 GiB at n = 12,500)
compare    ``multistat.load`` then ``compare(tests=("bootstrap", "t", "wilcoxon"),
           n_resamples=1000, effect_sizes=False)``, all pairs (``--no-compare`` skips it)
=========  ==========================================================================

Run: ``.venv/bin/python benchmarks/bench_load.py [--n 50000] [--no-long]``; results also
in ``benchmarks/results/load_<n>.json``.
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

S, M = 200, 10


def write_files(folder: Path, n: int) -> dict[str, str]:
    """One wide Parquet file per metric, written one metric at a time (no full cube in
    this process): a shared per-instance difficulty, system offsets over 0.2 sd, unit
    noise, rounded to 4 decimals (as ``bench_leaderboard.make_study``)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    offsets = np.linspace(0.0, 0.2, S)
    inst = [f"seg{i:06d}" for i in range(n)]
    paths = {}
    for m in range(M):
        base = rng.normal(size=n)
        cols = {"instance": inst}
        for s in range(S):
            cols[f"s{s:03d}"] = np.round(base + offsets[s] + rng.normal(size=n), 4)
        path = folder / f"m{m}.parquet"
        pd.DataFrame(cols).to_parquet(path, index=False)
        paths[f"m{m}"] = str(path)
    return paths


CHILD = r"""
import json, resource, sys, time
kind, files = sys.argv[1], json.loads(sys.argv[2])
out = {}
# imports outside the clock on both sides: pandas + pyarrow for reading; multistat's
# loader, xarray and dask.array (xarray imports it when it builds its first dataset)
t = time.perf_counter()
import pandas, pyarrow.parquet  # noqa: E401,F401
if kind != "read":
    import dask.array, xarray, multistat.cube, multistat.io._wide_cube  # noqa: E401,F401
out["import_s"] = time.perf_counter() - t
t = time.perf_counter()
if kind == "read":
    import pandas as pd
    frames = [pd.read_parquet(p) for p in files.values()]
    out["values"] = sum(f.shape[0] * (f.shape[1] - 1) for f in frames)
elif kind == "long":
    from multistat import cube
    from multistat.io import read_scores
    study = cube.from_frame(read_scores(files))
else:
    import multistat
    study = multistat.load(files)
out["load_s"] = time.perf_counter() - t
out["load_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if kind == "compare":
    t = time.perf_counter()
    tab = multistat.compare(study, tests=("bootstrap", "t", "wilcoxon"), n_resamples=1000,
                            seed=0, effect_sizes=False)
    out["compare_s"] = time.perf_counter() - t
    out["rows"] = len(tab)
if kind != "read":
    ds = next(iter(study.children.values())).to_dataset()
    out["shape"] = [int(v) for v in ds["score"].shape]
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _child(kind: str, files: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, files], capture_output=True,
                          text=True, cwd=ROOT, env=env, check=False)
    if proc.returncode:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:300],
                "wall_s": time.perf_counter() - t}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=12_500)
    ap.add_argument("--no-long", action="store_true")
    ap.add_argument("--no-compare", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp), args.n)
        size = sum(Path(p).stat().st_size for p in files.values())
        spec = json.dumps(files)
        kinds = ["read", "load"] + ([] if args.no_long else ["long"]) + (
            [] if args.no_compare else ["compare"])
        for kind in kinds:
            r = _child(kind, spec)
            rows.append({"row": kind, **r})
            print(json.dumps(rows[-1]), flush=True)
    summary = {"study": f"{S} systems x {M} metrics x {args.n:,} instances "
                        f"({S * M * args.n:,} values; {size / 2**20:,.0f} MiB of Parquet)",
               "machine": machine(), "rows": rows}
    print(summary["study"] + "; " + summary["machine"])
    print(table(rows, ["row", "load_s", "load_peak_rss_mib", "compare_s", "rows",
                       "peak_rss_mib", "error"]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"load_{args.n}.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    main()
