"""Incomplete designs: paired tests on the instances both systems have (pairwise deletion).

A study read with ``missing="keep"`` may lack some instances for some systems (NaN
cells), as in human evaluations where each system is rated on its own sample of
segments. :func:`multistat.compare` then runs

* every test whose registry entry says ``missing="pairwise"`` (t, Wilcoxon, sign,
  bootstrap, permutation, McNemar, ASO and tests registered without saying) on each
  pair's **joint instances**, the instances both systems have; ``n`` says how many;
* every test with ``missing="own"`` (the unpaired ``"mannwhitney"`` and
  ``"brunner-munzel"``, the ``"mixed"`` model of ratings) on the scores with their NaN
  cells, which the test reads itself (each system's own scores; ``n_a``/``n_b``).

Per system first, pairs last: systems are grouped by the instances they have (their
presence pattern), a pair's joint instances are those of its two patterns, and pairs
with the same joint instances form one sub-slab of the systems involved, restricted to
those instances, with no hole left: the ordinary batch driver runs on it (closed forms
from the Gram matrix of its systems, rank tests on its pair slabs, resampling tests on
one plan for all its pairs), in memory sized by the same budget. A complete study never
comes here (its rows are those of the code path it always took).

Resampling plans
----------------
A sub-slab of ``n'`` joint instances is resampled with the plan a complete study of
those ``n'`` instances alone would draw: plans depend only on ``(seed, dataset name,
kind, block)`` and the number of instances, and instances keep their label order. So
the rows of a pair with holes equal the rows of ``compare`` on the complete study
restricted to the pair's joint instances (the same plan, not the complete study's plan
with the other instances' columns removed, which would not be a bootstrap of ``n'``
instances). Pairs with the same number of joint instances therefore share their plan,
as all pairs of a complete study do; a Westfall-Young step-down, whose joint null
needs one plan over all pairs *and* instances, is refused.

Pairs with fewer than 2 joint instances get NaN rows with a note saying so. Effect
sizes, power and ``mde`` of a pair are those of its joint instances (its own ``n``);
``score_a``/``score_b`` are the two systems' means on the instances the row used (the
joint instances for paired tests, each system's own instances for ``missing="own"``
tests, whose ``mde`` is not defined by the paired-t closed form and is NaN with a note).
"""

from __future__ import annotations

import functools

import numpy as np

from multistat import engine as eng
from multistat._centre import centred_means, levels, metric_centres
from multistat._cluster import group_codes
from multistat._table import join_notes
from multistat.errors import ParameterError
from multistat.significance._batch import BatchResult, Slab

#: the note of a pair with fewer than 2 joint instances
SHORT_NOTE = ("{test}: {n} instance(s) scored for both systems (missing='keep'); a paired "
              "test needs at least 2")
#: most (virtual) systems in one batch of joint-instance groups: bounds the Gram matrix of
#: a batch (systems^2 per metric, of which only the batch's pairs are read) whatever the
#: budget. 150 systems x 200 items, each system on its own 150, t only: peak RSS 357 MiB
#: with 4096, 174 MiB with 512, the same table (and faster: 0.67 s -> 0.41 s)
MAX_BATCH_SYSTEMS = 512
OWN_MDE_NOTE = ("mde: not defined for a test of each system's own scores on an incomplete "
                "design (the paired-t closed form needs paired instances)")


def has_holes(ds, score) -> bool:
    """True when a dataset read with ``missing="keep"`` has cells only some systems lack
    (``score`` its ``(S, M, n)`` array); datasets read otherwise are never checked."""
    if ds.attrs.get("missing") != "keep":
        return False
    nan = np.isnan(score)
    return bool((nan.any(axis=0) & ~nan.all(axis=0)).any())


def presence_key(score_m, order):
    """``(valid, key)`` of one metric of a dataset with holes (``score_m`` its ``(S, n)``
    scores): ``valid`` the instances any system has (canonical order), ``key`` the whole
    ``(systems, instances)`` presence pattern, so the metric groups of
    :meth:`multistat.comparison._Dataset.groups` share their holes."""
    present = ~np.isnan(score_m)[:, order]
    return present.any(axis=0), np.packbits(present).tobytes() + bytes(
        str(present.shape), "ascii")


def mark(slab: Slab) -> Slab:
    """Set ``slab.present`` (the instances each system has) when the slab has holes."""
    present = ~np.isnan(slab.scores[:, 0])
    slab.present = None if present.all() else present
    return slab


def sub_slab(slab: Slab, parts) -> Slab:
    """The hole-free slab of ``parts``, ``[(systems, instance mask)]`` with masks of one
    size ``n'``: each part's systems on its instances, stacked along the system axis
    (a system of two parts appears twice). With one part it is what ``compare`` builds
    for the complete study of those systems and instances; with several, their pairs
    run in one batch on the one plan of ``n'`` instances they would each draw."""

    def stack(a, axis):
        if a is None:
            return None
        pieces = [np.compress(mask, a[systems], axis=axis) for systems, mask in parts]
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    names = np.asarray(slab.systems, dtype=object)
    mask0 = parts[0][1]
    sub = Slab(stack(slab.scores, 2), dataset=slab.dataset, metrics=slab.metrics,
               systems=tuple(np.concatenate([names[s] for s, _ in parts])),
               metric_kinds=slab.metric_kinds,
               clusters=None if slab.clusters is None else group_codes(slab.clusters[mask0]),
               run_scores=stack(slab.run_scores, 2), ratings=stack(slab.ratings, 2),
               higher_is_better=slab.higher_is_better)
    if slab.is_corpus:
        fn, stats = slab.corpus
        st = stack(stats, 1)
        sub.corpus = (fn, st)
        sub.corpus_observed = fn(st.sum(1))[:, None]
    return sub


def _batches(groups, M, budget, n_resamples, clustered):
    """Joint-instance groups of one size in batches: ``[(n', [(mask, rows), ...])]``.
    A batch's systems (``2 x pairs`` at most) are held per system by the tests (Gram
    matrix, resampled means ``B x systems``), so each batch is sized by the budget; with
    ``cluster="group"`` every group keeps its own cluster codes (no batching)."""
    by_n: dict = {}
    for mask, rows in groups:
        by_n.setdefault(int(mask.sum()), []).append((mask, rows))
    out = []
    for n_joint, items in by_n.items():
        if clustered:
            out.extend((n_joint, [it]) for it in items)
            continue
        per_system = 8 * M * (n_joint + 3 * n_resamples + MAX_BATCH_SYSTEMS)
        cap = max(2, min(MAX_BATCH_SYSTEMS, budget.rows(per_system)))
        batch, size = [], 0
        for mask, rows in items:
            k = 2 * len(rows)
            if batch and size + k > cap:
                out.append((n_joint, batch))
                batch, size = [], 0
            batch.append((mask, rows))
            size += k
        if batch:
            out.append((n_joint, batch))
    return out


def joint_groups(present: np.ndarray, ia: np.ndarray, ib: np.ndarray):
    """``[(joint-instance mask, pair positions)]``: pairs grouped by the instances both
    systems have. Systems are first grouped by their presence pattern (per system
    first); a pair's joint instances are those of its two patterns."""
    _, code = np.unique(present, axis=0, return_inverse=True)
    code = code.ravel()
    K = int(code.max()) + 1
    ca, cb = code[ia], code[ib]
    combo = np.minimum(ca, cb) * K + np.maximum(ca, cb)
    combos, inverse = np.unique(combo, return_inverse=True)
    inverse = inverse.ravel()
    rep = {}  # a system of each pattern
    for s, c in enumerate(code.tolist()):
        rep.setdefault(c, s)
    by_mask: dict = {}
    out = []
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(combos) + 1))
    for j, c in enumerate(combos.tolist()):
        mask = present[rep[c // K]] & present[rep[c % K]]
        key = np.packbits(mask).tobytes()
        pos = order[bounds[j]:bounds[j + 1]]
        if key not in by_mask:
            by_mask[key] = len(out)
            out.append((mask, [pos]))
        else:
            out[by_mask[key]][1].append(pos)
    return [(mask, np.sort(np.concatenate(pos))) for mask, pos in out]


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
              budget, *, run, mde, refuse_stepdown=False):
    """:func:`multistat.comparison._run_group` for a slab with holes
    (``slab.present``): ``(results, extra)`` of the same shapes, every paired test on
    each pair's joint instances (module notes).

    ``run`` is the driver's own ``_run_group`` (called on each hole-free sub-slab);
    ``mde(spec, sub, sd, se)`` the driver's ``mde`` column of one sub-slab; each
    result carries its ``mde``, ``score_a`` and ``score_b`` per row."""
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
        groups = joint_groups(slab.present, ia, ib)
        for mask, rows in groups:
            n_joint = int(mask.sum())
            if n_joint < 2:
                _short(out, paired, ctxs, rows, n_joint, M)
                if want_effects or power:
                    _scatter_extra(extra_all, rows, M, {"_note": (
                        f"effect sizes, power and mde: {n_joint} instance(s) scored for "
                        "both systems (missing='keep'); at least 2 are needed")}, P)
        for n_joint, batch in _batches([g for g in groups if g[0].sum() >= 2], M, budget,
                                       base_ctx.n_resamples, slab.clusters is not None):
            parts, la, lb, offset = [], [], [], 0
            for mask, rows in batch:
                systems, local = np.unique(np.concatenate([ia[rows], ib[rows]]),
                                           return_inverse=True)
                parts.append((systems, mask))
                la.append(offset + local[:len(rows)])
                lb.append(offset + local[len(rows):])
                offset += len(systems)
            rows = np.concatenate([r for _, r in batch])
            la, lb = np.concatenate(la), np.concatenate(lb)
            sub = sub_slab(slab, parts)
            results, extra = run(sub, la, lb, paired, ctxs, base_ctx, bar, want_effects,
                                 power, budget)
            means = sub.means() if not sub.is_corpus else sub.corpus_observed
            for spec in paired:
                res = dict(results[spec.name].arrays)
                se = res.get("null_sd", res.get("se") if spec.resampling else None)
                if "mde" not in res:  # a test that gives its own (t-cluster) keeps it
                    res["mde"] = np.reshape(np.broadcast_to(
                        mde(spec, sub, extra.get("_sd"), se), (len(rows) * M,)),
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
