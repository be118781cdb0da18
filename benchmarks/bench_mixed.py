"""The mixed-model test of human ratings (``compare(tests=("mixed",))``) next to the peer a
user would pick: one statsmodels ``MixedLM`` REML fit per pair with crossed variance
components for rater and item intercepts and slopes (the formula of Card et al. 2020,
appendix H.3).

Run:  python benchmarks/bench_mixed.py [--pairs-only]

* one pair, 10 raters x 200 items x 2 systems, 70 % of the cells rated (an incomplete,
  unbalanced design): wall time of multistat's fit (REML + Satterthwaite df) and of
  ``MixedLM.fit(reml=True)``, and the largest differences of the estimate, its standard
  error and the five standard deviations;
* all 190 pairs of 20 systems rated by 10 raters on 200 items, through ``compare`` (the
  issue's target: under a minute);
* ``--systems 60 --pairs-only``: all 1,770 pairs of 60 systems, with the peak resident
  memory of the process before and after ``compare`` (``getrusage``). Run it once on the
  code before a change and once after (``PYTHONPATH``) to compare: ``mixed`` used to
  gather ``ratings[ia]`` and ``ratings[ib]`` (pairs x items x raters each) for a slab
  of pairs; it now fits pair by pair on views of the two systems' ratings.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import machine

from multistat import cube
from multistat.significance.mixed import fit_crossed


def draw(rng, systems, raters, items, share):
    """Ratings ``(systems, items, raters)`` of Card et al.'s crossed model (high preset)."""
    w0, w1 = rng.normal(0, 0.01, raters), rng.normal(0, 0.11, raters)
    i0, i1 = rng.normal(0, 0.04, items), rng.normal(0, 0.14, items)
    effect = rng.normal(0, 0.05, systems)
    x = np.where(np.arange(systems) % 2, 1.0, -1.0)
    y = (0.5 + effect[:, None, None] + w0[None, None] + i0[None, :, None]
         + x[:, None, None] * (w1[None, None] + i1[None, :, None])
         + rng.normal(0, 0.26, (systems, items, raters)))
    y[rng.random(y.shape) > share] = np.nan
    return y


def one_pair(seed=0):
    rng = np.random.default_rng(seed)
    y = draw(rng, 2, 10, 200, 0.7)
    items, raters = np.indices(y[0].shape)
    pa, pb = ~np.isnan(y[0]), ~np.isnan(y[1])
    df = pd.DataFrame({"y": np.concatenate([y[0][pa], y[1][pb]]),
                       "x": np.concatenate([np.ones(pa.sum()), -np.ones(pb.sum())]),
                       "rater": np.concatenate([raters[pa], raters[pb]]),
                       "item": np.concatenate([items[pa], items[pb]]), "g": 0})
    t0, c0 = time.perf_counter(), time.process_time()
    fit = fit_crossed(df["y"], df["x"], df["rater"], df["item"])
    ours, ours_cpu = time.perf_counter() - t0, time.process_time() - c0
    import statsmodels.formula.api as smf

    vc = {"rater": "0 + C(rater)", "item": "0 + C(item)", "rater_x": "0 + C(rater):x",
          "item_x": "0 + C(item):x"}
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = smf.mixedlm("y ~ x", df, groups="g", re_formula="0", vc_formula=vc).fit(
            reml=True)
    peer, peer_cpu = time.perf_counter() - t0, time.process_time() - c0
    sds = np.sqrt(np.asarray(ref.vcomp))  # item, item_x, rater, rater_x
    ours_sd = np.array([fit.sd[k] for k in ("item_intercept", "item_slope",
                                            "rater_intercept", "rater_slope")])
    return {"ratings": len(df), "multistat_s": ours, "mixedlm_s": peer,
            "ratio": peer / ours, "multistat_cpu": ours_cpu, "mixedlm_cpu": peer_cpu,
            "d_estimate": abs(fit.beta[1] - ref.fe_params["x"]),
            "se_rel": abs(np.sqrt(fit.cov_beta[1, 1]) / ref.bse["x"] - 1),
            "d_sd_max": float(np.max(np.abs(ours_sd - sds))),
            "satterthwaite_df": fit.df}


def _peak_mib() -> float:
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def all_pairs(seed=1, systems=20):
    from multistat import compare

    rng = np.random.default_rng(seed)
    y = draw(rng, systems, 10, 200, 0.7)  # (S, items, raters)
    rating = y[:, None]
    ds = cube.make_dataset("human", cube.run_mean(rating),
                           systems=[f"sys{i:02d}" for i in range(systems)],
                           metrics=["rating"], instances=[f"i{j:03d}" for j in range(200)],
                           rating=rating, raters=[f"r{j}" for j in range(10)])
    study = cube.make_study({"human": ds})
    before = _peak_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    table = compare(study, tests=("mixed",), pairs="all", correction="holm",
                    effect_sizes=False)
    return {"pairs": len(table), "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0,
            "significant": int(table["reject"].sum()), "peak_before_mib": before,
            "peak_after_mib": _peak_mib(), "systems": systems}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs-only", action="store_true", help="skip the MixedLM pair")
    ap.add_argument("--systems", type=int, default=20, help="systems of the all-pairs run")
    args = ap.parse_args(argv)
    print(machine())
    if not args.pairs_only:
        r = one_pair()
        print("one pair, 10 raters x 200 items, 70 % rated: "
              f"{r['ratings']} ratings; multistat {r['multistat_s']:.3f} s "
              f"({r['multistat_cpu']:.3f} s CPU), MixedLM {r['mixedlm_s']:.1f} s "
              f"({r['mixedlm_cpu']:.1f} s CPU; {r['ratio']:.0f}x); |d estimate| "
              f"{r['d_estimate']:.2e}, SE rel. diff {r['se_rel']:.2e}, max |d SD| "
              f"{r['d_sd_max']:.2e}; Satterthwaite df {r['satterthwaite_df']:.1f}")
    r = all_pairs(systems=args.systems)
    print(f"all {r['pairs']} pairs of {r['systems']} systems (10 raters x 200 items, 70 % "
          f"rated) through compare: {r['seconds']:.1f} s ({r['cpu_seconds']:.1f} s CPU); "
          f"{r['significant']} significant after Holm; peak RSS {r['peak_before_mib']:.0f} "
          f"MiB before compare, {r['peak_after_mib']:.0f} MiB after")


if __name__ == "__main__":
    main()
