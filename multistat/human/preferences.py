"""Pairwise preferences: head-to-head tests and Bradley-Terry leaderboards.

Battles (one row per pairwise judgment "a against b: who won") are a table of their own:
they share no instance axis across systems, so they do not enter the study cube.

* :func:`preference_test` -- two systems, one or several judgments per item (or rater):
  the exact binomial test when every unit's judgments agree, else an exact or Monte Carlo
  sign-flip test over the units' win shares (the judgments of one item stay together).
* :func:`bradley_terry` -- a leaderboard from battles between many systems: maximum
  likelihood Bradley-Terry (ties half a win each, or Davidson's tie model) on the Elo
  scale, with a seeded bootstrap over battles for score and rank intervals and WMT
  clusters from the bootstrap pairwise decisions after a correction (the rule of
  :func:`multistat.rank`, reusing :mod:`multistat.leaderboard.ranking`).

Speed (written by hand because no kept library fits many resamples at once): battles are
aggregated to per-pair counts first (100 systems: at most 4,950 pairs, whatever the
number of battles). A bootstrap over battles is a multinomial draw of the (pair, outcome)
cell counts, so every resample's count table is drawn at once and all resamples are
fitted together (chord steps with the point estimate's Hessian, then batched Newton
steps, one ``(B, S-1, S-1)`` LAPACK solve per iteration; no Python loop over resamples).

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
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from multistat import __version__
from multistat._validation import (
    check_alternative,
    check_choice,
    check_int,
    check_probability,
    check_seed,
)
from multistat.correct import METHODS, adjust_groups
from multistat.engine import block_rng, pair_differences, pvalues_from_null, sign_flips
from multistat.errors import DataValidationError, MultistatWarning, ParameterError, show
from multistat.io._parsing import read_table

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
#: float64 values a batch of the bootstrap fit may hold at once (about 200 MB)
FIT_BUDGET = 25_000_000


class PreferenceWarning(MultistatWarning):
    """Some bootstrap resamples of a Bradley-Terry fit have no finite maximum."""


# ============================================================================== input
def _frame(data, what: str) -> tuple[pd.DataFrame, str]:
    """A DataFrame and the name of its source (a path is read with multistat's reader)."""
    if isinstance(data, pd.DataFrame):
        return data, what

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


def _text(frame, col, where) -> np.ndarray:
    values = frame[col]
    missing = values.isna().to_numpy()
    if missing.any():
        raise DataValidationError(f"{where}: column {show(col)} is empty in "
                                  f"{_rows(missing)}")
    return values.astype(str).to_numpy(dtype=object)


def _codes(frame, col, where) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a text column and its distinct values as text (pandas' hashing
    factorize: a 10^6-row column in a fraction of a second); an empty cell is an error
    naming its rows."""
    codes, uniques = pd.factorize(frame[col])
    missing = codes < 0
    if missing.any():
        raise DataValidationError(f"{where}: column {show(col)} is empty in "
                                  f"{_rows(missing)}")
    return codes, np.asarray([str(u) for u in uniques], dtype=str)


@dataclass(frozen=True)
class Battles:
    """Battles aggregated to pairs: system names (sorted) and, per observed pair
    ``(ia < ib)``, the counts ``(a wins, b wins, ties)``."""

    systems: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    counts: np.ndarray  # (P, 3) float64, exact integers

    @property
    def n_battles(self) -> int:
        return int(self.counts.sum())


def aggregate_battles(battles, *, model_a="model_a", model_b="model_b", winner="winner",
                      systems=None) -> Battles:
    """Check a battles table and count wins and ties per pair of systems.

    Refuses, with one message naming the rows or systems: a missing column or cell, a
    winner outside ``model_a | model_b | tie | tie (bothbad)``, a system against itself,
    a listed system (``systems``) that never plays, and a comparison graph that is not
    connected (the components are named).
    """
    frame, where = _frame(battles, "battles")
    _need(frame, where, {"model_a": model_a, "model_b": model_b, "winner": winner})
    if len(frame) == 0:
        raise DataValidationError(f"{where}: no battles")
    a_codes, a_names = _codes(frame, model_a, where)
    b_codes, b_names = _codes(frame, model_b, where)
    w_codes, w_names = _codes(frame, winner, where)
    known = np.array([WINNERS.get(v, -1) for v in w_names], dtype=np.int64)
    outcome = known[w_codes]
    bad = outcome < 0
    if bad.any():
        first = w_names[w_codes[np.argmax(bad)]]
        raise DataValidationError(
            f"{where}: column {show(winner)} has unknown value {show(first)} in "
            f"{_rows(bad)}; allowed: {', '.join(map(repr, WINNERS))}")
    names, back = np.unique(np.concatenate([a_names, b_names]), return_inverse=True)
    ca = back[:len(a_names)][a_codes]
    cb = back[len(a_names):][b_codes]
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
    S = len(names)
    lo, hi = np.minimum(ca, cb), np.maximum(ca, cb)
    # outcome relative to the lower code: 0 = lo wins, 1 = hi wins, 2 = tie
    rel = np.where(outcome == 2, 2, np.where((outcome == 0) == (ca == lo), 0, 1))
    key = lo.astype(np.int64) * S + hi
    if S * S <= 10_000_000:  # count over every possible pair: O(N), no sort
        full = np.bincount(key * 3 + rel, minlength=3 * S * S).reshape(-1, 3)
        pairs = np.flatnonzero(full.any(1))
        counts = full[pairs]
    else:
        pairs, pinv = np.unique(key, return_inverse=True)
        counts = np.bincount(pinv * 3 + rel, minlength=3 * len(pairs)).reshape(-1, 3)
    out = Battles(names, (pairs // S).astype(np.intp), (pairs % S).astype(np.intp),
                  counts.astype(np.float64))
    _check_connected(out, where)
    return out


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
        groups = [list(bt.systems[labels == c]) for c in range(k)]
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
        names = list(bt.systems[labels == top])
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


def _chord(bt: Battles, beta_hat, theta_hat, davidson):
    """Inverse negative Hessian of the observed log-likelihood at the estimate."""
    S = len(bt.systems)
    E, absE = _incidence(S, bt.ia, bt.ib)
    _, H = _system(bt.ia, bt.ib, S, E.T.tocsr(), absE.T.tocsr(), beta_hat[None],
                   np.array([theta_hat]), _pair_data(bt.counts[None], davidson), davidson)
    return np.linalg.inv(H[0])


def fit_bradley_terry(bt: Battles, ties="half") -> tuple[np.ndarray, float]:
    """Maximum-likelihood log-strengths ``beta`` (system 0 at 0) and Davidson's
    ``nu`` (NaN with ``ties="half"``) of aggregated battles."""
    davidson = ties == "davidson"
    beta, theta, ok = _fit_batch(bt, bt.counts[None], davidson)
    if not ok[0]:  # pragma: no cover - excluded by _check_finite
        raise DataValidationError("the Bradley-Terry fit did not converge")
    return beta[0], (float(np.exp(theta[0])) if davidson else float("nan"))


def _bootstrap(bt: Battles, beta_hat, theta_hat, davidson, n_resamples, seed):
    """``(B, S)`` log-strengths of ``n_resamples`` bootstrap resamples of the battles.

    A resample of N battles drawn with replacement has multinomial ``(pair, outcome)``
    cell counts with the observed shares as probabilities; the counts of all resamples
    are drawn from one generator (``numpy.random.default_rng(seed)``) in batches of
    fixed order, so the draws do not depend on the batch size."""
    rng = np.random.default_rng(seed)
    cells = bt.counts.ravel()
    N = int(cells.sum())
    probs = cells / N
    P, S = len(bt.ia), len(bt.systems)
    per = 6 * P + 2 * S * S
    absET = abs(_incidence(S, bt.ia, bt.ib)[0]).T.tocsr()
    chord = _chord(bt, beta_hat, theta_hat, davidson)
    step = max(1, min(n_resamples, FIT_BUDGET // per))
    out = np.empty((n_resamples, S))
    unconverged = 0
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        counts = rng.multinomial(N, probs, size=m).reshape(m, P, 3)
        beta, _, ok = _fit_batch(bt, counts, davidson, beta_hat, theta_hat, chord)
        out[start:start + m] = beta
        # a system without a battle in the resample has no score there either
        played = np.asarray(absET @ counts.sum(2).T).T > 0  # (m, S)
        unconverged += int((~ok | ~played.all(1)).sum())
    return out, unconverged


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
    has no such floor."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy.stats import norm

    # lazily: multistat.leaderboard.ranking imports this module (import cycle)
    from multistat.leaderboard.ranking import better_matrix

    S = dist.shape[1]
    ia, ib = np.triu_indices(S, 1)
    p = np.empty(len(ia))
    est = beta[ia] - beta[ib]
    step = max(1, 4_000_000 // dist.shape[0])
    for s in range(0, len(ia), step):
        sl = slice(s, s + step)
        sd = pair_differences(dist, ia[sl], ib[sl]).std(0, ddof=1) \
            if dist.shape[0] > 1 else np.full(len(est[sl]), np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.abs(est[sl]) / sd
        p[sl] = np.where(np.isfinite(z), 2 * norm.sf(z), np.where(est[sl] != 0, 0.0, 1.0))
    _, reject = adjust_groups(p, np.zeros(len(p), np.intp), method=correction, alpha=alpha)
    return better_matrix(S, ia, ib, reject, np.sign(est)), p


def bradley_terry(battles, *, model_a="model_a", model_b="model_b", winner="winner",
                  ties="half", n_resamples=1000, seed=0, confidence_level=0.95,
                  anchor=None, alpha=0.05, correction="holm", systems=None
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
        bootstrap over battles (``numpy.random.default_rng(seed)``)
    confidence_level : float, optional
        level of the score and rank intervals
    anchor : optional
        a system name whose score is fixed at 1000 (its interval is then the point),
        or None (default): the mean score of all systems is 1000 in the fit and in every
        resample
    alpha, correction : float, optional
        level and correction (``"holm"`` default, any statsmodels
        ``multipletests`` method, or None) of the pairwise decisions behind the clusters
    systems : list of str, optional
        The systems expected; one that never plays is an error.

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
        decisions. ``attrs["multistat"]`` holds the settings, the seed, the number of
        battles and the tie parameter.

    Notes
    -----
    ``P(i beats j) = 1 / (1 + exp(-(beta_i - beta_j)))``. With ``ties="half"`` the
    log-likelihood is ``sum_pairs W_ij log p_ij + W_ji log p_ji`` with ``W_ij = wins_ij +
    ties_ij / 2`` -- the logistic regression of the outcome (1, 1/2, 0) on the
    difference of system indicators, without intercept; its maximum is found by Newton's
    method on the per-pair counts and equals statsmodels' ``GLM(Binomial)`` fit (tested
    to 1e-6 Elo). The maximum is finite iff the "beat or tied" graph is strongly
    connected; otherwise the systems that never lose are named. Bootstrap: the battles
    are resampled with replacement (a multinomial draw of the pair x outcome counts) and
    each resample refitted from the point estimate. A resample without a finite maximum
    (possible with few battles) keeps its last Newton iterate and is counted in
    ``attrs["multistat"]["n_resamples_unconverged"]`` with a :class:`PreferenceWarning`.
    Pairwise decisions: for every pair the Wald z test of ``beta_i - beta_j`` with its
    bootstrap standard error (a resampling p-value has the floor ``2 / (B + 1)``, which
    Holm's ``alpha / m`` over thousands of pairs would never reach), corrected over all
    ``S (S - 1) / 2`` pairs; clusters, rank ranges and rank intervals are
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
         x 1087.6  1042.7   1132.0   1.0       0.7        1
         y  989.8   945.4   1031.1   2.0       0.5        2
         z  922.6   878.1    966.6   3.0       0.3        2
    """
    ties, n_resamples, seed, confidence_level, alpha, correction = _bt_iv(
        ties, n_resamples, seed, confidence_level, alpha, correction)
    frame, where = _frame(battles, "battles")
    bt = aggregate_battles(frame, model_a=model_a, model_b=model_b, winner=winner,
                           systems=systems)
    davidson = ties == "davidson"
    _check_finite(bt, where, davidson)
    names = bt.systems
    S = len(names)
    if anchor is not None and str(anchor) not in set(names):
        raise ParameterError(f"`anchor` {show(anchor)} is not a system of the battles; "
                             f"systems: {show(list(names))}")
    beta, nu = fit_bradley_terry(bt, ties)
    theta = math.log(nu) if davidson else 0.0
    dist, unconverged = _bootstrap(bt, beta, theta, davidson, n_resamples, seed)
    if unconverged:
        warnings.warn(f"{unconverged} of {n_resamples} bootstrap resamples have no finite "
                      "Bradley-Terry maximum (a system that never loses in the resample); "
                      "their last Newton iterate is kept, so interval ends may be "
                      "extreme", PreferenceWarning, stacklevel=2)

    def elo(b):
        ref = b[..., list(names).index(str(anchor))] if anchor is not None else b.mean(-1)
        return ELO_BASE + ELO_PER_LOGIT * (b - np.asarray(ref)[..., None])

    # lazily: multistat.leaderboard.ranking imports this module (import cycle)
    from multistat.leaderboard.ranking import (
        clusters,
        point_ranks,
        rank_distribution,
        rank_ranges,
        score_order,
    )

    score, edist = elo(beta), elo(dist)
    q = (1 - confidence_level) / 2
    ci_low, ci_high = np.quantile(edist, [q, 1 - q], axis=0)
    better, _ = _pairwise_better(dist, beta, alpha, correction)
    order = score_order(score, True, names)
    low, high, beats, beaten_by = rank_ranges(better)
    rd = rank_distribution(edist, True, confidence_level=confidence_level)
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

    out.attrs["multistat"] = {
        "multistat_version": __version__, "kind": "preferences", "model": "bradley-terry",
        "ties": ties,
        "anchor": None if anchor is None else str(anchor), "anchor_score": ELO_BASE,
        "elo_per_logit": ELO_PER_LOGIT, "n_battles": bt.n_battles, "n_systems": S,
        "n_pairs": len(bt.ia), "davidson_nu": nu if davidson else None,
        "n_resamples": n_resamples, "seed": seed if isinstance(seed, int) else None,
        "confidence_level": confidence_level, "alpha": alpha,
        "correction": correction or "none",
        "n_resamples_unconverged": unconverged,
        "rule": "WMT clusters: sort by score; boundary between positions i and i+1 iff "
                "every system at <= i is significantly better than every system at >= "
                "i+1 (Wald z test of each pair's strength difference with its bootstrap "
                "standard error, "
                f"{correction or 'no'} correction over all pairs, alpha {alpha})",
        "rank_interval": "equal-tailed bootstrap interval of each system's rank over "
                         "resamples of the battles, inverted-cdf quantiles"}
    return out


# ========================================================================= head to head
@dataclass(frozen=True)
class PreferenceResult:
    """Result of :func:`preference_test`.

    Attributes
    ----------
    a, b : the systems; ``win_share`` is a's
    p_value : the test's p-value (``alternative`` on the share of a minus 1/2)
    win_share, ci_low, ci_high : a's win share (mean over units of each unit's share)
        and its interval at ``confidence_level``
    wins, losses, ties : judgments won by a, won by b, tied
    n_units : units tested (items, raters or single judgments with a decision)
    n_units_all_ties : units dropped because all their judgments were ties
        (``ties="exclude"``)
    unit : ``"item"``, ``"rater"`` or ``"judgment"``
    method : the test that ran (binomial, exact sign-flip, Monte Carlo sign-flip)
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
    tie_rule: str
    alternative: str
    confidence_level: float
    n_resamples: int

    def confidence_interval(self) -> tuple[float, float]:
        return self.ci_low, self.ci_high

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])


def unit_shares(wins, losses, ties, tie_rule="exclude"):
    """Each unit's centred share of a: ``wins / (wins + losses) - 1/2`` with
    ``ties="exclude"`` (NaN where a unit has only ties), ``(wins + ties / 2) / n - 1/2``
    with ``ties="split"``. Arrays of any shape."""
    wins, losses, ties = (np.asarray(v, float) for v in (wins, losses, ties))
    with np.errstate(invalid="ignore", divide="ignore"):
        if tie_rule == "exclude":
            return wins / (wins + losses) - 0.5
        return (wins + 0.5 * ties) / (wins + losses + ties) - 0.5


def _equal_magnitude(x):
    """Rows whose non-zero values all have the same magnitude (the sign-flip null is then
    binomial)."""
    ax = np.abs(x)
    top = ax.max(-1, keepdims=True)
    return np.all((ax == 0) | (np.abs(ax - top) <= 1e-12 * top), axis=-1)


def sign_flip_pvalues(x, *, alternative="two-sided", n_resamples=9999, rng=None):
    """p-values of the sign-flip test of ``sum(x) = 0`` for each row of ``x`` ``(R, G)``
    (units with ``x = 0`` change nothing). Rows whose non-zero values share one magnitude
    get the exact binomial p (:func:`scipy.stats.binomtest`'s two-sided p for 1/2); the
    others an exact enumeration when ``2**G <= n_resamples``, else ``(b + 1) / (B + 1)``
    from ``n_resamples`` random sign vectors of ``rng`` (one plan for the rows).
    Returns ``(p, how)`` with ``how`` per row: ``"binomial"``, ``"exact"``,
    ``"monte carlo"``."""
    # heavy: scipy.special, numpy, lazily
    from multistat.significance._binomial import binom_half_pvalue

    x = np.atleast_2d(np.asarray(x, float))
    R, G = x.shape
    p = np.empty(R)
    how = np.empty(R, dtype=object)
    eq = _equal_magnitude(x)
    if eq.any():
        k = (x[eq] > 0).sum(1)
        m = (x[eq] != 0).sum(1)
        p[eq] = np.where(m > 0, binom_half_pvalue(k, m, alternative), 1.0)
        how[eq] = "binomial"
    rest = ~eq
    if rest.any():
        xr = x[rest]
        exact = G <= 30 and 2 ** G <= n_resamples
        if exact:
            grid = np.array(np.meshgrid(*([[1.0, -1.0]] * G), indexing="ij"))
            flips = grid.reshape(G, -1).T
        else:
            flips = sign_flips(rng, n_resamples, G)
        null = flips @ xr.T  # (B, R)
        obs = xr.sum(1)
        p[rest] = pvalues_from_null(null, obs, alternative, exact=exact,
                                    symmetric=True)
        how[rest] = "exact" if exact else "monte carlo"
    return p, how


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

    Interval of the win share: Clopper-Pearson on the units for and against a when the
    binomial test applies and ``ties="exclude"``; otherwise the Student t interval of the
    mean unit share (``G - 1`` degrees of freedom; a cluster-robust interval), clipped
    to [0, 1]. One-sided alternatives give one-sided intervals (scipy's convention). The
    interval is not the inversion of the sign-flip test.

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
        labels = _text(frame, item_col if unit == "item" else rater_col, where)
        uc = pd.factorize(labels)[0]
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
    binomial = how[0] == "binomial"
    if binomial and ties == "exclude":
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
    return PreferenceResult(
        a=a, b=b, p_value=float(p[0]), win_share=float(share), ci_low=float(lo),
        ci_high=float(hi), wins=int(cnt[:, 0].sum()), losses=int(cnt[:, 1].sum()),
        ties=int(cnt[:, 2].sum()), n_units=len(x),
        n_units_all_ties=int((~keep).sum()), unit=unit, method=method, interval=interval,
        tie_rule=ties, alternative=alternative, confidence_level=confidence_level,
        n_resamples=0 if how[0] != "monte carlo" else n_resamples)
