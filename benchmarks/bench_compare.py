"""W1: 16 systems x 3 metrics x 2,000 instances, all 120 pairs, paired bootstrap and
permutation with 10,000 resamples each (plus t, Wilcoxon, sign).

multistat does the whole study in one call; the peers a user would pick instead run one
pair and metric at a time: scipy.stats.permutation_test / scipy.stats.bootstrap (both
vectorized over resamples) and deepsig's bootstrap_test / permutation_test. Peers are
timed on a few pair-metrics and extrapolated to the 360 of W1. Run:
``.venv/bin/python benchmarks/bench_compare.py [--multistat-only]`` (``--multistat-only``:
skip the peers). Each of bootstrap and permutation is also timed alone (best of 3), the
per-test figures the "no slower than before" check of W1 compares.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from _common import machine, run_isolated, table, timed

S, M, N, B = 16, 3, 2000, 10_000
PAIR_METRICS = S * (S - 1) // 2 * M  # 360

MULTISTAT = f"""
import json, time, resource
import numpy as np
from multistat import cube
from multistat.comparison import compare


rng = np.random.default_rng(0)
base = rng.normal(size=({M}, {N}))
score = base[None] + rng.normal(0, 1, ({S}, {M}, {N})) + np.linspace(0, .2, {S})[:, None, None]
st = cube.make_study({{"w1": cube.make_dataset("w1", score, systems=[f"s{{i}}" for i in
     range({S})], metrics=["m1", "m2", "m3"], instances=range({N}))}})
compare(st, tests=("t",), n_resamples=10, effect_sizes=False)  # imports, thread pools
out = {{}}
for label, tests in [("bootstrap", ("bootstrap",)), ("permutation", ("permutation",)),
                     ("bootstrap+permutation", ("bootstrap", "permutation")),
                     ("t+wilcoxon+sign", ("t", "wilcoxon", "sign")),
                     ("all five", ("t", "wilcoxon", "sign", "bootstrap", "permutation"))]:
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        tab = compare(st, tests=tests, n_resamples={B}, effect_sizes=False)
        best = min(best, time.perf_counter() - t)
    out[label] = best
best = 1e9
for _ in range(3):
    t = time.perf_counter()
    compare(st, n_resamples={B}, effect_sizes=True)
    best = min(best, time.perf_counter() - t)
out["all five + effect sizes"] = best
out["rows"] = len(tab)
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def peers(n_pairs: int = 3):
    from scipy import stats

    rng = np.random.default_rng(1)
    xs = [(rng.normal(0.1, 1, N), rng.normal(0, 1, N)) for _ in range(n_pairs)]

    def scipy_perm():
        for a, b in xs:
            stats.permutation_test((a, b), lambda u, v, axis: np.mean(u - v, axis=axis),
                                   permutation_type="samples", vectorized=True,
                                   n_resamples=B, random_state=0)

    def scipy_boot():
        for a, b in xs:
            stats.bootstrap((a, b), lambda u, v, axis: np.mean(u - v, axis=axis),
                            paired=True, vectorized=True, n_resamples=B, random_state=0,
                            method="BCa")

    rows = []
    t, _ = timed(scipy_perm)
    rows.append(("scipy.stats.permutation_test", "permutation", t / n_pairs))
    t, _ = timed(scipy_boot)
    rows.append(("scipy.stats.bootstrap (BCa, paired)", "bootstrap", t / n_pairs))
    try:
        import deepsig

        a, b = xs[0]
        t, _ = timed(deepsig.permutation_test, a, b, num_samples=B, seed=0)
        rows.append(("deepsig.permutation_test", "permutation", t))
        t, _ = timed(deepsig.bootstrap_test, a, b, num_samples=B, seed=0)
        rows.append(("deepsig.bootstrap_test", "bootstrap", t))
    except ImportError:  # pragma: no cover
        rows.append(("deepsig (not installed)", "", float("nan")))
    return rows


def main():
    print(f"W1: {S} systems x {M} metrics x {N} instances, {PAIR_METRICS} pair-metrics, "
          f"B = {B:,}; {machine()}")
    ms = run_isolated(MULTISTAT)
    rows = [{"tool": "multistat compare", "work": k, "wall_s": v}
            for k, v in ms.items() if k not in ("rows", "peak_rss_mib")]
    print(table(rows, ["tool", "work", "wall_s"]))
    print(f"multistat peak memory (whole process): {ms['peak_rss_mib']:.0f} MiB; "
          f"rows: {ms['rows']}")
    if "--multistat-only" in sys.argv[1:]:
        print(json.dumps({"multistat": ms}, default=float))
        return
    ours = {"permutation": ms["permutation"], "bootstrap": ms["bootstrap"]}
    out = []
    for tool, kind, per_pair in peers():
        total = per_pair * PAIR_METRICS
        out.append({"peer": tool, "per pair-metric s": per_pair,
                    "W1 extrapolated s": total,
                    "multistat s (this test alone)": ours.get(kind, float("nan")),
                    "ratio peer/multistat": total / ours[kind] if kind in ours else None})
    print(table(out, list(out[0])))
    print(json.dumps({"multistat": ms, "peers": out}, default=float))


if __name__ == "__main__":
    main()
