"""Same seed, before and after: compare a fresh ``multistat compare`` run with saved tables.

Usage::

    python benchmarks/same_seed.py STUDY.nc OLD_RESULTS.parquet OLD_SYSTEMS.parquet [ARGS]

runs ``multistat compare STUDY --out ... --systems-out ... --no-progress`` (defaults)
into a temporary folder and prints, per column and test, whether the new values are
bit-identical to the old ones and otherwise the largest absolute and relative difference
(columns only in the new table are listed). ``ARGS`` go to ``multistat compare`` (e.g.
``--ci-method bca``, the default before the bootstrap interval default became "basic"). Resampling tests (bootstrap, permutation)
should be bit-identical, closed-form values equal to about 1e-10.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd


def differences(old: pd.DataFrame, new: pd.DataFrame) -> list[tuple]:
    rows = []
    groups = sorted(old["test"].unique()) if "test" in old.columns else [None]
    for col in old.columns:
        for test in groups:
            mask = np.ones(len(old), bool) if test is None else (old["test"] == test).to_numpy()
            a, b = old[col].to_numpy()[mask], new[col].to_numpy()[mask]
            if a.dtype.kind not in "fc":
                if not np.array_equal(a.astype(str), b.astype(str)):
                    rows.append((col, test, "values differ", np.nan, np.nan))
                continue
            if np.array_equal(a, b, equal_nan=True):
                continue
            fin = np.isfinite(a) & np.isfinite(b)
            same_rest = np.array_equal(a[~fin], b[~fin], equal_nan=True)
            d = np.abs(a[fin] - b[fin])
            rel = d / np.maximum(np.abs(a[fin]), 1e-300)
            rows.append((col, test, "" if same_rest else "NaN/inf differ",
                         d.max() if d.size else 0.0, rel.max() if rel.size else 0.0))
    return rows


def main(study, old_results, old_systems, *args) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out, sysout = Path(tmp) / "r.parquet", Path(tmp) / "s.parquet"
        subprocess.run([sys.executable, "-m", "multistat.cli", "compare", str(study),
                        "--out", str(out), "--systems-out", str(sysout), "--no-progress",
                        *args],
                       check=True, stdout=subprocess.DEVNULL)
        worst = 0.0
        for name, old_p, new_p in (("results", old_results, out),
                                   ("systems", old_systems, sysout)):
            old, new = pd.read_parquet(old_p), pd.read_parquet(new_p)
            assert len(old) == len(new), (name, len(old), len(new))
            print(f"{name}: {len(old)} rows; new columns: "
                  f"{[c for c in new.columns if c not in old.columns] or 'none'}")
            diffs = differences(old, new)
            if not diffs:
                print("  every column bit-identical")
            for col, test, what, dmax, rmax in diffs:
                print(f"  {col:24s} {test or '':12s} max |diff| {dmax:.3g}  max rel "
                      f"{rmax:.3g} {what}")
                worst = max(worst, dmax if np.isfinite(dmax) else np.inf)
        print(f"largest absolute difference: {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
