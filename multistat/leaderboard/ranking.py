"""Leaderboards: significance clusters, rank ranges and bootstrap rank intervals.

:func:`rank` is a *view* over numbers computed elsewhere; it runs no test of its own:

* the pairwise decisions come from :func:`multistat.compare` (one test, all pairs, the
  chosen correction over each ``dataset x metric`` family);
* the rank intervals come from the shared bootstrap plan of :mod:`multistat.engine`
  (the plan ``compare``'s bootstrap and :func:`multistat.system_scores` use, same seed):
  every system's score in every resample is one BLAS product (corpus metrics: the count
  matrix times the sufficient statistics, then the metric), the systems are ranked in
  every resample, and the equal-tailed quantiles of those ranks are reported.

The array cores (:func:`rank_distribution`, :func:`better_matrix`, :func:`clusters`,
:func:`rank_ranges`) are plain numpy and are what the tests check by hand.

Cluster rule (WMT since 2013): sort the systems by score, best first; draw a boundary
between positions ``i`` and ``i + 1`` exactly when *every* system at positions ``<= i`` is
significantly better than *every* system at positions ``>= i + 1`` (corrected pairwise
decisions). Clusters are numbered 1, 2, ... from the top.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from multistat import cube
from multistat._centre import levels
from multistat._result import Result
from multistat._validation import check_choice
from multistat.comparison import (
    _check_study,
    _metadata,
    run,
    study_hash,
    system_distributions,
)
from multistat.leaderboard import stream as rank_stream
from multistat.errors import ParameterError, ResamplingFloorWarning
from multistat.pfloor import floor_notes, floor_notes_of_sizes
from multistat._typing import DEFAULT_N_RESAMPLES
from multistat.request import STEPDOWN_CORRECTIONS, RunRequest, build_request
from multistat.significance import REGISTRY
from multistat.significance.resampling import ci_choice_note

COLUMNS = ("dataset", "metric", "system", "score", "ci_low", "ci_high", "rank",
           "rank_ci_low", "rank_ci_high", "expected_rank", "p_best", "rank_range_low",
           "rank_range_high", "cluster", "beats", "beaten_by")
#: what ``test="auto"`` runs (see :func:`rank`)
AUTO_TEST = "bootstrap"


def auto_correction(test: str) -> str:
    """What ``correction="auto"`` means for ``test``: the Westfall-Young step-down for
    the resampling tests (its adjusted p is a count over the shared plan, at least
    ``1/(B + 1)``, never multiplied by the number of pairs, so it scales with the number
    of systems), Holm for closed-form tests (whose p-values have no resampling floor)."""
    return "westfall-young" if REGISTRY[test].joint_null else "holm"


# ----------------------------------------------------------------------------- array cores
def _signed(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Values oriented so that larger is better."""
    return values if higher_is_better else -values


def point_ranks(score: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Ranks of ``score`` ``(S,)``: 1 is best, ties get the average rank."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy.stats import rankdata

    return rankdata(-_signed(np.asarray(score, float), higher_is_better), method="average")


#: resampled scores within this share of a resample's largest magnitude are ties
TIE_RTOL = 1e-12
#: bytes of resampled scores ranked at once by :func:`rank_distribution`
RANK_SLAB_BYTES = 64 * 2**20


def _snap_ties(values: np.ndarray) -> np.ndarray:
    """``values`` ``(B, S)`` with each run of a row's sorted values whose neighbours lie
    within ``TIE_RTOL`` of the row's largest finite magnitude set to the run's smallest
    value: resampled means that are equal in exact arithmetic (integer scores: the same
    resampled sum) but not in the last bit, which the order of a BLAS product's sums
    decides, tie as they should, whatever the kernels."""
    order = np.argsort(values, axis=1, kind="stable")
    srt = np.take_along_axis(values, order, axis=1)
    finite = np.where(np.isfinite(srt), np.abs(srt), 0.0)
    tol = TIE_RTOL * finite.max(axis=1, keepdims=True)
    starts = np.ones(srt.shape, dtype=bool)
    starts[:, 1:] = ~(np.diff(srt, axis=1) <= tol)  # NaN gaps start a run
    first = np.where(starts, np.arange(srt.shape[1]), 0)
    first = np.maximum.accumulate(first, axis=1)
    snapped = np.take_along_axis(srt, first, axis=1)
    out = np.empty_like(values)
    np.put_along_axis(out, order, snapped, axis=1)
    return out


def rank_distribution(dist: np.ndarray, higher_is_better: bool = True, *,
                      confidence_level: float = 0.95) -> dict[str, np.ndarray]:
    """Rank statistics from resampled scores ``dist`` ``(B, S)`` (one row per resample).

    In every resample the systems are ranked (1 best, ties averaged). Returns per system:
    ``rank_ci_low``/``rank_ci_high`` — the equal-tailed interval: the ``(1 - cl)/2`` and
    ``(1 + cl)/2`` quantiles of the rank's resampling distribution, read off its empirical
    distribution function (numpy ``method="inverted_cdf"``: the smallest rank ``r`` with
    ``P(rank <= r) >= q``, always a rank that occurred); ``expected_rank`` (mean rank);
    ``p_best`` — the share of resamples in which the system ranks first (a tie for first
    among ``k`` systems gives each ``1/k``, so ``p_best`` sums to 1). Resampled scores
    within ``TIE_RTOL`` (1e-12) of a resample's largest magnitude are ties
    (:func:`_snap_ties`): integer scores give resampled means that are equal in exact
    arithmetic but may differ in the last bit, by the order a BLAS product sums them.
    """
    # heavy: scipy.stats, scipy.optimize, lazily
    from scipy.stats import rankdata

    dist = np.asarray(dist, float)
    B = dist.shape[0]
    ranks = np.empty(dist.shape)  # (B, S)
    share = np.empty(dist.shape)  # (B, S): 1/k for the k systems tied for first
    # resamples in slabs of about RANK_SLAB_BYTES: the sort's temporaries stay small
    step = max(1, RANK_SLAB_BYTES // (8 * max(1, dist[0].size)))
    for lo_b in range(0, B, step):
        rows = slice(lo_b, min(B, lo_b + step))
        best = _snap_ties(_signed(dist[rows], higher_is_better))
        ranks[rows] = rankdata(-best, method="average", axis=1)
        top = best == best.max(axis=1, keepdims=True)  # tied for first
        share[rows] = top / top.sum(1, keepdims=True)
    q = (1 - confidence_level) / 2
    lo = np.quantile(ranks, q, axis=0, method="inverted_cdf")
    hi = np.quantile(ranks, 1 - q, axis=0, method="inverted_cdf")
    p_best = share.mean(0)
    return {"rank_ci_low": lo, "rank_ci_high": hi, "expected_rank": ranks.mean(0),
            "p_best": p_best}


def better_matrix(n_systems: int, ia, ib, reject, direction) -> np.ndarray:
    """``better[i, j]``: system i is significantly better than system j.

    ``ia, ib`` index the pairs ``(a, b)``; ``reject`` the corrected decisions; ``direction``
    > 0 where a is the better of the pair (in the metric's ``higher_is_better`` sense),
    < 0 where b is. Pairs not rejected (or without a direction) set nothing.
    """
    ia, ib = np.asarray(ia, int), np.asarray(ib, int)
    reject = np.asarray(reject, bool)
    direction = np.asarray(direction, float)
    better = np.zeros((n_systems, n_systems), bool)
    a_wins = reject & (direction > 0)
    b_wins = reject & (direction < 0)
    better[ia[a_wins], ib[a_wins]] = True
    better[ib[b_wins], ia[b_wins]] = True
    return better


def score_order(score: np.ndarray, higher_is_better: bool, names=None) -> np.ndarray:
    """Positions best first (ties in score: by name, else by index), stable."""
    s = _signed(np.asarray(score, float), higher_is_better)
    keys = [np.arange(len(s))] if names is None else [np.asarray(names, str)]
    return np.lexsort(keys + [-s])


def clusters(order: np.ndarray, better: np.ndarray) -> np.ndarray:
    """Cluster number (1 = top) of every system given the score order and decisions.

    Boundary between sorted positions ``i`` and ``i + 1`` iff ``better[order[:i+1]]
    [:, order[i+1:]]`` is all True — counted for all ``i`` at once from 2-D prefix sums of
    the *missing* decisions (no loop over pairs).
    """
    S = len(order)
    if S == 0:
        return np.zeros(0, int)
    miss = ~better[np.ix_(order, order)]  # sorted positions
    c = miss.cumsum(0).cumsum(1)  # c[i, j] = #missing in rows <= i, cols <= j
    i = np.arange(S - 1)
    # missing decisions in rows 0..i, columns i+1..S-1
    block = c[i, S - 1] - c[i, i]
    boundary = block == 0
    sorted_cluster = np.concatenate([[1], 1 + np.cumsum(boundary)])
    out = np.empty(S, int)
    out[order] = sorted_cluster
    return out


def rank_ranges(better: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(low, high, beats, beaten_by)``: ``low = 1 + #significantly better systems``,
    ``high = S - #significantly worse systems``."""
    S = better.shape[0]
    beats = better.sum(1)
    beaten_by = better.sum(0)
    return 1 + beaten_by, S - beats, beats, beaten_by


# ----------------------------------------------------------------------------- driver
def rank_request(*, test="auto", alpha=0.05, correction="auto", n_resamples=DEFAULT_N_RESAMPLES,
                 seed=0, metrics=None, datasets=None, confidence_level=0.95,
                 equivalence_margin=None, scheduler="threads", n_chunks=None) -> RunRequest:
    """The run request behind a leaderboard: ``test="auto"`` and ``correction="auto"``
    resolved (:data:`AUTO_TEST`, :func:`auto_correction`), every pair, percentile
    intervals, no effect sizes; validated by :class:`~multistat.request.RunRequest`."""
    if test == "auto":
        test = AUTO_TEST
    check_choice("test", test, ("auto", *sorted(REGISTRY)))
    if correction == "auto":
        correction = auto_correction(test)
    if correction in STEPDOWN_CORRECTIONS and not REGISTRY[test].joint_null:
        raise ParameterError(
            f"`correction` {correction!r} cannot decide a leaderboard of the closed-form "
            f"{test!r} test: the Westfall-Young step-down needs the resampled null of a "
            f"resampling test (bootstrap or permutation) and {test!r} has none. Use "
            "`correction` 'holm' (the default for closed-form tests), or a resampling "
            "`test`")
    return build_request(tests=(test,), pairs="all", metrics=metrics, datasets=datasets,
                         alpha=alpha, confidence_level=confidence_level,
                         n_resamples=n_resamples, seed=seed, correction=correction,
                         scheduler=scheduler, n_chunks=n_chunks, ci_method="percentile",
                         effect_sizes=False, equivalence_margin=equivalence_margin)


def rank(study, *, test="auto", alpha=0.05, correction="auto",
         n_resamples=DEFAULT_N_RESAMPLES, seed=0, metrics=None, datasets=None,
         confidence_level=0.95, equivalence_margin=None, scheduler="threads",
         n_chunks=None) -> pd.DataFrame:
    """A leaderboard per dataset x metric: clusters, rank ranges and rank intervals.

    Parameters
    ----------
    study : xarray.DataTree or path
        a study or a path :func:`multistat.load` reads
    test : str, optional
        the pairwise test behind the clusters and rank ranges. ``"auto"`` (default) is
        the paired **bootstrap** of the score difference (mean, or the corpus metric for
        corpus metrics): the leaderboard orders systems by that score, the bootstrap
        tests exactly that quantity for every kind of metric, runs on the same plan as
        the rank intervals and supports ``correction="westfall-young"``. Any registered
        test name is accepted (e.g. ``"wilcoxon"``, WMT's choice, or ``"t"``).
    alpha : float, optional
        level of the corrected pairwise decisions
    correction : str, optional
        correction of the pairwise p-values within each dataset x metric
        (``compare``'s ``correction``, or None). ``"auto"`` (default): the
        Westfall-Young step-down for the resampling tests (bootstrap, permutation), Holm
        for closed-form tests (:func:`auto_correction`). A resampling p-value is at
        least ``1/(B + 1)`` and Holm multiplies the smallest by the number of pairs, so
        bootstrap + Holm with ``B = 10,000`` cannot reject anything from 23 systems on;
        the step-down's adjusted p is a count over the same resamples, not multiplied.
        Any configuration whose smallest attainable adjusted p-value is above ``alpha``
        warns (:class:`~multistat.errors.ResamplingFloorWarning`, with the number of
        resamples that would be needed; :mod:`multistat.pfloor`) and stores the sentence
        in ``table.attrs["multistat"]["floor_notes"]``.
    n_resamples, seed : int, optional
        the shared bootstrap plan (and the resampling test's)
    metrics, datasets : optional
        restrict to these names
    confidence_level : float, optional
        level of the score and rank intervals
    equivalence_margin : optional
        a margin delta > 0 in metric units: adds ``equivalent_to_next``
        (TOST with ``compare(..., equivalence_margin=delta)``: the system and the next one
        down the leaderboard are equivalent within +-delta after correction)
    scheduler, n_chunks : optional
        As in :func:`multistat.compare`.

    Returns
    -------
    pandas.DataFrame
        One row per dataset x metric x system, best first within each dataset x metric:
        ``score`` (mean or corpus metric) with ``ci_low/ci_high`` (the same numbers as
        :func:`multistat.system_scores`: bootstrap percentile interval, Wilson's for a
        binary metric); ``rank`` (1 best,
        follows ``higher_is_better``, ties averaged); ``rank_ci_low/rank_ci_high`` (the
        equal-tailed bootstrap interval of the rank) and ``expected_rank``; ``p_best``
        (share of resamples in which the system is first, ties shared);
        ``rank_range_low`` = 1 + #systems significantly better, ``rank_range_high`` =
        S - #systems significantly worse; ``cluster`` (WMT rule, module docstring);
        ``beats``/``beaten_by`` (#systems significantly worse/better); with a margin,
        ``equivalent_to_next`` (NA on the last system). ``table.attrs["multistat"]``
        holds test, correction, cluster rule, alpha, seed and resamples.

    Examples
    --------
    >>> import multistat
    >>> from multistat.demo import demo_frame
    >>> study = multistat.from_frame(demo_frame())
    >>> board = multistat.rank(study, metrics=["likert"], datasets=["newstest"],
    ...                        n_resamples=1000, correction="westfall-young")
    >>> cols = ["system", "rank", "rank_range_low", "rank_range_high", "cluster"]
    >>> print(board[cols].head(3).to_string(index=False))
    system  rank  rank_range_low  rank_range_high  cluster
     sys-j   1.0               1                2        1
     sys-i   2.0               1                2        1
     sys-h   3.0               3                4        2
    """
    req = rank_request(test=test, alpha=alpha, correction=correction,
                       n_resamples=n_resamples, seed=seed, metrics=metrics,
                       datasets=datasets, confidence_level=confidence_level,
                       equivalence_margin=equivalence_margin, scheduler=scheduler,
                       n_chunks=n_chunks)
    return run_ranking(study, req, requested=test, pairs=False).table


@dataclass(frozen=True)
class RankResult(Result):
    """:func:`rank_with_pairs`: the leaderboard and the pairwise decisions behind it."""

    #: the :func:`rank` table (one row per dataset x metric x system)
    table: pd.DataFrame
    #: the compare table (one row per dataset x metric x pair) whose ``reject`` gave the
    #: clusters, rank ranges and ``beats``: the one decision per pair a report shows
    #: (None when :func:`run_ranking` was asked for no pairs)
    pairs: pd.DataFrame | None

    def to_frame(self) -> pd.DataFrame:
        """The leaderboard table (one row per dataset x metric x system)."""
        return self.table

    def to_dict(self) -> dict:
        """The run's settings (the table's metadata) and counts of rows and decisions."""
        meta = {k: v for k, v in self.table.attrs.get("multistat", {}).items()
                if v is None or isinstance(v, (int, float, str, bool))}
        pairs = self.pairs if self.pairs is not None else pd.DataFrame()
        reject = pairs["reject"] if "reject" in pairs else pd.Series([], bool)
        return {**meta, "n_rows": len(self.table), "n_pairs": len(pairs),
                "n_significant": int(reject.fillna(False).astype(bool).sum())}


def rank_with_pairs(study, *, test="auto", alpha=0.05, correction="auto",
                    n_resamples=DEFAULT_N_RESAMPLES, seed=0, metrics=None, datasets=None,
                    confidence_level=0.95, equivalence_margin=None, scheduler="threads",
                    n_chunks=None) -> RankResult:
    """:func:`rank` (same parameters) and the compare rows of its decisions.

    Parameters
    ----------
    study, test, alpha, correction, n_resamples, seed : optional
        As in :func:`rank`.
    metrics, datasets, confidence_level, equivalence_margin, scheduler, n_chunks : optional
        As in :func:`rank`.

    Returns
    -------
    RankResult
        ``table``: what :func:`rank` returns; ``pairs``: the compare table of the
        ranking's test (one row per pair, ``p_adjusted``/``reject`` after the ranking's
        correction at its ``alpha``), with the same ``attrs["multistat"]`` plus
        ``kind="ranking_pairs"``. ``multistat rank --pairs-out`` writes it;
        :func:`multistat.report.write_report` (``ranking_pairs=``) draws every section's
        decisions from it.

    Examples
    --------
    >>> import multistat
    >>> from multistat.demo import demo_frame
    >>> study = multistat.from_frame(demo_frame())
    >>> res = multistat.leaderboard.ranking.rank_with_pairs(study, metrics=["likert"],
    ...                                         datasets=["newstest"], n_resamples=1000)
    >>> # every significant pair is one "beats" of its better system
    >>> int(res.table["beats"].sum()) == int(res.pairs["reject"].sum())
    True
    >>> res.pairs.attrs["multistat"]["correction"]
    'westfall-young'
    """
    req = rank_request(test=test, alpha=alpha, correction=correction,
                       n_resamples=n_resamples, seed=seed, metrics=metrics,
                       datasets=datasets, confidence_level=confidence_level,
                       equivalence_margin=equivalence_margin, scheduler=scheduler,
                       n_chunks=n_chunks)
    return run_ranking(study, req, requested=test)


def run_ranking(study, req: RunRequest, *, requested: str | None = None,
                pairs: bool = True, stream_pairs_max: int = 0) -> RankResult:
    """:func:`rank_with_pairs` of a validated request (:func:`rank_request`; its one test
    behind the clusters). ``requested``: the test name the user gave (``"auto"``), for
    the metadata. ``pairs=False``: no compare table is wanted (``pairs`` is None); the
    requests :func:`multistat.leaderboard.stream.applicable` accepts (the default bootstrap
    with the Westfall-Young step-down on mean metrics) then take the decisions of every
    pair from :mod:`multistat.leaderboard.stream` instead of a compare table: the same
    leaderboard, bit for bit, without a row per pair; with at most ``stream_pairs_max``
    pairs in all, those decisions come back as ``pairs`` (the columns of the compare table
    a report's decisions read: :func:`stream_pair_table`)."""


    # lazily: a study larger than memory (a Zarr store) is streamed chunk by chunk
    from multistat.io._zarr import ZarrStudy, is_zarr_path, open_zarr

    (test,) = req.tests
    requested = test if requested is None else requested
    if not isinstance(study, ZarrStudy) and not hasattr(study, "children") and is_zarr_path(
            study):
        study = open_zarr(study)
    if isinstance(study, ZarrStudy):
        # lazily: the streamed leaderboard
        from multistat.leaderboard._zarr import rank_zarr

        return rank_zarr(study, req, requested=requested, pairs=pairs,
                         parts=(RankResult, _board, _ranking_meta, better_matrix))
    if not hasattr(study, "children"):
        study = cube.load(study)
    if not pairs and rank_stream.applicable(study, req):
        try:
            return _run_streamed(study, req, requested, stream_pairs_max)
        except rank_stream.NotFinite:
            pass  # the compare table leaves non-finite pairs untested, with a note
    kept: dict = {}  # compare's per-system resampled arrays (stepdown.metric_nulls)
    table = run(study, req, resampled=kept if REGISTRY[test].score_distribution else None)
    notes = floor_notes(table, test=test, correction=req.correction, alpha=req.alpha,
                        n_resamples=req.n_resamples)
    for note in notes:
        warnings.warn(note, ResamplingFloorWarning, stacklevel=3)
    # a bootstrap test's per-system resamples (B, S, M): the rank intervals reuse them
    # (centred means plus the metric's centre: levels, multistat._centre)

    known = {(d, g.metrics): levels(g.arrays["dist"], g.arrays.get("centre", 0.0))
             for (d, t, _), g in kept.items() if REGISTRY[t].score_distribution}
    parts = []
    by_key = {k: g for k, g in table.groupby(["dataset", "metric"], sort=False)}
    for name, mnames, hibs, obs, dist, sysnames in system_distributions(
            study, n_resamples=req.n_resamples, seed=req.seed, metrics=req.metrics,
            datasets=req.datasets, scheduler=req.scheduler, n_chunks=req.n_chunks,
            known=known):
        for j, (metric, hib) in enumerate(zip(mnames, hibs)):
            group = by_key.get((name, metric))
            parts.append(_board(name, metric, bool(hib), sysnames, obs[:, j], dist[..., j],
                                group, req.level, req.equivalence_margin))
    out = _binary_score_intervals(pd.concat(parts, ignore_index=True), study, req.level)
    out.attrs["multistat"] = _ranking_meta(table.attrs.get("multistat", {}), req, test,
                                           requested, study_hash(study), notes)
    if "low_df" in table:
        out.attrs["multistat"]["low_df_notes"] = low_df_notes(table)
    pair_table = table.copy()
    if "note" in pair_table:  # rank, not the user, chose the percentile intervals
        notes_col = pair_table["note"]
        pair_table["note"] = notes_col.astype(object).where(
            notes_col.isna(), notes_col.astype(str).str.replace(
                ci_choice_note("percentile", "user"), ci_choice_note("percentile", "rank"),
                regex=False))
    pair_table.attrs = {"multistat": {**table.attrs.get("multistat", {}),
                                      **{k: v for k, v in out.attrs["multistat"].items()
                                         if k not in ("kind", "rule", "rank_interval")},
                                      "kind": "ranking_pairs"}}
    return RankResult(out, pair_table)


#: what the rank interval of a ``mixed`` leaderboard resamples (said in its metadata)
RATER_INTERVAL_NOTE = ("; it resamples items (each system's rating means), not raters: "
                       "the clusters and rank ranges come from the mixed model's pairwise "
                       "tests, which do account for raters")


def low_df_notes(pairs: pd.DataFrame) -> list[str]:
    """One sentence per dataset x metric of ``pairs`` (a compare table) whose rows are
    flagged ``low_df`` (a mixed-model fit on fewer than 2 Satterthwaite df)."""
    if pairs is None or "low_df" not in pairs or not len(pairs):
        return []
    low = pairs["low_df"].astype(object).eq(True)
    out = []
    for (ds, metric), g in pairs[low].groupby(["dataset", "metric"], sort=False):
        total = int(((pairs["dataset"] == ds) & (pairs["metric"] == metric)).sum())
        out.append(f"{ds} / {metric}: {len(g)} of {total} pairs were decided on fewer than "
                   "2 Satterthwaite df (low_df): their intervals and p-values are "
                   "unreliable; more raters, not more items, fix them")
    return out


def _ranking_meta(compare_meta: dict, req: RunRequest, test: str, requested: str,
                  input_sha256: str, notes: list) -> dict:
    """The ranking table's ``attrs["multistat"]``."""
    return {
        **{k: v for k, v in compare_meta.items()
           if k in ("multistat_version", "alternative", "alpha", "family", "input_sha256")},
        "kind": "ranking", "test": test, "test_requested": requested,
        "correction": req.correction or "none", "alpha": req.alpha, "seed": req.seed,
        "n_resamples": req.n_resamples, "confidence_level": req.level,
        "equivalence_margin": req.equivalence_margin,
        "rule": "WMT clusters: sort by score; boundary between positions i and i+1 iff "
                "every system at <= i is significantly better than every system at >= i+1 "
                f"({test} test, {req.correction or 'no'} correction per dataset x metric, "
                f"alpha {req.alpha})",
        "rank_interval": "equal-tailed bootstrap interval of each system's rank (ties "
                         "averaged) over the shared plan, inverted-cdf quantiles"
                         + (RATER_INTERVAL_NOTE if test == "mixed" else ""),
        "score_interval": "Wilson interval of the count for binary (0/1) metrics, "
                          "bootstrap percentile interval otherwise (as system_scores)",
        "input_sha256": input_sha256, "floor_notes": notes}


def stream_pair_table(dec, hib: bool, obs: np.ndarray, req: RunRequest,
                      test: str) -> pd.DataFrame:
    """The streamed decisions of one metric as compare-table rows: ``dataset, metric,
    system_a, system_b, test, estimate, p_value, p_adjusted, reject, alpha, correction,
    n, score_a, score_b, higher_is_better, n_resamples, seed`` (``obs``: each system's
    observed score)."""
    names = np.asarray(dec.systems).astype(str)
    k = len(dec.ia)
    return pd.DataFrame({
        "dataset": np.repeat(str(dec.dataset), k), "metric": np.repeat(str(dec.metric), k),
        "system_a": names[dec.ia], "system_b": names[dec.ib], "test": np.repeat(test, k),
        "estimate": dec.estimate, "p_value": dec.p_value, "p_adjusted": dec.p_adjusted,
        "reject": np.asarray(dec.reject, dtype=bool), "alpha": np.full(k, req.alpha),
        "correction": np.repeat(str(req.correction or "none"), k),
        "n": np.full(k, int(dec.n)), "score_a": obs[dec.ia], "score_b": obs[dec.ib],
        "higher_is_better": np.full(k, bool(hib)),
        "n_resamples": np.full(k, int(req.n_resamples)), "seed": np.full(k, int(req.seed))})


def _run_streamed(study, req: RunRequest, requested: str,
                  pairs_max: int = 0) -> RankResult:
    """:func:`run_ranking` from :func:`multistat.leaderboard.stream.decide` (no compare
    table); with at most ``pairs_max`` pairs in all, their decisions as ``pairs``."""

    _check_study(study, req)
    (test,) = req.tests
    parts, sizes = [], []
    kept: list | None = [] if pairs_max > 0 else None
    n_kept = 0
    bar = None
    if req.progress:  # one step per metric group (the streamed path has no compare walk)
        # heavy: tqdm, lazily (only with a progress bar)
        from tqdm.auto import tqdm

        all_ds, metrics = cube.select(study, datasets=req.datasets, metrics=req.metrics)
        total = sum(len(metrics) if metrics else ds.sizes["metric"] for ds in all_ds.values())
        bar = tqdm(total=total, desc="multistat rank", unit="metric", file=sys.stderr)
    for name, mnames, hibs, obs, dist, sysnames, decisions in rank_stream.decide(study, req):
        if bar is not None:
            bar.update(len(mnames))
        for j, (metric, hib, dec) in enumerate(zip(mnames, hibs, decisions)):
            sign = np.where(np.isfinite(dec.estimate) & (dec.estimate != 0),
                            np.sign(dec.estimate), np.sign(dec.score_diff))
            better = better_matrix(len(sysnames), dec.ia, dec.ib, dec.reject,
                                   sign if hib else -sign)
            parts.append(_board(name, str(metric), bool(hib), sysnames, obs[:, j],
                                dist[..., j], None, req.level, None, better=better))
            sizes.append((name, str(metric), int(np.isfinite(dec.p_value).sum()), dec.n))
            n_kept += len(dec.ia)
            if kept is not None and n_kept <= pairs_max:
                kept.append(stream_pair_table(dec, bool(hib), np.asarray(obs[:, j]), req,
                                              test))
            else:
                kept = None  # beyond the bound: no row per pair
    notes = floor_notes_of_sizes(sizes, test=test, correction=req.correction,
                                 alpha=req.alpha, n_resamples=req.n_resamples,
                                 alternative=req.alternative, pvalue=req.bootstrap_pvalue)
    if bar is not None:
        bar.close()
    for note in notes:
        warnings.warn(note, ResamplingFloorWarning, stacklevel=4)
    out = _binary_score_intervals(pd.concat(parts, ignore_index=True), study, req.level)
    out.attrs["multistat"] = _ranking_meta(_metadata(study, req), req, test, requested,
                                           study_hash(study), notes)
    pairs = None
    if kept:
        pairs = pd.concat(kept, ignore_index=True)
        pairs.attrs = {"multistat": {**{k: v for k, v in out.attrs["multistat"].items()
                                        if k not in ("kind", "rule", "rank_interval")},
                                     "kind": "ranking_pairs", "streamed": True}}
    return RankResult(out, pairs)


def _binary_score_intervals(board: pd.DataFrame, study, level: float) -> pd.DataFrame:
    """The score interval of every binary (0/1) metric replaced by the Wilson interval of
    its count, as :func:`multistat.system_scores` gives it (a binary metric averaged over
    runs is not a count and keeps the bootstrap's)."""
    # lazily: scipy.special, as system_scores
    from multistat.significance._proportion import binomial_interval, counts_of

    nodes = cube.datasets(study)
    for (name, metric), rows in board.groupby(["dataset", "metric"], sort=False):
        ds = nodes[name]
        if str(ds.kind.sel(metric=metric).values) != "binary" or cube.RUN_SCORE in ds:
            continue
        X = ds[cube.SCORE].sel(metric=metric, system=list(rows["system"])).values
        k, n, ok = counts_of(np.asarray(X, dtype=float)[:, None, :])
        k, n, ok = k[:, 0], n[:, 0], ok[:, 0]
        lo, hi = binomial_interval(np.where(ok, k, 0.0), np.maximum(n, 1), level, "wilson")
        idx = rows.index.to_numpy()
        board.loc[idx, "ci_low"] = np.where(ok, lo, board.loc[idx, "ci_low"].to_numpy())
        board.loc[idx, "ci_high"] = np.where(ok, hi, board.loc[idx, "ci_high"].to_numpy())
    return board


def _board(dataset, metric, hib, sysnames, score, dist, pairs, confidence_level,
           equivalence_margin, better=None) -> pd.DataFrame:
    S = len(sysnames)
    index = {s: i for i, s in enumerate(sysnames)}
    equiv = np.zeros((S, S), bool)
    if better is None:  # else the decisions are given (multistat.leaderboard.stream)
        better = np.zeros((S, S), bool)
        if pairs is not None and len(pairs):
            ia = pairs["system_a"].map(index).to_numpy(int)
            ib = pairs["system_b"].map(index).to_numpy(int)
            est = pairs["estimate"].to_numpy(float)
            diff = (pairs["score_a"] - pairs["score_b"]).to_numpy(float)
            # the test's own estimate gives the direction; its sign is undefined (0/NaN) only
            # where the score difference decides
            sign = np.where(np.isfinite(est) & (est != 0), np.sign(est), np.sign(diff))
            direction = sign if hib else -sign
            better = better_matrix(S, ia, ib, pairs["reject"].to_numpy(bool), direction)
            if equivalence_margin is not None and "equivalent" in pairs:
                eq = pairs["equivalent"].to_numpy(bool)
                equiv[ia[eq], ib[eq]] = equiv[ib[eq], ia[eq]] = True
    order = score_order(score, hib, sysnames)
    low, high, beats, beaten_by = rank_ranges(better)
    rd = rank_distribution(dist, hib, confidence_level=confidence_level)
    q = (1 - confidence_level) / 2
    ci_low, ci_high = np.quantile(dist, [q, 1 - q], axis=0)  # as system_scores
    frame = pd.DataFrame({
        "dataset": dataset, "metric": metric, "system": sysnames, "score": score,
        "ci_low": ci_low, "ci_high": ci_high, "rank": point_ranks(score, hib),
        **rd, "rank_range_low": low, "rank_range_high": high,
        "cluster": clusters(order, better), "beats": beats, "beaten_by": beaten_by})
    frame = frame[list(COLUMNS)]
    frame = frame.iloc[order].reset_index(drop=True)
    if equivalence_margin is not None:
        nxt = pd.array(np.append(equiv[order[:-1], order[1:]], False), dtype="boolean")
        nxt[S - 1] = pd.NA
        frame["equivalent_to_next"] = nxt
    return frame
