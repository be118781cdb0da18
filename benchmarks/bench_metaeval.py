"""Metric meta-evaluation (issue 28): multistat.compare_metrics beside mt-metrics-eval.

The full table of metric pairs for 20 metrics x 15 systems x 2,000 items (190 pairs),
1,000 PERM-BOTH resamples, for two statistics WMT uses:

==========  ==========================================================================
pearson     Pearson over all cells (``average_by="none"``; mt-metrics-eval
            ``PermutationSigDiff(..., scipy.stats.pearsonr, "none", k)``)
acc23       acc_23 per item over the systems, then the mean (``average_by="item"``;
            ``PermutationSigDiff(..., stats.KendallVariants, "item", k, variant="acc23")``)
==========  ==========================================================================

multistat runs the whole table in a fresh process (wall time and the process's peak
RSS). mt-metrics-eval (google-research/mt-metrics-eval, not a dependency of multistat:
put its repository on ``PYTHONPATH`` or install it into a separate environment) runs pair
by pair in Python loops; it is timed on the first ``--mtme-pairs`` pairs with
``--mtme-k`` permutations each and extrapolated linearly to 190 pairs x 1,000
permutations (its cost per permutation and per pair is constant; the output says so).
Its deltas must equal multistat's; its p-values (count / k) are compared with
multistat's within Monte Carlo error where k is large enough to say anything.

When mt-metrics-eval is not importable the benchmark says so and times multistat alone.
``--reference`` prints the mt-metrics-eval p-values that tests/test_metaeval.py records.
Results go to ``benchmarks/results/metaeval.json`` and ``.md``. Run:
``PYTHONPATH=/path/to/mt-metrics-eval .venv/bin/python benchmarks/bench_metaeval.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, run_isolated, table

S, N, K, B = 15, 2000, 20, 1000
CASES = {"pearson": ("pearson", "none"), "acc23": ("acc23", "item")}


def make_data(seed: int = 0, S: int = S, N: int = N, K: int = K):
    """Human scores (MQM-like: many zeros, rounded) and K metrics of decreasing quality."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(S, N)) + np.linspace(0, 1, S)[:, None]
    human = np.round(np.minimum(quality, 0.5) * 4) / 4  # ties, as MQM has
    metrics = {f"m{k:02d}": quality + rng.normal(scale=0.5 + 0.1 * k, size=(S, N))
               for k in range(K)}
    return human, metrics


def run_multistat(case: str, seed: int = 0) -> dict:
    code = f"""
import json, sys, time
sys.path.insert(0, {str(ROOT / 'benchmarks')!r})
from bench_metaeval import make_data, CASES
import multistat
human, metrics = make_data()
statistic, average_by = CASES[{case!r}]
t = time.perf_counter()
table = multistat.compare_metrics(human, metrics, statistic=statistic, average_by=average_by,
                                  test="perm-both", n_resamples={B}, seed={seed},
                                  alternative="greater", correction="none")
wall = time.perf_counter() - t
print(json.dumps({{"wall_s": wall, "pairs": len(table),
                  "delta": table["delta"].tolist(), "p": table["p_value"].tolist(),
                  "a": table["metric_a"].tolist(), "b": table["metric_b"].tolist()}}))
"""
    return run_isolated(code)


def mtme_available() -> bool:
    try:
        import mt_metrics_eval.stats  # noqa: F401
    except ImportError:
        return False
    return True


def run_mtme(case: str, n_pairs: int, k: int) -> dict:
    """mt-metrics-eval's PERM-BOTH on the first ``n_pairs`` pairs, ``k`` permutations."""
    import scipy.stats
    from mt_metrics_eval import stats

    human, metrics = make_data()
    average_by = CASES[case][1]
    names = list(metrics)
    gold = list(human.ravel())
    corr = {m: stats.Correlation(S, gold, list(metrics[m].ravel())) for m in names}
    fn, kw = ((scipy.stats.pearsonr, {}) if case == "pearson"
              else (stats.KendallVariants, {"variant": "acc23"}))
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]][:n_pairs]
    params = stats.PermutationSigDiffParams(block_size=10**9)  # no early stopping
    out = {"pairs": [], "delta": [], "p": []}
    np.random.seed(0)
    t = time.perf_counter()
    for a, b in pairs:
        # p of metric a (the first) agreeing better: PermutationSigDiff(b, a)
        p, d, _, _ = stats.PermutationSigDiff(corr[b], corr[a], fn, average_by, k, params,
                                              **kw)
        out["pairs"].append([a, b])
        out["delta"].append(float(d))
        out["p"].append(float(p))
    out["wall_s"] = time.perf_counter() - t
    out["k"] = k
    return out


def reference() -> None:
    """The mt-metrics-eval values recorded in tests/test_metaeval.py."""
    import scipy.stats
    from mt_metrics_eval import stats

    rng = np.random.default_rng(3)
    h = np.round(rng.normal(size=(6, 80)), 1)
    a = h + rng.normal(scale=1.6, size=h.shape)
    b = h + rng.normal(scale=2.0, size=h.shape)
    h[0, :5] = np.nan
    gold = [None if np.isnan(x) else float(x) for x in h.ravel()]
    ca, cb = stats.Correlation(6, gold, list(a.ravel())), stats.Correlation(6, gold,
                                                                            list(b.ravel()))
    params = stats.PermutationSigDiffParams(block_size=10**5)
    for fn, avg, k, kw in [(scipy.stats.pearsonr, "none", 20000, {}),
                           (scipy.stats.pearsonr, "item", 4000, {}),
                           (scipy.stats.pearsonr, "sys", 4000, {}),
                           (stats.KendallVariants, "item", 4000, {"variant": "acc23"}),
                           (scipy.stats.kendalltau, "item", 4000, {})]:
        np.random.seed(0)
        p, d, _, _ = stats.PermutationSigDiff(cb, ca, fn, avg, k, params, **kw)
        print(getattr(fn, "__name__", fn), avg, kw, "k", k, "p", p, "delta", d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="pearson,acc23")
    ap.add_argument("--mtme-pairs", type=int, default=2)
    ap.add_argument("--mtme-k", default="pearson:1000,acc23:10",
                    help="permutations per mt-metrics-eval pair, per case")
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "metaeval"))
    args = ap.parse_args()
    have = mtme_available()
    if args.reference:
        if not have:
            sys.exit("mt-metrics-eval is not importable")
        reference()
        return
    if not have:
        print("mt-metrics-eval is not importable: timing multistat alone (clone "
              "https://github.com/google-research/mt-metrics-eval and put it on PYTHONPATH, "
              "or install it into a separate environment, to compare)")
    ks = dict(item.split(":") for item in args.mtme_k.split(","))
    rows, details = [], {}
    n_pairs = K * (K - 1) // 2
    for case in args.cases.split(","):
        ms = run_multistat(case)
        row = {"case": case, "pairs": n_pairs, "resamples": B,
               "multistat_s": round(ms["wall_s"], 2),
               "multistat_rss_mib": round(ms["peak_rss_mib"])}
        details[case] = {"multistat": ms}
        if have:
            k = int(ks.get(case, 100))
            mt = run_mtme(case, args.mtme_pairs, k)
            per_pair_perm = mt["wall_s"] / (len(mt["pairs"]) * k)
            full = per_pair_perm * n_pairs * B
            index = {(a, b): i for i, (a, b) in enumerate(zip(ms["a"], ms["b"]))}
            idx = [index[tuple(p)] for p in mt["pairs"]]
            ddiff = max(abs(mt["delta"][j] - ms["delta"][i]) for j, i in enumerate(idx))
            pm = [ms["p"][i] for i in idx]
            pbar = [(x + y) / 2 for x, y in zip(mt["p"], pm)]
            se = [np.sqrt(max(q * (1 - q), 1 / B) * (1 / k + 1 / B)) for q in pbar]
            row.update({"mtme_measured_s": round(mt["wall_s"], 1),
                        "mtme_measured": f"{len(mt['pairs'])} pairs x k={k}",
                        "mtme_full_s_extrapolated": round(full),
                        "speedup": round(full / ms["wall_s"], 1),
                        "max_abs_delta_diff": ddiff,
                        "p_mtme": mt["p"], "p_multistat": pm,
                        "max_p_diff_in_se": round(max(abs(x - y) / e for x, y, e in
                                                      zip(mt["p"], pm, se)), 2)})
            details[case]["mtme"] = mt
        rows.append(row)
    cols = ["case", "pairs", "resamples", "multistat_s", "multistat_rss_mib"]
    if have:
        cols += ["mtme_measured", "mtme_measured_s", "mtme_full_s_extrapolated", "speedup",
                 "max_abs_delta_diff", "max_p_diff_in_se"]
    text = table(rows, cols)
    head = (f"# Metric meta-evaluation: {K} metrics x {S} systems x {N} items, {n_pairs} "
            f"pairs, {B} PERM-BOTH resamples\n\n{machine()}\n"
            f"mt-metrics-eval: {'timed on a subset, extrapolated (see columns)' if have else 'not importable'}\n")
    print(head)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(head + "\n```\n" + text + "\n```\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps({"rows": rows, "machine": machine()},
                                                   indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
