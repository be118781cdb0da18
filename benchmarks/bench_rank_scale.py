"""Leaderboards of 100 to 5,000 systems: ``multistat rank`` with its defaults on planted
tiers, time and peak memory per size.

Study: S systems x N instances (default 1,000), one metric, ten tiers of S/10 systems
with equal true means, GAP apart (default 1.0, i.e. GAP / sqrt(2 / N) = 22 standard
errors of a pair's mean difference), a shared per-instance effect and independent
N(0, 1) noise per system and instance. Every size runs the command line
``multistat rank study.nc --out ranking.parquet`` (bootstrap, 10,000 resamples,
Westfall-Young; the streamed step-down of :mod:`multistat.leaderboard.stream`) in a fresh
process: wall time, CPU time (user + system: on a shared machine the wall time also
holds other people's work), the child's own peak RSS (``wait4``), and whether the
clusters are the planted tiers exactly.

``--profile S`` runs one size in-process under cProfile and writes the functions that
take the time. ``--before S1,S2`` also runs the compare-table path (``--pairs-out``, as
every rank before the streamed step-down) at those sizes.
Results: ``benchmarks/results/rank_scale.{md,json}``. Run:
``.venv/bin/python benchmarks/bench_rank_scale.py [--systems 100,300,1000,2000,5000]``.
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

RESULTS = Path(__file__).parent / "results"


def make_study(S, n, gap, path, seed=0):
    """Write the planted-tier study; return the planted tier (1 = best) per system."""
    from multistat import cube

    rng = np.random.default_rng(seed)
    tiers = np.arange(S) * 10 // S
    x = -gap * tiers[:, None] + rng.normal(size=n)[None, :] + rng.normal(size=(S, n))
    names = [f"s{i:04d}" for i in range(S)]
    ds = cube.make_dataset("tiers", x[:, None, :], systems=names, metrics=["score"],
                           instances=np.arange(n))
    cube.save(cube.make_study([ds]), path)
    return dict(zip(names, (tiers + 1).tolist()))


def run_child(cmd) -> dict:
    """Run ``cmd``; wall and CPU seconds and peak RSS of that process alone."""
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell", PYTHONPATH=str(ROOT))
    # output to files, not pipes: a pipe the parent does not read while it waits fills
    # up (the clusters of 5,000 systems are more than its 64 KiB) and blocks the child
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fout, stderr=ferr,
                                text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    if status != 0:
        raise RuntimeError(f"{cmd} failed:\n{err[-3000:]}")
    return {"seconds": wall, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024, "stdout": out}


def one_size(S, n, gap, before=False) -> list[dict]:
    import pandas as pd

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "study.nc"
        planted = make_study(S, n, gap, study)
        paths = [("streamed", [])] + ([("compare table", ["--pairs-out",
                                                           str(Path(tmp) / "p.parquet")])]
                                      if before else [])
        for how, extra in paths:
            out = Path(tmp) / "ranking.parquet"
            res = run_child([sys.executable, "-m", "multistat.cli", "rank", str(study),
                             "--out", str(out), *extra])
            board = pd.read_parquet(out).set_index("system")
            got = board["cluster"].to_dict()
            top = board[board["cluster"] == 1]
            rows.append({"systems": S, "instances": n, "path": how,
                         "pairs": S * (S - 1) // 2, "planted_tiers": 10,
                         "clusters": int(board["cluster"].max()),
                         "exact": got == planted,
                         "top_beats": int(top["beats"].min()),
                         "below_top": S - len(top),
                         "seconds": res["seconds"], "cpu_seconds": res["cpu_seconds"],
                         "peak_rss_mib": res["peak_rss_mib"]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def profile(S, n, gap) -> str:
    """cProfile of ``rank`` on one size (in this process): the top functions."""
    import cProfile
    import io
    import pstats

    from multistat import cube
    from multistat.leaderboard.ranking import rank_request, run_ranking

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "study.nc"
        make_study(S, n, gap, path)
        study = cube.load(path)
        run_ranking(cube.load(path), rank_request(n_resamples=99), pairs=False)  # compile
        prof = cProfile.Profile()
        prof.enable()
        run_ranking(study, rank_request(), pairs=False)
        prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(32)
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--systems", default="100,300,1000,2000,5000")
    ap.add_argument("--n", type=int, default=1000, help="instances")
    ap.add_argument("--gap", type=float, default=1.0, help="gap between tiers")
    ap.add_argument("--before", default="", help="sizes also run on the compare table")
    ap.add_argument("--profile", type=int, default=0, help="profile this size")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of rank_scale.json of other sizes")
    args = ap.parse_args()
    before = {int(s) for s in args.before.split(",") if s}
    rows = []
    for S in (int(s) for s in args.systems.split(",") if s):
        rows += one_size(S, args.n, args.gap, before=S in before)
    if args.append and (RESULTS / "rank_scale.json").exists():
        new = {(r["systems"], r["path"]) for r in rows}
        old = json.loads((RESULTS / "rank_scale.json").read_text(encoding="utf-8"))
        rows = sorted([r for r in old if (r["systems"], r["path"]) not in new] + rows,
                      key=lambda r: (r["systems"], r["path"]))
    prof = profile(args.profile, args.n, args.gap) if args.profile else ""
    cols = ["systems", "pairs", "path", "planted_tiers", "clusters", "exact", "top_beats",
            "below_top", "seconds", "cpu_seconds", "peak_rss_mib"]
    text = (f"# multistat rank with its defaults on planted tiers, 100 to 5,000 systems\n\n"
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}\n"
            f"{args.n} instances, one metric, 10 tiers, gap {args.gap} "
            f"({args.gap / (2 / args.n) ** 0.5:.0f} standard errors); bootstrap with "
            "10,000 resamples, Westfall-Young; seconds: wall (shared machine), "
            "cpu_seconds: user + system of the child, peak_rss_mib: the child's own\n\n"
            "```\n" + table(rows, cols) + "\n```\n")
    if prof:
        text += (f"\n## Profile of {args.profile} systems (cProfile, cumulative; the kernels "
                 "run on worker threads: their time shows as the main thread waiting in the "
                 "function that started them)\n\n```\n")
        text += prof.strip() + "\n```\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "rank_scale.md").write_text(text, encoding="utf-8")
    (RESULTS / "rank_scale.json").write_text(json.dumps(rows, indent=1) + "\n",
                                             encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
