"""Westfall-Young step-down adjustment (max-T and min-P) over a shared resampling plan.

Every pair of a family is resampled with the *same* plan (:mod:`multistat.resampling`),
so the resampled statistics of all pairs come from one joint null distribution: the
dependence between pairs that share systems and instances is the real one, not an
inequality (Holm, Bonferroni) that ignores it.

Let ``T_j`` be pair ``j``'s observed statistic, centred so that it has the null
distribution of its resampled ``T*_{bj}`` (``b = 1..B``). Order the pairs from most to
least significant, ``j_1, ..., j_P``. The step-down adjusted p-value of ``j_k`` is

* **max-T**: ``(#{b : max_{l >= k} t*_{b, j_l} >= t_{j_k}} + 1) / (B + 1)``, with
  ``t = |T| / sd(T*)`` (two-sided; ``T`` or ``-T`` one-sided): every pair's statistic is
  put on one scale by the standard deviation of its own null distribution;
* **min-P**: ``(#{b : min_{l >= k} p*_{b, j_l} <= p_{j_k}} + 1) / (B + 1)``, where
  ``p*_{bj}`` is the p-value of draw ``b`` within pair ``j``'s own null distribution —
  the statistic's scale and shape may differ across pairs,

then made monotone along the order (cumulative maximum; Westfall & Young 1993,
Algorithms 2.8 and 4.1) and never below the pair's own p-value.

The successive maxima (minima) are accumulated over slabs of pairs taken from the least
significant end, carrying one ``(B,)`` vector between slabs: memory is ``B x slab``
whatever the number of pairs (``null_of`` produces one slab at a time).

References: Westfall, P. H. & Young, S. S. (1993), *Resampling-Based Multiple Testing*,
Wiley. Romano, J. P. & Wolf, M. (2005), Exact and approximate stepdown methods for
multiple hypothesis testing, JASA 100, 94-108, doi:10.1198/016214504000000539.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from multistat._validation import check_alternative, check_choice, check_probability

METHODS = ("maxT", "minP")
SLAB_BYTES = 64 * 2**20


def _orient(x: np.ndarray, alternative: str) -> np.ndarray:
    if alternative == "two-sided":
        return np.abs(x)
    return x if alternative == "greater" else -x


def _slabs(order: np.ndarray, n_resamples: int) -> list[np.ndarray]:
    step = max(1, SLAB_BYTES // (8 * max(1, n_resamples)))
    return [order[s:s + step] for s in range(0, len(order), step)]


def _tol(x):
    return 1e-12 * np.maximum(1.0, np.abs(x))


def _own_pvalues(null_o: np.ndarray) -> np.ndarray:
    """``p*_{bj} = #{b' : T*_{b'j} >= T*_{bj}} / B`` within each column (oriented)."""
    from scipy.stats import rankdata

    b = null_o.shape[0]
    # rank of -T* with method "max" = #{b' : -T*_{b'} <= -T*_b} = #{T*_{b'} >= T*_b}
    return rankdata(-null_o, method="max", axis=0) / b


def westfall_young(null_of: Callable[[np.ndarray], np.ndarray], observed, *,
                   alternative: str = "two-sided", method: str = "maxT",
                   alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Step-down adjusted p-values and decisions for one family of ``P`` hypotheses.

    Parameters
    ----------
    null_of : callable ``idx -> (B, len(idx))`` — the resampled null statistics of the
        pairs ``idx`` under the *shared* plan (row ``b`` the same resample for every pair);
        called with slabs of pair indices, twice per slab.
    observed : ``(P,)`` observed statistics on the null's scale (NaN: not tested, NaN out)
    alternative : ``"two-sided"`` (``|T|``), ``"greater"`` (``T``), ``"less"`` (``-T``)
    method : ``"maxT"`` (statistics studentized by their null sd) or ``"minP"``
    alpha : level of the returned decisions (``p_adjusted <= alpha``)

    Returns
    -------
    (reject, p_adjusted) : ``(P,)`` arrays
    """
    alternative = check_alternative(alternative)
    method = check_choice("method", method, METHODS)
    alpha = check_probability("alpha", alpha)
    obs = np.asarray(observed, float).ravel()
    P = len(obs)
    p_adj = np.full(P, np.nan)
    ok = np.flatnonzero(np.isfinite(obs))
    if not len(ok):
        return np.zeros(P, bool), p_adj
    probe = np.asarray(null_of(ok[:1]), float)
    B = probe.shape[0]
    # pass 1: each pair's own scale (max-T) or own p-value (min-P) -> the step-down order
    key = np.empty(len(ok))  # larger = more significant
    scale = np.ones(len(ok))
    raw = np.empty(len(ok))
    for sl in _slabs(np.arange(len(ok)), B):
        null = _orient(np.asarray(null_of(ok[sl]), float), alternative)
        o = _orient(obs[ok[sl]], alternative)
        raw[sl] = (np.sum(null >= o - _tol(o), axis=0) + 1) / (B + 1)
        if method == "maxT":
            sd = null.std(axis=0, ddof=1) if B > 1 else np.ones(len(sl))
            scale[sl] = np.where(sd > 0, sd, 1.0)
            key[sl] = o / scale[sl]
        else:
            key[sl] = -raw[sl]
    order = np.lexsort((np.arange(len(ok)), -key))  # most significant first
    # pass 2: successive maxima (minima) from the least significant end, slab by slab
    carry = np.full(B, -np.inf)
    counts = np.empty(len(ok))
    for sl in reversed(_slabs(order, B)):
        null = _orient(np.asarray(null_of(ok[sl]), float), alternative)
        if method == "maxT":
            stat = null / scale[sl]
            thresh = key[sl]
        else:
            stat = -_own_pvalues(null)  # max of -p* = -(min p*)
            thresh = -raw[sl]
        # reverse cumulative max along the slab (positions k..end), then with the carry
        succ = np.maximum(np.maximum.accumulate(stat[:, ::-1], axis=1)[:, ::-1],
                          carry[:, None])
        if method == "maxT":
            counts[sl] = np.sum(succ >= thresh - _tol(thresh), axis=0)
        else:
            counts[sl] = np.sum(succ >= thresh - 1e-12, axis=0)
        carry = succ[:, 0]
    adj_sorted = np.maximum.accumulate((counts[order] + 1) / (B + 1))
    adj = np.empty(len(ok))
    adj[order] = adj_sorted
    p_adj[ok] = np.minimum(1.0, np.maximum(adj, raw))
    reject = np.zeros(P, bool)
    reject[ok] = p_adj[ok] <= alpha
    return reject, p_adj


def from_matrix(null: np.ndarray, observed, **kwargs):
    """:func:`westfall_young` for a null matrix ``(B, P)`` held in memory."""
    null = np.asarray(null, float)
    return westfall_young(lambda idx: null[:, idx], observed, **kwargs)


# ----------------------------------------------------------------------------- compare
#: ``correction=`` names: "westfall-young" is max-T for mean statistics (studentized,
#: one scale) and min-P for corpus metrics (scale and shape differ across pairs)
CORRECTIONS = ("westfall-young", "westfall-young-maxT", "westfall-young-minP")
TESTS = ("bootstrap", "permutation")


def check_westfall_young(tests, statistic):
    """Refuse what has no joint null on a shared plan (closed-form tests, medians)."""
    from multistat.errors import ParameterError

    closed = [t for t in tests if t not in TESTS]
    if closed:
        raise ParameterError(
            f"correction='westfall-young' needs a resampling test ({' or '.join(TESTS)}): "
            "its joint null distribution comes from their shared plan; "
            f"{', '.join(closed)} {'is' if len(closed) == 1 else 'are'} closed-form — run "
            "tests=('bootstrap',) or ('permutation',), or use correction='holm'")
    if statistic != "mean":
        raise ParameterError("correction='westfall-young' works on the mean (or corpus "
                             f"metric) statistic; got statistic={statistic!r}")


def _group_nulls(kind, X, corpus, n_resamples, seed, dataset, scheduler, n_chunks):
    """Per-system resampled arrays of one metric group on the test's own plan."""
    from multistat import resampling as eng

    n = X.shape[-1]
    if kind == "permutation":
        exact = n < 63 and 2**n <= n_resamples
        run = {"n": n, "n_resamples": n_resamples, "seed": seed, "dataset": dataset,
               "scheduler": scheduler, "n_chunks": n_chunks, "exact": exact}
        if corpus is not None:
            from multistat.significance.resampling import _swap_kernel

            return {"swapped": eng.resample("permutation", _swap_kernel, corpus[1], **run),
                    "total": corpus[1].sum(1)}
        aug = np.concatenate([X, np.ones((1,) + X.shape[1:])], 0) / n
        return {"flips": eng.resample("permutation", eng.linear_kernel, aug, **run)}
    run = {"n": n, "n_resamples": n_resamples, "seed": seed, "dataset": dataset,
           "scheduler": scheduler, "n_chunks": n_chunks}
    if corpus is not None:
        return {"dist": corpus[0](eng.resample("bootstrap", eng.corpus_sums_kernel,
                                               corpus[1], **run))[..., None]}
    return {"dist": eng.resample("bootstrap", eng.linear_kernel, X / n, **run)}


def _null_of(kind, arrays, fn, a, b, m, est, null_value):
    """``idx -> (B, len(idx))`` null statistics of rows ``idx`` (pairs a - b, metric m),
    on the scale of ``est - null_value`` (what compare's test counts against)."""
    def null_of(idx):
        ai, bi, mi = a[idx], b[idx], m[idx]
        if kind == "bootstrap":
            d = arrays["dist"]
            return d[:, ai, mi] - d[:, bi, mi] - est[idx]
        if "flips" in arrays:
            f = arrays["flips"]
            return f[:, ai, mi] - f[:, bi, mi] - null_value * f[:, -1, mi]
        sw, tot = arrays["swapped"], arrays["total"]
        moved = sw[:, bi] - sw[:, ai]
        return fn(tot[ai] + moved) - fn(tot[bi] - moved)
    return null_of


def adjust_table(table, study, *, method="westfall-young", alpha=0.05, family=None,
                 n_resamples=10_000, seed=0, scheduler="threads", n_chunks=None,
                 systems=None):
    """``p_adjusted``/``reject`` of a compare table by the Westfall-Young step-down.

    Each family must lie within one dataset, one test and one metric group (metrics
    scored on the same instances): its joint null distribution is then the shared plan
    that test used, rebuilt here per system (resampled means, sign-flipped sums or
    corpus sufficient statistics; pairs formed last, in slabs). ``systems``
    (``{(dataset, metric): (B, S)}``) are the bootstrap test's own per-system resampled
    scores when the caller has them (``compare`` does): then that plan is not redrawn.
    Returns a copy.
    """
    from multistat import cube
    from multistat.comparison import _canonical, _groups
    from multistat.correct import family_columns, family_keys
    from multistat.errors import ParameterError

    out = table.copy()
    cols = family_columns(out, family)
    keys = (family_keys(out, cols).to_numpy(dtype=object) if cols
            else np.full(len(out), "all", dtype=object))
    out["family"] = keys
    out["correction"] = method
    out["alpha"] = alpha
    p_adj = np.full(len(out), np.nan)
    reject = np.zeros(len(out), bool)
    all_ds = cube.datasets(study)
    group_of = {}  # (dataset, metric) -> group id and data
    for name in pd_unique(out["dataset"]):
        ds = _canonical(all_ds[name].compute())
        score = np.asarray(ds[cube.SCORE].values)
        for g, (kind, ms, valid) in enumerate(_groups(ds)):
            for j, m in enumerate(ms):
                group_of[(name, str(ds.metric.values[m]))] = (g, kind, ms, valid, ds,
                                                             score)
    cache = {}
    for fam, idx in _indices(keys).items():
        rows = out.iloc[idx]
        ident = {(d, t, group_of[(d, mt)][0]) for d, t, mt in
                 zip(rows["dataset"], rows["test"], rows["metric"])}
        if len(ident) > 1:
            raise ParameterError(
                f"correction={method!r}: family {fam!r} spans several datasets, tests or "
                "instance sets; its joint null must come from one shared plan — use the "
                "default family (dataset x metric x test) or family=['dataset', 'test'] "
                "over metrics scored on the same instances")
        (name, test, gid), = ident
        g, kind, ms, valid, ds, score = group_of[(name, rows["metric"].iloc[0])]
        fam_metrics = [str(x) for x in pd_unique(rows["metric"])]
        mpos = {str(ds.metric.values[mm]): j for j, mm in enumerate(ms)}
        if test == "bootstrap" and systems and all((name, mt) in systems
                                                   for mt in fam_metrics):
            # compare's own bootstrap distributions, stacked in the group's metric order
            dist = np.stack([systems.get((name, str(ds.metric.values[mm])),
                                         np.full_like(systems[(name, fam_metrics[0])],
                                                      np.nan)) for mm in ms], -1)
            cache.clear()
            cache[(name, test, gid)] = ({"dist": dist}, None, kind)
        elif (name, test, gid) not in cache:
            X = score[:, ms][:, :, valid]
            corpus = None
            if kind == "corpus":
                from multistat.corpus import get_corpus_metric

                cm = get_corpus_metric(str(ds.corpus_fn.values[ms[0]]))
                stats = np.asarray(ds[cube.STATS].values)[:, ms[0]][:, valid][..., :cm.n_stats]
                corpus = (cm.fn, stats)
            cache.clear()  # one group's per-system arrays at a time
            cache[(name, test, gid)] = (_group_nulls(test, X, corpus, n_resamples, seed,
                                                     name, scheduler, n_chunks),
                                        corpus[0] if corpus else None, kind)
        arrays, fn, kind = cache[(name, test, gid)]
        sysidx = {s: i for i, s in enumerate(ds.system.values.astype(str))}
        a = rows["system_a"].map(sysidx).to_numpy(int)
        b = rows["system_b"].map(sysidx).to_numpy(int)
        m = rows["metric"].map(mpos).to_numpy(int)
        est = rows["estimate"].to_numpy(float)
        null_value = float(rows["null_value"].iloc[0])
        alternative = str(rows["alternative"].iloc[0])
        how = method.rsplit("-", 1)[1] if method != "westfall-young" else (
            "minP" if kind == "corpus" else "maxT")
        obs = np.where(np.isfinite(rows["p_value"].to_numpy(float)), est - null_value,
                       np.nan)
        _, p = westfall_young(_null_of(test, arrays, fn, a, b, m, est, null_value), obs,
                              alternative=alternative, method=how, alpha=alpha)
        # never below the test's own p-value (its two-sided bootstrap p doubles the
        # smaller tail; the step-down counts |T|)
        p = np.fmax(p, rows["p_value"].to_numpy(float))
        p_adj[idx], reject[idx] = p, p <= alpha
    out["p_adjusted"] = p_adj
    out["reject"] = reject
    return out


def pd_unique(values):
    import pandas as pd

    return list(pd.unique(values))


def _indices(keys) -> dict:
    import pandas as pd

    return pd.Series(range(len(keys))).groupby(keys, sort=False).indices
