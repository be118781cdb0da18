"""The driver's side of incomplete designs (:mod:`multistat.significance._holes` has the
data side): every paired test of a metric group with holes on each pair's joint
instances, the tests of each system's own scores on the NaN cells, and each system's
bootstrap over its own instances."""

from __future__ import annotations

import functools

import numpy as np

from multistat import engine as eng
from multistat._centre import centred_means, levels, metric_centres
from multistat._table import join_notes
from multistat.comparison._groups import mde, mde_multiplier
from multistat.comparison._groups import run_group as run_complete
from multistat.errors import ParameterError
from multistat.significance import _holes as data
from multistat.significance._batch import BatchResult, Slab
from multistat.significance._holes import OWN_MDE_NOTE, SHORT_NOTE


class _Scatter:
    """Per-spec (pairs, metrics) arrays filled group by group."""

    def __init__(self, shape):
        self.shape = shape
        self.cols: dict = {}

    def put(self, rows, arrays: dict) -> None:
        P, M = self.shape
        for k, v in arrays.items():
            v = np.broadcast_to(np.asarray(v), (len(rows), M))
            if k not in self.cols:
                if v.dtype == object or v.dtype.kind in "US":
                    self.cols[k] = np.full((P, M), "", dtype=object)
                elif v.dtype.kind == "b":
                    self.cols[k] = np.zeros((P, M), dtype=bool)
                elif v.dtype.kind in "iu" and k in ("n", "n_resamples", "seed"):
                    self.cols[k] = np.zeros((P, M), dtype=np.int64)
                else:
                    self.cols[k] = np.full((P, M), np.nan)
            col = self.cols[k]
            if col.dtype.kind in "iu" and v.dtype.kind == "f":
                col = self.cols[k] = col.astype(float)
            col[rows] = v


def _scatter_extra(extra_all: dict, rows, M, extra: dict, P) -> None:
    """Extras (effect/power columns, ravelled pair-major) of one group into the whole."""
    idx = (np.asarray(rows)[:, None] * M + np.arange(M)).ravel()
    for k, v in extra.items():
        if k == "_sd":
            continue
        if k not in extra_all:
            extra_all[k] = (np.full(P * M, "", dtype=object) if k == "_note"
                            else np.full(P * M, np.nan))
        extra_all[k][idx] = v


def run_group(slab: Slab, ia, ib, specs, ctxs, base_ctx, bar, want_effects, power,
              budget, *, mde_design=None, refuse_stepdown=False):
    """:func:`multistat.comparison._groups.run_group` for a slab with holes
    (``slab.present``): ``(results, extra)`` of the same shapes, every paired test on
    each pair's joint instances (:mod:`multistat.significance._holes`).

    ``mde_design``: ``(alpha, power, alternative)`` of the ``mde`` column (None: NaN);
    each result carries its ``mde``, ``score_a`` and ``score_b`` per row."""
    if refuse_stepdown:
        raise ParameterError(
            f"dataset {slab.dataset!r} has holes (read with missing='keep'): each pair is "
            "resampled on its own joint instances, so there is no plan shared by all pairs "
            "for a Westfall-Young step-down; use correction='holm' (or an unpaired test)")
    ia, ib = np.asarray(ia, dtype=np.intp), np.asarray(ib, dtype=np.intp)
    P, M = len(ia), slab.shape[1]
    paired = [s for s in specs if s.missing != "own"]
    own = [s for s in specs if s.missing == "own"]
    out = {s.name: _Scatter((P, M)) for s in specs}
    extra_all: dict = {}
    if paired or want_effects or power:
        if slab.present is None:  # this path runs on slabs with a presence mask
            raise ValueError("the incomplete-design path needs the slab's presence mask")
        groups = data.joint_groups(slab.present, ia, ib)
        for mask, rows in groups:
            n_joint = int(mask.sum())
            if n_joint < 2:
                _short(out, paired, ctxs, rows, n_joint, M)
                if want_effects or power:
                    _scatter_extra(extra_all, rows, M, {"_note": (
                        f"effect sizes, power and mde: {n_joint} instance(s) scored for "
                        "both systems (missing='keep'); at least 2 are needed")}, P)
        for n_joint, batch in data._batches([g for g in groups if g[0].sum() >= 2], M, budget,
                                       base_ctx.n_resamples, slab.clusters is not None):
            parts, la_parts, lb_parts, offset = [], [], [], 0
            for mask, rows in batch:
                systems, local = np.unique(np.concatenate([ia[rows], ib[rows]]),
                                           return_inverse=True)
                parts.append((systems, mask))
                la_parts.append(offset + local[:len(rows)])
                lb_parts.append(offset + local[len(rows):])
                offset += len(systems)
            rows = np.concatenate([r for _, r in batch])
            la, lb = np.concatenate(la_parts), np.concatenate(lb_parts)
            sub = data.sub_slab(slab, parts)
            results, extra = run_complete(sub, la, lb, paired, ctxs, base_ctx, bar,
                                          want_effects, power, budget)
            mult = (np.nan if mde_design is None
                    else mde_multiplier(sub.n, *mde_design))
            means = sub.observed()
            for spec in paired:
                res = dict(results[spec.name].arrays)
                se = res.get("null_sd", res.get("se") if spec.resampling else None)
                if "mde" not in res:  # a test that gives its own (t-cluster) keeps it
                    res["mde"] = np.reshape(np.broadcast_to(
                        mde(spec, sub, mult, extra.get("_sd"), se), (len(rows) * M,)),
                        (len(rows), M))
                res["score_a"], res["score_b"] = means[la], means[lb]
                out[spec.name].put(rows, res)
            _scatter_extra(extra_all, rows, M, {
                k: (np.full(len(rows) * M, v, dtype=object) if isinstance(v, str) else v)
                for k, v in extra.items()}, P)
    if own:
        _run_own(slab, ia, ib, own, ctxs, bar, budget, out)
    results = {s.name: BatchResult(s.name, out[s.name].cols) for s in specs}
    if "_note" in extra_all:
        extra_all["_note"] = np.asarray(extra_all["_note"], dtype=object)
    return results, extra_all


def _short(out, paired, ctxs, rows, n_joint, M) -> None:
    """NaN rows, with the reason, for pairs with fewer than 2 joint instances."""
    for spec in paired:
        ctx = ctxs[spec.name]
        arrays = {"n": np.full((len(rows), M), n_joint, dtype=np.int64),
                  "note": SHORT_NOTE.format(test=spec.name, n=n_joint),
                  "statistic_kind": spec.statistic_kinds[0],
                  **{k: np.nan for k in ("statistic", "p_value", "estimate", "ci_low",
                                         "ci_high", "mde", "score_a", "score_b")}}
        if spec.resampling:
            arrays["n_resamples"] = np.full((len(rows), M), ctx.n_resamples)
            arrays["seed"] = np.full((len(rows), M), ctx.seed if isinstance(ctx.seed, int)
                                     else -1)
        out[spec.name].put(rows, arrays)


def _run_own(slab, ia, ib, own, ctxs, bar, budget, out) -> None:
    """Tests that read the NaN cells themselves, on the whole slab (each system's own
    instances), in slabs of pairs sized by the budget; ``score_a``/``score_b`` each
    system's mean over its own instances."""
    P, M, n = len(ia), slab.shape[1], slab.n
    X = slab.scores
    with np.errstate(invalid="ignore"):
        means = (np.nansum(X, axis=-1) / slab.present.sum(-1)[:, None]
                 if not slab.is_corpus else slab.corpus_observed)
    rows_all = np.arange(P)
    for spec in own:
        ctx = ctxs[spec.name]
        if spec.all_pairs:
            parts = [(rows_all, spec.run(slab, ia, ib, ctx.replace(
                progress=bar.share(slab.dataset, spec.name))))]
        else:
            parts = []
            for sl in budget.chunks(P, M * n * max(spec.bytes_per_value, 16)):
                parts.append((rows_all[sl], spec.run(slab, ia[sl], ib[sl], ctx)))
                bar.tick(slab.dataset, spec.name, 1)
        for rows, res in parts:
            arrays = dict(res.arrays)
            arrays["mde"] = np.nan
            arrays["note"] = join_notes(np.asarray(arrays["note"], dtype=object),
                                        OWN_MDE_NOTE)
            arrays["score_a"], arrays["score_b"] = means[ia[rows]], means[ib[rows]]
            out[spec.name].put(rows, arrays)


def group_bootstrap(X, corpus_stats, *, n_resamples, seed, dataset, **run):
    """Each system's score and bootstrap distribution over its **own** instances, for a
    metric group with holes: systems with the same number of instances share the plan a
    complete study of that many instances would draw (:mod:`multistat.engine`), so
    a system's interval is the one of the study of that system's own instances.
    ``corpus_stats``: ``(fn, stats (S, n, K))`` for a corpus metric. Returns
    ``(observed (S, M), distribution (B, S, M), n (S * M,))``."""


    present = ~np.isnan(X[:, 0])
    counts = present.sum(-1)
    S, M = X.shape[:2]
    obs = np.full((S, M), np.nan)
    dist = np.full((n_resamples, S, M), np.nan)
    for n_s in np.unique(counts).tolist():
        sys_ = np.flatnonzero(counts == n_s)
        if n_s < 1:
            continue
        if corpus_stats is not None:
            fn, stats = corpus_stats
            st = np.stack([stats[s][present[s]] for s in sys_])  # (k, n_s, K)
            obs[sys_] = fn(st.sum(1))[:, None]
            dist[:, sys_] = fn(eng.resample("bootstrap", eng.corpus_sums_kernel, st,
                                            n=n_s, n_resamples=n_resamples, seed=seed,
                                            dataset=dataset, **run))[..., None]
            continue
        Xg = np.stack([X[s][:, present[s]] for s in sys_])  # (k, M, n_s)
        k = metric_centres(Xg)
        d = eng.resample("bootstrap", functools.partial(eng.mean_kernel, centre=k), Xg,
                         n=n_s, n_resamples=n_resamples, seed=seed, dataset=dataset, **run)

        obs[sys_] = levels(centred_means(Xg, k), k)
        dist[:, sys_] = levels(d, k)
    return obs, dist, np.repeat(counts, M)
