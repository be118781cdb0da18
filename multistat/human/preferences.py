"""Pairwise preferences: head-to-head tests and Bradley-Terry leaderboards.

Battles (one row per pairwise judgment "a against b: who won") are a table of their own:
they share no instance axis across systems, so they do not enter the study cube.

* :func:`preference_test` -- two systems, one or several judgments per item (or rater):
  the exact binomial test when every unit's judgments agree, else an exact or Monte Carlo
  sign-flip test over the units' win shares (the judgments of one item stay together).
* :func:`bradley_terry` -- a leaderboard from battles between many systems: maximum
  likelihood Bradley-Terry (ties half a win each, or Davidson's tie model) on the Elo
  scale, with a seeded bootstrap over battles (or over items: all battles of an item
  together) for score and rank intervals and WMT clusters from the bootstrap pairwise
  decisions after a correction (the rule of :func:`multistat.rank`, reusing
  :mod:`multistat.leaderboard.ranking`).

Speed (written by hand because no kept library fits many resamples at once): battles are
aggregated to per-pair counts once (200 systems: at most 19,900 pairs, whatever the
number of battles). A bootstrap over battles is a multinomial draw of the (pair, outcome)
cell counts (:func:`multinomial_rows`), so no resample ever touches the battles, and
many resamples are fitted together, pairs x resamples in cache-sized blocks (chord steps
with the point estimate's inverse Hessian; batched Newton steps where needed): 10^7
battles among 200 systems with 1,000 resamples in about 9 CPU seconds
(``benchmarks/bench_preferences_scale.py``).

References
----------
Bradley, R. A., Terry, M. E. (1952). Rank analysis of incomplete block designs: I. The
method of paired comparisons. Biometrika 39(3/4), 324-345. doi:10.2307/2334029
Davidson, R. R. (1970). On extending the Bradley-Terry model to accommodate ties in paired
comparison experiments. JASA 65(329), 317-328. doi:10.1080/01621459.1970.10481082
Hunter, D. R. (2004). MM algorithms for generalized Bradley-Terry models. Annals of
Statistics 32(1), 384-406. doi:10.1214/aos/1079120141
Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
preference. ICML. arXiv:2403.04132
Card, D. et al. (2020). With Little Power Comes Great Responsibility. EMNLP, appendix H.4.
doi:10.18653/v1/2020.emnlp-main.745
"""

from __future__ import annotations

import math
import warnings
from typing import Any
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from multistat import __version__
from multistat._result import Result
from multistat._validation import (
    bad_name,
    check_alternative,
    check_choice,
    check_int,
    check_probability,
    check_seed,
    twin_names,
    twins_why,
)
from multistat.correct import METHODS, adjust_groups
from multistat.engine import block_rng, pair_differences
from multistat.errors import DataValidationError, MultistatWarning, ParameterError, show
from multistat.io._parsing import read_table
from multistat.leaderboard.ranking import (
    _snap_ties,
    better_matrix,
    clusters,
    point_ranks,
    rank_distribution,
    rank_ranges,
    score_order,
)
from multistat.significance._preference import sign_flip_pvalues, unit_shares

#: Elo points per logit: a 400-point gap is 10:1 odds
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: score of the anchor (the named system, or the mean of all systems)
ELO_BASE = 1000.0
#: winner values of a battle; "tie (bothbad)" is Chatbot Arena's second tie label
WINNERS = {"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 2}
TIES = ("half", "davidson")
COLUMNS = ("system", "score", "ci_low", "ci_high", "rank", "rank_ci_low", "rank_ci_high",
           "n_battles", "win_rate", "wins", "losses", "ties", "expected_rank", "p_best",
           "rank_range_low", "rank_range_high", "cluster", "beats", "beaten_by")


class PreferenceWarning(MultistatWarning):
    """Some bootstrap resamples of a Bradley-Terry fit have no finite maximum."""


# ============================================================================== input
def _frame(data, what: str) -> tuple[pd.DataFrame, str]:
    """A DataFrame and the name of its source (a path is read with multistat's reader)."""
    if isinstance(data, pd.DataFrame):
        return data, str(data.attrs.get("source", what))

    frame = read_table(data)
    return frame, str(data)


def _need(frame: pd.DataFrame, where: str, cols: dict[str, str]) -> None:
    for arg, col in cols.items():
        if col not in frame.columns:
            raise DataValidationError(f"{where}: no column {show(col)} (`{arg}`); the "
                                      f"table has {show(list(frame.columns))}")


def _rows(mask: np.ndarray) -> str:
    """``row 5`` / ``rows 5, 9 and 3 more`` (1-based data rows, header not counted)."""
    idx = np.flatnonzero(mask) + 1
    head = ", ".join(str(i) for i in idx[:3])
    more = f" and {len(idx) - 3} more" if len(idx) > 3 else ""
    return f"row{'s' if len(idx) > 1 else ''} {head}{more}"


def _place(frame, where, row: int, col: str) -> str:
    """Where data row ``row`` (0-based) of a table is: ``"<file>, line 7, column 'x'"``
    for a file (the file's own line numbers, as every reader of multistat says them),
    ``"battles, row 7, column 'x'"`` for a DataFrame."""
    source = frame.attrs.get("source")
    if source is not None:
        # lazily: the reader's locator is needed on the error path only
        from multistat.io._sources import resolve_source

        return resolve_source(source, sep=None).where(row, col)
    return f"{where}, row {row + 1}, column {col!r}"


def _first_row(codes, k) -> int:
    return int(np.flatnonzero(codes == k)[0])


def _refuse_booleans(frame, where, col, role) -> None:
    """A JSON ``true``/``false`` (or a Parquet bool column) is not a name: it would
    merge with the number 1/0 of another row and print as ``True``. Text columns (the
    usual case, Arrow strings) are not scanned."""
    values = frame[col]
    if pd.api.types.is_bool_dtype(values.dtype):
        flags = values.notna().to_numpy()
    elif values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) \
            not in ("string", "integer", "floating", "mixed-integer-float", "empty"):
        flags = np.fromiter((isinstance(v, bool | np.bool_) for v in values), bool,
                            count=len(values))
    else:
        return
    if flags.any():
        row = int(np.argmax(flags))
        raise DataValidationError(
            f"{_place(frame, where, row, col)}: {role} {show(bool(values.iloc[row]))} is "
            f"a boolean, not a name; {role} names must be text or numbers")


def _check_names(frame, where, found, role) -> None:
    """The naming rule of every reader of multistat (:func:`multistat._validation.bad_name`
    and :func:`~multistat._validation.twin_names`) on the distinct ``role`` names
    of one or several columns: ``found`` is ``[(column, codes, names), ...]``."""
    def place(name):
        for col, codes, names in found:
            hit = np.flatnonzero(names == name)
            if len(hit):
                return _place(frame, where, _first_row(codes, hit[0]), col)
        return where  # pragma: no cover - every name comes from a column

    every = list(dict.fromkeys(n for _, _, names in found for n in names))
    twins = twin_names(every)
    if twins is not None:
        raise DataValidationError(
            f"{role} names {show(twins[0])} ({place(twins[0])}) and {show(twins[1])} "
            f"({place(twins[1])}) {twins_why(*twins)}; they would be two {role}s: fix "
            "the names")
    for name in every:
        why = bad_name(name, role)
        if why is not None:
            raise DataValidationError(f"{place(name)}: {role} name {show(name)} {why}; "
                                      f"{role} names must be visible text")


def _text(frame, col, where, role=None) -> np.ndarray:
    values = frame[col]
    missing = values.isna().to_numpy()
    if missing.any():
        raise DataValidationError(f"{where}: column {show(col)} is empty in "
                                  f"{_rows(missing)}")
    if role is not None:
        _refuse_booleans(frame, where, col, role)
    return values.astype(str).to_numpy(dtype=object)


def _codes(frame, col, where, role=None) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a text column and its distinct values as text, both in the order
    of first appearance (pandas' hashing factorize: a 10^6-row column in a fraction of a
    second); an empty cell is an error naming its rows, and so is a boolean ``role``
    name."""
    codes, uniques = pd.factorize(frame[col])
    missing = codes < 0
    if missing.any():
        raise DataValidationError(f"{where}: column {show(col)} is empty in "
                                  f"{_rows(missing)}")
    if role is not None:
        _refuse_booleans(frame, where, col, role)
    return codes, np.asarray([str(u) for u in uniques], dtype=str)


@dataclass(frozen=True)
class Battles:
    """Battles aggregated to pairs: system names in the order of their first appearance
    in the battles (row by row, ``model_a`` before ``model_b``: an order that renaming
    the systems does not change) and, per observed pair ``(ia < ib)`` in that order, the
    counts ``(ia wins, ib wins, ties)``. With an item column, ``items`` holds the
    per-item counts: a sparse ``(G, 3 P)`` matrix whose column ``3 p + o`` counts the
    battles of item ``g`` in pair ``p`` with outcome ``o``."""

    systems: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    counts: np.ndarray  # (P, 3) float64, exact integers
    items: Any = None  # scipy.sparse CSR (G, 3 P), or None

    @property
    def n_battles(self) -> int:
        return int(self.counts.sum())

    @property
    def n_items(self) -> int:
        return 0 if self.items is None else int(self.items.shape[0])


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Row of the first appearance of each code of a factorized column (codes appear in
    increasing order, so a new code is where the running maximum grows)."""
    run = np.maximum.accumulate(codes)
    new = np.empty(len(codes), bool)
    new[0] = True
    new[1:] = run[1:] > run[:-1]
    return np.flatnonzero(new)


def aggregate_battles(battles, *, model_a="model_a", model_b="model_b", winner="winner",
                      systems=None, item=None) -> Battles:
    """Check a battles table and count wins and ties per pair of systems (and per item
    with ``item``, a column naming the item, prompt or segment of each battle).

    Refuses, with one message naming the rows or systems: a missing column or cell, a
    winner outside ``model_a | model_b | tie | tie (bothbad)``, a system against itself,
    system names that multistat's readers refuse (blank, control characters, two names
    that differ only by surrounding whitespace, a JSON boolean; the file and line are
    named), a listed system (``systems``) that never plays, and a comparison graph that
    is not connected (the components are named).
    """
    frame, where = _frame(battles, "battles")
    need = {"model_a": model_a, "model_b": model_b, "winner": winner}
    if item is not None:
        need["item"] = item
    _need(frame, where, need)
    if len(frame) == 0:
        raise DataValidationError(f"{where}: no battles")
    a_codes, a_names = _codes(frame, model_a, where, "system")
    b_codes, b_names = _codes(frame, model_b, where, "system")
    _check_names(frame, where, [(model_a, a_codes, a_names), (model_b, b_codes, b_names)],
                 "system")
    w_codes, w_names = _codes(frame, winner, where)
    known = np.array([WINNERS.get(v, -1) for v in w_names], dtype=np.int64)
    outcome = known[w_codes]
    bad = outcome < 0
    if bad.any():
        first = w_names[w_codes[np.argmax(bad)]]
        raise DataValidationError(
            f"{where}: column {show(winner)} has unknown value {show(first)} in "
            f"{_rows(bad)}; allowed: {', '.join(map(repr, WINNERS))}")
    # systems in the order of first appearance: row, then model_a before model_b
    key: dict[str, int] = {}
    for names_, first, side in ((a_names, _first_rows(a_codes), 0),
                                (b_names, _first_rows(b_codes), 1)):
        for nm, f in zip(names_.tolist(), first.tolist()):
            k = 2 * f + side
            if k < key.get(nm, k + 1):
                key[nm] = k
    order = sorted(key, key=key.__getitem__)
    index = {nm: i for i, nm in enumerate(order)}
    names = np.asarray(order, dtype=str)
    S = len(names)
    small = np.int32 if 3 * S * S < 2**31 else np.int64
    ca = np.array([index[n] for n in a_names.tolist()], dtype=small)[a_codes]
    cb = np.array([index[n] for n in b_names.tolist()], dtype=small)[b_codes]
    selfplay = ca == cb
    if selfplay.any():
        raise DataValidationError(f"{where}: system {show(names[ca[np.argmax(selfplay)]])} "
                                  f"plays against itself in {_rows(selfplay)}")
    if systems is not None:
        listed = np.unique(np.asarray(list(systems), dtype=str))
        absent = np.setdiff1d(listed, names)
        if len(absent):
            raise DataValidationError(f"{where}: system(s) {show(list(absent))} never play "
                                      "(no battle names them)")
        extra = np.setdiff1d(names, listed)
        if len(extra):
            raise DataValidationError(f"{where}: system(s) {show(list(extra))} play but "
                                      "are not in `systems`")
    outcome = outcome.astype(small)
    if S * S <= 10_000_000:
        # one count over every ordered (a, b, outcome): O(N), no sort; then folded to
        # the unordered pairs (lo < hi) with outcomes relative to lo
        cell = ca * small(S)
        cell += cb
        cell *= small(3)
        cell += outcome
        full = np.bincount(cell, minlength=3 * S * S).reshape(S, S, 3)
        lo_hi = full + full.transpose(1, 0, 2)[:, :, [1, 0, 2]]  # [i, j]: i's view
        lo, hi = np.triu_indices(S, 1)
        counts = lo_hi[lo, hi]
        seen = counts.any(1)
        lo, hi, counts = lo[seen], hi[seen], counts[seen]
        pair_of = None
        if item is not None:
            pair_of = np.full(S * S, -1, np.int64)
            pair_of[lo * S + hi] = np.arange(len(lo))
    else:
        lo_b, hi_b = np.minimum(ca, cb).astype(np.int64), np.maximum(ca, cb)
        rel = np.where(outcome == 2, 2, np.where((outcome == 0) == (ca == lo_b), 0, 1))
        pairs, pinv = np.unique(lo_b * S + hi_b, return_inverse=True)
        counts = np.bincount(pinv * 3 + rel, minlength=3 * len(pairs)).reshape(-1, 3)
        lo, hi = pairs // S, pairs % S
    items = None
    if item is not None:
        items = _item_counts(frame, where, item, ca, cb, outcome, S, lo, hi,
                             pair_of if S * S <= 10_000_000 else None)
    out = Battles(names, lo.astype(np.intp), hi.astype(np.intp),
                  counts.astype(np.float64), items)
    _check_connected(out, where)
    return out


def _item_counts(frame, where, item, ca, cb, outcome, S, lo, hi, pair_of):
    """Sparse ``(G, 3 P)`` counts of each item's battles per pair and outcome (items in
    the order of first appearance)."""
    # heavy: scipy.sparse, numpy, lazily
    from scipy.sparse import csr_matrix

    g_codes, _ = _codes(frame, item, where, "item")
    lo_b = np.minimum(ca, cb).astype(np.int64)
    hi_b = np.maximum(ca, cb).astype(np.int64)
    if pair_of is None:
        pair_of_b = np.searchsorted(lo.astype(np.int64) * S + hi, lo_b * S + hi_b)
    else:
        pair_of_b = pair_of[lo_b * S + hi_b]
    rel = np.where(outcome == 2, 2, np.where((outcome == 0) == (ca == lo_b), 0, 1))
    G = int(g_codes.max()) + 1
    m = csr_matrix((np.ones(len(ca)), (g_codes, pair_of_b * 3 + rel)),
                   shape=(G, 3 * len(lo)))
    m.sum_duplicates()
    return m


def _components(S, ia, ib, directed=False):
    # heavy: scipy.sparse, numpy, lazily
    from scipy.sparse import coo_matrix

    # heavy: scipy.sparse, numpy, lazily
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(len(ia)), (ia, ib)), shape=(S, S))
    return connected_components(g, directed=directed, connection="strong")


def _check_connected(bt: Battles, where: str) -> None:
    S = len(bt.systems)
    k, labels = _components(S, bt.ia, bt.ib)
    if k > 1:
        groups = sorted(sorted(bt.systems[labels == c].tolist()) for c in range(k))
        text = "; ".join(f"{{{', '.join(g[:5])}{', ...' if len(g) > 5 else ''}}}"
                         for g in groups[:5])
        raise DataValidationError(
            f"{where}: the comparison graph is not connected: {k} groups of systems never "
            f"meet ({text}{'; ...' if k > 5 else ''}); their scores are not comparable")


def _check_finite(bt: Battles, where: str, davidson: bool) -> None:
    """The maximum-likelihood scores exist iff the graph "i beat j at least once" (a tie
    counts both ways) is strongly connected (Zermelo 1929; Hunter 2004, Assumption 1)."""
    S = len(bt.systems)
    c = bt.counts
    src = np.concatenate([bt.ia[c[:, 0] + c[:, 2] > 0], bt.ib[c[:, 1] + c[:, 2] > 0]])
    dst = np.concatenate([bt.ib[c[:, 0] + c[:, 2] > 0], bt.ia[c[:, 1] + c[:, 2] > 0]])
    k, labels = _components(S, src, dst, directed=True)
    if k > 1:
        # a component nobody outside it beats: its systems' scores run off to +infinity
        beaten = np.zeros(k, bool)
        cross = labels[src] != labels[dst]
        beaten[labels[dst[cross]]] = True
        top = int(np.flatnonzero(~beaten)[0])
        names = sorted(bt.systems[labels == top].tolist())
        raise DataValidationError(
            f"{where}: no finite Bradley-Terry scores: system(s) {show(names)} never lose "
            "(nor tie) against any system outside this group, so their maximum-likelihood "
            "scores are infinite; collect battles they lose or tie")
    if davidson:
        t = c[:, 2].sum()
        if t == 0 or t == c.sum():
            raise DataValidationError(
                f"{where}: ties='davidson' needs both ties and decided battles; "
                f"{'no battle is a tie' if t == 0 else 'every battle is a tie'} "
                "(use ties='half')")


# ============================================================================ the fit
def _incidence(S, ia, ib):
    """Sparse ``(P, S)`` incidence (+1 at a, -1 at b) and its absolute value."""
    # heavy: scipy.sparse, numpy, lazily
    from scipy.sparse import csr_matrix

    P = len(ia)
    rows = np.repeat(np.arange(P), 2)
    cols = np.column_stack([ia, ib]).ravel()
    E = csr_matrix((np.tile([1.0, -1.0], P), (rows, cols)), shape=(P, S))
    return E, abs(E)


def _pair_data(counts, davidson):
    """What the likelihood needs of counts ``(B, P, 3)``: ``(W, n)`` with ``W = wins_a +
    ties / 2`` (``ties="half"``), or ``(wins_a - wins_b, ties, n)`` (Davidson)."""
    wa, wb, t = counts[..., 0], counts[..., 1], counts[..., 2]
    n = wa + wb + t
    if davidson:
        return (wa - wb, t, n)
    return (wa + 0.5 * t, n)


def _derivatives(d, theta, data, davidson, hessian=True):
    """Per pair and resample: gradient of the log-likelihood in ``d = beta_a - beta_b``
    (and theta = log nu) and the negative second derivatives (``ties="half"``: only
    with ``hessian``)."""
    np.clip(d, -200.0, 200.0, out=d)  # beyond any finite data set's scores (e^200 odds)
    if not davidson:
        W, n = data
        d *= 0.5
        p = np.tanh(d, out=d)
        p += 1.0
        p *= 0.5  # expit(d) without overflow
        g = W - n * p
        return g, (n * p * (1.0 - p) if hessian else None), None, None, None
    diff, t, n = data
    s, r = np.exp(0.5 * d), np.exp(-0.5 * d)
    nu = np.exp(theta)[:, None]
    D = s + r + nu
    half = 0.5 * (s - r) / D
    g_d = 0.5 * diff - n * half
    h_dd = n * (0.25 * (s + r) / D - half ** 2)
    g_t = (t - n * nu / D).sum(1)
    h_dt = -n * half * nu / D
    h_tt = (n * nu * (D - nu) / D ** 2).sum(1)
    return g_d, h_dd, g_t, h_dt, h_tt


def _system(ia, ib, S, ET, absET, beta, theta, data, davidson, hessian=True):
    """Gradient ``(m, k)`` of the log-likelihood in the free parameters (systems 1..S-1,
    then theta for Davidson) and, with ``hessian``, the negative Hessian ``(m, k, k)``:
    the weighted Laplacian of the comparison graph, assembled by scattering the
    per-pair second derivatives."""
    g_d, h_dd, g_t, h_dt, h_tt = _derivatives(beta[:, ia] - beta[:, ib], theta, data,
                                              davidson, hessian)
    grad = np.asarray(ET @ g_d.T).T[:, 1:]  # (m, S - 1)
    gf = np.column_stack([grad, g_t]) if davidson else grad
    if not hessian:
        return gf, None
    m = len(beta)
    H = np.zeros((m, S * S))
    H[:, ia * S + ib] = -h_dd
    H[:, ib * S + ia] = -h_dd
    H[:, np.arange(S) * (S + 1)] = np.asarray(absET @ h_dd.T).T
    H = H.reshape(m, S, S)
    if not davidson:
        return gf, H[:, 1:, 1:].copy()
    k = S
    Hf = np.zeros((m, k, k))
    Hf[:, :S - 1, :S - 1] = H[:, 1:, 1:]
    cross = np.asarray(ET @ h_dt.T).T[:, 1:]
    Hf[:, :S - 1, -1] = cross
    Hf[:, -1, :S - 1] = cross
    Hf[:, -1, -1] = h_tt
    return gf, Hf


def _newton(ia, ib, S, counts, *, davidson, beta, theta, max_iter=60, tol=1e-9,
            max_step=5.0, chord=None, chord_iter=15):
    """Batched Newton-Raphson on ``counts`` ``(B, P, 3)``; ``beta`` ``(B, S)`` (system 0
    held at 0) and ``theta`` ``(B,)`` are the starting values. Returns ``(beta, theta,
    converged)``.

    With ``chord`` (the inverse negative Hessian at the point estimate, for bootstrap
    resamples started there) the first ``chord_iter`` iterations are chord steps
    ``H0^-1 g``: one matrix product per iteration instead of a Hessian per resample and
    a batched solve; they converge linearly at the rate of the resample's relative
    change of the Hessian (a few percent with hundreds of battles per pair) to the same
    fixed point ``g = 0``. Resamples not converged by then continue with full Newton
    steps: every resample's Hessian solved in one batched call. Steps are capped at
    ``max_step`` logits (the log-likelihood is concave; the cap only guards steps from
    far away). Resamples leave the batch once their largest step is below ``tol``
    logits."""
    E, absE = _incidence(S, ia, ib)
    ET, absET = E.T.tocsr(), absE.T.tocsr()
    B = counts.shape[0]
    k = S - 1 + (1 if davidson else 0)
    beta, theta = beta.copy(), theta.copy()
    active = np.arange(B)
    data = _pair_data(counts, davidson)
    converged = np.zeros(B, bool)
    for it in range(max_iter + (chord_iter if chord is not None else 0)):
        if not len(active):
            break
        use_chord = chord is not None and it < chord_iter
        gf, Hf = _system(ia, ib, S, ET, absET, beta[active], theta[active], data,
                         davidson, hessian=not use_chord)
        if use_chord:
            step = gf @ chord
        else:
            # a tiny ridge keeps a resample solvable where a system drew no battle (a
            # zero row) or the graph fell apart; it changes the path, not the fixed point
            ridge = 1e-12 * np.maximum(np.trace(Hf, axis1=1, axis2=2) / k, 1e-300)
            Hf[:, np.arange(k), np.arange(k)] += ridge[:, None]
            step = np.linalg.solve(Hf, gf[..., None])[..., 0]
        big = np.abs(step).max(1)
        step *= np.minimum(1.0, max_step / np.maximum(big, 1e-300))[:, None]
        beta[active, 1:] += step[:, :S - 1]
        if davidson:
            theta[active] += step[:, -1]
        done = big < tol
        if done.any():
            converged[active[done]] = True
            active = active[~done]
            data = tuple(x[~done] for x in data)
    return beta, theta, converged


def _fit_batch(bt: Battles, counts, davidson, beta0=None, theta0=None, chord=None):
    B = counts.shape[0]
    S = len(bt.systems)
    beta = np.zeros((B, S)) if beta0 is None else np.broadcast_to(beta0, (B, S)).copy()
    if theta0 is None:
        c = counts.sum(1)
        ties = np.maximum(c[:, 2], 0.5)
        theta = np.log(2.0 * ties / np.maximum(c[:, 0] + c[:, 1], 0.5))
    else:
        theta = np.full(B, float(theta0))
    return _newton(bt.ia, bt.ib, S, counts, davidson=davidson, beta=beta, theta=theta,
                   chord=chord)


def _chord(ia, ib, S, counts, beta_hat, theta_hat, davidson):
    """Inverse negative Hessian of the log-likelihood of ``counts`` ``(P, 3)`` at the
    estimate (free parameters: systems 1..S-1, then theta for Davidson)."""
    E, absE = _incidence(S, ia, ib)
    _, H = _system(ia, ib, S, E.T.tocsr(), absE.T.tocsr(), beta_hat[None],
                   np.array([theta_hat]), _pair_data(counts[None], davidson), davidson)
    return np.linalg.inv(H[0])


def fit_bradley_terry(bt: Battles, ties="half") -> tuple[np.ndarray, float]:
    """Maximum-likelihood log-strengths ``beta`` (system 0 at 0) and Davidson's
    ``nu`` (NaN with ``ties="half"``) of aggregated battles."""
    davidson = ties == "davidson"
    beta, theta, ok = _fit_batch(bt, bt.counts[None], davidson)
    if not ok[0]:  # pragma: no cover - excluded by _check_finite
        raise DataValidationError("the Bradley-Terry fit did not converge")
    return beta[0], (float(np.exp(theta[0])) if davidson else float("nan"))


# ====================================================================== the bootstrap
#: int64 cell counts one drawn chunk of resamples may hold (64 MB)
DRAW_BUDGET = 8_000_000
#: pairs x resamples of one block of the chord iteration (2 MB per array: in cache)
FIT_BLOCK = 262_144
#: chord iterations before a resample goes on with full Newton steps
CHORD_ITER = 30


def multinomial_rows(cells, size, rng_poisson, rng_fix) -> np.ndarray:
    """``size`` draws ``(size, K)`` int64 of ``Multinomial(N, cells / N)`` with ``N =
    cells.sum()`` (``cells``: non-negative integer counts).

    Each row is drawn as independent ``Poisson(cells)`` counts (``rng_poisson``, row
    after row) and then corrected to the total ``N`` exactly (``rng_fix``): a shortfall
    of ``k`` adds ``k`` categorical draws with probabilities ``cells / N``, a surplus of
    ``k`` removes ``k`` of the row's items chosen uniformly without replacement. Given
    its total ``s``, a row of independent Poisson counts is ``Multinomial(s, cells /
    N)``; adding an independent ``Multinomial(N - s, cells / N)``, or keeping a uniform
    random ``N`` of its ``s`` items (which are i.i.d. categorical), gives
    ``Multinomial(N, cells / N)`` for every ``s``, hence unconditionally: the rows are
    exact multinomial draws (the Poisson counts are only the fast way there; about half
    the time of ``Generator.multinomial``, whose sequential binomials cost more). The
    two generators are consumed row after row, so the draws do not depend on how the
    rows are batched.

    Parameters
    ----------
    cells : array of non-negative integers ``(K,)``, the observed counts
    size : number of rows (resamples)
    rng_poisson, rng_fix : :class:`numpy.random.Generator` of the Poisson counts and of
        the corrections

    Returns
    -------
    numpy.ndarray
        ``(size, K)`` int64 counts; every row sums to ``cells.sum()``.

    Examples
    --------
    >>> import numpy as np
    >>> from multistat.human.preferences import multinomial_rows
    >>> rows = multinomial_rows([40, 25, 3, 0], 1000, np.random.default_rng(1),
    ...                         np.random.default_rng(2))
    >>> print(rows.shape, set(rows.sum(1).tolist()), int(rows[:, 3].max()))
    (1000, 4) {68} 0
    """
    cells = np.asarray(cells, np.int64)
    N = int(cells.sum())
    X = rng_poisson.poisson(cells.astype(np.float64), size=(size, len(cells)))
    tot = X.sum(1)
    cdf = None
    for r in np.flatnonzero(tot != N):
        k = N - int(tot[r])
        if k > 0:
            if cdf is None:
                cdf = np.cumsum(cells)
            j = rng_fix.integers(0, N, size=k)
            X[r] += np.bincount(np.searchsorted(cdf, j, side="right"),
                                minlength=len(cells))
        else:
            pos = rng_fix.choice(int(tot[r]), size=-k, replace=False, shuffle=False)
            X[r] -= np.bincount(np.searchsorted(np.cumsum(X[r]), pos, side="right"),
                                minlength=len(cells))
    return X


@dataclass(frozen=True)
class _Plan:
    """What every resample's fit shares: the pairs, the estimate it starts from, the
    chord matrix and the full data's "beat or tied" edges."""

    ia: np.ndarray
    ib: np.ndarray
    S: int
    ET: object  # (S, P) CSR incidence, transposed
    counts: np.ndarray
    beta_hat: np.ndarray
    theta_hat: float
    davidson: bool
    chord: np.ndarray
    e_lo: np.ndarray  # (P,) edge ia -> ib of a strongly connected spanning subgraph
    e_hi: np.ndarray


def _widest_tree(S, src, dst, w, root):
    """Edges (indices into ``src``/``dst``) of a tree reaching every node from ``root``
    whose paths have the largest smallest weight (Dijkstra with max-min in place of
    sums)."""
    # heavy: heapq, lazily (standard library)
    import heapq

    order = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[order], np.arange(S + 1))
    best = np.full(S, -1.0)
    parent = np.full(S, -1)
    done = np.zeros(S, bool)
    best[root] = np.inf
    heap = [(-np.inf, int(root))]
    dst_l, w_l, order_l, starts_l = dst.tolist(), w.tolist(), order.tolist(), \
        starts.tolist()
    while heap:
        nb, u = heapq.heappop(heap)
        if done[u]:
            continue
        done[u] = True
        for e in order_l[starts_l[u]:starts_l[u + 1]]:
            v = dst_l[e]
            b = min(-nb, w_l[e])
            if not done[v] and b > best[v]:
                best[v], parent[v] = b, e
                heapq.heappush(heap, (-b, v))
    return parent[parent >= 0]


def _robust_edges(S, ia, ib, c):
    """A strongly connected spanning subgraph of the "beat or tied" graph of counts ``c``
    ``(P, 3)`` made of edges seen many times: a widest out-tree and a widest in-tree
    from the system with the most battles (2 (S - 1) edges, each the best-supported way
    to reach a system). A resample that keeps all of them is strongly connected, so
    only the resamples that lose one need a look at their components; such edges are
    almost never lost. Returns masks over the pairs: ``(ia -> ib kept, ib -> ia
    kept)``. Beyond 500,000 edges (a Python loop per edge), every edge is kept: every
    resample that loses one is looked at."""
    up, down = c[:, 0] + c[:, 2], c[:, 1] + c[:, 2]
    P = len(ia)
    if 2 * P > 500_000:
        return up > 0, down > 0
    src = np.concatenate([ia, ib])
    dst = np.concatenate([ib, ia])
    w = np.concatenate([up, down]).astype(np.float64)
    live = w > 0
    eid = np.flatnonzero(live)
    n = np.bincount(ia, c.sum(1), S) + np.bincount(ib, c.sum(1), S)
    root = int(np.argmax(n))  # ties: the first system (the order of first appearance)
    out_tree = eid[_widest_tree(S, src[live], dst[live], w[live], root)]
    in_tree = eid[_widest_tree(S, dst[live], src[live], w[live], root)]
    keep = np.zeros(2 * P, bool)
    keep[out_tree] = True
    keep[in_tree] = True
    return keep[:P], keep[P:]


def _plan(bt, beta_hat, theta_hat, davidson) -> _Plan:
    S = len(bt.systems)
    c = bt.counts
    return _Plan(bt.ia, bt.ib, S, _incidence(S, bt.ia, bt.ib)[0].T.tocsr(), c, beta_hat,
                 theta_hat, davidson,
                 _chord(bt.ia, bt.ib, S, c, beta_hat, theta_hat, davidson),
                 *_robust_edges(S, bt.ia, bt.ib, c))


def _beat_edges(ia, ib, c, tau=1):
    """Edges ``i -> j`` of "i beat or tied j at least ``tau`` times" in counts ``c``
    ``(P, 3)``."""
    up, down = c[:, 0] + c[:, 2] >= tau, c[:, 1] + c[:, 2] >= tau
    return np.concatenate([ia[up], ib[down]]), np.concatenate([ib[up], ia[down]])


def _chord_block(pl: _Plan, data, mb, tol=1e-9, max_step=5.0):
    """Chord iterations ``beta += H0^-1 g(beta)`` from the estimate for ``mb`` resamples
    at once, laid out pairs x resamples (gathers of whole rows, one sparse product per
    iteration, no copy). Returns ``(beta (S, mb), theta (mb,), converged (mb,))``."""
    S = pl.S
    bT = np.repeat(pl.beta_hat[:, None], mb, axis=1)
    th = np.full(mb, float(pl.theta_hat))
    active = np.arange(mb)
    conv = np.zeros(mb, bool)
    for _ in range(CHORD_ITER):
        if not len(active):
            break
        whole = len(active) == mb
        b = bT if whole else bT[:, active]
        dat = data if whole else tuple(x[:, active] for x in data)
        d = np.take(b, pl.ia, axis=0)
        d -= np.take(b, pl.ib, axis=0)  # (P, a)
        if pl.davidson:
            diff, t, n = dat
            np.clip(d, -200.0, 200.0, out=d)
            s = np.exp(0.5 * d)
            r = 1.0 / s
            nu = np.exp(th[active])[None, :]
            D = s + r + nu
            g = 0.5 * diff - n * (0.5 * (s - r) / D)
            gt = (t - n * nu / D).sum(0)
            gf = np.vstack([np.asarray(pl.ET @ g)[1:], gt[None]])
        else:
            W, n = dat
            with np.errstate(over="ignore"):  # exp(-d) = inf: p = 1, exactly
                np.exp(np.negative(d, out=d), out=d)
            d += 1.0
            np.divide(n, d, out=d)  # n p = n / (1 + exp(-d))
            g = np.subtract(W, d, out=d)  # W - n p: the gradient per pair
            gf = np.asarray(pl.ET @ g)[1:]
        step = pl.chord @ gf  # (k, a)
        big = np.abs(step).max(0)
        step *= np.minimum(1.0, max_step / np.maximum(big, 1e-300))
        if whole:
            bT[1:] += step[:S - 1]
        else:
            bT[1:, active] += step[:S - 1]
        if pl.davidson:
            th[active] += step[-1]
        done = big < tol
        conv[active[done]] = True
        active = active[~done]
    return bT, th, conv


def _complete_fits(pl: _Plan, counts):
    """Fits of resamples whose "beat or tied" graph is strongly connected (finite
    maximum): chord iterations in cache-sized blocks, then full Newton steps for any
    resample the chord has not converged."""
    m, P = counts.shape[0], len(pl.ia)
    beta = np.empty((m, pl.S))
    theta = np.empty(m)
    ok = np.empty(m, bool)
    block = max(1, FIT_BLOCK // max(P, 1))
    for s0 in range(0, m, block):
        cT = np.ascontiguousarray(counts[s0:s0 + block].transpose(1, 2, 0))  # (P, 3, b)
        wa, wb, t = cT[:, 0], cT[:, 1], cT[:, 2]
        n = wa + wb + t
        data = (wa - wb, t, n) if pl.davidson else (wa + 0.5 * t, n)
        bT, th, conv = _chord_block(pl, data, cT.shape[2])
        beta[s0:s0 + block] = bT.T
        theta[s0:s0 + block] = th
        ok[s0:s0 + block] = conv
    if not ok.all():  # the chord may oscillate where a resample is far from the data
        rest = np.flatnonzero(~ok)
        b, conv = _newton_from(pl.ia, pl.ib, pl.S, counts[rest], pl.davidson,
                               pl.beta_hat, pl.theta_hat)
        beta[rest], ok[rest] = b, conv
    return beta, ok


def _newton_from(ia, ib, S, counts, davidson, beta0, theta0, chord=None):
    """Newton fits of ``counts`` ``(m, P, 3)`` from ``beta0``; resamples whose full
    steps (capped at 5 logits) overshoot back and forth -- a system with a few battles
    whose resampled score is far from the estimate -- are refitted with steps capped at
    0.5 logits, which on the concave log-likelihood only move uphill until the Newton
    steps are short. Returns ``(beta (m, S), converged (m,))``."""
    m = counts.shape[0]
    start = np.broadcast_to(beta0, (m, S)).copy()
    b, _, conv = _newton(ia, ib, S, counts, davidson=davidson, beta=start,
                         theta=np.full(m, float(theta0)), chord=chord)
    if not conv.all():
        rest = np.flatnonzero(~conv)
        b2, _, c2 = _newton(ia, ib, S, counts[rest], davidson=davidson,
                            beta=start[rest], theta=np.full(len(rest), float(theta0)),
                            max_step=0.5, max_iter=400)
        b[rest], conv[rest] = b2, c2
    return b, conv


def _partial_fits(pl: _Plan, counts):
    """Fits of resamples without a finite maximum: a system (or group) that never loses
    (or never wins) there against the rest. The log-likelihood's supremum sends such a
    group to +inf (-inf) relative to the others, and the battles between them then add
    nothing (log 1), so the relative scores of the main group -- the largest strongly
    connected component of the "beat or tied" graph (ties: most battles inside, then the
    first system) -- are the maximum of its own battles. A system in a group from which
    the main group is reachable scores +inf, one reachable from it -inf, one that did
    not play or is unrelated NaN."""
    # heavy: scipy.sparse, numpy, lazily
    from scipy.sparse import csr_matrix

    # heavy: scipy.sparse, numpy, lazily
    from scipy.sparse.csgraph import breadth_first_order

    m, S = counts.shape[0], pl.S
    beta = np.full((m, S), np.nan)
    ok = np.ones(m, bool)
    groups: dict[bytes, list[int]] = {}
    first_of = np.arange(S)
    for r in range(m):
        c = counts[r]
        src, dst = _beat_edges(pl.ia, pl.ib, c)
        k, lab = _components(S, src, dst, directed=True)
        size = np.bincount(lab, minlength=k)
        inside = lab[pl.ia] == lab[pl.ib]
        within = np.bincount(lab[pl.ia][inside], c.sum(1)[inside], minlength=k)
        first = np.full(k, S)
        np.minimum.at(first, lab, first_of)
        main = min(range(k), key=lambda q: (-size[q], -within[q], first[q]))
        mask = lab == main
        graph = csr_matrix((np.ones(len(src)), (src, dst)), shape=(S, S))
        node = int(np.flatnonzero(mask)[0])
        beta[r, breadth_first_order(graph, node, return_predecessors=False)] = -np.inf
        beta[r, breadth_first_order(graph.T.tocsr(), node,
                                    return_predecessors=False)] = np.inf
        groups.setdefault(mask.tobytes(), []).append(r)
    for key, rows in groups.items():
        idx = np.flatnonzero(np.frombuffer(key, bool))
        if len(idx) == 1:  # a group of one: nothing to fit, its own reference
            beta[rows, idx[0]] = pl.beta_hat[idx[0]]
            continue
        mask = np.frombuffer(key, bool)
        sel = mask[pl.ia] & mask[pl.ib]
        remap = np.full(S, -1)
        remap[idx] = np.arange(len(idx))
        sia, sib = remap[pl.ia[sel]], remap[pl.ib[sel]]
        start = pl.beta_hat[idx]
        chord = _chord(sia, sib, len(idx), pl.counts[sel], start, pl.theta_hat,
                       pl.davidson)
        b, conv = _newton_from(sia, sib, len(idx), counts[rows][:, sel], pl.davidson,
                               start, pl.theta_hat, chord)
        beta[np.ix_(np.asarray(rows, dtype=np.intp), idx)] = b
        ok[rows] = conv
    return beta, ok


def _fit_resamples(pl: _Plan, counts):
    """``(beta (m, S), converged (m,))`` of resampled counts ``(m, P, 3)``; +inf, -inf
    or NaN where a system has no finite score in a resample (:func:`_partial_fits`)."""
    m = counts.shape[0]
    beta = np.empty((m, pl.S))
    ok = np.ones(m, bool)
    wa, wb, t = counts[..., 0], counts[..., 1], counts[..., 2]
    # a resample that keeps every edge of a strongly connected subgraph of the data's
    # graph is strongly connected; only the others need a look at their components
    lost = ((pl.e_lo & (wa + t == 0)) | (pl.e_hi & (wb + t == 0))).any(1)
    partial = np.zeros(m, bool)
    for r in np.flatnonzero(lost):
        src, dst = _beat_edges(pl.ia, pl.ib, counts[r])
        partial[r] = _components(pl.S, src, dst, directed=True)[0] > 1
    for rows, fit in ((np.flatnonzero(~partial), _complete_fits),
                      (np.flatnonzero(partial), _partial_fits)):
        if len(rows):
            beta[rows], ok[rows] = fit(pl, counts[rows])
    return beta, ok


@dataclass(frozen=True)
class BootstrapFits:
    """Log-strengths of the bootstrap resamples of a Bradley-Terry fit.

    ``dist`` ``(B, S)``: each resample's maximum-likelihood log-strengths (up to a
    resample's own constant: only differences within a row mean something); ``+inf`` /
    ``-inf`` where a system has no finite score because it never loses / never wins
    there against the main group, NaN where it did not play (or is unrelated to the
    main group). ``unconverged``: resamples whose Newton iteration did not converge.
    ``unit``: ``"battles"`` or ``"items"``."""

    dist: np.ndarray
    unconverged: int
    unit: str


def bootstrap_fits(bt: Battles, beta_hat, theta_hat, davidson, n_resamples, seed,
                   unit="battles") -> BootstrapFits:
    """Refit ``n_resamples`` bootstrap resamples of the battles (``unit="battles"``) or of
    the items (``"items"``: all battles of an item together; needs ``bt.items``).

    The plan: a resample of the ``N`` battles drawn with replacement is, aggregated, a
    ``Multinomial(N, counts / N)`` draw of the ``(pair, outcome)`` cell counts -- each
    drawn battle falls in cell ``c`` with probability ``counts_c / N``, independently --
    so the cells are drawn directly (:func:`multinomial_rows`), never the battles. A
    resample of the ``G`` items is a ``Multinomial(G, 1/G)`` draw of item multiplicities
    ``w``, and its cell counts are ``w @ items`` (each item's cell counts, aggregated
    once). Both are exactly the distribution of resampling rows, at a cost independent
    of ``N``. The cells are in the order of the systems' first appearance, so renaming
    the systems leaves every draw unchanged. Seeds: :func:`multistat.engine.block_rng`
    ``(seed, "bradley_terry", unit, 0 | 1)``; chunks of :data:`DRAW_BUDGET` cells.

    Every resample's fit starts warm at the point estimate and takes chord steps with
    the estimate's inverse Hessian (:func:`_chord_block`: one sparse product and one
    small matrix product per iteration; about 6 iterations to 1e-9 logits with hundreds
    of battles per pair), then full Newton steps where needed. Resamples without a
    finite maximum are fitted per system (:func:`_partial_fits`).

    Parameters
    ----------
    bt : :class:`Battles` from :func:`aggregate_battles` (with ``item=`` for items)
    beta_hat, theta_hat : the point estimate (:func:`fit_bradley_terry`; theta is
        ``log nu`` for Davidson, else unused)
    davidson : Davidson's tie model (else ties count half)
    n_resamples, seed : resamples and their seed
    unit : ``"battles"`` or ``"items"``

    Returns
    -------
    BootstrapFits

    Examples
    --------
    >>> import pandas as pd
    >>> from multistat.human import preferences as P
    >>> battles = pd.DataFrame({"model_a": ["x", "y", "z", "y", "x", "x"] * 10,
    ...                         "model_b": ["y", "z", "x", "x", "z", "y"] * 10,
    ...                         "winner": (["model_a"] * 5 + ["tie"]) * 10})
    >>> bt = P.aggregate_battles(battles)
    >>> beta, _ = P.fit_bradley_terry(bt)
    >>> boot = P.bootstrap_fits(bt, beta, 0.0, False, 200, 0)
    >>> print(boot.dist.shape, boot.unconverged, boot.unit)
    (200, 3) 0 battles
    """
    B = n_resamples
    P, S = len(bt.ia), len(bt.systems)
    rng_p = block_rng(seed, "bradley_terry", unit, 0)
    rng_f = block_rng(seed, "bradley_terry", unit, 1)
    pl = _plan(bt, beta_hat, theta_hat, davidson)
    per = 3 * P
    if unit == "items":
        itemsT = bt.items.T.tocsr()
        G = bt.n_items
        per += G
    chunk = max(1, min(B, DRAW_BUDGET // per))
    out = np.empty((B, S))
    unconverged = 0
    for start in range(0, B, chunk):
        m = min(chunk, B - start)
        if unit == "items":
            w = multinomial_rows(np.ones(G, np.int64), m, rng_p, rng_f)
            counts = np.asarray(itemsT @ w.T.astype(np.float64)).T
        else:
            counts = multinomial_rows(bt.counts.ravel(), m, rng_p, rng_f)
        beta, ok = _fit_resamples(pl, counts.reshape(m, P, 3).astype(np.float64))
        out[start:start + m] = beta
        unconverged += int((~ok).sum())
    return BootstrapFits(out, unconverged, unit)


# ======================================================================= leaderboard
def _bt_iv(ties, n_resamples, seed, confidence_level, alpha, correction):
    ties = check_choice("ties", ties, TIES)
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    seed = check_seed(seed)
    confidence_level = check_probability("confidence_level", confidence_level)
    alpha = check_probability("alpha", alpha)

    if correction is not None:
        check_choice("correction", correction, METHODS)
    return ties, n_resamples, seed, confidence_level, alpha, correction


def _pairwise_better(dist, beta, alpha, correction):
    """``better[i, j]``: i's strength is significantly above j's. For every pair the
    Wald z test of ``beta_i - beta_j`` with its bootstrap standard error (the standard
    deviation of the resampled differences), two-sided normal p-value, corrected over all
    ``S (S - 1) / 2`` pairs. A resampling p-value cannot go below ``2 / (B + 1)``, which
    with hundreds of pairs and Holm's ``alpha / m`` would never reject; the bootstrap SE
    has no such floor. A pair with a system that has no finite score in some resamples
    (a standard error would be infinite) gets the bootstrap p-value instead: twice the
    smaller share of resamples with a difference <= 0 and >= 0, ``(b + 1) / (B' + 1)``
    over the ``B'`` resamples where the difference is defined -- conservative, as a
    sparse system's decisions should be."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy.stats import norm


    S = dist.shape[1]
    ia, ib = np.triu_indices(S, 1)
    p = np.empty(len(ia))
    est = beta[ia] - beta[ib]
    always = np.isfinite(dist).all(0)
    step = max(1, 4_000_000 // dist.shape[0])
    for s in range(0, len(ia), step):
        sl = slice(s, s + step)
        diffs = pair_differences(dist, ia[sl], ib[sl])
        wald = always[ia[sl]] & always[ib[sl]]
        with np.errstate(divide="ignore", invalid="ignore"):
            sd = diffs.std(0, ddof=1) if dist.shape[0] > 1 else np.full(len(est[sl]),
                                                                        np.nan)
            z = np.abs(est[sl]) / sd
            pw = np.where(np.isfinite(z), 2 * norm.sf(z),
                          np.where(est[sl] != 0, 0.0, 1.0))
            if not wald.all():
                valid = ~np.isnan(diffs)
                n = valid.sum(0)
                le = ((diffs <= 0) & valid).sum(0)
                ge = ((diffs >= 0) & valid).sum(0)
                pb = np.minimum(1.0, 2 * (np.minimum(le, ge) + 1) / (n + 1))
                pw = np.where(wald, pw, pb)
        p[sl] = pw
    _, reject = adjust_groups(p, np.zeros(len(p), np.intp), method=correction, alpha=alpha)
    return better_matrix(S, ia, ib, reject, np.sign(est)), p


def _score_interval(edist, q):
    """Percentile interval per system of resampled Elo scores with +-inf (a resample
    where the system never loses / never wins) and NaN (no score: left out)."""
    if np.isfinite(edist).all():
        return np.quantile(edist, [q, 1 - q], axis=0)
    big = 1e300  # linear interpolation towards an infinite resample is infinite
    with np.errstate(invalid="ignore"):
        ends = np.nanquantile(np.clip(edist, -big, big), [q, 1 - q], axis=0)
    return np.where(np.abs(ends) > 1e200, np.sign(ends) * np.inf, ends)


def _rank_stats(dist, confidence_level):
    """:func:`multistat.leaderboard.ranking.rank_distribution` of the resampled strengths; where a
    system has no score in a resample (NaN) it is left out of that resample's ranking
    and its own rank statistics count only the resamples where it has one (+-inf rank
    first / last, as they should)."""

    if not np.isnan(dist).any():
        return rank_distribution(dist, True, confidence_level=confidence_level)
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy.stats import rankdata

    best = _snap_ties(dist)
    ranks = rankdata(-best, method="average", axis=1, nan_policy="omit")
    q = (1 - confidence_level) / 2
    lo = np.nanquantile(ranks, q, axis=0, method="inverted_cdf")
    hi = np.nanquantile(ranks, 1 - q, axis=0, method="inverted_cdf")
    with np.errstate(invalid="ignore"):
        top = best == np.nanmax(best, axis=1, keepdims=True)
    share = top / np.maximum(top.sum(1, keepdims=True), 1)
    return {"rank_ci_low": lo, "rank_ci_high": hi, "expected_rank": np.nanmean(ranks, 0),
            "p_best": share.mean(0)}


def _scale_systems(dist, anchor_index, bt):
    """The systems whose mean log-strength is the scale's zero (Elo 1000) in the fit and
    in every resample: the named anchor; else every system with a finite score in every
    resample; else (no such system) the one finite most often (ties: most battles, then
    first appearance). Returns ``(index array, note)``."""
    finite = np.isfinite(dist)
    if anchor_index is not None:
        return np.array([anchor_index]), None
    always = np.flatnonzero(finite.all(0))
    S = dist.shape[1]
    if len(always) == S:
        return always, None
    if len(always):
        return always, (f"the scale is anchored on the {len(always)} of {S} systems with "
                        "a finite score in every resample: their mean is 1000")
    c = bt.counts
    n_b = np.bincount(bt.ia, c.sum(1), S) + np.bincount(bt.ib, c.sum(1), S)
    pick = int(np.lexsort((np.arange(S), -n_b, -finite.sum(0)))[0])
    return np.array([pick]), (f"no system has a finite score in every resample: the scale "
                              f"is anchored on {bt.systems[pick]!r} (finite in "
                              f"{int(finite[:, pick].sum())} of {len(dist)}), at 1000; "
                              "resamples where it has none are left out")


def _sparse_notes(dist, names):
    """``{system: note}`` of the systems without a finite score in some resamples."""
    notes = {}
    B = len(dist)
    for s in np.flatnonzero(~np.isfinite(dist).all(0)):
        col = dist[:, s]
        up, down, none = int((col == np.inf).sum()), int((col == -np.inf).sum()), \
            int(np.isnan(col).sum())
        parts = [f"never lost in {up} (+inf)" if up else "",
                 f"never won in {down} (-inf)" if down else "",
                 f"had no battle or no link to the others in {none} (left out)"
                 if none else ""]
        notes[str(names[s])] = (f"no finite score in {up + down + none} of {B} resamples: "
                                + ", ".join(x for x in parts if x))
    return notes


def bradley_terry(battles, *, model_a="model_a", model_b="model_b", winner="winner",
                  ties="half", n_resamples=1000, seed=0, confidence_level=0.95,
                  anchor=None, alpha=0.05, correction="holm", systems=None, item=None
                  ) -> pd.DataFrame:
    """Bradley-Terry leaderboard of pairwise battles, on the Elo scale, with bootstrap
    score and rank intervals and significance clusters.

    Parameters
    ----------
    battles : object
        DataFrame or path (CSV, TSV, JSONL, Parquet) with one row per battle
    model_a, model_b, winner : str, optional
        column names; ``winner`` holds ``model_a``, ``model_b``
        or ``tie`` (Chatbot Arena's ``tie (bothbad)`` is a tie too)
    ties : str, optional
        ``"half"`` (default): a tie is half a win for each side (the Bradley-Terry
        likelihood with fractional wins, as Chatbot Arena's logistic regression);
        ``"davidson"``: Davidson's (1970) model ``P(i beats j) = pi_i / (pi_i + pi_j +
        nu sqrt(pi_i pi_j))``, ``P(tie) = nu sqrt(pi_i pi_j) / (...)``, one tie parameter
        ``nu`` fitted jointly (in ``attrs["multistat"]["davidson_nu"]``)
    n_resamples, seed : int, optional
        Bootstrap resamples and their seed.
    confidence_level : float, optional
        Level of the score and rank intervals.
    anchor : optional
        A system name whose score is fixed at 1000 (its interval is then the point),
        or None (default): the mean score of the systems is 1000 in the fit and in every
        resample (of the systems with a finite score in every resample, when some have
        too few battles to have one; see Notes).
    alpha, correction : float, optional
        Level and correction (``"holm"`` default, any statsmodels ``multipletests``
        method, or None) of the pairwise decisions behind the clusters.
    systems : list of str, optional
        The systems expected; one that never plays is an error.
    item : str, optional
        A column naming the item (prompt, segment, document) of each battle. Given, the
        bootstrap resamples items -- all battles of an item together -- instead of single
        battles: battles that share an item are not independent (one prompt judged for
        many pairs of systems), and treating them as independent makes the intervals too
        narrow and the clusters too many.

    Returns
    -------
    pandas.DataFrame
        One row per system, best first: ``system``; ``score`` (Elo: ``1000 + 400/ln(10) *
        (beta - anchor)``, so 400 points are 10:1 odds) with ``ci_low``/``ci_high``
        (bootstrap percentile interval); ``rank`` (1 best, ties averaged) with
        ``rank_ci_low``/``rank_ci_high`` (equal-tailed bootstrap interval of the rank,
        :func:`multistat.leaderboard.ranking.rank_distribution`), ``expected_rank`` and ``p_best``;
        ``n_battles``, ``win_rate`` = (wins + ties / 2) / battles, ``wins``, ``losses``,
        ``ties``; ``rank_range_low/high``, ``cluster`` (WMT rule of
        :func:`multistat.rank`), ``beats``/``beaten_by`` from the corrected pairwise
        decisions. ``attrs["multistat"]`` holds the settings, the seed, what was
        resampled (``resampling``: ``"battles"`` or ``"items"``, ``n_items``), the number
        of battles, the tie parameter, the systems without a finite score in some
        resamples (``sparse_systems``, with a note each) and the ``scale``.

    Notes
    -----
    ``P(i beats j) = 1 / (1 + exp(-(beta_i - beta_j)))``. With ``ties="half"`` the
    log-likelihood is ``sum_pairs W_ij log p_ij + W_ji log p_ji`` with ``W_ij = wins_ij +
    ties_ij / 2`` -- the logistic regression of the outcome (1, 1/2, 0) on the
    difference of system indicators, without intercept; its maximum is found by Newton's
    method on the per-pair counts and equals statsmodels' ``GLM(Binomial)`` fit (tested
    to 1e-6 Elo). The maximum is finite iff the "beat or tied" graph is strongly
    connected; otherwise the systems that never lose are named.

    Bootstrap: the battles (or, with ``item``, the items) are resampled with
    replacement. The battles are aggregated once into ``(pair, outcome)`` cell counts
    (per item with ``item``), and a resample is drawn as cell counts: resampling ``N``
    battles is a ``Multinomial(N, counts / N)`` draw of the cells, resampling ``G``
    items a ``Multinomial(G, 1/G)`` draw of item multiplicities ``w`` whose cells are
    ``w @ item_counts`` -- the same distribution as resampling rows, at a cost that does
    not grow with the battles (:func:`bootstrap_fits`). Every resample is refitted from
    the point estimate (a warm start: chord steps with the estimate's inverse Hessian,
    then Newton). The draws follow the systems' order of first appearance in the
    battles, so renaming the systems changes no number.

    Sparse systems: a system with few battles may never lose (or never win) in a
    resample; its maximum-likelihood score there is +inf (-inf), and the relative scores
    of the others are the maximum of the battles among them (the battles against it add
    nothing in the limit). Each resample is fitted that way, system by system; a system
    with no battle in a resample has no score there (left out of its interval and
    ranks). The scale's zero is the mean of the systems with a finite score in every
    resample, so a sparse system cannot move or widen a well-measured one's interval;
    its own interval counts its infinite resamples (an end may be infinite). Such
    systems are named in ``attrs["multistat"]["sparse_systems"]`` and a
    :class:`PreferenceWarning`.

    Pairwise decisions: for every pair the Wald z test of ``beta_i - beta_j`` with its
    bootstrap standard error (a resampling p-value has the floor ``2 / (B + 1)``, which
    Holm's ``alpha / m`` over thousands of pairs would never reach), corrected over all
    ``S (S - 1) / 2`` pairs; a pair with a sparse system gets the bootstrap p-value
    (:func:`_pairwise_better`); clusters, rank ranges and rank intervals are
    :mod:`multistat.leaderboard.ranking`'s.

    References
    ----------
    Bradley & Terry (1952), doi:10.2307/2334029; Davidson (1970),
    doi:10.1080/01621459.1970.10481082; Hunter (2004), doi:10.1214/aos/1079120141;
    Chiang et al. (2024), Chatbot Arena, arXiv:2403.04132.

    Examples
    --------
    >>> import pandas as pd
    >>> import multistat
    >>> rows = [("x", "y", "model_a", 36), ("x", "y", "model_b", 20), ("x", "y", "tie", 4),
    ...         ("y", "z", "model_a", 33), ("y", "z", "model_b", 22), ("y", "z", "tie", 5),
    ...         ("x", "z", "model_a", 42), ("x", "z", "model_b", 15), ("x", "z", "tie", 3)]
    >>> battles = pd.DataFrame([r[:3] for r in rows for _ in range(r[3])],
    ...                        columns=["model_a", "model_b", "winner"])
    >>> board = multistat.bradley_terry(battles, n_resamples=1000, seed=0)
    >>> cols = ["system", "score", "ci_low", "ci_high", "rank", "win_rate", "cluster"]
    >>> print(board[cols].round(1).to_string(index=False))
    system  score  ci_low  ci_high  rank  win_rate  cluster
         x 1087.6  1043.9   1134.6   1.0       0.7        1
         y  989.8   951.3   1029.3   2.0       0.5        2
         z  922.6   874.0    962.9   3.0       0.3        2
    """
    ties, n_resamples, seed, confidence_level, alpha, correction = _bt_iv(
        ties, n_resamples, seed, confidence_level, alpha, correction)
    frame, where = _frame(battles, "battles")
    bt = aggregate_battles(frame, model_a=model_a, model_b=model_b, winner=winner,
                           systems=systems, item=item)
    davidson = ties == "davidson"
    _check_finite(bt, where, davidson)
    names = bt.systems
    S = len(names)
    if anchor is not None and str(anchor) not in set(names):
        raise ParameterError(f"`anchor` {show(anchor)} is not a system of the battles; "
                             f"systems: {show(list(names))}")
    beta, nu = fit_bradley_terry(bt, ties)
    theta = math.log(nu) if davidson else 0.0
    unit = "battles" if item is None else "items"
    boot = bootstrap_fits(bt, beta, theta, davidson, n_resamples, seed, unit)
    dist = boot.dist
    if boot.unconverged:
        warnings.warn(f"{boot.unconverged} of {n_resamples} bootstrap resamples did not "
                      "converge (with ties='davidson': a resample without ties or without "
                      "decided battles); their last Newton iterate is kept",
                      PreferenceWarning, stacklevel=2)
    sparse = _sparse_notes(dist, names)
    scale, scale_note = _scale_systems(
        dist, None if anchor is None else list(names).index(str(anchor)), bt)
    if sparse:
        warnings.warn(
            f"{len(sparse)} system(s) have no finite score in some bootstrap resamples "
            "(too few battles): "
            + "; ".join(f"{k!r}: {v}" for k, v in list(sparse.items())[:5])
            + ("; ..." if len(sparse) > 5 else "")
            + f". Their intervals count those resamples; "
            f"{scale_note or 'the scale is the named anchor'}, so the other systems' "
            "intervals are not affected. A sparse system is significantly different "
            "from few others, so the clusters around it merge: collect more battles "
            "for it, or leave it out, for a finer leaderboard", PreferenceWarning,
            stacklevel=2)

    def elo(b):
        ref = b[..., scale]
        with np.errstate(invalid="ignore"):
            centre = np.where(np.isfinite(ref).all(-1), ref.mean(-1), np.nan)
        return ELO_BASE + ELO_PER_LOGIT * (b - np.asarray(centre)[..., None])


    score, edist = elo(beta), elo(dist)
    q = (1 - confidence_level) / 2
    ci_low, ci_high = _score_interval(edist, q)
    better, _ = _pairwise_better(dist, beta, alpha, correction)
    order = score_order(score, True, names)
    low, high, beats, beaten_by = rank_ranges(better)
    rd = _rank_stats(dist, confidence_level)
    c = bt.counts
    wins = np.bincount(bt.ia, c[:, 0], S) + np.bincount(bt.ib, c[:, 1], S)
    losses = np.bincount(bt.ia, c[:, 1], S) + np.bincount(bt.ib, c[:, 0], S)
    tie = np.bincount(bt.ia, c[:, 2], S) + np.bincount(bt.ib, c[:, 2], S)
    n_b = wins + losses + tie
    out = pd.DataFrame({
        "system": names.astype(object), "score": score, "ci_low": ci_low,
        "ci_high": ci_high, "rank": point_ranks(score), "rank_ci_low": rd["rank_ci_low"],
        "rank_ci_high": rd["rank_ci_high"], "n_battles": n_b.astype(np.int64),
        "win_rate": (wins + tie / 2) / n_b, "wins": wins.astype(np.int64),
        "losses": losses.astype(np.int64), "ties": tie.astype(np.int64),
        "expected_rank": rd["expected_rank"], "p_best": rd["p_best"],
        "rank_range_low": low, "rank_range_high": high,
        "cluster": clusters(order, better), "beats": beats, "beaten_by": beaten_by})
    out = out.iloc[order].reset_index(drop=True)

    what = ("battles (each battle independent)" if item is None else
            f"items (column {item!r}: all battles of an item together, {bt.n_items} "
            "items)")
    out.attrs["multistat"] = {
        "multistat_version": __version__, "kind": "preferences", "model": "bradley-terry",
        "ties": ties,
        "anchor": None if anchor is None else str(anchor), "anchor_score": ELO_BASE,
        "elo_per_logit": ELO_PER_LOGIT, "n_battles": bt.n_battles, "n_systems": S,
        "n_pairs": len(bt.ia), "davidson_nu": nu if davidson else None,
        "n_resamples": n_resamples, "seed": seed if isinstance(seed, int) else None,
        "resampling": unit, "item_column": item, "n_items": bt.n_items if item else None,
        "confidence_level": confidence_level, "alpha": alpha,
        "correction": correction or "none",
        "n_resamples_unconverged": boot.unconverged,
        "n_resamples_partial": int((~np.isfinite(dist)).any(1).sum()),
        "sparse_systems": sparse,
        "scale": (f"{names[scale[0]]} fixed at 1000" if anchor is not None else
                  scale_note or "mean score of all systems is 1000"),
        "rule": "WMT clusters: sort by score; boundary between positions i and i+1 iff "
                "every system at <= i is significantly better than every system at >= "
                "i+1 (Wald z test of each pair's strength difference with its bootstrap "
                "standard error, "
                f"{correction or 'no'} correction over all pairs, alpha {alpha})",
        "rank_interval": f"equal-tailed bootstrap interval of each system's rank over "
                         f"resamples of the {what}, inverted-cdf quantiles"}
    return out


# ========================================================================= head to head
@dataclass(frozen=True)
class PreferenceResult(Result):
    """Result of :func:`preference_test`.

    Attributes
    ----------
    a, b : the systems; ``win_share`` is a's
    p_value : the test's p-value (``alternative`` on the share of a minus 1/2)
    win_share, ci_low, ci_high : a's win share -- the mean over units of each unit's
        share of a (``estimand`` says which share) -- and the interval of that same
        mean at ``confidence_level``
    wins, losses, ties : judgments won by a, won by b, tied
    n_units : units tested (items, raters or single judgments with a decision)
    n_units_all_ties : units dropped because all their judgments were ties
        (``ties="exclude"``)
    unit : ``"item"``, ``"rater"`` or ``"judgment"``
    method : the test that ran (binomial, exact sign-flip, Monte Carlo sign-flip)
    interval : how the interval was computed (Clopper-Pearson, Student t over units)
    estimand : the quantity ``win_share`` and its interval describe, in words
    """

    a: str
    b: str
    p_value: float
    win_share: float
    ci_low: float
    ci_high: float
    wins: int
    losses: int
    ties: int
    n_units: int
    n_units_all_ties: int
    unit: str
    method: str
    interval: str
    estimand: str
    tie_rule: str
    alternative: str
    confidence_level: float
    n_resamples: int

    def confidence_interval(self) -> tuple[float, float]:
        return self.ci_low, self.ci_high

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])


def _pt_iv(a, b, ties, alternative, confidence_level, n_resamples, seed):
    if str(a) == str(b):
        raise ParameterError(f"`a` and `b` are the same system {show(a)}")
    ties = check_choice("ties", ties, ("exclude", "split"))
    alternative = check_alternative(alternative)
    confidence_level = check_probability("confidence_level", confidence_level)
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    seed = check_seed(seed)
    return str(a), str(b), ties, alternative, confidence_level, n_resamples, seed


def preference_test(judgments, *, winner_col="winner", a, b, item_col=None,
                    rater_col=None, ties="exclude", alternative="two-sided",
                    confidence_level=0.95, n_resamples=9999, seed=0) -> PreferenceResult:
    """Head-to-head test of two systems from preference judgments.

    Parameters
    ----------
    judgments : DataFrame or path
        The judgments, one row per judgment.
    winner_col : str
        Column holding ``a``'s name, ``b``'s name or ``"tie"``.
    a, b : str
        The two systems.
    item_col, rater_col : str, optional
        Columns naming the item (and the rater) of each judgment. The unit of the test
        is the item when ``item_col`` is given, else the rater when ``rater_col`` is
        given, else the single judgment; the judgments of one unit are not independent
        and stay together.
    ties : {"exclude", "split"}
        ``"exclude"`` (default): ties are dropped, a unit's share is
        ``wins / (wins + losses)`` (units with only ties are dropped and counted);
        ``"split"``: a tie is half a win for each side, a unit's share is
        ``(wins + ties / 2) / judgments``.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: ``a`` is preferred.
    confidence_level : float
        Level of the interval of ``a``'s win share.
    n_resamples, seed : int
        Random sign vectors of the Monte Carlo sign-flip test, and their seed.

    Returns
    -------
    PreferenceResult
        ``p_value``, ``win_share`` with ``ci_low``/``ci_high``, counts, the unit and the
        method.

    Notes
    -----
    The statistic is the sum over units of ``x_u = share_u - 1/2``. Under the null the
    units' preferences are symmetric about 1/2, so each ``x_u`` keeps or flips its sign
    with probability 1/2 independently of the other units (a sign-flip, or cluster
    permutation, test: the judgments of a unit are flipped together). When every
    non-zero ``x_u`` has the same magnitude (one judgment per unit, or units whose
    judgments all agree) the sign-flip distribution is binomial and the p-value is the
    exact two-sided binomial test on the units for and against a -- with one judgment per
    unit and ``ties="exclude"``, exactly :func:`scipy.stats.binomtest` ``(wins, wins +
    losses)``. Otherwise the sign-flip p-value is exact by enumeration for at most
    ``log2(n_resamples)`` units, else ``(b + 1) / (B + 1)`` from ``n_resamples`` random
    sign vectors. A tie split in half gives ``x_u = 0`` for a single judgment, so with
    one judgment per unit ``ties="split"`` has the same p-value as ``"exclude"`` (ties
    carry no evidence) but a win share that counts them as half. Copies of a unit's
    judgments leave its share, hence the p-value, unchanged.

    The win share and its interval describe one quantity: the mean over units of each
    unit's share of a (``wins / (wins + losses)`` with ``ties="exclude"``, ``(wins +
    ties / 2) / judgments`` with ``"split"``; a unit split 1-1 counts 1/2). Interval:
    Clopper-Pearson when every unit's share is 0 or 1 (one judgment per unit, or units
    whose judgments all agree, ``ties="exclude"``): the mean is then the share of units
    won by a, a binomial proportion; otherwise the Student t interval of the mean unit
    share (``G - 1`` degrees of freedom; a cluster-robust interval), clipped to [0, 1].
    One-sided alternatives give one-sided intervals (scipy's convention). The interval
    is not the inversion of the sign-flip test.

    References
    ----------
    Card et al. (2020), appendix H.4, doi:10.18653/v1/2020.emnlp-main.745; Fisher (1935),
    The Design of Experiments (randomization test); Phipson & Smyth (2010),
    doi:10.2202/1544-6115.1585.

    Examples
    --------
    >>> import pandas as pd
    >>> import multistat
    >>> from scipy.stats import binomtest
    >>> j = pd.DataFrame({"winner": ["A"] * 14 + ["B"] * 5 + ["tie"] * 3})
    >>> res = multistat.preference_test(j, a="A", b="B")
    >>> print(round(res.p_value, 6), round(binomtest(14, 19).pvalue, 6), res.unit)
    0.063568 0.063568 judgment
    """
    a, b, ties, alternative, confidence_level, n_resamples, seed = _pt_iv(
        a, b, ties, alternative, confidence_level, n_resamples, seed)
    frame, where = _frame(judgments, "judgments")
    cols = {"winner_col": winner_col}
    if item_col is not None:
        cols["item_col"] = item_col
    if rater_col is not None:
        cols["rater_col"] = rater_col
    _need(frame, where, cols)
    if len(frame) == 0:
        raise DataValidationError(f"{where}: no judgments")
    w = _text(frame, winner_col, where)
    code = np.select([w == a, w == b, w == "tie"], [0, 1, 2], -1)
    bad = code < 0
    if bad.any():
        raise DataValidationError(
            f"{where}: column {show(winner_col)} has value {show(w[np.argmax(bad)])} in "
            f"{_rows(bad)}; allowed: {show(a)}, {show(b)}, 'tie'")
    unit = "item" if item_col is not None else "rater" if rater_col is not None \
        else "judgment"
    if unit == "judgment":
        uc = np.arange(len(w))
    else:
        col = item_col if unit == "item" else rater_col
        labels = _text(frame, col, where, unit)
        uc, names = pd.factorize(labels)
        if unit == "rater":  # 'r1' and 'r1 ' are not two raters
            _check_names(frame, where, [(col, uc, np.asarray(names, dtype=str))],
                         "rater")
    G = int(uc.max()) + 1
    cnt = np.bincount(uc * 3 + code, minlength=3 * G).reshape(G, 3)
    x = unit_shares(cnt[:, 0], cnt[:, 1], cnt[:, 2], ties)
    keep = np.isfinite(x)
    x = x[keep]
    if cnt[:, 0].sum() + cnt[:, 1].sum() == 0:
        raise DataValidationError(f"{where}: no judgment prefers {show(a)} or "
                                  f"{show(b)} (all ties): nothing to test")

    rng = block_rng(seed, "preference_test", "permutation", 0)
    nz = x[x != 0]
    p, how = sign_flip_pvalues(nz[None] if len(nz) else np.zeros((1, 1)),
                               alternative=alternative, n_resamples=n_resamples, rng=rng)
    share = 0.5 + x.mean()
    # the interval is of the same mean: a binomial proportion only when every unit's
    # share is 0 or 1 (a unit split 1-1, or 3-1, is a share between)
    if ties == "exclude" and len(x) and bool(np.all(np.abs(x) == 0.5)):
        # heavy: scipy.stats, scipy.optimize, lazily
        from scipy.stats import binomtest

        k, m = int((x > 0).sum()), int((x != 0).sum())
        ci = binomtest(k, m, alternative=alternative).proportion_ci(confidence_level,
                                                                     method="exact")
        lo, hi, interval = ci.low, ci.high, "clopper-pearson"
    else:
        # heavy: scipy.stats, scipy.optimize, lazily
        from scipy import stats

        g = len(x)
        level = confidence_level if alternative != "two-sided" else (1 + confidence_level) / 2
        se = x.std(ddof=1) / math.sqrt(g) if g > 1 else float("nan")
        half = stats.t.ppf(level, g - 1) * se if g > 1 else np.nan
        lo = 0.0 if alternative == "less" else max(0.0, share - half)
        hi = 1.0 if alternative == "greater" else min(1.0, share + half)
        interval = "student t over units"
    method = {"binomial": "exact binomial test on the units",
              "exact": "sign-flip test over units (exact enumeration)",
              "monte carlo": f"sign-flip test over units ({n_resamples} random sign "
                             "vectors)"}[how[0]]
    per = {"exclude": "wins / (wins + losses)",
           "split": "(wins + ties / 2) / judgments"}[ties]
    estimand = (f"mean over {unit}s of each {unit}'s share of {a}, {per}"
                if unit != "judgment" else f"share of {a}, {per}")
    return PreferenceResult(
        a=a, b=b, p_value=float(p[0]), win_share=float(share), ci_low=float(lo),
        ci_high=float(hi), wins=int(cnt[:, 0].sum()), losses=int(cnt[:, 1].sum()),
        ties=int(cnt[:, 2].sum()), n_units=len(x),
        n_units_all_ties=int((~keep).sum()), unit=unit, method=method, interval=interval,
        estimand=estimand, tie_rule=ties, alternative=alternative,
        confidence_level=confidence_level,
        n_resamples=0 if how[0] != "monte carlo" else n_resamples)
