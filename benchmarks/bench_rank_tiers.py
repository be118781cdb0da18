"""Leaderboards at shared-task size: planted tiers at 60, 100 and 150 systems.

Tiers of 10 systems with equal true means, GAP apart (a shared instance effect plus
independent N(0, 1) noise per system and instance; N instances, so GAP is
GAP / sqrt(2 / N) standard errors of a pair's mean difference). ``multistat.rank`` with its
defaults (bootstrap, 10,000 resamples, ``correction="auto"`` = Westfall-Young) against the
old default (Holm), each in a fresh process: clusters found, the top tier's ``beats``,
wall time and peak memory. Run: ``python benchmarks/bench_rank_tiers.py [--n 200]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import machine, run_isolated, table

CHILD = """
import json, time, warnings
import numpy as np
import multistat
from multistat import cube
from multistat.errors import ResamplingFloorWarning

S, N, GAP, CORR = {S}, {N}, {GAP}, {CORR!r}
rng = np.random.default_rng(0)
tiers = np.arange(S) // 10
x = -GAP * tiers[:, None] + rng.normal(size=N)[None, :] + rng.normal(size=(S, N))
ds = cube.make_dataset("tiers", x[:, None, :], systems=[f"s{{i:03d}}" for i in range(S)],
                       metrics=["score"], instances=np.arange(N))
study = cube.make_study([ds])
kw = {{}} if CORR == "auto" else {{"correction": CORR}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ResamplingFloorWarning)
    t = time.perf_counter()
    board = multistat.rank(study, **kw)
    seconds = time.perf_counter() - t
got = board.set_index("system")["cluster"].sort_index().to_numpy()
print(json.dumps({{"systems": S, "correction": board.attrs["multistat"]["correction"],
                  "clusters": int(board["cluster"].max()), "planted": int(tiers.max() + 1),
                  "exact": bool((got == tiers + 1).all()),
                  "top_beats": int(board["beats"].iloc[0]), "below_top": S - 10,
                  "seconds": seconds, "warned": len(caught)}}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200, help="instances per system")
    ap.add_argument("--gap", type=float, default=1.0, help="gap between tiers")
    ap.add_argument("--systems", default="60,100,150")
    args = ap.parse_args()
    rows = []
    for S in (int(s) for s in args.systems.split(",")):
        for corr in ("auto", "holm"):
            rows.append(run_isolated(CHILD.format(S=S, N=args.n, GAP=args.gap, CORR=corr)))
            print(json.dumps(rows[-1]), flush=True)
    cols = ["systems", "correction", "planted", "clusters", "exact", "top_beats",
            "below_top", "warned", "seconds", "peak_rss_mib"]
    text = (f"# rank with defaults on planted tiers (n = {args.n}, gap = {args.gap}: "
            f"{args.gap / (2 / args.n) ** 0.5:.1f} standard errors)\n\n{machine()}\n"
            "peak_rss_mib: the largest child so far (getrusage)\n\n```\n"
            + table(rows, cols) + "\n```\n")
    out = Path(__file__).parent / "results"
    (out / "rank_tiers.md").write_text(text, encoding="utf-8")
    (out / "rank_tiers.json").write_text(json.dumps(rows, indent=1) + "\n",
                                         encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
