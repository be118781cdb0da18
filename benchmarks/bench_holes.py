"""Incomplete designs: ``compare`` on a study with holes beside the complete study of the
same size, each in a fresh interpreter (wall time and peak resident memory).

Run:  python benchmarks/bench_holes.py [--systems 60] [--items 200] [--own 150]
      [--resamples 1000]

* complete: ``systems`` x ``m`` items, every system on every item, with ``m`` the mean
  number of items two systems share in the incomplete study;
* holes: ``systems`` x ``items``, each system scored on its own random ``own`` items
  (WMT DA's design; pairs share about ``own^2 / items`` items, each pair its own set),
  read as ``missing="keep"``: paired tests on each pair's joint items
  (:mod:`multistat.significance._holes`).

Both run the default tests (t, Wilcoxon, sign, bootstrap, permutation) with effect sizes
and ``power=True``; scores are continuous (no ties).
"""

from __future__ import annotations

import argparse

from _common import machine, run_isolated

CODE = """
import json, resource, time
import numpy as np
import multistat
from multistat import cube
S, items, own, B, mode = {S}, {items}, {own}, {B}, {mode!r}
rng = np.random.default_rng(0)
if mode == "complete":
    n = round(own * own / items)
    X = rng.normal(size=(S, 1, n))
    keep = {{}}
else:
    n = items
    X = rng.normal(size=(S, 1, n))
    for s in range(S):
        X[s, 0, rng.choice(n, n - own, replace=False)] = np.nan
    keep = {{"missing": "keep"}}
ds = cube.make_dataset("d", X, systems=[f"s{{i:03d}}" for i in range(S)], metrics=["m"],
                       instances=[f"i{{j:04d}}" for j in range(n)], **keep)
study = cube.make_study({{"d": ds}})
t0 = time.perf_counter()
table = multistat.compare(study, n_resamples=B, power=True)
sec = time.perf_counter() - t0
t = table[table.test == "t"]
print(json.dumps({{"mode": mode, "seconds": sec, "rows": len(table),
                  "n_min": int(t.n.min()), "n_max": int(t.n.max()),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=60)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--own", type=int, default=150)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args(argv)
    print(machine())
    for mode in ("complete", "holes"):
        r = run_isolated(CODE.format(S=args.systems, items=args.items, own=args.own,
                                     B=args.resamples, mode=mode))
        print(f"{mode:8s}: {args.systems} systems, {r['rows']} rows, n per pair "
              f"{r['n_min']}-{r['n_max']}: {r['seconds']:.1f} s, peak RSS "
              f"{r['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
