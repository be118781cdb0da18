"""Bradley-Terry leaderboards (issue 26): multistat beside plain statsmodels/scipy fits.

Battles: ``--systems`` systems (default 100) with strengths N(0, 1) on the logit scale,
``--battles`` battles (default 10^6) between uniformly drawn pairs, 10 % ties (seed 0).
Each side runs in a fresh Python process (its own peak resident memory):

==============  ========================================================================
multistat       ``multistat.bradley_terry(battles, n_resamples=B)``: aggregation, point
                fit, multinomial bootstrap of the pair x outcome counts fitted by
                chord steps (then Newton), rank intervals and clusters -- total time, and
                the point fit and the bootstrap alone
glm             statsmodels ``GLM(Binomial)`` of the per-pair win shares (ties half)
                weighted by the battles: the same maximum-likelihood model (point fit on
                the pair counts; encoding the battles as integers is timed apart)
lbfgs           ``scipy.optimize.minimize(L-BFGS-B)`` on the per-battle log-likelihood
                with its analytic gradient: the fit without aggregation (point fit)
loop            the plain bootstrap: resample the (integer-coded) battles, aggregate,
                refit with the GLM -- a Python loop, timed for ``--loop`` resamples,
                extrapolated to B
==============  ========================================================================

Agreement: max |score difference| in Elo points against multistat's point scores (the
issue asks <= 0.05). Results go to ``benchmarks/results/preferences.{json,md}``. Run:
``.venv/bin/python benchmarks/bench_preferences.py [--battles 1000000] [--resamples 1000]``.
The machine may be shared: both sides run in the same invocation, one after the other,
with single-threaded BLAS (``OPENBLAS_NUM_THREADS=1`` unless set); CPU seconds (user +
system of the process) are reported beside wall seconds, as they suffer less from other
jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, run_isolated, table

DATA = """
import numpy as np, pandas as pd, time, json, resource
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
rng = np.random.default_rng(0)
S, N = {S}, {N}
strength = rng.normal(0, 1, S)
a = rng.integers(0, S, N); b = (a + rng.integers(1, S, N)) % S
p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
tie = rng.random(N) < 0.1
awin = ~tie & (rng.random(N) < p)
names = np.array([f"sys{{i:03d}}" for i in range(S)])
battles = pd.DataFrame({{"model_a": names[a], "model_b": names[b],
                         "winner": np.where(tie, "tie", np.where(awin, "model_a", "model_b"))}})
"""

MULTISTAT = DATA + """
import multistat
from multistat.human import preferences as P
multistat.bradley_terry(battles.iloc[:20000], n_resamples=10)  # warm-up: imports
t, c = time.perf_counter(), cpu()
board = multistat.bradley_terry(battles, n_resamples={B}, seed=0)
total, total_cpu = time.perf_counter() - t, cpu() - c
t = time.perf_counter(); bt = P.aggregate_battles(battles); agg = time.perf_counter() - t
t = time.perf_counter(); beta, _ = P.fit_bradley_terry(bt); fit = time.perf_counter() - t
t, c = time.perf_counter(), cpu()
bad = P.bootstrap_fits(bt, beta, 0.0, False, {B}, 0).unconverged
boot, boot_cpu = time.perf_counter() - t, cpu() - c
scores = board.set_index("system").loc[names, "score"].tolist()
print(json.dumps({{"total_s": total, "total_cpu_s": total_cpu, "bootstrap_cpu_s": boot_cpu,
                  "aggregate_s": agg, "fit_s": fit, "bootstrap_s": boot,
                  "unconverged": bad, "scores": scores,
                  "ci_width_mean": float((board.ci_high - board.ci_low).mean()),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

REFERENCE = DATA + """
import statsmodels.api as sm
from scipy import optimize
ELO = 400 / np.log(10)
t = time.perf_counter()
code = {{n: i for i, n in enumerate(names)}}
ia = battles["model_a"].map(code).to_numpy(); ib = battles["model_b"].map(code).to_numpy()
w = battles["winner"].to_numpy()
y = np.where(w == "model_a", 1.0, np.where(w == "model_b", 0.0, 0.5))
lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
ylo = np.where(ia == lo, y, 1 - y)
key = lo * S + hi
out = {{"encode_s": time.perf_counter() - t}}
def pairs(idx=None):
    k, yy = (key, ylo) if idx is None else (key[idx], ylo[idx])
    uk, inv = np.unique(k, return_inverse=True)
    return uk // S, uk % S, np.bincount(inv, yy), np.bincount(inv)
def glm(lo, hi, W, n):
    X = np.zeros((len(lo), S)); X[np.arange(len(lo)), lo] = 1; X[np.arange(len(lo)), hi] = -1
    f = sm.GLM(W / n, X[:, 1:], family=sm.families.Binomial(), var_weights=n).fit(tol=1e-12)
    beta = np.r_[0.0, f.params]
    return 1000 + ELO * (beta - beta.mean())
agg = pairs()
t, c = time.perf_counter(), cpu(); out["glm_scores"] = glm(*agg).tolist()
out["glm_s"], out["glm_cpu_s"] = time.perf_counter() - t, cpu() - c
# per battle, no aggregation: L-BFGS on the log-likelihood with its gradient
def nll(par):
    beta = np.r_[0.0, par]
    d = beta[ia] - beta[ib]
    p = 1 / (1 + np.exp(-d))
    f = -np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))
    g = np.bincount(ia, y - p, S) - np.bincount(ib, y - p, S)
    return f, -g[1:]
t, c = time.perf_counter(), cpu()
r = optimize.minimize(nll, np.zeros(S - 1), jac=True, method="L-BFGS-B",
                      options={{"gtol": 1e-8, "ftol": 1e-15, "maxiter": 10000}})
beta = np.r_[0.0, r.x]
out["lbfgs_s"], out["lbfgs_cpu_s"] = time.perf_counter() - t, cpu() - c
out["lbfgs_scores"] = (1000 + ELO * (beta - beta.mean())).tolist()
rng2 = np.random.default_rng(1)
t, c = time.perf_counter(), cpu()
for _ in range({L}):  # the plain bootstrap: resample battle indices, aggregate, refit
    glm(*pairs(rng2.integers(0, N, N)))
out["loop_s_each"] = (time.perf_counter() - t) / {L}
out["loop_cpu_s_each"] = (cpu() - c) / {L}
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--loop", type=int, default=5, help="resamples of the plain loop")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    import numpy as np

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # both sides: no spinning threads
    fmt = {"S": args.systems, "N": args.battles, "B": args.resamples, "L": args.loop}
    ms = run_isolated(MULTISTAT.format(**fmt))
    ref = run_isolated(REFERENCE.format(**fmt))
    scores = np.array(ms.pop("scores"))
    glm_diff = float(np.abs(scores - np.array(ref.pop("glm_scores"))).max())
    lbfgs_diff = float(np.abs(scores - np.array(ref.pop("lbfgs_scores"))).max())
    loop_total = ref["loop_s_each"] * args.resamples
    loop_cpu = ref["loop_cpu_s_each"] * args.resamples
    rows = [
        {"side": "multistat point fit (aggregated Newton)", "seconds": ms["fit_s"],
         "cpu_seconds": None, "max_elo_diff": 0.0, "peak_rss_mib": None},
        {"side": "statsmodels GLM on pair counts", "seconds": ref["glm_s"],
         "cpu_seconds": ref["glm_cpu_s"], "max_elo_diff": glm_diff, "peak_rss_mib": None},
        {"side": "scipy L-BFGS per battle", "seconds": ref["lbfgs_s"],
         "cpu_seconds": ref["lbfgs_cpu_s"], "max_elo_diff": lbfgs_diff,
         "peak_rss_mib": ref["peak_rss_mib"]},
        {"side": f"multistat bootstrap, B={args.resamples} (batched)",
         "seconds": ms["bootstrap_s"], "cpu_seconds": ms["bootstrap_cpu_s"],
         "max_elo_diff": None, "peak_rss_mib": None},
        {"side": f"plain loop resample+GLM, B={args.resamples} (from {args.loop})",
         "seconds": loop_total, "cpu_seconds": loop_cpu, "max_elo_diff": None,
         "peak_rss_mib": None},
        {"side": "multistat.bradley_terry total (aggregate, fit, bootstrap, ranks, "
                 "clusters)", "seconds": ms["total_s"], "cpu_seconds": ms["total_cpu_s"],
         "max_elo_diff": None, "peak_rss_mib": ms["peak_rss_mib"]},
    ]
    header = (f"{args.systems} systems x {args.battles:,} battles, B = {args.resamples}; "
              f"{machine()} (the two timed children: OPENBLAS_NUM_THREADS="
              f"{os.environ['OPENBLAS_NUM_THREADS']}); machine shared with other jobs (load average "
              f"{os.getloadavg()[0]:.1f} at the end). Bootstrap speed-up "
              f"{loop_total / ms['bootstrap_s']:.0f}x; aggregation {ms['aggregate_s']:.2f} s;"
              f" reference encoding of the battles {ref['encode_s']:.2f} s; unconverged "
              f"resamples {ms['unconverged']}; mean 95% CI width "
              f"{ms['ci_width_mean']:.1f} Elo")
    text = table(rows, ["side", "seconds", "cpu_seconds", "max_elo_diff", "peak_rss_mib"])
    print(header)
    print(text)
    from multistat._atomic import write_text

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "preferences.json", json.dumps({"header": header, "rows": rows,
                                                     "multistat": ms, "reference": ref},
                                                    indent=1, default=float) + "\n")
    write_text(out / "preferences.md", f"# Bradley-Terry benchmark\n\n{header}\n\n```\n"
                                        f"{text}\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
