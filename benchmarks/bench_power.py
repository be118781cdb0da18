"""Wall time of the simulation-power scenarios (Card et al. 2020) in multistat, next to a
per-simulation Python loop in the style of the authors' notebooks (statsmodels ``mcnemar``
per simulated table; an inner loop over random swap subsets for BLEU).

Run:  python benchmarks/bench_power.py [--peer]

* McNemar, n = 2000, Delta = 0.02, P_a = 0.9, 10,000 simulations (appendix C);
* BLEU, N = 2000, Delta = 1, P0 = 0.13, b0 = 25.8, 500 simulations x 1,000 permutations
  (section 4);
* with ``--peer`` the loop versions run on a fraction of the simulations and their time is
  extrapolated linearly (said so in the output).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _time(fn, repeat=3):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def peer_mcnemar(n_sims, n=2000, delta=0.02, agreement=0.9, seed=0):
    from statsmodels.stats.contingency_tables import mcnemar

    rng = np.random.default_rng(seed)
    disc = 1 - agreement
    probs = [(disc + delta) / 2, (disc - delta) / 2, agreement]
    sig = 0
    for _ in range(n_sims):
        b, c, _ = rng.multinomial(n, probs)
        sig += mcnemar([[0, b], [c, 0]], exact=True).pvalue <= 0.05
    return sig / n_sims


def peer_bleu(n_sims, n_perm=1000, n=2000, delta=1.0, p0=0.13, b0=25.8, seed=0):
    rng = np.random.default_rng(seed)
    mu, b = -2 * delta / (n * (1 - p0)), b0 / n
    sig = 0
    for _ in range(n_sims):
        eff = rng.laplace(mu, b, n) * (rng.random(n) >= p0)
        d = -eff.sum() / 2
        null = np.empty(n_perm)
        for j in range(n_perm):
            null[j] = d + eff[rng.random(n) < 0.5].sum()
        sig += (1 + np.sum(np.abs(null) >= abs(d))) / (n_perm + 1) <= 0.05
    return sig / n_sims


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", action="store_true", help="also time the loop versions")
    args = ap.parse_args(argv)

    from multistat.power import simulate_bleu, simulate_mcnemar

    t, r = _time(lambda: simulate_mcnemar(n=2000, delta=0.02, agreement=0.9,
                                          n_simulations=10_000, seed=0))
    print(f"multistat simulate_mcnemar  n=2000, 10,000 simulations: {t:8.3f} s  "
          f"(power {r.power:.4f} +- {r.power_se:.4f}, Type-M {r.type_m:.3f})")
    t, r = _time(lambda: simulate_bleu(n=2000, delta=1.0, p_zero=0.13, b_zero=25.8,
                                       n_simulations=500, n_permutations=1000, seed=0))
    print(f"multistat simulate_bleu     N=2000, 500 x 1,000:         {t:8.3f} s  "
          f"(power {r.power:.3f} +- {r.power_se:.3f}, Type-M {r.type_m:.3f})")
    if args.peer:
        k = 1000
        t, p = _time(lambda: peer_mcnemar(k), repeat=1)
        print(f"loop + statsmodels mcnemar  {k} simulations: {t:8.3f} s -> "
              f"extrapolated to 10,000: {t * 10:8.2f} s (power {p:.3f})")
        k = 10
        t, p = _time(lambda: peer_bleu(k), repeat=1)
        print(f"loop BLEU randomization     {k} x 1,000: {t:8.3f} s -> extrapolated to "
              f"500 x 1,000: {t * 50:8.2f} s")


if __name__ == "__main__":
    main()
