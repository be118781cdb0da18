"""Side by side: multistat.meta_analysis of a compare-like table with many groups vs
statsmodels' ``combine_effects`` called once per group (DL and PM; statsmodels has no
ML/REML), in one run. Prints seconds, per-group cost, peak memory and the largest
difference of the pooled estimate and tau^2.

Usage::

    python benchmarks/bench_meta.py [GROUPS] [K] [STATSMODELS_GROUPS]

Defaults: 10,000 groups of k = 6 studies; statsmodels on the first 2,000 groups (its
per-group loop is timed there and scaled to all groups).
"""

from __future__ import annotations

import resource
import sys
import time
import warnings

import numpy as np
import pandas as pd


def table(groups: int, k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    true = rng.normal(0, 1, groups)[:, None] + rng.normal(0, 0.5, (groups, k))
    se = rng.uniform(0.2, 1.0, (groups, k))
    return pd.DataFrame({
        "dataset": np.tile([f"set{j}" for j in range(k)], groups),
        "metric": "m", "system_a": np.repeat([f"a{g}" for g in range(groups)], k),
        "system_b": "base", "test": "t",
        "estimate": (true + se * rng.normal(size=(groups, k))).ravel(), "se": se.ravel()})


def main(groups: int = 10_000, k: int = 6, sm_groups: int = 2_000) -> None:
    from statsmodels.stats.meta_analysis import combine_effects

    from multistat import meta_analysis

    frame = table(groups, k)
    print(f"{groups:,} groups x k = {k} studies ({len(frame):,} rows); shared machine")
    y = frame["estimate"].to_numpy().reshape(groups, k)
    v = frame["se"].to_numpy().reshape(groups, k) ** 2
    for method in ("dl", "pm", "reml"):
        t = time.perf_counter()
        pooled = meta_analysis(frame, method=method)
        ours = time.perf_counter() - t
        line = f"{method:5} multistat {ours:6.3f} s ({1e6 * ours / groups:6.1f} us/group)"
        if method in ("dl", "pm"):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                refs = [combine_effects(y[g], v[g], method_re=method)
                        for g in range(sm_groups)]
            sm = (time.perf_counter() - t) * groups / sm_groups
            # statsmodels' DL does not truncate tau2 at 0 (metafor and multistat do): those
            # groups are counted and left out of the comparison
            ok = [r.tau2 >= 0 for r in refs]
            d_est = max(abs(r.mean_effect_re - e) for r, e, o in
                        zip(refs, pooled["estimate"].to_numpy(), ok) if o)
            d_tau = max(abs(r.tau2 - e) for r, e, o in
                        zip(refs, pooled["tau2"].to_numpy(), ok) if o)
            line += (f" | statsmodels loop {sm:6.2f} s (scaled from {sm_groups:,}); "
                     f"x{sm / ours:.0f}; max |diff| estimate {d_est:.1e}, tau2 {d_tau:.1e}"
                     f"; statsmodels tau2 < 0 in {sm_groups - sum(ok)} groups")
        print(line)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB "
          "(whole process)")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:]])
