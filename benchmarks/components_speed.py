"""``variance_components`` (``multistat components``) at many systems: every pair against
the default balanced subsample (``max_pairs=120``).

Data: synthetic ratings of ``--systems`` systems (default 60) on ``--items`` items (80) by
``--raters`` raters (5), each system x item rated by 2 raters drawn at random (seed 0):
``y = mu_s + u_r + a_i + w_rs + b_is + e`` with standard deviations 0.3 (rater), 0.5
(item), 0.2 (rater x system), 0.3 (item x system), 0.6 (residual). Each pair's fit sees
``w, b`` through its rater and item slopes, so the pooled components are a mean over
pairs; the subsample estimates the same mean. Reports both wall times and both sets of
pooled standard deviations. Run::

    .venv/bin/python benchmarks/components_speed.py          # about 2-4 minutes (all pairs)
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
from _common import ROOT, machine, table


def ratings(S, items, raters, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, 0.3, S)
    u, a = rng.normal(0, 0.3, raters), rng.normal(0, 0.5, items)
    w, b = rng.normal(0, 0.2, (raters, S)), rng.normal(0, 0.3, (items, S))
    rows = []
    for s in range(S):
        for i in range(items):
            for r in rng.choice(raters, 2, replace=False):
                y = mu[s] + u[r] + a[i] + w[r, s] + b[i, s] + rng.normal(0, 0.6)
                rows.append((f"sys{s:02d}", f"item{i:03d}", f"r{r}", y))
    return pd.DataFrame(rows, columns=["system", "item", "rater", "score"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=60)
    ap.add_argument("--items", type=int, default=80)
    ap.add_argument("--raters", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" /
                    "components_speed.md")
    args = ap.parse_args()

    import tempfile

    import multistat
    from multistat.human.ratings import variance_components

    frame = ratings(args.systems, args.items, args.raters)
    path = Path(tempfile.mkdtemp()) / "ratings.csv"
    frame.to_csv(path, index=False)
    study = multistat.load(path, score_col="score", instance_col="item", rater_col="rater")
    rows = []
    for label, max_pairs in (("every pair (before)", None), ("max_pairs=120 (after)", 120)):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vc = variance_components(study, max_pairs=max_pairs)
        secs = time.perf_counter() - t
        rows.append({"run": label, "pairs fitted": len(vc.pairs), "seconds": round(secs, 1),
                     **{k: round(v, 4) for k, v in asdict(vc.variance).items()}})
    cols = list(rows[0])
    text = (f"# variance components at {args.systems} systems "
            f"(benchmarks/components_speed.py)\n\n{machine()}\n\n{args.items} items, "
            f"{args.raters} raters, 2 ratings per system x item.\n\n{table(rows, cols)}\n")
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
