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

from typing import Any

import numpy as np

from multistat._cluster import group_codes
from multistat.significance._batch import Slab

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
    if slab.corpus is not None:
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
    out: list[Any] = []
    for n_joint, items in by_n.items():
        if clustered:
            out.extend((n_joint, [it]) for it in items)
            continue
        per_system = 8 * M * (n_joint + 3 * n_resamples + MAX_BATCH_SYSTEMS)
        cap = max(2, min(MAX_BATCH_SYSTEMS, budget.rows(per_system)))
        batch: list[Any] = []
        size = 0
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
    rep: dict[int, int] = {}  # a system of each pattern
    for s, c in enumerate(code.tolist()):
        rep.setdefault(c, s)
    by_mask: dict = {}
    out: list[Any] = []
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


