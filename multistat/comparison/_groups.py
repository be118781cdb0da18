"""One metric group of one dataset through every requested test: closed-form specs and
the effect sizes over chunks of pairs sized by the budget, resampling specs on all pairs
at once, and the per-pair extras (effect sizes, power, the ``mde`` column)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from multistat.significance._batch import BatchResult, Context
from multistat.significance.parametric import pair_mean_sd
from multistat.significance.rank import EFFECT_BYTES_PER_VALUE

EFFECT_COLUMNS = tuple(f"{e}{s}" for e in ("cohens_d", "hedges_g", "wilcoxon_r",
                                           "hodges_lehmann")
                       for s in ("", "_ci_low", "_ci_high"))
#: standard errors of the effect sizes (large-sample, :func:`multistat.effect.cohens_dz_se`)
EFFECT_SE_COLUMNS = ("cohens_d_se", "hedges_g_se")


def test_contexts(req) -> tuple:
    """``(base_ctx, {test: ctx})``: the run request's settings as the batch context, and
    each test's own context (its ``test_options`` applied)."""
    base_ctx = Context(alternative=req.alternative, null_value=req.null_value,
                       confidence_level=req.level, alpha=req.alpha,
                       mde_power=req.mde_power, statistic=req.statistic,
                       n_resamples=req.n_resamples, seed=req.seed,
                       scheduler=req.scheduler, n_chunks=req.n_chunks,
                       ci_method=req.ci_method, bootstrap_pvalue=req.bootstrap_pvalue,
                       budget=req.budget)
    options = req.test_options or {}
    return base_ctx, {s.name: base_ctx.for_test(options.get(s.name)) for s in req.specs}


def run_group(slab, ia, ib, specs, ctxs, base_ctx, bar, want_effects, power, budget):
    """Every spec on one slab: closed-form specs (and the effect sizes) over slabs of
    pairs sized by the budget, resampling specs on all pairs at once."""
    P, M, n = len(ia), slab.shape[1], slab.n
    sliced = [s for s in specs if not s.all_pairs]
    whole = [s for s in specs if s.all_pairs]
    results: dict = {}
    extras: list = []
    per_value = max([s.bytes_per_value for s in sliced] +
                    [EFFECT_BYTES_PER_VALUE if want_effects else 0, 16])
    chunks = budget.chunks(P, M * n * per_value) if P else []
    pieces = {s.name: [] for s in sliced}
    for sl in chunks:
        a, b = ia[sl], ib[sl]
        for spec in sliced:
            pieces[spec.name].append(spec.run(slab, a, b, ctxs[spec.name]))
            bar.tick(slab.dataset, spec.name, 1)
        extras.append(_pair_extras(slab, a, b, want_effects, base_ctx, power))
        bar.tick(slab.dataset, "", 1)
        slab.release_pairs()
    for spec in sliced:
        results[spec.name] = (BatchResult.concat(pieces[spec.name]) if pieces[spec.name]
                              else spec.run(slab, ia, ib, ctxs[spec.name]))
    for spec in whole:
        ctx = ctxs[spec.name].replace(progress=bar.share(slab.dataset, spec.name))
        results[spec.name] = spec.run(slab, ia, ib, ctx)
    extra = {k: np.concatenate([e[k] for e in extras]) if not isinstance(extras[0][k], str)
             else extras[0][k] for k in extras[0]} if extras else {}
    return results, extra
def _pair_extras(slab, ia, ib, want_effects, ctx, power) -> dict:
    """Effect-size and power columns and the sd of the differences (for ``mde``), one value
    per pair x metric (ravelled), for one slab of pairs."""
    P, M, n = len(ia), slab.shape[1], slab.n
    out: dict = {}
    if slab.is_corpus:
        if want_effects:
            for c in EFFECT_COLUMNS + EFFECT_SE_COLUMNS:
                out[c] = np.full(P * M, np.nan)
            out["_note"] = ("effect sizes of per-instance scores do not apply to a corpus "
                            "metric (the estimate is the corpus-metric difference)")
        if power:
            out["power"] = np.full(P * M, np.nan)
        out["_sd"] = np.full(P * M, np.nan)
        return out
    mean_d, sd_d = pair_mean_sd(slab, ia, ib)
    if want_effects:
        # heavy: multistat.effect imports scipy.stats (first-call time)
        from multistat.effect import effect_sizes_batch

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant pairs: NaN + notes from the tests
            eff = effect_sizes_batch(slab, ia, ib, confidence_level=ctx.confidence_level,
                                     moments=(mean_d, sd_d))
        for c in EFFECT_COLUMNS:
            out[c] = np.asarray(eff[c], dtype=float).reshape(P * M)
        # heavy: multistat.effect imports scipy.stats (first-call time)
        from multistat.effect import cohens_dz_se, hedges_correction

        out["cohens_d_se"] = cohens_dz_se(out["cohens_d"], n)
        out["hedges_g_se"] = hedges_correction(n - 1) * out["cohens_d_se"]
    if power:
        target = None if power is True else float(power)
        out["power"] = _power_column(mean_d, sd_d, n, ctx.alpha, ctx.alternative,
                                     target).reshape(P * M)
        if target is None:
            out["_note"] = ("power: retrospective, at the observed mean difference (a "
                            "function of the p-value; plan with `multistat power`)")
    out["_sd"] = sd_d.reshape(P * M)
    return out


def _power_column(mean_d, sd, n: int, alpha: float, alternative: str, target):
    """Power of the paired t test at level alpha to detect ``target`` (metric units; None:
    the observed mean difference) given each pair's sd of differences
    (:func:`multistat.power.analytic` noncentral-t power, robust in the far tails)."""
    # heavy: multistat.power (scipy.stats), lazily (first-call time)
    from multistat.significance._t_power import t_power as _t_power

    delta = mean_d if target is None else np.full(sd.shape, float(target))
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where(sd > 0, delta / sd, np.nan)
    power = np.vectorize(lambda e: np.nan if np.isnan(e) else _t_power(n, e, alpha,
                                                                       alternative))
    return power(effect).astype(float)


@functools.lru_cache(maxsize=64)
def mde_multiplier(n: int, alpha: float, power: float, alternative: str) -> float:
    """``d_z`` the paired t test detects with probability ``power`` at ``n`` (NaN if none):
    :func:`multistat.power.analytic.mde_dz`, cached per design."""
    # lazily: the power package, only when a table has an mde column to fill
    from multistat.significance._t_power import mde_dz

    return mde_dz(n, alpha, power, alternative)


def mde(spec, slab, mult, sd, se):
    """Column ``mde``: resampling tests from their resampled standard error, the others
    from the sd of the differences (paired-t closed form)."""
    if se is not None:
        return mult * np.sqrt(slab.n) * np.asarray(se, dtype=float).ravel()
    if slab.is_corpus or sd is None:
        return np.nan
    return mult * sd
