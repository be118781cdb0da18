"""Bradley-Terry at arena scale: 10^5, 10^6, 10^7 battles among 200 models, B = 1000,
and the Chatbot Arena's published method side by side on a subsample.

Battles: 200 models with strengths N(0, 1) on the logit scale, battles between uniformly
drawn pairs, 10 % ties (seed 0); the three columns are pandas text columns (Arrow
strings), as a battles file read with pandas gives them. Each measurement runs in a
fresh Python process, so its peak resident memory is its own; the memory held by the
battles table alone is reported beside it.

==============  ========================================================================
multistat       ``multistat.bradley_terry(battles, n_resamples=1000)``: the whole call
                (aggregation, point fit, bootstrap, ranks, clusters), then its parts:
                ``aggregate_battles``, ``fit_bradley_terry``, ``bootstrap_fits``
before          the same call with the code at ``--before DIR`` (a checkout of the
                previous version, e.g. the main worktree), where given
arena           the method of the Chatbot Arena's notebook, written here from its
                description: the battles duplicated, a tie as one win for each side,
                scikit-learn ``LogisticRegression(fit_intercept=False, no penalty,
                tol=1e-6)`` on the +-log(10) design matrix, Elo = 400 * coef + 1000; its
                bootstrap refits ``battles.sample(frac=1, replace=True)`` in a loop
                (timed for ``--arena-resamples`` resamples, extrapolated to 1000) --
                on the first ``--arena-battles`` battles, with multistat on the same
==============  ========================================================================

Agreement: max |Elo difference| of the point scores, and the ratio of the bootstrap
standard deviations (multistat's 1000 resamples against the Arena loop's few: the ratio's
Monte Carlo error is about ``1 / sqrt(2 R)``). The machine may be shared: CPU seconds
(user + system of the process) are reported beside wall seconds, as they suffer less
from other jobs; BLAS is single-threaded (``OPENBLAS_NUM_THREADS=1`` unless set).
Results: ``benchmarks/results/preferences_scale.{json,md}``. Run:
``.venv/bin/python benchmarks/bench_preferences_scale.py [--sizes 1e5,1e6,1e7]
[--before /path/to/previous/checkout]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, table

DATA = """
import numpy as np, pandas as pd, time, json, resource
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rng = np.random.default_rng(0)
S, N = 200, {N}
strength = rng.normal(0, 1, S)
a = rng.integers(0, S, N); b = (a + rng.integers(1, S, N)) % S
p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
tie = rng.random(N) < 0.1
awin = ~tie & (rng.random(N) < p)
names = np.array([f"model-{{i:03d}}" for i in range(S)], dtype=object)
outcome = np.array(["model_a", "model_b", "tie"], dtype=object)
battles = pd.DataFrame({{"model_a": names[a], "model_b": names[b],
                         "winner": outcome[np.where(tie, 2, np.where(awin, 0, 1))]}})
del a, b, p, tie, awin
import multistat
data_rss = rss()
code = multistat.__file__
"""

MULTISTAT = DATA + """
from multistat.human import preferences as P
multistat.bradley_terry(battles.iloc[:20000], n_resamples=10)  # warm-up: imports
t, c = time.perf_counter(), cpu()
board = multistat.bradley_terry(battles, n_resamples={B}, seed=0)
out = {{"total_s": time.perf_counter() - t, "total_cpu_s": cpu() - c,
        "peak_rss_mib": rss(), "data_rss_mib": data_rss,
        "ci_width_mean": float((board.ci_high - board.ci_low).mean()), "code": code}}
if {parts}:
    t, c = time.perf_counter(), cpu(); bt = P.aggregate_battles(battles)
    out["aggregate_s"], out["aggregate_cpu_s"] = time.perf_counter() - t, cpu() - c
    t = time.perf_counter(); beta, _ = P.fit_bradley_terry(bt)
    out["fit_s"] = time.perf_counter() - t
    t, c = time.perf_counter(), cpu(); boot = P.bootstrap_fits(bt, beta, 0.0, False, {B}, 0)
    out["bootstrap_s"], out["bootstrap_cpu_s"] = time.perf_counter() - t, cpu() - c
    out["unconverged"] = boot.unconverged
print(json.dumps(out))
"""

BEFORE = DATA + """
multistat.bradley_terry(battles.iloc[:20000], n_resamples=10)  # warm-up: imports
t, c = time.perf_counter(), cpu()
board = multistat.bradley_terry(battles, n_resamples={B}, seed=0)
print(json.dumps({{"total_s": time.perf_counter() - t, "total_cpu_s": cpu() - c,
                  "peak_rss_mib": rss(), "data_rss_mib": data_rss,
                  "ci_width_mean": float((board.ci_high - board.ci_low).mean()),
                  "code": code}}))
"""

ARENA = DATA + """
import math, warnings
from sklearn.linear_model import LogisticRegression
from multistat.human import preferences as P
sub = battles.iloc[:{n_sub}].reset_index(drop=True)

def arena_mle(df, scale=400.0, base=10.0, init=1000.0):
    # the notebook's recipe: every battle twice; a tie is one win for each side
    models = pd.Series(np.arange(S), index=names)
    n = len(df)
    X = np.zeros((2 * n, S))
    rows = np.arange(2 * n)
    ia = np.tile(models[df["model_a"]].to_numpy(), 2)
    ib = np.tile(models[df["model_b"]].to_numpy(), 2)
    X[rows, ia] = math.log(base)
    X[rows, ib] = -math.log(base)
    w = np.tile(df["winner"].to_numpy(), 2)
    y = (w == "model_a").astype(float)
    first = rows < n
    y[first & ((w == "tie") | (w == "tie (bothbad)"))] = 1.0
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6)
    lr.fit(X, y)
    return scale * lr.coef_[0] + init

t, c = time.perf_counter(), cpu()
arena = arena_mle(sub)
out = {{"arena_fit_s": time.perf_counter() - t, "arena_fit_cpu_s": cpu() - c}}
rng = np.random.default_rng(1)
boots = []
t, c = time.perf_counter(), cpu()
for _ in range({R}):  # the notebook's bootstrap: resample the battles, refit
    boots.append(arena_mle(sub.sample(frac=1.0, replace=True, random_state=rng)))
out["arena_boot_s_each"] = (time.perf_counter() - t) / {R}
out["arena_boot_cpu_s_each"] = (cpu() - c) / {R}
boots = np.array(boots)
multistat.bradley_terry(sub.iloc[:2000], n_resamples=10)  # warm-up
t, c = time.perf_counter(), cpu()
board = multistat.bradley_terry(sub, n_resamples={B}, seed=0)
out["multistat_s"], out["multistat_cpu_s"] = time.perf_counter() - t, cpu() - c
ours = board.set_index("system").loc[names, "score"].to_numpy()
out["max_elo_diff"] = float(np.abs(ours - arena).max())
bt = P.aggregate_battles(sub)
beta, _ = P.fit_bradley_terry(bt)
dist = P.bootstrap_fits(bt, beta, 0.0, False, {B}, 0).dist
dist = pd.DataFrame(dist, columns=bt.systems)[list(names)].to_numpy()
sd_ours = (P.ELO_PER_LOGIT * (dist - dist.mean(1, keepdims=True))).std(0, ddof=1)
sd_arena = (boots - boots.mean(1, keepdims=True)).std(0, ddof=1)
out["sd_ratio_median"] = float(np.median(sd_ours / sd_arena))
out["sd_ours_mean"], out["sd_arena_mean"] = float(sd_ours.mean()), float(sd_arena.mean())
out["peak_rss_mib"] = rss()
print(json.dumps(out))
"""


def child(code: str, path: str) -> dict:
    """Run ``code`` in a fresh interpreter with ``path`` first on the import path (from
    an empty folder: the working directory would come before it)."""
    import tempfile

    env = dict(os.environ, PYTHONPATH=path)
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                              text=True, cwd=cwd, env=env, check=False)
    if proc.returncode:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e5,1e6,1e7", help="battles, comma-separated")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--before", default=None,
                    help="a checkout of the previous version to time beside this one")
    ap.add_argument("--arena-battles", type=int, default=50_000)
    ap.add_argument("--arena-resamples", type=int, default=30)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    here = str(ROOT)
    rows, raw = [], {}
    for n in [int(float(x)) for x in args.sizes.split(",")]:
        ms = child(MULTISTAT.format(N=n, B=args.resamples, parts=True), here)
        raw[f"multistat_{n}"] = ms
        rows.append({"battles": n, "side": "multistat", "seconds": ms["total_s"],
                     "cpu_seconds": ms["total_cpu_s"], "aggregate_s": ms["aggregate_s"],
                     "bootstrap_s": ms["bootstrap_s"], "peak_rss_mib": ms["peak_rss_mib"],
                     "data_rss_mib": ms["data_rss_mib"], "ci_width": ms["ci_width_mean"]})
        if args.before:
            old = child(BEFORE.format(N=n, B=args.resamples), args.before)
            raw[f"before_{n}"] = old
            rows.append({"battles": n, "side": "before", "seconds": old["total_s"],
                         "cpu_seconds": old["total_cpu_s"],
                         "peak_rss_mib": old["peak_rss_mib"],
                         "data_rss_mib": old["data_rss_mib"],
                         "ci_width": old["ci_width_mean"]})
    text = table(rows, ["battles", "side", "seconds", "cpu_seconds", "aggregate_s",
                        "bootstrap_s", "peak_rss_mib", "data_rss_mib", "ci_width"])
    arena = child(ARENA.format(N=args.arena_battles, n_sub=args.arena_battles,
                               R=args.arena_resamples, B=args.resamples), here)
    raw["arena"] = arena
    extrapolated = arena["arena_boot_s_each"] * args.resamples
    arows = [
        {"side": "Arena notebook: point fit (sklearn)", "seconds": arena["arena_fit_s"],
         "cpu_seconds": arena["arena_fit_cpu_s"]},
        {"side": f"Arena notebook: bootstrap B={args.resamples} (from "
                 f"{args.arena_resamples})", "seconds": extrapolated,
         "cpu_seconds": arena["arena_boot_cpu_s_each"] * args.resamples},
        {"side": f"multistat.bradley_terry, B={args.resamples}",
         "seconds": arena["multistat_s"], "cpu_seconds": arena["multistat_cpu_s"]}]
    atext = table(arows, ["side", "seconds", "cpu_seconds"])
    header = (f"200 models, B = {args.resamples}; {machine()} (children: "
              f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}); machine shared "
              f"with other jobs (load average {os.getloadavg()[0]:.1f} at the end)")
    aheader = (f"Side by side on {args.arena_battles:,} battles: max |Elo difference| of "
               f"the point scores {arena['max_elo_diff']:.3g}; bootstrap SD, multistat / "
               f"Arena loop (median over models) {arena['sd_ratio_median']:.3f} (mean SD "
               f"{arena['sd_ours_mean']:.1f} vs {arena['sd_arena_mean']:.1f} Elo; Monte "
               f"Carlo error of the ratio about "
               f"{1 / (2 * args.arena_resamples) ** 0.5:.2f}); speed-up of the bootstrap "
               f"{extrapolated / arena['multistat_s']:.0f}x")
    print(header)
    print(text)
    print(aheader)
    print(atext)
    from multistat._atomic import write_text

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "preferences_scale.json",
               json.dumps({"header": header, "rows": rows, "arena_header": aheader,
                           "arena_rows": arows, "raw": raw}, indent=1, default=float) + "\n")
    write_text(out / "preferences_scale.md",
               f"# Bradley-Terry at arena scale\n\n{header}\n\n```\n{text}\n```\n\n"
               f"{aheader}\n\n```\n{atext}\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
