"""Almost Stochastic Order (ASO) between score distributions, e.g. over training runs.

Dror, Shlomov and Reichart (2019) compare two systems by the distributions of their scores
(typically one score per training seed) rather than by a mean: A is *almost
stochastically dominant* over B when the quantile function of A lies above that of B
except on a small part of (0, 1). The violation ratio of del Barrio, Cuesta-Albertos and
Matrán (2018),

    eps_W2(F_A, F_B) = int_{V} (F_A^{-1}(t) - F_B^{-1}(t))^2 dt / W_2(F_A, F_B)^2,
    V = {t in (0, 1) : F_A^{-1}(t) < F_B^{-1}(t)},

is 0 when A always scores higher and 1 when it always scores lower. ``eps_min`` is its
upper confidence bound, eps_W2 + z_{confidence} * sigma_hat / sqrt(nm / (n + m)), with
sigma_hat from a bootstrap of the two samples (independently resampled), clipped to
[0, 1]. ``eps_min < 0.5`` reads "A is almost stochastically dominant over B"; deepsig
(Ulmer, Hardmeier and Frellsen 2022) recommends the more conservative ``eps_min < 0.2``
because 0.5 has a high type I error in their simulations.

Conventions follow deepsig's ``aso`` (the reference this module is tested against):
quantile functions are the empirical ``x_(ceil(n t))`` on the grid t = dt, 2 dt, ...,
1 - dt with dt = 0.005; the integrals are Riemann sums over that grid; a bootstrap sample
is n draws from the empirical quantile function (= resampling with replacement);
sigma_hat is the population standard deviation (ddof 0) of sqrt(nm/(n+m)) times the
bootstrap ratios minus the observed one; a zero Wasserstein distance gives ratio 0.5;
and the violation integral leaves out the first grid point t = dt while W_2 keeps it
(deepsig's ``diff[1:]``; a discretisation choice that vanishes as dt -> 0, kept so that
results agree with the reference: in small samples that point holds the minimum, whose
violations are a visible share of the bootstrap spread).

Vectorised: each sample's bootstrap quantile functions are computed once, ``(B, T)``, and
ratios of many pairs are formed from them in chunks, so the cost of a leaderboard is one
bootstrap per *system* plus O(B T) per pair.

References
----------
R. Dror, S. Shlomov, R. Reichart (2019). Deep dominance - how to properly compare deep
neural models. ACL 2019, 2773-2785. https://doi.org/10.18653/v1/P19-1266
E. del Barrio, J. A. Cuesta-Albertos, C. Matrán (2018). An optimal transportation approach
for assessing almost stochastic order. In The Mathematics of the Uncertain, 33-44.
https://doi.org/10.1007/978-3-319-73848-2_3
D. Ulmer, C. Hardmeier, J. Frellsen (2022). deep-significance: easy and meaningful
significance testing in the age of neural networks. https://arxiv.org/abs/2204.06815
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from multistat._centre import nan_centred_means, pair_centre
from multistat._lazy import lazy_module
from multistat._result import Result
from multistat._validation import check_int, check_probability, check_seed
from multistat.engine import block_rng
from multistat.errors import DataValidationError, ParameterTypeError
from multistat.significance._base import REGISTRY, TestResult, TestSpec, register
from multistat.significance._batch import BatchResult

stats = lazy_module("scipy.stats")  # imported on first use (t path: never)

DT = 0.005
THRESHOLD = 0.5
CONSERVATIVE_THRESHOLD = 0.2
_CHUNK_BYTES = 64 * 2**20  # memory of one chunk of pairs x resamples x grid


@dataclass(frozen=True)
class ASOResult(Result):
    """Almost Stochastic Order of A over B (arrays when the input had leading axes).

    Attributes
    ----------
    eps_min : upper confidence bound of the violation ratio of A over B; < 0.5: A is
        almost stochastically dominant ("better", in the metric's direction)
    eps_min_reverse : the same bound for B over A, from the same bootstraps: equal to
        ``aso(b, a).eps_min`` (its own violation ratio and sigma)
    violation_ratio : the observed eps_W2(A, B)
    sigma : bootstrap standard deviation of the violation ratio (sigma_hat / sqrt(nm/(n+m)))
    confidence_level, n_resamples, seed : as given
    threshold, conservative_threshold : 0.5 and deepsig's recommended 0.2
    """

    eps_min: np.ndarray | float
    eps_min_reverse: np.ndarray | float
    violation_ratio: np.ndarray | float
    sigma: np.ndarray | float
    confidence_level: float
    n_resamples: int
    seed: int | tuple[int, ...]
    threshold: float = THRESHOLD
    conservative_threshold: float = CONSERVATIVE_THRESHOLD

    @property
    def dominant(self):
        """A is almost stochastically dominant over B: ``eps_min < 0.5``."""
        return np.asarray(self.eps_min) < self.threshold

    @property
    def dominant_conservative(self):
        """The conservative decision ``eps_min < 0.2`` (deepsig's recommendation)."""
        return np.asarray(self.eps_min) < self.conservative_threshold

    def to_frame(self) -> pd.DataFrame:
        """One row per compared pair."""
        return pd.DataFrame({
            "eps_min": np.ravel(self.eps_min),
            "eps_min_reverse": np.ravel(self.eps_min_reverse),
            "violation_ratio": np.ravel(self.violation_ratio),
            "sigma": np.ravel(self.sigma), "dominant": np.ravel(self.dominant),
            "dominant_conservative": np.ravel(self.dominant_conservative),
            "confidence_level": self.confidence_level, "n_resamples": self.n_resamples,
            "seed": self.seed})


def grid(dt: float = DT) -> np.ndarray:
    """The integration grid t = dt, 2 dt, ..., < 1 (deepsig's ``np.arange(dt, 1, dt)``)."""
    return np.arange(dt, 1, dt)


def _positions(n: int, t: np.ndarray) -> np.ndarray:
    """Order-statistic index of the empirical quantile x_(ceil(n t)) (0-based, clipped)."""
    return np.clip(np.ceil(n * t).astype(np.int64) - 1, 0, n - 1)


def quantiles(x: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
    """Empirical quantile function of the last axis of ``x`` on the grid ``t``."""
    t = grid() if t is None else t
    xs = np.sort(x, axis=-1)
    return xs[..., _positions(xs.shape[-1], t)]


def resample_positions(n: int, n_resamples: int, rng: np.random.Generator,
                       t: np.ndarray | None = None) -> np.ndarray:
    """Order-statistic indices ``(B, T)`` of the bootstrap quantile functions of a sample
    of size ``n``: a resample of the sorted sample, sorted, is the sample at the sorted
    resampling indices, so only the (B, n) index matrix is sorted."""
    t = grid() if t is None else t
    idx = np.sort(rng.integers(0, n, size=(n_resamples, n)), axis=1)
    return idx[:, _positions(n, t)]


def bootstrap_quantiles(x: np.ndarray, take: np.ndarray) -> np.ndarray:
    """Bootstrap quantile functions ``(B, ..., T)`` of the last axis of ``x`` from
    :func:`resample_positions` (the same resamples for every leading element)."""
    xs = np.sort(np.asarray(x, dtype=np.float64), axis=-1)
    return np.moveaxis(xs[..., take], -2, 0)


def violation_ratio(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """eps_W2 of A over B from quantile functions on a common uniform grid (last axis);
    0.5 where the two quantile functions coincide (deepsig's convention)."""
    return violation_ratios(qa, qb)[0]


def violation_ratios(qa: np.ndarray, qb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(eps_W2(A, B), eps_W2(B, A))`` from one pass over the quantile functions. Each is
    deepsig's ratio of its own direction, so the second is ``violation_ratio(qb, qa)``
    bit for bit: with the first grid point left out of the violation integral, the two
    do not add up to 1 (they miss that point's share), which made ``eps_min_reverse`` =
    ``1 - eps_W2(A, B) + ...`` differ from ``aso(b, a).eps_min`` by up to 0.002."""
    diff = qb - qa
    violated = diff > 0  # F_A^{-1}(t) < F_B^{-1}(t)
    reverse = diff < 0  # F_B^{-1}(t) < F_A^{-1}(t): -diff > 0, as violation_ratio(qb, qa)
    np.multiply(diff, diff, out=diff)  # squared, in place (one temporary for the chunk)
    w2 = diff.sum(-1)
    # deepsig's convention: the violation integral starts at the second grid point
    viol = np.einsum("...t,...t->...", diff[..., 1:], violated[..., 1:])
    viol_rev = np.einsum("...t,...t->...", diff[..., 1:], reverse[..., 1:])
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(w2 > 0, w2, 1.0)
        return (np.where(w2 > 0, viol / safe, 0.5), np.where(w2 > 0, viol_rev / safe, 0.5))


def eps_min_from(observed, boot, confidence_level: float, observed_rev=None,
                 boot_rev=None):
    """``(eps_min, eps_min_reverse, sigma)`` from the observed ratio and bootstrap ratios
    (resamples on axis 0); the reverse bound from the reverse ratios
    (:func:`violation_ratios`) when given, else from ``1 - observed`` and ``sigma``."""
    sigma = boot.std(axis=0)  # ddof 0, as deepsig's np.std
    z = stats.norm.ppf(confidence_level)
    eps = np.clip(observed + z * sigma, 0.0, 1.0)
    if observed_rev is None:
        rev = np.clip(1.0 - observed + z * sigma, 0.0, 1.0)
    else:
        rev = np.clip(observed_rev + z * boot_rev.std(axis=0), 0.0, 1.0)
    return eps, rev, sigma


def pair_eps(qa_obs, qb_obs, qa_boot, qb_boot, ia, ib, confidence_level):
    """eps_min of many pairs from per-system quantile functions, in bounded chunks.

    ``q*_obs`` are ``(S, T)``, ``q*_boot`` ``(B, S, T)``; pair p compares system
    ``ia[p]`` of the first set with system ``ib[p]`` of the second. Returns arrays
    ``(P,)``: eps_min, eps_min_reverse, violation ratio, sigma. ``eps_min_reverse`` is
    the eps_min of B over A from the same quantile functions (the reverse ratio itself,
    not one minus this one: see :func:`violation_ratios`), so it equals the eps_min of
    the pair ``(ib, ia)`` bit for bit.
    """
    B, _, T = qa_boot.shape
    P = len(ia)
    obs, obs_rev = violation_ratios(qa_obs[ia], qb_obs[ib])
    eps, rev, sig = (np.empty(P) for _ in range(3))
    chunk = max(1, int(_CHUNK_BYTES // (8 * 4 * B * T)))
    for s in range(0, P, chunk):
        sl = slice(s, min(P, s + chunk))
        boot, boot_rev = violation_ratios(qa_boot[:, ia[sl]], qb_boot[:, ib[sl]])
        eps[sl], rev[sl], sig[sl] = eps_min_from(obs[sl], boot, confidence_level,
                                                 obs_rev[sl], boot_rev)
    return eps, rev, obs, sig


def _aso_iv(a, b, confidence_level, n_resamples, seed, higher_is_better):
    out = []
    for name, x in (("scores_a", a), ("scores_b", b)):
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterTypeError(f"`{name}` must be an array of numbers") from None
        if x.ndim == 0 or x.shape[-1] < 2:
            raise DataValidationError(f"`{name}` needs at least 2 scores along its last "
                                      f"axis (one per run); got shape {x.shape}")
        if not np.isfinite(x).all():
            raise DataValidationError(f"`{name}` has {int((~np.isfinite(x)).sum())} "
                                      "missing or infinite score(s)")
        out.append(x)
    try:
        lead = np.broadcast_shapes(out[0].shape[:-1], out[1].shape[:-1])
    except ValueError:
        raise DataValidationError(f"`scores_a` {out[0].shape} and `scores_b` "
                                  f"{out[1].shape}: leading axes do not broadcast") from None
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ParameterTypeError(f"`higher_is_better` must be True or False; got "
                                 f"{higher_is_better!r}")
    confidence_level = check_probability("confidence_level", confidence_level)
    n_resamples = check_int("n_resamples", n_resamples, minimum=2)
    seed = check_seed(seed)
    if not higher_is_better:
        out = [-x for x in out]
    return out[0], out[1], lead, confidence_level, n_resamples, seed


def _second_first(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row, whether ``b`` comes before ``a`` in a fixed order of samples (shorter
    first, then lexicographic in the given order): ``_second_first(b, a)`` is its
    negation except where the two are identical (both False; nothing depends on the order
    then)."""
    if a.shape[-1] != b.shape[-1]:
        return np.full(a.shape[0], a.shape[-1] > b.shape[-1])
    differ = a != b
    first = np.argmax(differ, axis=-1)[:, None]
    return (np.take_along_axis(a, first, -1) > np.take_along_axis(b, first, -1))[:, 0]


def _entropy(ss: np.random.SeedSequence) -> int | tuple[int, ...]:
    """The entropy of ``ss`` as the result records it: an int, or a tuple of ints."""
    entropy = ss.entropy
    if entropy is None or isinstance(entropy, int):
        return int(entropy or 0)
    return tuple(int(e) for e in entropy)


def aso(scores_a, scores_b, *, confidence_level=0.95, n_resamples=1000, seed=0,
        higher_is_better=True) -> ASOResult:
    """Almost Stochastic Order: is A almost stochastically better than B?

    Parameters
    ----------
    scores_a, scores_b : object
        scores of A and B along the last axis (e.g. one per training
        run; the two may differ in length). Leading axes broadcast: ``(P, n)`` and
        ``(P, m)`` compare P pairs at once.
    confidence_level : float, optional
        level of the upper bound eps_min (deepsig's ``confidence_level``)
    n_resamples : int, optional
        bootstrap resamples (deepsig's ``num_bootstrap_iterations``)
    seed : int, optional
        non-negative int (0 is a seed); A and B are resampled from independent
        streams
    higher_is_better : bool, optional
        False for error-like metrics (scores are negated first).

    Returns
    -------
    ASOResult
        ``eps_min`` (< 0.5: A almost stochastically dominates B; < 0.2: deepsig's
        conservative threshold), ``eps_min_reverse`` (B over A), ``violation_ratio``,
        ``sigma``.

    Notes
    -----
    eps_min = clip(eps_W2 + Phi^{-1}(confidence_level) sigma_hat / sqrt(nm/(n+m)), 0, 1),
    see the module docstring. Unlike a p-value, eps_min is not corrected for the number
    of pairs here. deepsig 1.2.8 (``aso(..., num_comparisons=k)`` and ``multi_aso`` with
    k = #pairs) raises the confidence level to ``level + (1 - level) / k`` (its
    ``confidence_level += (1 - confidence_level) / num_comparisons``; not Bonferroni's
    ``1 - (1 - level) / k``): pass ``confidence_level=level + (1 - level) / k`` to get
    deepsig's numbers (``tests/test_aso.py``).

    ``eps_min_reverse`` is the eps_min of B over A: ``aso(b, a).eps_min`` exactly. Both
    are computed from the same two bootstraps, one stream per sample assigned in an
    order that does not depend on the argument order, and each from its own violation
    ratio (deepsig leaves the first grid point out of the violation integral, so
    eps_W2(B, A) is not exactly 1 - eps_W2(A, B)).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> a, b = rng.normal(1.0, 1, 40), rng.normal(0.0, 1, 40)
    >>> r = aso(a, b, n_resamples=500)
    >>> bool(r.eps_min < 0.2), bool(r.eps_min_reverse > 0.5)
    (True, True)
    """
    a, b, lead, confidence_level, n_resamples, seed = _aso_iv(
        scores_a, scores_b, confidence_level, n_resamples, seed, higher_is_better)
    a = np.broadcast_to(a, lead + a.shape[-1:]).reshape(-1, a.shape[-1])
    b = np.broadcast_to(b, lead + b.shape[-1:]).reshape(-1, b.shape[-1])
    ss = np.random.SeedSequence(seed.entropy if isinstance(seed, np.random.SeedSequence)
                                else seed)
    streams = ss.spawn(2)
    t = grid()

    def take(stream, n):  # the resample positions of one stream for a sample of size n
        return resample_positions(n, n_resamples, np.random.default_rng(streams[stream]), t)

    P = a.shape[0]
    eps, rev, obs, sig = (np.empty(P) for _ in range(4))
    chunk = max(1, int(_CHUNK_BYTES // (8 * 4 * n_resamples * len(t))))
    # the two samples of a row draw from streams 0 and 1 in an order that does not depend
    # on which is A: aso(b, a) then resamples both exactly as aso(a, b) did, and its
    # eps_min is aso(a, b).eps_min_reverse, bit for bit
    swapped = _second_first(a, b)
    for rows, (sa, sb) in ((np.flatnonzero(~swapped), (0, 1)),
                           (np.flatnonzero(swapped), (1, 0))):
        if not rows.size:
            continue
        take_a, take_b = take(sa, a.shape[-1]), take(sb, b.shape[-1])
        for s in range(0, rows.size, chunk):  # bounded memory whatever the number of pairs
            sl = rows[s:s + chunk]
            idx = np.arange(sl.size)
            eps[sl], rev[sl], obs[sl], sig[sl] = pair_eps(
                quantiles(a[sl], t), quantiles(b[sl], t), bootstrap_quantiles(a[sl], take_a),
                bootstrap_quantiles(b[sl], take_b), idx, idx, confidence_level)

    def shaped(v):
        return float(v[0]) if lead == () else v.reshape(lead)

    return ASOResult(eps_min=shaped(eps), eps_min_reverse=shaped(rev),
                     violation_ratio=shaped(obs), sigma=shaped(sig),
                     confidence_level=confidence_level, n_resamples=n_resamples,
                     seed=seed if isinstance(seed, int) else _entropy(ss))


# ----------------------------------------------------------------------------- compare
def aso_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
             n_resamples=1000, seed=0):
    """ASO as a registered test (``compare(tests=("aso", ...))``): x and y are samples
    of scores of A and B (e.g. one per run) on the last axis.

    ``statistic`` is eps_min(A over B) (< 0.5: A almost stochastically dominant), the
    ``p_value`` is NaN (eps_min is not a p-value: ``reject`` stays False and the row is
    not counted in a correction family), ``estimate`` the difference of the sample means;
    ``alternative`` and ``null_value`` do not apply (ASO tests dominance, not a shift).
    """

    r = aso(x, y, confidence_level=confidence_level, n_resamples=n_resamples, seed=seed)
    k = pair_centre(x, y)  # a common constant: means of moved scores
    est = np.mean(np.asarray(x, float) - k, -1) - np.mean(np.asarray(y, float) - k, -1)
    nan = np.full(np.shape(est), np.nan)
    return TestResult(test="aso", statistic=r.eps_min, p_value=nan, estimate=est,
                      ci_low=nan, ci_high=nan, confidence_level=confidence_level,
                      n=np.shape(x)[-1], alternative=alternative, null_value=null_value,
                      statistic_kind="distribution",
                      note=_note(r.eps_min, r.eps_min_reverse, "samples"),
                      extra={"eps_min": r.eps_min, "eps_min_reverse": r.eps_min_reverse})


def _note(eps, rev, what, a="a", b="b"):
    """Verdict per pair: which system almost stochastically dominates (0.2 and 0.5)."""
    eps, rev = np.asarray(eps, float), np.asarray(rev, float)
    a, b = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(b, dtype=object),
                               eps)[:2]
    out = np.empty(eps.shape, dtype=object)
    for i in np.ndindex(eps.shape):
        x, y = a[i], b[i]
        if eps[i] < CONSERVATIVE_THRESHOLD:
            v = f"{x} dominates {y} (eps_min {eps[i]:.3g} < 0.2)"
        elif eps[i] < THRESHOLD:
            v = f"{x} almost dominates {y} (eps_min {eps[i]:.3g} < 0.5, not < 0.2)"
        elif rev[i] < CONSERVATIVE_THRESHOLD:
            v = f"{y} dominates {x} (reverse eps_min {rev[i]:.3g} < 0.2)"
        elif rev[i] < THRESHOLD:
            v = f"{y} almost dominates {x} (reverse eps_min {rev[i]:.3g} < 0.5)"
        else:
            v = "no almost stochastic order"
        out[i] = f"ASO over {what}: {v}"
    return out if out.ndim else str(out[()])


def aso_batch(slab, ia, ib, ctx):
    """Batch entry of ``"aso"``: one bootstrap of quantile functions per system and
    metric, then every pair from those (memory per pair: one (B, T) slab).

    With runs (``slab.run_scores``), each system's sample is its per-run score (the mean
    over the instances of each run: one score per training seed, as in deepsig);
    without runs, its per-instance scores (a distribution over test items). Scores of a
    lower-is-better metric are negated, so eps_min < 0.5 always means "a is better"."""

    S, M, _ = slab.shape
    P = len(ia)
    if slab.run_scores is not None:
        samples = np.nanmean(slab.run_scores, axis=2)  # (S, M, R): score of each run
        what = f"{samples.shape[-1]} runs per system"
    else:
        samples = slab.scores
        what = "instance scores (no runs in the study)"
    hib = np.asarray(slab.higher_is_better if slab.higher_is_better else (True,) * M,
                     bool)
    t = grid()
    cols = {k: np.full((P, M), np.nan) for k in ("eps_min", "eps_min_reverse",
                                                 "violation_ratio")}
    for m in range(M):
        x = samples[:, m] if hib[m] else -samples[:, m]  # (S, r)
        if np.isnan(x).any():  # a system lacks some runs: systems differ in run count
            qs, qb = [], []
            for s in range(S):
                xs = x[s][~np.isnan(x[s])]
                rng = block_rng(ctx.seed, slab.dataset, f"aso/{slab.metrics[m]}", s)
                qs.append(quantiles(xs, t))
                qb.append(bootstrap_quantiles(xs, resample_positions(
                    len(xs), ctx.n_resamples, rng, t)))
            q_obs, q_boot = np.stack(qs), np.stack(qb, axis=1)
        else:
            q_obs = quantiles(x, t)  # (S, T)
            q_boot = np.empty((ctx.n_resamples, S, len(t)))
            for s in range(S):  # an independent bootstrap stream per system
                rng = block_rng(ctx.seed, slab.dataset, f"aso/{slab.metrics[m]}", s)
                q_boot[:, s] = bootstrap_quantiles(x[s], resample_positions(
                    x.shape[-1], ctx.n_resamples, rng, t))
        eps, rev, obs, _ = pair_eps(q_obs, q_obs, q_boot, q_boot, ia, ib,
                                    ctx.confidence_level)
        cols["eps_min"][:, m], cols["eps_min_reverse"][:, m] = eps, rev
        cols["violation_ratio"][:, m] = obs
        ctx.tick(1)
    # mean(x - k): means of scores moved by a constant (multistat._centre)
    if slab.run_scores is not None:
        means = nan_centred_means(samples)  # (S, M)
    else:
        means = slab.centred_means()
    out = {"statistic": cols["eps_min"], "p_value": np.full((P, M), np.nan),
           "estimate": means[ia] - means[ib], "ci_low": np.full((P, M), np.nan),
           "ci_high": np.full((P, M), np.nan), "n": np.full((P, M), samples.shape[-1]),
           "note": _note(cols["eps_min"], cols["eps_min_reverse"], what,
                         np.asarray(slab.systems, dtype=object)[ia][:, None],
                         np.asarray(slab.systems, dtype=object)[ib][:, None]),
           "statistic_kind": np.full((P, M), "distribution", dtype=object),
           "n_resamples": ctx.n_resamples, "seed": ctx.seed, **cols}
    return BatchResult("aso", out)


def _register():
    if "aso" not in REGISTRY:
        register(TestSpec("aso", aso_test, "resampling", ("distribution",),
                          assumes_symmetric=False, assumes_normal=False, resampling=True,
                          description="Almost Stochastic Order over runs (eps_min; "
                                      "Dror et al. 2019, deepsig)",
                          batch=aso_batch, all_pairs=True, uses_runs=True,
                          estimate_label="ε_min of A over B"))
