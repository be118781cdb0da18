r"""The clustered paired t test: the mean difference with a cluster-robust standard error.

Questions that share a passage, an image or a document are not independent: a model that
misreads the passage misses all of its questions. The paired t test then understates the
standard error of the mean difference and rejects too often. ``"t-cluster"`` keeps the
estimate, the mean paired difference :math:`\bar d`, and replaces its standard error by
the cluster-robust one of Miller (2024), eq. 4, with groups ``c = 1..G`` of the
instances:

.. math:: \mathrm{SE}^2_{CR0} = \frac{1}{n^2} \sum_{c=1}^{G}
          \Big(\sum_{i \in c} (d_i - \bar d)\Big)^2 .

Small-cluster correction
------------------------
With few groups :math:`\mathrm{SE}_{CR0}` is biased down (it has expectation
:math:`(G-1)/G` times the variance for equal groups) and a normal reference rejects too
often. The test uses the CR1 factor and a t reference with :math:`G - 1` degrees of
freedom, the defaults of Stata's and statsmodels' cluster-robust OLS
(``cov_type="cluster"``, ``use_correction=True``, ``df_correction=True``; for the
intercept-only model the ``(n - 1)/(n - K)`` factor is 1):

.. math:: \mathrm{SE} = \sqrt{\tfrac{G}{G-1}}\;\mathrm{SE}_{CR0}, \qquad
          t = \frac{\bar d - \delta}{\mathrm{SE}} \sim t_{G-1}.

Why this correction: with groups of equal size :math:`m`, :math:`\bar d` is the mean of
the G group means :math:`\bar d_c` and :math:`\sum_{i\in c}(d_i - \bar d) = m(\bar d_c -
\bar d)`, so :math:`\mathrm{SE}^2 = s^2_{\bar d_c}/G` and the statistic *is* the one-sample
t test on the group means, exact when those are normal, whatever the correlation inside a
group. With unequal groups it is the usual approximation (Cameron & Miller 2015, sec.
VI). With every instance its own group (``cluster`` not given) :math:`G = n`,
:math:`\mathrm{SE} = s_d/\sqrt n` and the test is the paired t test.

The interval :math:`\bar d \pm t_{G-1, 1-\alpha/2}\,\mathrm{SE}` inverts the same test
(an interval excludes a null value exactly when the test rejects it).

References
----------
Miller, E. (2024). Adding Error Bars to Evals: A Statistical Approach to Language Model
Evaluations. arXiv:2411.00640. https://doi.org/10.48550/arXiv.2411.00640
Cameron, A. C., Miller, D. L. (2015). A Practitioner's Guide to Cluster-Robust
Inference. Journal of Human Resources 50(2), 317-372. doi:10.3368/jhr.50.2.317
Liang, K.-Y., Zeger, S. L. (1986). Longitudinal data analysis using generalized linear
models. Biometrika 73(1), 13-22. doi:10.1093/biomet/73.1.13
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import stdtr, stdtrit

from multistat._cluster import group_codes
from multistat._validation import check_probability
from multistat.errors import (
    ConstantInputWarning,
    DataValidationError,
    ParameterTypeError,
    SmallSampleWarning,
)
from multistat.significance._base import TestResult, TestSpec, register
from multistat.significance._batch import BatchResult, call_kwargs, from_test_result
from multistat.significance._common import (
    CONSTANT_RTOL,
    add_note,
    check_paired,
    empty_notes,
    interval_quantile,
    one_sided_ends,
    row_scale,
    scalar,
    warn_rows,
)
from multistat.significance.parametric import (
    GRAM_KAPPA_MAX,
    SUBNORMAL_SCALE,
    pair_constant,
    pair_mean_sd,
    pair_scale,
)

__all__ = ["paired_t_cluster"]

#: a pair's cluster sums of differences come from the per-system cluster sums unless
#: their sum of squares is this many times smaller than the squared sums of the
#: magnitudes they are formed from (about 4e-12 relative error at the limit); such pairs
#: are recomputed from their differences by :func:`paired_t_cluster`
CLUSTER_KAPPA_MAX = 1e8

ONE_GROUP_NOTE = "fewer than 2 groups: the cluster-robust standard error is undefined"
ZERO_SE_NOTE = ("the differences sum to their mean in every group (cluster-robust SE = 0 "
                "up to rounding): t statistic undefined")


def _codes(groups, n: int) -> np.ndarray:
    """Group code per instance (``0..G-1`` by first appearance); None: one group each."""
    if groups is None:
        return np.arange(n, dtype=np.intp)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n:
        raise DataValidationError(
            f"`groups` must give one group label per instance ({n}); got shape {g.shape}")
    if g.dtype.kind == "f" and np.isnan(g).any():
        raise DataValidationError(
            f"`groups` has {int(np.isnan(g).sum())} missing (NaN) label(s); every instance "
            "needs a group")
    return group_codes(g)


def _group_layout(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, starts)``: instances sorted by group (stable) and where each group
    starts, for ``np.add.reduceat(v[..., order], starts, axis=-1)``."""
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(int(codes.max()) + 1))
    return order, starts


def _group_sums(v: np.ndarray, order, starts) -> np.ndarray:
    """Sums of ``v`` over each group of instances (last axis) -> ``(..., G)``."""
    return np.add.reduceat(v[..., order], starts, axis=-1)


def paired_t_cluster(x, y, *, groups=None, alternative="two-sided", null_value=0.0,
                     confidence_level=0.95):
    r"""Paired t test of the mean difference with a cluster-robust standard error.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    groups : array_like or None
        Group (cluster) label of each instance, length ``n``: the instances that share a
        passage, image or document. None: every instance is its own group, and the test
        is the paired t test.
    alternative : {"two-sided", "less", "greater"}
        H1 about the mean of ``x - y`` relative to ``null_value``.
    null_value : float
        The null mean difference :math:`\delta`.
    confidence_level : float
        Level of the interval (one-sided for a one-sided alternative, the other end
        :math:`\pm\infty`).

    Returns
    -------
    TestResult
        ``statistic`` t, ``p_value``, ``estimate`` = mean(x - y), ``ci_low``/``ci_high``,
        ``n`` (pairs), ``extra={"se": SE, "n_groups": G, "df": G - 1}``.

    Notes
    -----
    .. math:: \mathrm{SE}^2 = \frac{G}{G-1}\,\frac{1}{n^2} \sum_{c=1}^{G}
              \Big(\sum_{i\in c}(d_i - \bar d)\Big)^2, \qquad
              t = \frac{\bar d - \delta}{\mathrm{SE}} \sim t_{G-1}

    (Miller 2024, eq. 4, with the CR1 factor :math:`G/(G-1)` and :math:`G-1` degrees of
    freedom: statsmodels' ``OLS(d, 1).fit(cov_type="cluster", use_t=True)``). With
    groups of equal size this is the one-sample t test on the group means; see
    :mod:`multistat.significance.clustered_t`. Rows with fewer than two groups, constant
    differences, or differences that sum to their mean in every group give NaN with a
    note and a warning.

    References
    ----------
    Miller, E. (2024). Adding Error Bars to Evals: A Statistical Approach to Language
    Model Evaluations. arXiv:2411.00640. doi:10.48550/arXiv.2411.00640

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([1, 1, 0, 1, 0, 1, 1, 1.]); y = np.array([0, 1, 0, 0, 0, 1, 0, 1.])
    >>> groups = ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p4"]
    >>> res = paired_t_cluster(x, y, groups=groups)
    >>> float(res.estimate)
    0.375
    >>> # equal groups: the one-sample t test on the group means of the differences
    >>> means = (x - y).reshape(4, 2).mean(1)
    >>> bool(np.isclose(res.p_value, stats.ttest_1samp(means, 0).pvalue, rtol=1e-12))
    True
    """
    x, y, alternative, null_value, confidence_level = check_paired(
        x, y, alternative, null_value, confidence_level, overflow="allow")
    n = x.shape[-1]
    codes = _codes(groups, n)
    G = int(codes.max()) + 1
    # scale-free as the paired t test: scores divided by a power of two per row (exact),
    # estimate and interval multiplied back
    top = row_scale(x, y)
    scale = np.ldexp(1.0, np.frexp(top)[1] - 1)
    sc = scale[..., None]
    d = x / sc - y / sc
    shape = d.shape[:-1]
    notes = empty_notes(shape)
    with np.errstate(over="ignore", invalid="ignore"):
        overflow = np.any(np.isinf(x - y) & np.isfinite(x) & np.isfinite(y), axis=-1)
    mean_s = d.mean(axis=-1)
    order, starts = _group_layout(codes)
    e = d - mean_s[..., None]
    U = _group_sums(e, order, starts)
    ss = np.einsum("...g,...g->...", U, U)
    mag = _group_sums(np.abs(e), order, starts)  # what the rounding of U is relative to
    mag = np.einsum("...g,...g->...", mag, mag)
    few = np.full(shape, G < 2)
    if n >= 2:
        const = d.std(axis=-1, ddof=1) <= CONSTANT_RTOL * (top / scale)
    else:
        const = np.zeros(shape, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        se_s = np.sqrt(ss * (G / (G - 1))) / n if G >= 2 else np.full(shape, np.nan)
    # zero up to the rounding of the group sums (relative, so a shift or the units of
    # the scores change nothing)
    zero = ~few & ~const & ~(ss > CONSTANT_RTOL**2 * mag)
    bad = few | const | zero
    add_note(notes, few, ONE_GROUP_NOTE)
    add_note(notes, const & ~few, "all differences are equal (sd = 0 up to the rounding "
             "of the scores: sd <= 2^-50 x max |score|): t statistic undefined")
    add_note(notes, zero, ZERO_SE_NOTE)
    add_note(notes, overflow, "overflow: a - b exceeds the float range; the test uses "
             "rescaled scores, the estimate and interval overflow to +-inf")
    warn_rows(few, SmallSampleWarning, f"clustered t test: {ONE_GROUP_NOTE}, result is NaN")
    warn_rows((const & ~few) | zero, ConstantInputWarning,
              "clustered t test: the cluster-robust standard error is 0, result is NaN")
    df = G - 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        se_s = np.where(bad, np.nan, se_s)
        t = (mean_s - null_value / scale) / se_s
        mean = mean_s * scale
        se = se_s * scale
    p = _p_value(t, df, alternative, shape)

    def interval(level):
        if df < 1:
            nan = np.full(shape, np.nan)
            low, high = one_sided_ends(nan, nan, alternative)
            return scalar(low), scalar(high)
        q = -stdtrit(df, interval_quantile(level, alternative))
        with np.errstate(over="ignore", invalid="ignore"):
            low, high = (mean_s - q * se_s) * scale, (mean_s + q * se_s) * scale
        low, high = one_sided_ends(low, high, alternative)
        return scalar(low), scalar(high)

    low, high = interval(confidence_level)

    def ci_fn(level):
        return interval(check_probability("confidence_level", level))

    full = np.full(shape, 1, dtype=np.int64)
    return TestResult(
        test="t-cluster", statistic=scalar(t), p_value=scalar(p), estimate=scalar(mean),
        ci_low=low, ci_high=high, confidence_level=confidence_level,
        n=scalar(full * n), alternative=alternative, null_value=null_value,
        statistic_kind="mean", note=scalar(notes),
        extra={"se": scalar(se), "n_groups": scalar(full * G), "df": scalar(full * df)},
        _ci_fn=ci_fn)


def _p_value(t, df, alternative, shape):
    """p-value of ``t`` on ``df`` degrees of freedom (``stdtr``: the bits of
    ``stats.t.cdf``); NaN where ``df < 1``."""
    if df < 1:
        return np.full(shape, np.nan)
    if alternative == "greater":
        return stdtr(df, -t)
    if alternative == "less":
        return stdtr(df, t)
    return np.minimum(2.0 * stdtr(df, -np.abs(t)), 1.0)


# ----------------------------------------------------------------------------- batch
def _system_group_sums(slab):
    """Per-system group sums of the centred, scaled scores, computed once per slab:
    ``(U, A, codes)`` with ``U[s, m, c] = sum_{i in c} (x_smi - k_m - mu_sm) / c_sm`` and
    ``A`` the same sums of absolute values (the magnitudes the rounding of ``U`` is
    relative to); ``k``, ``mu`` and ``c`` are the slab's centres, centred means and
    power-of-two scales (:meth:`Slab.gram_scaled` scales the same way)."""
    memo = slab._memo
    if "cluster_sums" not in memo:
        n = slab.n
        codes = (np.arange(n, dtype=np.intp) if slab.clusters is None
                 else np.asarray(slab.clusters, dtype=np.intp))
        order, starts = _group_layout(codes)
        X, c, k = slab.scores, slab.scales(), slab.centres()
        mu = slab.centred_means() / c
        inv = 1.0 / c
        S, M, _ = X.shape
        G = len(starts)
        U, A = np.empty((S, M, G)), np.empty((S, M, G))
        for m in range(M):  # one metric's (S, n) centred copy at a time
            xc = X[:, m] - k[m] if k[m] else X[:, m].copy()
            xc *= inv[:, m, None]
            xc -= mu[:, m, None]
            U[:, m] = _group_sums(xc, order, starts)
            np.abs(xc, out=xc)
            A[:, m] = _group_sums(xc, order, starts)
        memo["cluster_sums"] = (U, A, codes)
    return memo["cluster_sums"]


def _group_grams(slab):
    """Gram matrices of the per-system group sums, once per slab: ``(H, HA, codes, G)``
    with ``H[m] = U[:, m] @ U[:, m].T`` and ``HA`` the same of the absolute sums ``A``
    (:func:`_system_group_sums`), each ``(M, S, S)``: one BLAS product per metric gives
    every pair's :math:`\\sum_c (U_{ac} - U_{bc})^2 = H_{aa} + H_{bb} - 2 H_{ab}`."""
    memo = slab._memo
    if "cluster_grams" not in memo:
        U, A, codes = _system_group_sums(slab)
        S, M, G = U.shape
        H, HA = np.empty((M, S, S)), np.empty((M, S, S))
        for m in range(M):
            Um, Am = np.ascontiguousarray(U[:, m]), np.ascontiguousarray(A[:, m])
            H[m] = Um @ Um.T
            HA[m] = Am @ Am.T
        memo["cluster_grams"] = (H, HA, codes, G)
        memo.pop("cluster_sums", None)  # (S, M, G) twice: not needed once reduced
    return memo["cluster_grams"]


def paired_t_cluster_batch(slab, ia, ib, ctx):
    """Batch entry of ``"t-cluster"``: per-system group sums of the centred scores and
    their Gram matrix first (:func:`_group_grams`, once per slab), each pair's sum of
    squared group sums of differences last, from three entries of it (as the paired t
    test's variance comes from the Gram matrix of the scores); the mean difference is the
    paired t test's (:func:`~multistat.significance.parametric.pair_mean_sd`, shared with
    the effect sizes). Degenerate or ill-conditioned pairs (cancellation beyond
    :data:`~multistat.significance.parametric.GRAM_KAPPA_MAX` in the Gram form or
    :data:`CLUSTER_KAPPA_MAX` in the group sums) go through :func:`paired_t_cluster` on
    their differences (same numbers to about 1e-11 relative, and its notes)."""
    if ctx.options:
        raise ParameterTypeError(
            f"the t-cluster test takes no options in compare; got {sorted(ctx.options)} "
            "(its groups come from cluster='group' and the study's group coordinate)")
    ia = np.asarray(ia, dtype=np.intp)
    ib = np.asarray(ib, dtype=np.intp)
    shape = (len(ia), slab.shape[1])
    n = slab.n
    alternative, null_value, level = ctx.alternative, ctx.null_value, ctx.confidence_level
    H, HA, codes, G = _group_grams(slab)
    mean, sd = pair_mean_sd(slab, ia, ib)
    c = slab.scales()
    ca, cb = c[ia], c[ib]
    cp = np.maximum(ca, cb)
    ra, rb = ca / cp, cb / cp  # each pair at the larger of its two scales (exact)
    haa = H[:, ia, ia].T * (ra * ra)
    hbb = H[:, ib, ib].T * (rb * rb)
    hab = H[:, ia, ib].T * (ra * rb)
    ss = haa + hbb - 2.0 * hab  # sum_c (U_ac - U_bc)^2
    # sum_c (A_ac + A_bc)^2: the magnitudes the rounding of the group sums is relative to
    mag = (HA[:, ia, ia].T * (ra * ra) + HA[:, ib, ib].T * (rb * rb)
           + 2.0 * HA[:, ia, ib].T * (ra * rb))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        se = (np.sqrt(np.maximum(ss, 0.0) * (G / (G - 1))) * cp / n if G >= 2
              else np.full(shape, np.nan))
        # cancellation in the Gram form (as the t test's), or in the group sums
        ill = ~(ss * GRAM_KAPPA_MAX > haa + hbb + 2.0 * np.abs(hab))
        ill |= ~(ss * CLUSTER_KAPPA_MAX > mag)
    bad = ill | (pair_constant(slab, ia, ib, mean, sd) if n >= 2 else True)
    ps = pair_scale(slab, ia, ib)
    bad |= ((ps < SUBNORMAL_SCALE) & (ps > 0)) | ~np.isfinite(sd) | ~np.isfinite(mean)
    bad |= ~np.isfinite(se) | (G < 2)
    df = G - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(bad, np.nan, se)
        t = (mean - null_value) / se
    p = _p_value(t, df, alternative, shape)
    if df >= 1:
        q = -stdtrit(df, interval_quantile(level, alternative))
        low, high = one_sided_ends(mean - q * se, mean + q * se, alternative)
    else:
        low, high = one_sided_ends(np.full(shape, np.nan), np.full(shape, np.nan),
                                   alternative)
    note = (f"cluster-robust SE over {G} groups (CR1, t with {df} df)"
            if slab.clusters is not None else
            "every instance its own group (no cluster='group'): the paired t test")
    out = {"statistic": t, "p_value": p, "estimate": mean, "ci_low": low,
           "ci_high": high, "se": se, "n": np.full(shape, n, dtype=np.int64),
           "n_groups": np.full(shape, G, dtype=np.int64),
           "mde": _mde(G, se, ctx),
           "note": np.array(note, dtype=object),
           "statistic_kind": np.array("mean", dtype=object)}
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size:  # the per-pair function's values and notes for degenerate pairs
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = paired_t_cluster(slab.system_scores(ia[rows]),
                                   slab.system_scores(ib[rows]), groups=codes,
                                   **call_kwargs(paired_t_cluster, ctx))
        sub = from_test_result(res, (rows.size, shape[1]), "mean", caught)
        sub["se"] = np.broadcast_to(np.asarray(res.extra["se"], dtype=float), sub["n"].shape)
        sub["mde"] = _mde(G, sub["se"], ctx)
        sub["note"] = np.array([[f"{note}; {s}" if s else note for s in r]
                                for r in np.asarray(sub["note"])], dtype=object)
        for k, v in sub.items():
            out[k] = np.array(np.broadcast_to(out[k], shape),
                              dtype=v.dtype if k != "n" else np.int64)
            out[k][rows] = v
    return BatchResult("t-cluster", out)


def _mde(G, se, ctx):
    """Minimum detectable mean difference at the observed clustered SE: the ``d`` the
    t test on ``G`` group means detects with power ``ctx.mde_power``, times
    ``sqrt(G) x SE`` (the sd of the group means for equal groups)."""
    if G < 2:
        return np.full(np.shape(se), np.nan)
    # lazily: scipy.special only, as compare's own mde column
    from multistat.significance._t_power import mde_dz

    return mde_dz(G, ctx.alpha, ctx.mde_power, ctx.alternative) * np.sqrt(G) * se


def _register() -> None:
    register(TestSpec(
        name="t-cluster", func=paired_t_cluster, family="parametric",
        statistic_kinds=("mean",), assumes_symmetric=True, assumes_normal=True,
        description="paired t test on the mean difference with a cluster-robust SE "
                    "(CR1, t with G - 1 df; Miller 2024)",
        batch=paired_t_cluster_batch, bytes_per_value=32, equivalence=True,
        cluster_resampling=True, label="clustered t", advised=False,
        reasons={
            "normal": "differences look normal: with cluster='group' the clustered t "
                      "keeps its level when instances share a passage or document",
            "symmetric": "normality rejected (the clustered t relies on many groups)",
            "skewed": "skewed differences: the mean is not a good centre"}))
