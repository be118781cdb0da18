"""A study larger than the memory budget: wide Parquet -> ``study.zarr`` -> compare.

Study: S systems x N instances of float64 scores (default 200 x 2,000,000: 3.2 GB), one
metric, a shared per-instance effect plus N(0, 1) noise per system and instance and a
small step between systems; written as one wide Parquet file (one column per system,
row groups of 65,536 instances, labels in canonical order) by a generator that holds
one row group at a time. Then, each in a fresh process (the child's own peak RSS from
``wait4``, wall and CPU seconds):

1. ``multistat load data.parquet --out study.zarr --memory-limit M``;
2. ``multistat compare study.zarr --tests t,bootstrap --n-resamples B --memory-limit M``
   (local threads);
3. with ``--cluster``: the same compare with ``--scheduler tcp://127.0.0.1:PORT`` against
   a ``dask scheduler`` and two single-threaded ``dask worker`` processes started here
   (``--no-nanny``, so the worker process is the one whose peak RSS, ``VmHWM``, is read);
   the driver's peak RSS is the point: it ships no data; the table must equal step 2's
   bit for bit.

Results: ``benchmarks/results/zarr_scale.{md,json}`` (appended, one entry per run). Run:
``.venv/bin/python benchmarks/zarr_scale.py [--systems 200 --instances 2000000
--resamples 1000 --memory 1GiB --cluster]``.

Measured at the target, 200 x 2,000,000 (3.2 GB), ``--memory-limit 1GiB``, B = 1,000
bootstrap resamples, 2 cores shared with other work (load average 6-7; CPU seconds are
the cost, wall seconds include waiting for a core):

* load: 112 s wall (32 s CPU), peak RSS 816 MiB (at 200 x 200,000: 632 MiB);
* compare (t and bootstrap, 39,800 rows, effect sizes): 820 s wall (175 s CPU), peak
  RSS 1,050 MiB (target: under 1.5 GiB);
* the same compare on a scheduler and two single-threaded workers: the driver 728 s wall
  (14 s CPU), peak RSS 556 MiB (the table and the libraries; no scores), the workers 333
  and 764 MiB; the table identical, bit for bit, to the local one.

Where the time goes (CPU, measured in-process at 200 x 200,000: 13.2 s in all): the
bootstrap block 6.2 s (one task: its 1,000 plan rows drawn as in memory, held as 8-bit
counts, as many rows as the task's share of the budget holds, times every chunk), the
two moment passes 2.9 s, the rest 4.1 s (19,900 pairs' intervals and p-values, t, effect
sizes, the table). CPU time grows linearly with the instances (17.6 s -> 175 s for 10x),
peak memory little (884 -> 1,050 MiB: one plan row of n bytes per held row, one chunk of
scores, the labels). B = 1,000 resamples is a modest plan for 19,900 pairs under the
default Holm correction (its floor warns); the step-down (``--correction
westfall-young``) or ``rank`` use the same arrays. Every run: ``results/zarr_scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine

RESULTS = Path(__file__).parent / "results"
BIN = Path(sys.executable).parent
ROW_GROUP = 65_536


def make_parquet(path: Path, S: int, n: int, seed: int = 0) -> None:
    """The wide file, one row group at a time (never the whole study in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = [f"s{i:04d}" for i in range(S)]
    schema = pa.schema([("instance", pa.string())] + [(s, pa.float64()) for s in names])
    step = 0.002 * np.arange(S)
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for r0 in range(0, n, ROW_GROUP):
            rows = min(ROW_GROUP, n - r0)
            x = rng.normal(size=(rows, 1)) + rng.normal(size=(rows, S)) + step
            cols = [pa.array([f"i{i:09d}" for i in range(r0, r0 + rows)])]
            cols += [pa.array(x[:, j]) for j in range(S)]
            writer.write_table(pa.Table.from_arrays(cols, schema=schema))
            del x, cols


def _env() -> dict:
    return dict(os.environ, OPENBLAS_CORETYPE="Haswell", PYTHONPATH=str(ROOT),
                DVC_NO_ANALYTICS="1")


def run_child(cmd) -> dict:
    """Run ``cmd``: wall and CPU seconds and peak RSS of that process alone."""
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=fout, stderr=ferr,
                                text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    if status != 0:
        raise RuntimeError(f"{cmd} failed:\n{err[-3000:]}")
    return {"seconds": round(wall, 1), "cpu_seconds": round(usage.ru_utime
                                                            + usage.ru_stime, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def _hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def start_cluster(tmp: Path):
    """A scheduler and two single-threaded workers on 127.0.0.1 (no nannies)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    procs = []
    log = open(tmp / "cluster.log", "w")  # noqa: SIM115 - closed by the caller's stop()
    procs.append(subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1",
                                   "--port", str(port), "--no-dashboard"], env=_env(),
                                  stdout=subprocess.DEVNULL, stderr=log))
    for _ in range(2):
        procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nthreads",
                                       "1", "--no-nanny", "--no-dashboard", "--host",
                                       "127.0.0.1", "--memory-limit", "0"], env=_env(),
                                      stdout=subprocess.DEVNULL, stderr=log))
    from distributed import Client

    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(address, timeout=10) as client:
                client.wait_for_workers(2, timeout=120)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)

    def stop():
        workers = {f"worker{i}_peak_rss_mib": _hwm_mib(p.pid) for i, p in
                   enumerate(procs[1:], 1)}
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()
        return workers

    return address, stop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=200)
    ap.add_argument("--instances", type=int, default=2_000_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--memory", default="1GiB")
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--workdir", default=None, help="folder for the files (default: a "
                                                    "temporary one, removed)")
    args = ap.parse_args()
    import pandas as pd

    S, n = args.systems, args.instances
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp = Path(tmp)
        data, store = tmp / "data.parquet", tmp / "study.zarr"
        t0 = time.perf_counter()
        make_parquet(data, S, n)
        row = {"systems": S, "instances": n, "gb_float64": round(S * n * 8 / 1e9, 2),
               "resamples": args.resamples, "memory_limit": args.memory,
               "generate_seconds": round(time.perf_counter() - t0, 1)}
        print(json.dumps(row), flush=True)
        cli = [sys.executable, "-m", "multistat.cli"]
        res = run_child(cli + ["load", str(data), "--out", str(store), "--memory-limit",
                               args.memory])
        row.update({f"load_{k}": v for k, v in res.items()})
        print(json.dumps(row), flush=True)
        compare = cli + ["compare", str(store), "--tests", "t,bootstrap", "--n-resamples",
                         str(args.resamples), "--memory-limit", args.memory,
                         "--no-progress"]
        res = run_child(compare + ["--out", str(tmp / "local.parquet")])
        row.update({f"compare_{k}": v for k, v in res.items()})
        local = pd.read_parquet(tmp / "local.parquet")
        row["rows"] = len(local)
        print(json.dumps(row), flush=True)
        if args.cluster:
            address, stop = start_cluster(tmp)
            try:
                res = run_child(compare + ["--out", str(tmp / "cluster.parquet"),
                                           "--scheduler", address])
            finally:
                workers = stop()
            row.update({f"cluster_driver_{k}": v for k, v in res.items()})
            row.update(workers)
            remote = pd.read_parquet(tmp / "cluster.parquet")
            row["cluster_bit_identical"] = bool(remote.equals(local))
            print(json.dumps(row), flush=True)
    row["machine"] = machine()
    RESULTS.mkdir(exist_ok=True)
    jpath = RESULTS / "zarr_scale.json"
    runs = json.loads(jpath.read_text()) if jpath.exists() else []
    runs.append(row)
    jpath.write_text(json.dumps(runs, indent=1) + "\n")
    write_markdown(runs)


def write_markdown(runs: list[dict]) -> None:
    """``results/zarr_scale.md`` from every run of ``results/zarr_scale.json``."""
    lines = ["# A study larger than memory: load to .zarr, compare (t, bootstrap)", "",
             "`benchmarks/zarr_scale.py`; wall seconds (CPU seconds) and peak RSS of each "
             "command's own process (`wait4`), the workers' `VmHWM`. The machine's 2 cores "
             "were shared with other work (load average 4-7): CPU seconds are the cost, "
             "wall seconds include waiting for a core.", "",
             "| systems x instances | GB | B | --memory-limit | load s (CPU) / peak MiB | "
             "compare s (CPU) / peak MiB | cluster driver s (CPU) / peak MiB | "
             "workers peak MiB | cluster bits equal |", "|---|---|---|---|---|---|---|---|---|"]

    def cell(r, key):
        return (f"{r[key + '_seconds']} ({r[key + '_cpu_seconds']}) / "
                f"{r[key + '_peak_rss_mib']}" if key + "_seconds" in r else "-")

    for r in runs:
        wk = (f"{r.get('worker1_peak_rss_mib')}, {r.get('worker2_peak_rss_mib')}"
              if "worker1_peak_rss_mib" in r else "-")
        lines.append(f"| {r['systems']} x {r['instances']:,} | {r['gb_float64']} | "
                     f"{r['resamples']} | {r['memory_limit']} | {cell(r, 'load')} | "
                     f"{cell(r, 'compare')} | {cell(r, 'cluster_driver')} | {wk} | "
                     f"{r.get('cluster_bit_identical', '-')} |")
    (RESULTS / "zarr_scale.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
