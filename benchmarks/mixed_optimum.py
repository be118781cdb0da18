"""Does the crossed mixed model reach the REML optimum? Random crossed rating designs
(balanced and with holes, with zero, small and moderate variance components, some rounded
to a 1-5 Likert scale), each fitted by ``fit_crossed`` of the code on ``PYTHONPATH`` and
checked against a brute-force optimum of the same REML criterion: on every one of the 16
boundary faces (each subset of the four components held at 0) L-BFGS-B over theta with
finite-difference gradients from 3 starts (0.5 and two random), the 4 best then polished
by a derivative-free bounded optimizer (scipy Powell).

Run:  python benchmarks/mixed_optimum.py fit OUT.json     (with the code to measure)
      python benchmarks/mixed_optimum.py brute OUT.json [FIRST LAST]   (the reference)
      python benchmarks/mixed_optimum.py report BRUTE.json[,BRUTE2.json] FIT.json [FIT2.json]

The criterion of a fit is evaluated at its reported standard deviations by the profiled
REML criterion of the current tree (``_Crossed.solve``), in the scaled units, so fits of
different versions are compared on one scale.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

N_DESIGNS = 50


def designs(n=N_DESIGNS, seed=20261127):
    rng = np.random.default_rng(seed)
    out = []
    for d in range(n):
        R, I = int(rng.integers(3, 9)), int(rng.integers(8, 41))
        share = 1.0 if d % 2 == 0 else 0.75
        sds = []
        for _ in range(4):
            kind = rng.choice(["zero", "small", "moderate"], p=[0.35, 0.25, 0.4])
            sds.append({"zero": 0.0, "small": 0.03, "moderate": rng.uniform(0.2, 0.8)}[kind])
        sigma = 0.5
        w0, w1 = rng.normal(0, sds[0], R), rng.normal(0, sds[1], R)
        i0, i1 = rng.normal(0, sds[2], I), rng.normal(0, sds[3], I)
        eff = rng.normal(0, 0.2)
        ya = 3 + w0[None] + i0[:, None] + eff + w1[None] + i1[:, None] + rng.normal(
            0, sigma, (I, R))
        yb = 3 + w0[None] + i0[:, None] - eff - w1[None] - i1[:, None] + rng.normal(
            0, sigma, (I, R))
        if d % 3 == 0:  # Likert
            ya, yb = np.clip(np.round(ya), 1, 5), np.clip(np.round(yb), 1, 5)
        ya[rng.random(ya.shape) > share] = np.nan
        yb[rng.random(yb.shape) > share] = np.nan
        out.append((ya, yb))
    return out


def long(ya, yb):
    items, raters = np.indices(ya.shape)
    pa, pb = ~np.isnan(ya), ~np.isnan(yb)
    return (np.concatenate([ya[pa], yb[pb]]),
            np.concatenate([np.ones(pa.sum()), -np.ones(pb.sum())]),
            np.concatenate([raters[pa], raters[pb]]), np.concatenate([items[pa], items[pb]]))


def model(ya, yb):
    """The criterion in fit_crossed's orientation (the side with fewer levels first)."""
    from multistat.significance.mixed import _Crossed

    y, x, r, i = long(ya, yb)
    swap = np.unique(r).size > np.unique(i).size
    return _Crossed(y, x, i if swap else r, r if swap else i), swap


def fit_all(path):
    from multistat.significance.mixed import fit_crossed

    rows = []
    for ya, yb in designs():
        f = fit_crossed(*long(ya, yb))
        rows.append({"sd": f.sd, "est": float(2 * f.beta[1]),
                     "se": float(2 * np.sqrt(f.cov_beta[1, 1])), "df": float(f.df),
                     "converged": bool(f.converged), "note": getattr(f, "note", "")})
    Path(path).write_text(json.dumps(rows))


def brute_all(path, first=0, last=N_DESIGNS):
    from scipy.optimize import minimize

    rows = []
    for k, (ya, yb) in enumerate(designs()):
        if not first <= k < last:
            continue
        m, swap = model(ya, yb)
        rng = np.random.default_rng(k)
        cands = []
        for mask in range(16):
            free = np.array([not (mask >> j) & 1 for j in range(4)])
            nf = int(free.sum())

            def f(v, free=free, m=m):
                th = np.zeros(4)
                th[free] = v
                return m.solve(th)[0]

            if nf == 0:
                cands.append((f(np.zeros(0)), free, np.zeros(0)))
                continue
            for s in range(3):  # L-BFGS-B on theta with finite-difference gradients
                x0 = (np.exp(rng.uniform(np.log(1e-2), np.log(3.0), nf)) if s
                      else np.full(nf, 0.5))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = minimize(f, x0, method="L-BFGS-B", bounds=[(0, 1e3)] * nf,
                                   options={"ftol": 1e-15, "gtol": 1e-9, "maxiter": 2000})
                cands.append((float(res.fun), free, res.x))
        cands.sort(key=lambda c: c[0])
        best = cands[0]
        for fun, free, x in cands[:4]:  # Powell (derivative-free) polish of the best
            def f(v, free=free, m=m):
                th = np.zeros(4)
                th[free] = v
                return m.solve(th)[0]

            if not free.any():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = minimize(f, x, method="Powell", bounds=[(0, 1e3)] * int(free.sum()),
                               options={"xtol": 1e-12, "ftol": 1e-15, "maxfev": 20000})
            if res.fun < best[0]:
                best = (float(res.fun), free, res.x)
        th = np.zeros(4)
        th[best[1]] = best[2]
        rows.append({"design": k, "crit": best[0], "theta": th.tolist(), "swap": bool(swap)})
        print(k, best[0], flush=True)
    Path(path).write_text(json.dumps(rows))


def crit_of(m, swap, sd):
    names = ["rater_intercept", "rater_slope", "item_intercept", "item_slope"]
    if swap:
        names = names[2:] + names[:2]
    th = np.array([sd[n] / sd["sigma"] for n in names])
    return m.solve(th)[0]


def report(brute_path, *fit_paths):
    brute = sorted((r for p in brute_path.split(",") for r in json.loads(Path(p).read_text())),
                   key=lambda r: r["design"])
    fits = [json.loads(Path(p).read_text()) for p in fit_paths]
    ds = designs()
    crits = [[crit_of(*model(*ds[k]), f[k]["sd"]) for k in range(len(ds))] for f in fits]
    for p, f, c in zip(fit_paths, fits, crits):
        gap = np.array(c) - np.array([b["crit"] for b in brute])
        bad = gap > 1e-8
        silent = [k for k in np.flatnonzero(bad) if f[k]["converged"]]
        print(f"{p}: at the optimum (criterion within 1e-8 of brute force) "
              f"{int((~bad).sum())}/{len(ds)}; largest criterion excess {gap.max():.3g}; "
              f"short of it yet converged=True: {len(silent)}; "
              f"better than brute force by up to {-gap.min():.3g}")
    if len(fits) == 2:
        a, b = fits
        for key in ("est", "se", "df"):
            x, y = np.array([r[key] for r in a]), np.array([r[key] for r in b])
            ok = np.isfinite(x) & np.isfinite(y)
            rel = np.abs(x - y) / np.maximum(np.abs(y), 1e-12)
            k = int(np.nanargmax(np.where(ok, rel, -1)))
            print(f"  {key}: largest relative difference {rel[ok].max():.3g} (design {k}: "
                  f"{x[k]:.6g} -> {y[k]:.6g}); non-finite in either: {int((~ok).sum())}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fit":
        fit_all(sys.argv[2])
    elif mode == "brute":
        brute_all(sys.argv[2], *map(int, sys.argv[3:5]))
    else:
        report(sys.argv[2], *sys.argv[3:])
