"""``rank`` on a study larger than memory (a Zarr store).

The leaderboard of :func:`multistat.leaderboard.ranking.run_ranking`, from arrays
accumulated chunk by chunk (:mod:`multistat.significance._streamed`): the per-system
means and the bootstrap's per-system resampled means on the shared plan. With the
default request (the bootstrap of the mean, max-T Westfall-Young, no pairs table) every
pair's decision comes from :mod:`multistat.leaderboard.stream`'s step-down on those
arrays; otherwise from the streamed compare table
(:func:`multistat.comparison._streamed.run_zarr`). Binary metrics get the Wilson
interval of their counts (the sums of the first pass), as in memory.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd

from multistat._centre import levels
from multistat.comparison import run
from multistat.comparison._streamed import chunk_hash, metric_positions
from multistat.errors import ResamplingFloorWarning
from multistat.leaderboard import stream as rank_stream
from multistat.pfloor import floor_notes, floor_notes_of_sizes
from multistat.significance._streamed import check_streamable, streamed_slab


def _decisions_apply(req) -> bool:
    """The requests whose decisions come from the step-down on the per-system arrays
    (those :func:`multistat.leaderboard.stream.applicable` takes in memory)."""
    return (importlib.util.find_spec("numba") is not None
            and req.tests == ("bootstrap",)
            and req.correction in ("westfall-young", "westfall-young-maxT")
            and req.statistic == "mean" and req.alternative == "two-sided"
            and req.bootstrap_pvalue == "shifted" and req.family is None
            and req.equivalence_margin is None and not req.test_options)


def rank_zarr(study, req, *, requested: str, pairs: bool, parts):
    """:func:`~multistat.leaderboard.ranking.run_ranking` of a Zarr study.

    Parameters
    ----------
    study : multistat.io._zarr.ZarrStudy
        The store.
    req : RunRequest
        The ranking's request (:func:`~multistat.leaderboard.ranking.rank_request`).
    requested : str
        The test the user named (``"auto"``), for the metadata.
    pairs : bool
        Whether the compare table behind the decisions is wanted.
    parts : tuple
        The ranking's own ``(RankResult, _board, _ranking_meta, better_matrix)``
        (:mod:`multistat.leaderboard.ranking` passes them: it imports this module, which
        therefore does not import it).

    Returns
    -------
    RankResult
        The leaderboard (and the pairs table when ``pairs``).

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> from multistat.io._zarr import write_zarr, open_zarr
    >>> from multistat.leaderboard.ranking import rank_request
    >>> tmp = tempfile.mkdtemp()
    >>> rng = np.random.default_rng(3)
    >>> x = rng.normal(size=300)
    >>> pd.DataFrame({s: x + rng.normal(size=300) + i for i, s in enumerate("abc")}
    ...              ).to_parquet(os.path.join(tmp, "acc.parquet"))
    >>> study = open_zarr(write_zarr([os.path.join(tmp, "acc.parquet")],
    ...                              os.path.join(tmp, "s.zarr"), chunk=64))
    >>> from multistat.leaderboard.ranking import run_ranking
    >>> board = run_ranking(study, rank_request(n_resamples=1000), requested="auto",
    ...                     pairs=False).table  # hands a Zarr study to rank_zarr
    >>> list(board["system"]), list(board["cluster"])
    (['c', 'b', 'a'], [1, 2, 3])
    """
    RankResult, _board, _ranking_meta, better_matrix = parts  # noqa: N806 - a class
    check_streamable(req)
    (test,) = req.tests
    ms = metric_positions(study, req)
    slab = streamed_slab(study, ms, scheduler=req.scheduler, budget=req.budget)
    cdist, sys_obs = slab.bootstrap_means(req.n_resamples, req.seed)
    k = slab.centres()
    dist, means = levels(cdist, k), slab.means()
    names = np.asarray(study.systems)
    hibs = slab.higher_is_better
    boards = []
    if not pairs and _decisions_apply(req):
        S = len(names)
        ia, ib = (a.astype(np.intp) for a in np.triu_indices(S, 1))
        sizes = []
        for j, metric in enumerate(slab.metrics):
            est = sys_obs[ia, j] - sys_obs[ib, j]
            diff = means[ia, j] - means[ib, j]
            DT = np.ascontiguousarray(cdist[:, :, j].T)
            p_test, p_adj = rank_stream._stepdown(DT, ia, ib, est, req)
            del DT
            reject = p_adj <= req.alpha
            sign = np.where(np.isfinite(est) & (est != 0), np.sign(est), np.sign(diff))
            better = better_matrix(S, ia, ib, reject, sign if hibs[j] else -sign)
            boards.append(_board(study.dataset, metric, bool(hibs[j]), names, means[:, j],
                                 dist[..., j], None, req.level, None, better=better))
            sizes.append((study.dataset, metric, int(np.isfinite(p_test).sum()), slab.n))
        notes = floor_notes_of_sizes(sizes, test=test, correction=req.correction,
                                     alpha=req.alpha, n_resamples=req.n_resamples,
                                     alternative=req.alternative,
                                     pvalue=req.bootstrap_pvalue)
        table = None
        compare_meta = {}
    else:
        table = run(study, req)
        notes = floor_notes(table, test=test, correction=req.correction, alpha=req.alpha,
                            n_resamples=req.n_resamples)
        by_key = {key: g for key, g in table.groupby(["dataset", "metric"], sort=False)}
        for j, metric in enumerate(slab.metrics):
            boards.append(_board(study.dataset, metric, bool(hibs[j]), names, means[:, j],
                                 dist[..., j], by_key.get((study.dataset, metric)),
                                 req.level, req.equivalence_margin))
        compare_meta = table.attrs["multistat"]
    for note in notes:
        warnings.warn(note, ResamplingFloorWarning, stacklevel=4)
    board = _wilson(pd.concat(boards, ignore_index=True), slab, req.level)
    meta = compare_meta or {"alternative": req.alternative, "alpha": req.alpha,
                            "family": req.family}
    board.attrs["multistat"] = _ranking_meta(meta, req, test, requested, chunk_hash(slab),
                                             notes)
    board.attrs["multistat"]["streamed"] = {"store": study.path, "chunk": study.chunk}
    if table is None:
        return RankResult(board, None)
    out_pairs = table.copy()
    out_pairs.attrs = {"multistat": {**table.attrs["multistat"],
                                     **{k: v for k, v in board.attrs["multistat"].items()
                                        if k not in ("kind", "rule", "rank_interval")},
                                     "kind": "ranking_pairs"}}
    return RankResult(board, out_pairs)


def _wilson(board: pd.DataFrame, slab, level: float) -> pd.DataFrame:
    """The Wilson interval of each binary metric's count (``mean * n``), as in memory."""
    # lazily: scipy.special, as system_scores
    from multistat.significance._proportion import binomial_interval

    sys_index = {s: i for i, s in enumerate(slab.systems)}
    means = slab.means()
    for j, metric in enumerate(slab.metrics):
        if slab.metric_kinds[j] != "binary":
            continue
        rows = board.index[board["metric"] == metric].to_numpy()
        idx = board.loc[rows, "system"].map(sys_index).to_numpy(int)
        k = np.rint(means[idx, j] * slab.n)
        lo, hi = binomial_interval(k, np.full(k.shape, slab.n), level, "wilson")
        board.loc[rows, "ci_low"] = lo
        board.loc[rows, "ci_high"] = hi
    return board
