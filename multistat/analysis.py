"""Data analysis and test recommendation (NLPStatTest manual section 3.1, appendix C).

For every dataset x metric x pair of systems, on the (evaluation-unit) differences
``d = a - b``: descriptive statistics of a, b and d; the sample skewness of d; a
normality test of d; the test statistic (mean or median) and three lists of tests —
recommended, non-preferred and inappropriate — following the manual's Table 2.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from multistat import cube
from multistat._budget import Budget
from multistat._validation import check_probability
from multistat.errors import ConstantInputWarning
from multistat.significance import REGISTRY

SHAPIRO_MAX = 5000
SKEW_THRESHOLD = 0.5

#: the reason of a list, for a registered test without its own reason for the situation
#: (``TestSpec.reasons``)
_GENERIC = {
    "recommended": "its assumptions fit the differences best",
    "non_preferred": "valid here but less powerful or more expensive than the recommended "
                     "test",
    "inappropriate": "its assumptions (symmetry or normality) are rejected by the data",
    "resampling": "valid, but computationally expensive",
}


def _classify(spec, symmetric: bool, normal: bool) -> str:
    """Table 2 of the NLPStatTest manual from a spec's assumption flags.

    A test whose assumptions fail is inappropriate (normality when the differences are not
    normal or skewed, symmetry when skewed). Resampling tests are never recommended (valid
    but expensive). Of the rest, the recommended test is the one with the most
    assumptions that hold: normal -> the tests assuming normality; symmetric only -> those
    assuming symmetry (not normality); skewed -> those assuming neither.
    """
    if spec.assumes_normal and not (symmetric and normal):
        return "inappropriate"
    if spec.assumes_symmetric and not symmetric:
        return "inappropriate"
    if spec.resampling:
        return "non_preferred"
    if symmetric and normal:
        best = spec.assumes_normal
    elif symmetric:
        best = spec.assumes_symmetric and not spec.assumes_normal
    else:
        best = not spec.assumes_symmetric and not spec.assumes_normal
    return "recommended" if best else "non_preferred"


def _specs(binary: bool):
    # ASO ("distribution": dominance over runs, no p-value) is no test of Table 2, nor
    # are the tests of other designs (ratings by rater, unpaired samples: not advised)
    general = [s for s in REGISTRY.values() if not s.binary_only and s.advised
               and "distribution" not in s.statistic_kinds]
    # order within a list: most assumptions first, resampling tests last (as Table 2)
    general.sort(key=lambda s: (s.resampling, not s.assumes_normal, not s.assumes_symmetric))
    special = [s for s in REGISTRY.values() if s.binary_only] if binary else []
    return special, general


def recommend(skewness: float, normal: bool, *, binary: bool = False) -> dict:
    """Test statistic and the three lists of Table 2 for one comparison.

    ``|skewness| < 0.5`` counts as symmetric (mean); otherwise median (appendix C.2).
    NaN skewness (constant differences) is treated as symmetric. The lists cover every
    registered test and are decided by each spec's assumption flags
    (``assumes_normal``, ``assumes_symmetric``, ``resampling``; :func:`_classify`). A
    binary metric adds the binary-only tests (McNemar) as recommended.
    """
    symmetric = not (abs(skewness) >= SKEW_THRESHOLD)  # NaN -> symmetric
    situation = ("normal" if normal else "symmetric") if symmetric else "skewed"
    special, general = _specs(binary)
    groups: dict = {"recommended": [], "non_preferred": [], "inappropriate": []}
    reasons = []
    for spec in special:
        groups["recommended"].append(spec.name)
        reasons.append(f"{spec.name}: " + (spec.reasons.get(situation) or
                                           "binary (0/1) scores: a test made for them"))
    for spec in general:
        group = _classify(spec, symmetric, bool(normal) and symmetric)
        groups[group].append(spec.name)
        text = spec.reasons.get(situation) or _GENERIC[
            "resampling" if spec.resampling and group == "non_preferred" else group]
        reasons.append(f"{spec.name}: {text}")
    out = {"test_statistic": "mean" if symmetric else "median"}
    for group, names in groups.items():
        out[group] = ",".join(names)
    out["reasons"] = " | ".join(reasons)
    return out


def _describe(prefix: str, x: np.ndarray) -> dict:
    q1, med, q3 = np.percentile(x, [25, 50, 75], axis=-1)
    return {f"mean_{prefix}": x.mean(-1), f"median_{prefix}": med,
            f"std_{prefix}": x.std(-1, ddof=1) if x.shape[-1] > 1 else np.nan,
            f"min_{prefix}": x.min(-1), f"q1_{prefix}": q1, f"q3_{prefix}": q3,
            f"max_{prefix}": x.max(-1)}


def _normality(d: np.ndarray) -> tuple[str, np.ndarray]:
    """Shapiro-Wilk up to 5000 differences, D'Agostino-Pearson K^2 above."""
    n = d.shape[-1]
    if n < 3:
        return "none (n < 3)", np.full(d.shape[0], np.nan)
    test = "shapiro-wilk" if n <= SHAPIRO_MAX else "dagostino-pearson"
    p = np.full(d.shape[0], np.nan)
    ok = np.ptp(d, axis=-1) > 0
    if ok.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fn = stats.shapiro if test == "shapiro-wilk" else stats.normaltest
            p[ok] = fn(d[ok], axis=-1).pvalue
    return test, p


def analyze(study, *, alpha: float = 0.05, pairs="all", metrics=None, datasets=None,
            memory_limit=None) -> pd.DataFrame:
    """Descriptives, skewness, normality and recommended tests for every comparison.

    Parameters
    ----------
    study : xarray.DataTree or path
        a study (``multistat.load`` / ``multistat.evaluation_units``)
    alpha : float, optional
        significance level of the normality test (its own, not the study's)
    pairs : str, optional
        ``"all"``, ``"baseline:<system>"`` or a list of ``(a, b)`` names
    metrics, datasets : optional
        restrict to these names (default: all)
    memory_limit : optional
        working-memory budget (bytes or e.g. ``"2GiB"``; default as
        :func:`multistat.compare`): pairs are analysed in chunks within it

    Returns
    -------
    pandas.DataFrame
        One row per dataset x metric x pair with ``dataset, metric, system_a, system_b,
        n`` (units with a score), ``mean_a .. max_a``, ``mean_b .. max_b``,
        ``mean_diff .. max_diff`` (mean, median, std, min, q1, q3, max), ``skewness``
        (of a - b, ``scipy.stats.skew`` with ``bias=True`` as NLPStatTest), ``normality_test``
        (``shapiro-wilk`` for n <= 5000, else ``dagostino-pearson`` — the Shapiro-Wilk
        p-value is not reliable above 5000 points), ``normality_p``, ``normal``
        (p > alpha), ``test_statistic`` (mean if ``|skewness| < 0.5`` else median),
        ``recommended``, ``non_preferred``, ``inappropriate`` (comma-separated test names
        following the manual's Table 2) and ``reasons`` (one reason per test).

    Notes
    -----
    Table 2 of the NLPStatTest manual: symmetric & normal -> t; symmetric & not normal ->
    Wilcoxon (t inappropriate except for large samples); skewed -> sign test with the
    median (t and Wilcoxon inappropriate). Permutation and bootstrap are non-preferred in
    every row. Constant differences (skewness undefined) warn and count as symmetric.
    """
    alpha = check_probability("alpha", alpha)
    budget = Budget.of(memory_limit)
    all_ds, metrics = cube.select(study, datasets=datasets, metrics=metrics)
    rows = []
    for name, ds in all_ds.items():
        score = np.asarray(ds[cube.SCORE].values)
        cube.refuse_holes(ds, name, score)  # read with missing="keep"
        idx = cube.pair_indices(ds.system.values, pairs)
        idx_arr = np.array(idx, dtype=np.intp).reshape(-1, 2)
        ia = np.array([a for a, _ in idx])
        ib = np.array([b for _, b in idx])
        for m, metric in enumerate(ds.metric.values):
            if metrics is not None and metric not in metrics:
                continue
            keep = ~np.isnan(score[0, m])
            n_keep = int(keep.sum())
            binary = str(ds.kind.values[m]) == "binary"
            n_const = 0
            # pairs in chunks sized by the memory budget (a, b, d and the percentiles' sort
            # copies): peak memory does not grow with the number of pairs
            for sl in budget.chunks(len(idx), max(n_keep, 1) * 8 * 8):
                A, B = score[ia[sl], m][:, keep], score[ib[sl], m][:, keep]
                D = A - B
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    skew = stats.skew(D, axis=-1, bias=True)
                # constant up to rounding (e.g. b = a + 1 in floating point): scipy's skew
                # is NaN (catastrophic cancellation), a normality test would see only noise
                const = (np.ptp(D, axis=-1) == 0) | np.isnan(skew)
                n_const += int(const.sum())
                skew = np.where(const, np.nan, skew)
                test, normal_p = _normality(D)
                normal_p = np.where(const, np.nan, normal_p)
                cols = {**_describe("a", A), **_describe("b", B), **_describe("diff", D)}
                for p, (a, b) in enumerate(idx_arr[sl]):
                    rec = recommend(skew[p], bool(normal_p[p] > alpha), binary=binary)
                    rows.append({
                        "dataset": name, "metric": str(metric),
                        "system_a": str(ds.system.values[a]),
                        "system_b": str(ds.system.values[b]),
                        "n": n_keep, **{k: float(v[p]) for k, v in cols.items()},
                        "skewness": float(skew[p]), "normality_test": test,
                        "normality_p": float(normal_p[p]), "normality_alpha": alpha,
                        "normal": bool(normal_p[p] > alpha), **rec,
                    })
            if n_const:
                warnings.warn(
                    f"dataset {name!r}, metric {str(metric)!r}: {n_const} pair(s) have "
                    "constant differences; skewness and normality are undefined (NaN)",
                    ConstantInputWarning, stacklevel=2)
    return pd.DataFrame(rows)
