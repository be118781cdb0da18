"""One row of the calibration table (:mod:`validation.calibration`): the observed rate of a
(test, distribution, n) cell against its nominal level, with a verdict and the known
reason for a departure; and the seed of each setting. Shared by
:mod:`validation.calibration` and :mod:`validation._preferences`, below both.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

ALPHA = 0.05
CONFIDENCE = 0.95


def seed_of(*parts) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4],
                          "little")


# ---------------------------------------------------------------------------- verdicts
#: tests of two unpaired samples (calibrated on the paired null data of the others)
UNPAIRED = ("mannwhitney", "brunner-munzel")


def _reason(kind, test, method, distribution, n, verdict) -> str:
    if verdict == "ok":
        return ""
    discrete = distribution in ("likert", "binary")
    if test in UNPAIRED and verdict == "conservative":
        return ("an unpaired test of paired data: the instances' shared effect makes the two "
                "systems' scores positively correlated, which the two-sample variance "
                "ignores, so the test is conservative (its interval too wide); on paired "
                "instances use a paired test, the unpaired ones are for designs where each "
                "system has its own instances")
    if kind == "type_i_error":
        if verdict == "conservative":
            if test in ("sign", "mcnemar"):
                return ("exact test of a discrete count: the attainable levels lie below "
                        "alpha (zero differences dropped)")
            if test == "permutation" and (discrete or n <= 20):
                return ("discrete sign-flip distribution (many zero or tied differences): "
                        "P(p <= alpha) falls below alpha")
            if test == "wilcoxon" and discrete:
                return "ties and zeros: the tie-corrected signed-rank test is conservative"
            if test == "t" and distribution == "heavy":
                return ("t(2) differences have infinite variance: the t statistic is "
                        "lighter-tailed than t(n-1), so the t test is conservative")
            if test == "bootstrap" and discrete:
                return ("discrete bootstrap distribution: ties at the observed value count "
                        "against rejection")
            if distribution == "heavy":
                return "heavy tails (infinite variance): the test is conservative"
            if distribution == "bleu":
                return "corpus BLEU: discreteness of the n-gram statistics"
        else:
            if test == "bootstrap":
                return ("plug-in bootstrap: the resampling distribution is narrower than the "
                        "sampling distribution ((n-1)/n variance, no t quantile), a known "
                        "small-sample property; it shrinks as n grows")
            if test == "t" and distribution == "skewed":
                return "skewed differences: the t test is liberal at small n"
            if test == "mixed" and distribution == "skewed":
                return ("without raters the mixed model is the paired t test: skewed "
                        "differences make it liberal at small n")
            if test == "mixed" and distribution.startswith("card-"):
                return ("few raters: the rater-slope variance is estimated from a handful "
                        "of raters, often at its boundary (0), which Satterthwaite's df "
                        "cannot account for; the test is liberal, less so with more raters")
            if test == "permutation" and distribution == "skewed":
                return ("sign flipping assumes differences symmetric about the null; "
                        "these are skewed")
            if test == "wilcoxon" and distribution == "skewed":
                return ("the signed-rank test is exact only for symmetric differences; "
                        "these are skewed")
    else:
        if verdict == "liberal":
            if test == "bootstrap" and distribution == "heavy":
                return ("heavy tails (infinite variance): bootstrap intervals are too "
                        "narrow at every n; BCa's jackknife acceleration is unstable")
            if test == "bootstrap":
                return ("bootstrap interval too narrow (plug-in variance, no t quantile), "
                        "most at small n and on skewed data; shrinks as n grows")
            if test == "t" and distribution == "skewed":
                return "skewed differences: the t interval undercovers at small n"
            if test == "wilcoxon" and distribution == "skewed":
                return ("the Walsh interval assumes differences symmetric about the "
                        "pseudo-median; these are skewed")
            if test == "mixed" and distribution.startswith("card-"):
                return ("few raters: the interval's width depends on a rater-slope variance "
                        "estimated from a handful of raters (often 0); it undercovers")
            if distribution == "skewed":
                return "skewed differences: asymmetric sampling distribution"
        else:
            if discrete and test in ("sign", "wilcoxon"):
                return ("discrete differences with a point mass at the true median: the "
                        "interval covers it almost always")
            if test == "sign" or discrete:
                return ("discrete test inverted: the attainable coverage lies above the "
                        "nominal level")
            if distribution == "heavy":
                return "heavy tails: the interval is wider than needed"
            if test == "mcnemar":
                return "Newcombe's score interval is conservative for small counts"
    return "no known reason (investigate)"


def cell(kind, test, method, distribution, n, hits, nominal, group_rates, B, seed):
    R = hits.size
    rate = float(hits.mean())
    se = math.sqrt(nominal * (1 - nominal) / R)
    g = np.asarray(group_rates, dtype=float)
    se_c = float(g.std(ddof=1) / math.sqrt(g.size)) if g.size > 1 else float("nan")
    lo, hi = nominal - 3 * se, nominal + 3 * se
    if lo <= rate <= hi:
        verdict = "ok"
    elif kind == "type_i_error":
        verdict = "conservative" if rate < lo else "liberal"
    else:
        verdict = "conservative" if rate > hi else "liberal"
    return {"kind": kind, "test": test, "method": method, "distribution": distribution,
            "n": n, "replicates": R, "nominal": nominal, "rate": rate, "se_binomial": se,
            "se_cluster": se_c, "lower_3se": lo, "upper_3se": hi, "verdict": verdict,
            "reason": _reason(kind, test, method, distribution, n, verdict),
            "n_resamples": B, "seed": seed}
