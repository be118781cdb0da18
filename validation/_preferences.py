"""Type I error of :func:`multistat.preference_test` with several judgments per item
(part of the calibration suite, ``make validate``).

Null data: ``G`` items, each with its own preference ``p_i ~ Beta(2, 2)`` for system a
(symmetric about 1/2: the systems are equally preferred on average, but an item's
judgments agree more with each other than with another item's); ``raters`` judgments per
item, a tie with probability 0.1, else a with probability ``p_i``. Two tests per data set:

* ``preference_test (items)``: the sign-flip test over items of
  :func:`multistat.human.preferences.sign_flip_pvalues` on the items' centred win shares
  (:func:`multistat.human.preferences.unit_shares`), the code ``preference_test`` runs;
* ``binomial over judgments (ignores items)``: the binomial test on all decisive
  judgments as if independent -- the mistake the issue describes, shown as a contrast.

Data sets are drawn in groups of 50, each group with its own sign-flip plan.
"""

from __future__ import annotations

import numpy as np

from validation._cells import ALPHA, cell, seed_of
from multistat.human.preferences import sign_flip_pvalues, unit_shares
from multistat.significance._binomial import binom_half_pvalue

GROUP = 50
P_TIE = 0.1


def _draw(rng, replicates, n_items, raters):
    p = rng.beta(2.0, 2.0, (replicates, n_items))
    probs = np.stack([(1 - P_TIE) * p, (1 - P_TIE) * (1 - p),
                      np.full(p.shape, P_TIE)], axis=-1)
    return rng.multinomial(raters, probs)  # (R, G, 3): wins, losses, ties per item


def preference_rows(*, replicates=2000, sizes=(30, 100), raters=3, n_resamples=999,
                    seed=0) -> list[dict]:
    """Calibration rows (:data:`validation.calibration.COLUMNS`) of the two tests."""
    rows = []
    for n in sizes:
        s = seed_of("calibration", seed, "preference", n, raters)
        rng = np.random.default_rng(s)
        counts = _draw(rng, replicates, n, raters)
        x = np.nan_to_num(unit_shares(counts[..., 0], counts[..., 1], counts[..., 2]))
        p = np.empty(replicates)
        for start in range(0, replicates, GROUP):
            sl = slice(start, start + GROUP)
            p[sl] = sign_flip_pvalues(x[sl], n_resamples=n_resamples, rng=rng)[0]
        wins, losses = counts[..., 0].sum(1), counts[..., 1].sum(1)
        naive = binom_half_pvalue(wins, wins + losses)
        group = np.arange(replicates) // GROUP
        dist = f"preference: {raters} judgments per item, items Beta(2, 2)"
        for name, pv, reason in (
                ("preference_test (items)", p,
                 ("discrete sign-flip distribution of the item shares: P(p <= alpha) "
                 "falls below alpha")),
                ("binomial over judgments (ignores items)", naive,
                 ("treats the judgments of one item as independent: items differ in "
                 "which system they favour, so the judgments are positively correlated "
                 "within an item and the binomial variance is too small"))):
            hits = pv <= ALPHA
            rates = np.bincount(group, hits) / np.bincount(group)
            row = cell("type_i_error", name, "", dist, n, hits, ALPHA, rates,
                        n_resamples if name.startswith("preference") else 0, s)
            if row["verdict"] != "ok":
                row["reason"] = reason
            rows.append(row)
    return rows
