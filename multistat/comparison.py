"""The batch driver: every pair x metric x dataset x test in one call, one tidy table.

For each dataset, metrics that share the same set of scored instances form a group; one
resampling plan per ``(seed, dataset, kind, block)`` serves all systems, metrics and pairs
of the dataset (:mod:`multistat.resampling`), closed-form tests run vectorized over all
pairs at once, and the p-values are corrected over declared families
(:mod:`multistat.correct`).
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd

from multistat import cube, stepdown
from multistat._validation import (
    check_alternative,
    check_choice,
    check_int,
    check_probability,
    check_real,
    check_seed,
)
from multistat.correct import METHODS, adjust
from multistat.errors import ParameterError, TestNotApplicableError, UnknownSystemError
from multistat.significance import REGISTRY, get_test
from multistat.significance import resampling as rs

DEFAULT_TESTS = ("t", "wilcoxon", "sign", "bootstrap", "permutation")
EFFECT_COLUMNS = tuple(f"{e}{s}" for e in ("cohens_d", "hedges_g", "wilcoxon_r",
                                           "hodges_lehmann")
                       for s in ("", "_ci_low", "_ci_high"))
COLUMNS = ("dataset", "metric", "system_a", "system_b", "n", "statistic_kind", "estimate",
           "ci_low", "ci_high", "confidence_level", "test", "alternative", "null_value",
           "statistic", "p_value", "family", "correction", "p_adjusted", "reject", "alpha",
           *EFFECT_COLUMNS, "power", "n_resamples", "seed", "note", "higher_is_better",
           "score_a", "score_b")


def _compare_iv(study, tests, statistic, alternative, null_value, alpha, confidence_level,
                n_resamples, seed, correction, scheduler, ci_method, bootstrap_pvalue):
    if isinstance(tests, str):
        tests = (tests,)
    tests = tuple(tests)
    if not tests:
        raise ParameterError("`tests` is empty; name at least one of "
                             f"{', '.join(sorted(REGISTRY))}")
    for t in tests:
        get_test(t)
    if len(set(tests)) != len(tests):
        raise ParameterError(f"`tests` lists a test twice: {tests}")
    statistic = check_choice("statistic", statistic, ("mean", "median"))
    alternative = check_alternative(alternative)
    null_value = check_real("null_value", null_value)
    alpha = check_probability("alpha", alpha)
    confidence_level = (1 - alpha if confidence_level is None
                        else check_probability("confidence_level", confidence_level))
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    seed = check_seed(seed)
    if correction is not None and correction not in METHODS + stepdown.CORRECTIONS:
        raise ParameterError(f"`correction` must be one of "
                             f"{', '.join(METHODS + stepdown.CORRECTIONS)} or None; "
                             f"got {correction!r}")
    if correction in stepdown.CORRECTIONS:
        stepdown.check_westfall_young(tests, statistic)
    if not (scheduler in ("threads", "processes", "synchronous") or
            (isinstance(scheduler, str) and "://" in scheduler) or
            type(scheduler).__name__ == "Client"):
        raise ParameterError("`scheduler` must be 'threads', 'processes', 'synchronous' or a "
                             f"dask.distributed address such as 'tcp://host:8786'; got "
                             f"{scheduler!r}")
    check_choice("ci_method", ci_method, rs.CI_METHODS)
    check_choice("bootstrap_pvalue", bootstrap_pvalue, rs.BOOTSTRAP_PVALUES)
    return (tests, statistic, alternative, null_value, alpha, confidence_level, n_resamples,
            seed)


def _groups(ds) -> list[tuple[str, list[int], np.ndarray]]:
    """(kind, metric indices, valid-instance mask): mean/binary metrics sharing a mask
    form one group; each corpus metric is its own group."""
    score = np.asarray(ds[cube.SCORE].values)
    groups: dict = {}
    out = []
    for m, kind in enumerate(ds.kind.values):
        valid = ~np.isnan(score[0, m])
        if kind == "corpus":
            out.append(("corpus", [m], valid))
            continue
        key = valid.tobytes()
        if key not in groups:
            groups[key] = ("mean", [], valid)
            out.append(groups[key])
        groups[key][1].append(m)
    return out


def _rows(frame_cols: dict, n_rows: int) -> pd.DataFrame:
    return pd.DataFrame({k: (np.repeat(v, n_rows) if np.ndim(v) == 0 else v)
                         for k, v in frame_cols.items()})


def _power_column(d: np.ndarray, n: int, alpha: float, alternative: str, target):
    """Power of the paired t test at level alpha to detect ``target`` (metric units; None:
    the observed mean difference) given each pair's sd of differences
    (:func:`multistat.power.analytic` noncentral-t power, robust in the far tails)."""
    from multistat.power.analytic import _t_power

    sd = d.std(-1, ddof=1)
    delta = d.mean(-1) if target is None else np.full(sd.shape, float(target))
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where(sd > 0, delta / sd, np.nan)
    power = np.vectorize(lambda e: np.nan if np.isnan(e) else _t_power(n, e, alpha,
                                                                       alternative))
    return power(effect).astype(float)


def compare(study, *, tests=DEFAULT_TESTS, statistic="mean", pairs="all", metrics=None,
            datasets=None, alternative="two-sided", null_value=0.0, alpha=0.05,
            confidence_level=None, n_resamples=10_000, seed=0, correction="holm",
            family=None, scheduler="threads", n_chunks=None, ci_method="bca",
            bootstrap_pvalue="shifted", effect_sizes=True, power=False, progress=False,
            return_systems=False, equivalence_margin=None):
    """Paired tests for every pair of systems, metric and dataset of a study.

    Parameters
    ----------
    study : a study (``multistat.load``, ``multistat.evaluation_units``,
        ``multistat.load_translations``) or a path ``multistat.load`` reads
    tests : registry names: ``"t"``, ``"wilcoxon"``, ``"sign"``, ``"bootstrap"``,
        ``"permutation"``, ``"mcnemar"`` (binary metrics only)
    statistic : ``"mean"`` or ``"median"`` — what the bootstrap and permutation tests
        compare (t is always about the mean; sign about the median; Wilcoxon about the
        pseudo-median); corpus metrics always compare the corpus metric
    pairs : ``"all"`` (every pair once), ``"baseline:<system>"`` or a list of ``(a, b)``
    metrics, datasets : restrict to these names
    alternative : ``"two-sided" | "less" | "greater"`` for theta(a - b) vs ``null_value``
    null_value : delta, the margin of H0 (metric units)
    alpha : level for ``reject`` (after correction) and the default interval level
    confidence_level : interval level (default ``1 - alpha``)
    n_resamples : resamples for bootstrap and permutation
    seed : non-negative int, 0 included; the same seed gives bit-identical tables
        whatever ``scheduler`` and ``n_chunks``
    correction : statsmodels ``multipletests`` method, ``"westfall-young"`` (resampling
        step-down over the shared plan, :mod:`multistat.stepdown`: max-T for means,
        min-P for corpus metrics; ``"westfall-young-maxT"``/``"-minP"`` to choose; only
        with the bootstrap and permutation tests — closed-form tests are refused, as they
        have no joint null on a shared plan) or None
    family : None (dataset x metric x test), ``"all"``, or column name(s)
    scheduler : ``"threads"``, ``"processes"``, ``"synchronous"``, a dask.distributed
        address (``"tcp://..."``) or a ``distributed.Client``
    n_chunks : dask tasks per resampling run (default one per block of 1000 resamples)
    ci_method : bootstrap interval: ``"bca"``, ``"percentile"``, ``"studentized"``
    bootstrap_pvalue : ``"shifted"`` (correct, default), ``"berg-kirkpatrick"`` or
        ``"sacrebleu"`` (compatibility; warns)
    effect_sizes : add Cohen's d_z, Hedges' g, Wilcoxon r, Hodges-Lehmann with intervals
    power : False; True (power of the paired t test to detect the *observed* mean
        difference — retrospective, says so in ``note``); or a number: the difference in
        metric units the test should detect
    progress : show a progress bar
    return_systems : also return the per-system table (score with bootstrap percentile
        interval), used by leaderboards
    equivalence_margin : delta > 0 (metric units): add TOST columns ``p_equivalence``,
        ``p_equivalence_adjusted`` and ``equivalent`` (tied within +-delta after the
        correction; :mod:`multistat.equivalence`) for the t, Wilcoxon, bootstrap and
        permutation tests

    Returns
    -------
    pandas.DataFrame
        One row per dataset x metric x pair x test with the columns :data:`COLUMNS`:
        ``estimate`` is theta(a - b) in metric units (``statistic_kind`` says which theta);
        ``ci_low/ci_high`` its interval at ``confidence_level``; ``statistic`` the test's
        own statistic; ``p_value`` raw, ``p_adjusted``/``reject`` after ``correction``
        within ``family``; effect columns (NaN for corpus metrics, with a note);
        ``score_a/score_b`` each system's mean (or corpus) score; ``note`` why a value is
        NaN or how it was computed. ``table.attrs["multistat"]`` holds the run metadata.
    """
    if not hasattr(study, "children"):
        study = cube.load(study)
    (tests, statistic, alternative, null_value, alpha, confidence_level, n_resamples,
     seed) = _compare_iv(study, tests, statistic, alternative, null_value, alpha,
                         confidence_level, n_resamples, seed, correction, scheduler,
                         ci_method, bootstrap_pvalue)
    from multistat.equivalence import check_margin

    equivalence_margin = check_margin(equivalence_margin)
    all_ds, metrics = cube.select(study, datasets=datasets, metrics=metrics)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(len(_groups(ds)) for ds in all_ds.values()) * len(tests),
                   desc="multistat compare", unit="step")
    parts, systems_parts = [], []
    for name, ds in all_ds.items():
        ds = _canonical(ds.compute())
        try:
            idx = cube.pair_indices(ds.system.values, pairs)
        except UnknownSystemError as exc:
            raise UnknownSystemError(f"dataset {name!r}: {exc}") from None
        ia = np.array([a for a, _ in idx], dtype=int)
        ib = np.array([b for _, b in idx], dtype=int)
        sysnames = ds.system.values.astype(str)
        score = np.asarray(ds[cube.SCORE].values)
        for kind, ms, valid in _groups(ds):
            if metrics is not None:
                ms = [m for m in ms if str(ds.metric.values[m]) in metrics]
                if not ms:
                    if bar is not None:
                        bar.update(len(tests))
                    continue
            X = score[:, ms][:, :, valid]  # (S, M, n)
            n = X.shape[-1]
            corpus = None
            if kind == "corpus":
                from multistat.corpus import get_corpus_metric

                cm = get_corpus_metric(str(ds.corpus_fn.values[ms[0]]))
                stats = np.asarray(ds[cube.STATS].values)[:, ms[0]][:, valid][..., :cm.n_stats]
                corpus = (cm.fn, stats)
                sys_obs = cm.fn(stats.sum(1))[:, None]
            else:
                sys_obs = X.mean(-1)
            base = {
                "dataset": name, "metric": np.tile(ds.metric.values[ms].astype(str), len(ia)),
                "system_a": np.repeat(sysnames[ia], len(ms)),
                "system_b": np.repeat(sysnames[ib], len(ms)),
                "higher_is_better": np.tile(ds.higher_is_better.values[ms].astype(bool),
                                            len(ia)),
                "score_a": sys_obs[ia].ravel(), "score_b": sys_obs[ib].ravel(),
            }
            extra = _pair_extras(X, ia, ib, kind, effect_sizes, confidence_level, power,
                                 alpha, alternative)
            for test in tests:
                res = _run_test(test, X, ia, ib, kind=kind, corpus=corpus, ds=ds, ms=ms,
                                statistic=statistic, alternative=alternative,
                                null_value=null_value, confidence_level=confidence_level,
                                n_resamples=n_resamples, seed=seed, dataset=name,
                                scheduler=scheduler, n_chunks=n_chunks, ci_method=ci_method,
                                bootstrap_pvalue=bootstrap_pvalue)
                sysdist = res.pop("systems", None)
                if return_systems and test == "bootstrap" and sysdist is not None:
                    systems_parts.append(_system_rows(name, ds, ms, sysnames, sys_obs,
                                                      sysdist, confidence_level, n))
                rows = dict(base)
                rows.update({k: (np.asarray(v).ravel() if np.ndim(v) else v) for k, v in res.items()})
                rows.update(test=test, alternative=alternative, null_value=null_value,
                            confidence_level=confidence_level,
                            n_resamples=n_resamples if REGISTRY[test].resampling else 0,
                            seed=seed if REGISTRY[test].resampling else -1)
                rows.update(extra)
                if extra.get("_note") is not None:
                    rows["note"] = _join_notes(rows["note"], rows.pop("_note"))
                rows.pop("_note", None)
                parts.append(_rows(rows, len(ia) * len(ms)))
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    if not parts:
        raise ParameterError("nothing to compare: no dataset/metric left after the "
                             "`datasets`/`metrics` selection")
    table = pd.concat(parts, ignore_index=True)
    if correction in stepdown.CORRECTIONS:  # Westfall-Young over the shared plan
        table = stepdown.adjust_table(table, study, method=correction, alpha=alpha,
                                      family=family, n_resamples=n_resamples, seed=seed,
                                      scheduler=scheduler, n_chunks=n_chunks)
    else:
        table = adjust(table, method=correction, family=family, alpha=alpha)
    if equivalence_margin is not None:  # TOST columns (multistat.equivalence)
        from multistat.equivalence import add_equivalence

        table = add_equivalence(
            table, study, equivalence_margin, tests=tests, correction=correction,
            family=family, alpha=alpha, statistic=statistic, pairs=pairs, metrics=metrics,
            datasets=datasets, confidence_level=confidence_level, n_resamples=n_resamples,
            seed=seed, scheduler=scheduler, n_chunks=n_chunks,
            bootstrap_pvalue=bootstrap_pvalue)
    for col in COLUMNS:
        if col not in table.columns:
            table[col] = np.nan
    table = table[list(COLUMNS) + [c for c in table.columns if c not in COLUMNS]]
    table["n"] = table["n"].astype(int)
    table.attrs["multistat"] = _metadata(study, tests, statistic, pairs, alternative,
                                         null_value, alpha, confidence_level, n_resamples,
                                         seed, correction, family, ci_method,
                                         bootstrap_pvalue)
    if equivalence_margin is not None:
        table.attrs["multistat"].update(
            equivalence_margin=equivalence_margin, equivalence_correction=(
                "holm" if correction in stepdown.CORRECTIONS else correction or "none"))
    if return_systems:
        systems = (pd.concat(systems_parts, ignore_index=True) if systems_parts else
                   system_scores(study, n_resamples=n_resamples, seed=seed,
                                 confidence_level=confidence_level, scheduler=scheduler,
                                 metrics=metrics, datasets=datasets))
        return table, systems
    return table


def _canonical(ds):
    """Instances sorted by label, so resampling results do not depend on the order of
    the input rows (plans are tied to instance positions)."""
    order = np.argsort(ds.instance.values.astype(str), kind="stable")
    return ds.isel(instance=order)


def _join_notes(a, b):
    a = np.asarray(a, dtype=object)
    b = np.broadcast_to(np.asarray(b, dtype=object), a.shape)
    return np.array(["; ".join(s for s in (x, y) if s) for x, y in zip(a, b)], dtype=object)


def _pair_extras(X, ia, ib, kind, want_effects, confidence_level, power, alpha,
                 alternative) -> dict:
    """Effect-size and power columns, one value per pair x metric (ravelled)."""
    P, M, n = len(ia), X.shape[1], X.shape[2]
    out: dict = {}
    if kind == "corpus":
        if want_effects:
            for c in EFFECT_COLUMNS:
                out[c] = np.full(P * M, np.nan)
            out["_note"] = ("effect sizes of per-instance scores do not apply to a corpus "
                            "metric (the estimate is the corpus-metric difference)")
        if power:
            out["power"] = np.full(P * M, np.nan)
        return out
    A, B = X[ia], X[ib]  # (P, M, n)
    if want_effects:
        from multistat.effect import effect_sizes

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant pairs: NaN + notes from the tests
            eff = effect_sizes(A, B, confidence_level=confidence_level)
        for c in EFFECT_COLUMNS:
            out[c] = np.asarray(eff[c], dtype=float).reshape(P * M)
    if power:
        target = None if power is True else float(power)
        out["power"] = _power_column(A - B, n, alpha, alternative, target).reshape(P * M)
        if target is None:
            out["_note"] = ("power: retrospective, at the observed mean difference (a "
                            "function of the p-value; plan with `multistat power`)")
    return out


def _run_test(test, X, ia, ib, *, kind, corpus, ds, ms, statistic, alternative,
              null_value, confidence_level, n_resamples, seed, dataset, scheduler,
              n_chunks, ci_method, bootstrap_pvalue) -> dict:
    spec = REGISTRY[test]
    P, M, n = len(ia), X.shape[1], X.shape[2]
    common = dict(alternative=alternative, null_value=null_value)
    run = dict(n_resamples=n_resamples, seed=seed, dataset=dataset, scheduler=scheduler,
               n_chunks=n_chunks, corpus=corpus)
    stat_kind = "corpus" if kind == "corpus" else statistic
    if test == "bootstrap":
        out = rs.bootstrap_block(X, ia, ib, statistic=statistic,
                                 confidence_level=confidence_level, ci_method=ci_method,
                                 pvalue=bootstrap_pvalue, **common, **run)
        out.pop("systems_observed", None)
        out["n"], out["statistic_kind"] = n, stat_kind
        return out
    if test == "permutation":
        out = rs.permutation_block(X, ia, ib, statistic=statistic, **common, **run)
        out.pop("exact", None)
        out["n"], out["statistic_kind"] = n, stat_kind
        return out
    # closed-form tests: per-instance scores, vectorized over pairs x metrics
    if kind == "corpus":
        nan = np.full((P, M), np.nan)
        return {"n": n, "statistic_kind": spec.statistic_kinds[0], "statistic": nan,
                "p_value": nan, "estimate": nan, "ci_low": nan, "ci_high": nan,
                "note": np.full((P, M), f"{test}: not applicable to a corpus metric (use "
                                        "bootstrap or permutation)", dtype=object)}
    if spec.binary_only:
        for m in ms:
            if ds.kind.values[m] != "binary":
                raise TestNotApplicableError(
                    f"{test} needs a binary (0/1) metric; metric {ds.metric.values[m]!r} of "
                    f"dataset {dataset!r} is not — restrict with metrics=[...]")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = spec.func(X[ia], X[ib], confidence_level=confidence_level, **common)
    out = {"n": np.broadcast_to(np.asarray(res.n), (P, M)),
           "statistic_kind": res.statistic_kind or spec.statistic_kinds[0]}
    for k in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
        out[k] = np.broadcast_to(np.asarray(getattr(res, k), dtype=float), (P, M))
    note = np.asarray(res.note, dtype=object)
    out["note"] = np.broadcast_to(note, (P, M)) if note.ndim else np.full((P, M), str(note),
                                                                         dtype=object)
    if caught and not np.any(out["note"] != ""):
        msg = "; ".join(sorted({str(w.message) for w in caught}))[:300]
        out["note"] = np.full((P, M), msg, dtype=object)
    return out


def _system_rows(name, ds, ms, sysnames, sys_obs, sysdist, confidence_level, n):
    lo_q, hi_q = (1 - confidence_level) / 2, 1 - (1 - confidence_level) / 2
    lo, hi = np.quantile(sysdist, [lo_q, hi_q], axis=0)  # (S, M)
    S, M = sys_obs.shape
    return pd.DataFrame({
        "dataset": name, "metric": np.tile(ds.metric.values[ms].astype(str), S),
        "system": np.repeat(sysnames, M), "score": sys_obs.ravel(),
        "ci_low": lo.ravel(), "ci_high": hi.ravel(), "confidence_level": confidence_level,
        "n": n, "higher_is_better": np.tile(ds.higher_is_better.values[ms].astype(bool), S),
        "n_resamples": sysdist.shape[0]})


def system_scores(study, *, n_resamples=10_000, seed=0, confidence_level=0.95,
                  scheduler="threads", metrics=None, datasets=None) -> pd.DataFrame:
    """Each system's score (mean or corpus metric) with a bootstrap percentile interval.

    Uses the same plans as :func:`compare`'s bootstrap (same seed, same resamples).
    Columns: ``dataset, metric, system, score, ci_low, ci_high, confidence_level, n,
    higher_is_better, n_resamples``.
    """
    if not hasattr(study, "children"):
        study = cube.load(study)
    confidence_level = check_probability("confidence_level", confidence_level)
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    seed = check_seed(seed)
    parts = []
    from multistat import resampling as eng

    for name, ds in cube.datasets(study).items():
        if datasets is not None and name not in datasets:
            continue
        ds = _canonical(ds.compute())
        score = np.asarray(ds[cube.SCORE].values)
        sysnames = ds.system.values.astype(str)
        for kind, ms, valid in _groups(ds):
            if metrics is not None:
                ms = [m for m in ms if str(ds.metric.values[m]) in metrics]
                if not ms:
                    continue
            X = score[:, ms][:, :, valid]
            n = X.shape[-1]
            run = dict(n=n, n_resamples=n_resamples, seed=seed, dataset=name,
                       scheduler=scheduler)
            if kind == "corpus":
                from multistat.corpus import get_corpus_metric

                cm = get_corpus_metric(str(ds.corpus_fn.values[ms[0]]))
                stats = np.asarray(ds[cube.STATS].values)[:, ms[0]][:, valid][..., :cm.n_stats]
                dist = cm.fn(eng.resample("bootstrap", eng.corpus_sums_kernel, stats,
                                          **run))[..., None]
                obs = cm.fn(stats.sum(1))[:, None]
            else:
                dist = eng.resample("bootstrap", eng.linear_kernel, X / n, **run)
                obs = X.mean(-1)
            parts.append(_system_rows(name, ds, ms, sysnames, obs, dist, confidence_level,
                                      n))
    return pd.concat(parts, ignore_index=True)


def study_hash(study) -> str:
    """SHA-256 of the study's scores (and statistics), for the run metadata."""
    h = hashlib.sha256()
    for name, ds in cube.datasets(study).items():
        h.update(name.encode())
        for var in (cube.SCORE, cube.STATS):
            if var in ds:
                h.update(np.ascontiguousarray(np.asarray(ds[var].values)).tobytes())
        for dim in ("system", "metric", "instance"):
            h.update("\x1f".join(map(str, ds[dim].values)).encode())
    return h.hexdigest()


def _metadata(study, tests, statistic, pairs, alternative, null_value, alpha,
              confidence_level, n_resamples, seed, correction, family, ci_method,
              bootstrap_pvalue) -> dict:
    from multistat import __version__

    return {"multistat_version": __version__, "seed": seed, "tests": list(tests),
            "statistic": statistic, "pairs": pairs if isinstance(pairs, str) else
            [list(p) for p in pairs], "alternative": alternative, "null_value": null_value,
            "alpha": alpha, "confidence_level": confidence_level, "n_resamples": n_resamples,
            "correction": correction or "none",
            "family": family if family is None or isinstance(family, str) else list(family),
            "ci_method": ci_method, "bootstrap_pvalue": bootstrap_pvalue,
            "input_sha256": study_hash(study)}
