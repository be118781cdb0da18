"""Type I error of the clustered paired t test ("t-cluster") on clustered null data, beside
the plain paired t test (which treats the instances as independent) and Miller's
uncorrected form (CR0 standard error, normal reference).

Run:  python benchmarks/cluster_t_type1.py [--studies 2000] [--out benchmarks/results/cluster_t_type1.md]

Null studies: the paired differences of G groups of m instances are a group effect
N(0, rho) plus an instance effect N(0, 1 - rho) (intra-group correlation rho, mean 0);
each study is tested at alpha = 0.05 two-sided. The rejection rate is given with its
binomial standard error sqrt(p (1 - p) / R). One generator per setting (seeded), so the
table repeats bit for bit.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from multistat._atomic import write_text
from multistat.significance import paired_t, paired_t_cluster

SETTINGS = [(40, 5, 0.3), (10, 5, 0.3), (20, 5, 0.3), (40, 5, 0.0), (40, 20, 0.1)]


def _rates(G, m, rho, R, seed, alpha=0.05):
    rng = np.random.default_rng([seed, G, m, int(rho * 1000)])
    g = np.repeat(np.arange(G), m)
    d = (rng.normal(0, math.sqrt(rho), (R, G))[:, g]
         + rng.normal(0, math.sqrt(1 - rho), (R, G * m)))
    zero = np.zeros_like(d)
    res = paired_t_cluster(d, zero, groups=g)
    clustered = np.mean(res.p_value <= alpha)
    plain = np.mean(paired_t(d, zero).p_value <= alpha)
    # Miller (2024) as written: SE_CR0 = SE_CR1 sqrt((G - 1) / G), normal reference
    z = res.estimate / (res.extra["se"] * math.sqrt((G - 1) / G))
    cr0 = np.mean(2 * stats.norm.sf(np.abs(z)) <= alpha)
    return clustered, plain, cr0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    R = a.studies

    def cell(p):
        return f"{p:.4f} ± {math.sqrt(p * (1 - p) / R):.4f}"

    lines = [(f"# Type I error at alpha = 0.05 (two-sided), {R} null studies per row, "
              f"seed {a.seed}"), "",
             ("| groups G | size m | ICC | t-cluster (CR1, t on G-1 df) | paired t "
              "(ignores groups) | CR0 + normal (Miller as written) |"),
             "|---|---|---|---|---|---|"]
    for G, m, rho in SETTINGS:
        c, p, z = _rates(G, m, rho, R, a.seed)
        lines.append(f"| {G} | {m} | {rho} | {cell(c)} | {cell(p)} | {cell(z)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        write_text(a.out, text)


if __name__ == "__main__":
    main()
