"""Across test sets: Friedman test with post-hoc comparisons, and replicability analysis.

* :func:`friedman` ranks systems within each *block* (a test set, one score per system;
  one test per metric, :func:`blocks_per_metric`: metrics are never blocks) and tests whether the
  mean ranks differ (Demšar 2006), with the
  Iman-Davenport F correction, the Nemenyi critical difference from the studentized range
  distribution, and pairwise post-hoc tests (Nemenyi, Bonferroni-Dunn against a control,
  or Wilcoxon signed-rank tests on the block scores with Holm's correction as Benavoli,
  Corani and Mangili 2016 recommend).
* :func:`replicability` counts and identifies the test sets on which an effect holds
  from one p-value per test set (Dror, Baumer, Bogomolov and Reichart 2017): partial
  conjunction p-values (Benjamini and Heller 2008) combined with Bonferroni or Fisher,
  ``k_hat`` and the datasets Holm's procedure rejects.

References
----------
J. Demšar (2006). Statistical comparisons of classifiers over multiple data sets. JMLR 7,
1-30. https://jmlr.org/papers/v7/demsar06a.html
A. Benavoli, G. Corani, F. Mangili (2016). Should we really use post-hoc tests based on
mean-ranks? JMLR 17(5), 1-10. https://jmlr.org/papers/v17/benavoli16a.html
R. Dror, G. Baumer, M. Bogomolov, R. Reichart (2017). Replicability analysis for natural
language processing: testing significance with multiple datasets. TACL 5, 471-486.
https://doi.org/10.1162/tacl_a_00074
Y. Benjamini, R. Heller (2008). Screening for partial conjunction hypotheses. Biometrics
64(4), 1215-1222. https://doi.org/10.1111/j.1541-0420.2007.00984.x
"""

from __future__ import annotations

import itertools
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from multistat._result import Result
from multistat._validation import ALPHA, checked, choice
from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    ParameterError,
    ParameterTypeError,
    UnknownSystemError,
)

POSTHOCS = ("nemenyi", "bonferroni-dunn", "wilcoxon-holm")
PAIRWISE_COLUMNS = ("system_a", "system_b", "mean_rank_a", "mean_rank_b", "rank_difference",
                    "statistic", "p_value", "p_adjusted", "reject", "posthoc",
                    "critical_difference", "n_blocks", "alpha")


# ---------------------------------------------------------------------------- Friedman
@dataclass(frozen=True)
class FriedmanResult(Result):
    """Friedman test across blocks with a post-hoc comparison.

    Attributes
    ----------
    statistic : Friedman's chi-square (ties corrected as :func:`scipy.stats.friedmanchisquare`)
    p_value : its chi-square(k - 1) p-value
    iman_davenport : F_F = (N - 1) chi2 / (N (k - 1) - chi2)
    iman_davenport_p_value : F(k - 1, (k - 1)(N - 1)) upper tail
    mean_ranks : Series indexed by system, rank 1 is best, sorted best first
    critical_difference : Nemenyi CD = q_alpha sqrt(k (k + 1) / (6 N)),
        q_alpha = studentized_range.ppf(1 - alpha, k, inf) / sqrt(2)
    pairwise : tidy DataFrame, one row per compared pair (:data:`PAIRWISE_COLUMNS`)
    ranks : DataFrame blocks x systems of within-block ranks (1 is best, ties averaged)
    """

    statistic: float
    p_value: float
    iman_davenport: float
    iman_davenport_p_value: float
    mean_ranks: pd.Series
    critical_difference: float
    pairwise: pd.DataFrame
    ranks: pd.DataFrame = field(repr=False)
    n_blocks: int = 0
    n_systems: int = 0
    alpha: float = 0.05
    posthoc: str = "nemenyi"
    control: str | None = None
    dropped: dict = field(default_factory=dict)

    @property
    def notes(self) -> list[str]:
        """Sentences naming the systems left out of the blocks, and why."""
        return [dropped_note(self.dropped, self.n_systems, self.n_blocks)] \
            if self.dropped else []

    def to_frame(self) -> pd.DataFrame:
        """One row per system: mean rank, and the test's statistics repeated."""
        return pd.DataFrame({
            "system": self.mean_ranks.index, "mean_rank": self.mean_ranks.values,
            "friedman_statistic": self.statistic, "friedman_p_value": self.p_value,
            "iman_davenport": self.iman_davenport,
            "iman_davenport_p_value": self.iman_davenport_p_value,
            "critical_difference": self.critical_difference, "n_blocks": self.n_blocks,
            "alpha": self.alpha})


def _long_scores(source) -> pd.DataFrame:
    """``dataset, metric, system, score`` (oriented: larger is better) from a study
    (:func:`multistat.comparison.system_scores`) or a compare table (its
    ``score_a``/``score_b``, oriented by ``higher_is_better``)."""
    if hasattr(source, "children"):
        # heavy: xarray, lazily
        from multistat.comparison import system_scores

        table = system_scores(source, n_resamples=1, seed=0)
        sign = np.where(table["higher_is_better"].astype(bool), 1.0, -1.0)
        return pd.DataFrame({"dataset": table["dataset"].astype(str),
                             "metric": table["metric"].astype(str),
                             "system": table["system"].astype(str),
                             "score": table["score"].to_numpy(float) * sign})
    hib = (source["higher_is_better"].astype(bool) if "higher_is_better" in source
           else pd.Series(True, index=source.index))
    sign = np.where(hib, 1.0, -1.0)
    parts = [pd.DataFrame({"dataset": source["dataset"].astype(str),
                           "metric": source["metric"].astype(str),
                           "system": source[f"system_{s}"].astype(str),
                           "score": source[f"score_{s}"].to_numpy(float) * sign})
             for s in ("a", "b")]
    return pd.concat(parts, ignore_index=True)


def blocks_per_metric(source, metrics=None) -> dict[str, pd.DataFrame]:
    """``{metric: test sets x systems}`` of oriented scores (larger is better): the blocks
    of one Friedman test per metric. Blocks are test sets (datasets), never metrics: two
    metrics of one test set score the same outputs and are not independent replications
    (Demšar 2006, section 3.2.2, treats data sets as the blocks).

    ``source``: a study or a compare table (:func:`multistat.compare`); ``metrics``:
    restrict to these names (an unknown name is an error naming the known ones). Systems
    not scored on every test set of a metric are left out of that metric's blocks."""
    long = _long_scores(source)
    known = list(dict.fromkeys(long["metric"]))
    if metrics is not None:
        metrics = [str(m) for m in ([metrics] if isinstance(metrics, str) else metrics)]
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise ParameterError(f"`metrics`: unknown metric(s) {unknown}; the scores have "
                                 f"{known}")
        known = metrics
    out = {}
    for m in known:
        sub = long[long["metric"] == m]
        wide = sub.groupby(["dataset", "system"], sort=False)["score"].first().unstack(
            "system")
        kept = wide.dropna(axis=1, how="any")
        dropped = {str(s): [str(d) for d in wide.index[wide[s].isna()]]
                   for s in wide.columns if s not in kept.columns}
        kept.attrs["dropped"] = dropped
        if dropped:
            warnings.warn(f"metric {m!r}: " + dropped_note(dropped, kept.shape[1],
                                                          kept.shape[0]),
                          DroppedDataWarning, stacklevel=2)
        out[m] = kept
    return out


def dropped_note(dropped: Mapping, n_kept: int, n_blocks: int) -> str:
    """The sentence naming the systems a test across test sets left out, and why.

    Parameters
    ----------
    dropped : mapping
        ``{system: [test sets it has no score on]}``.
    n_kept, n_blocks : int
        Systems kept and test sets (blocks) used.

    Returns
    -------
    str

    Examples
    --------
    >>> for part in dropped_note({"C": ["wmt23"]}, 2, 3).split("; "):
    ...     print(part)
    1 system(s) left out, not scored on every test set: 'C' (no score on 'wmt23')
    the test ranks the 2 systems common to all 3 test sets
    """
    shown = "; ".join(
        f"{s!r} (no score on {', '.join(map(repr, ds[:3]))}"
        + (f" and {len(ds) - 3} more" if len(ds) > 3 else "") + ")"
        for s, ds in list(dropped.items())[:10])
    more = f"; and {len(dropped) - 10} more" if len(dropped) > 10 else ""
    return (f"{len(dropped)} system(s) left out, not scored on every test set: {shown}"
            f"{more}; the test ranks the {n_kept} systems common to all {n_blocks} test "
            "sets")


def _friedman_iv(scores, higher_is_better, alpha, posthoc, metric=None):
    """The scores as a blocks x systems frame (the options are checked on entry)."""
    if hasattr(scores, "children"):  # a study: the test sets of one metric are the blocks
        per = blocks_per_metric(scores, None if metric is None else [metric])
        if len(per) > 1:
            raise ParameterError(f"`metric`: the study has metrics {list(per)}; a Friedman "
                                 "test blocks on the test sets of one metric (metrics are "
                                 "not blocks): name one with metric=... "
                                 "(multistat.leaderboard.across.blocks_per_metric gives them all)")
        wide, higher_is_better = next(iter(per.values())), True
    elif isinstance(scores, pd.DataFrame):
        wide = scores
    else:
        raise ParameterTypeError("`scores` must be a pandas DataFrame (rows are blocks, "
                                 "columns are systems) or a study; got "
                                 f"{type(scores).__name__}")
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise ParameterTypeError(f"`higher_is_better` must be True or False; got "
                                 f"{higher_is_better!r}")
    try:
        values = wide.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        bad = [c for c in wide.columns if not pd.api.types.is_numeric_dtype(wide[c])]
        raise DataValidationError(f"`scores`: column(s) {bad[:3]} are not numeric") from None
    if wide.shape[1] < 3:
        raise DataValidationError(f"`scores` needs at least 3 systems (columns) for the "
                                  f"Friedman test (two systems: use a paired test such as "
                                  f"Wilcoxon over the blocks); got {wide.shape[1]}")
    if wide.shape[0] < 2:
        raise DataValidationError(f"`scores` needs at least 2 blocks (rows: test sets); "
                                  f"got {wide.shape[0]}")
    if pd.Index(wide.columns).has_duplicates:
        raise DataValidationError(f"`scores`: duplicated system columns "
                                  f"{list(wide.columns[wide.columns.duplicated()])[:3]}")
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataValidationError(f"`scores`: missing or infinite score for system "
                                  f"{wide.columns[j]!r} in block {wide.index[i]!r} "
                                  f"({int(bad.sum())} cell(s)); every system needs a score "
                                  "in every block")
    return wide, values, bool(higher_is_better), alpha


@checked(alpha=ALPHA, posthoc=choice(POSTHOCS))
def friedman(scores, *, higher_is_better=True, alpha=0.05, posthoc="nemenyi",
             control=None, metric=None) -> FriedmanResult:
    """Friedman test of k systems over N blocks, with a post-hoc test.

    Parameters
    ----------
    scores : object
        DataFrame with one row per block (a test set) and one column per system; or
        a study, whose per-system scores (:func:`multistat.system_scores`) of one metric
        make one block per dataset (the metric's own ``higher_is_better`` orients it, and
        the argument is ignored). Metrics are never blocks: one Friedman test per metric
        (:func:`blocks_per_metric`)
    higher_is_better : bool, optional
        whether larger scores are better (rank 1 = best)
    alpha : float, optional
        level of the critical difference and of ``reject``
    posthoc : str, optional
        ``"nemenyi"`` (all pairs, studentized range), ``"bonferroni-dunn"`` (each
        system against ``control``, normal z with Bonferroni over k - 1 comparisons) or
        ``"wilcoxon-holm"`` (all pairs, Wilcoxon signed-rank test on the block scores,
        Holm-corrected; Benavoli et al. 2016)
    control : optional
        system compared against with ``"bonferroni-dunn"`` (default: the best
        mean rank)
    metric : optional
        with a study: the metric whose test sets are the blocks (needed when the
        study has several metrics)

    Returns
    -------
    FriedmanResult
        ``pairwise`` columns: ``system_a, system_b, mean_rank_a, mean_rank_b,
        rank_difference`` (a - b; negative: a ranks better), ``statistic`` (Nemenyi:
        studentized range ``q = |diff| / sqrt(k (k+1) / (6N)) * sqrt 2``; Bonferroni-Dunn: z;
        Wilcoxon: the signed-rank statistic), ``p_value`` (raw), ``p_adjusted`` (Nemenyi's
        single-step p is already family-wise; Bonferroni or Holm otherwise), ``reject``
        (``p_adjusted <= alpha``), ``posthoc``, ``critical_difference`` (the rank
        difference the post-hoc needs; NaN for Wilcoxon), ``n_blocks``, ``alpha``.

    Notes
    -----
    With R_j the mean rank of system j over N blocks and k systems,
    chi2_F = 12N / (k(k+1)) [sum_j R_j^2 - k(k+1)^2 / 4], divided by the tie correction
    1 - sum(t^3 - t) / (N k (k^2 - 1)) as in scipy; p = P(chi2_{k-1} >= chi2_F).
    The Nemenyi p-value of a pair is ``P(Q_{k,inf} >= |R_a - R_b| sqrt 2 / SE)`` with
    SE = sqrt(k(k+1) / (6N)).

    Examples
    --------
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"A": [0.9, 0.8, 0.85, 0.7], "B": [0.8, 0.7, 0.8, 0.6],
    ...                      "C": [0.7, 0.75, 0.6, 0.65]})
    >>> r = friedman(wide)
    >>> round(r.statistic, 3), list(r.mean_ranks.index)
    (6.0, ['A', 'B', 'C'])
    """
    wide, values, higher_is_better, alpha = _friedman_iv(scores, higher_is_better, alpha,
                                                         posthoc, metric)
    systems = [str(c) for c in wide.columns]
    n_blocks, k = values.shape
    oriented = values if higher_is_better else -values
    ranks = stats.rankdata(-oriented, axis=1)  # 1 = best, ties averaged
    mean_ranks = ranks.mean(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns below 10 blocks; we report N
        fr = stats.friedmanchisquare(*values.T)
    chi2, p = float(fr.statistic), float(fr.pvalue)
    denom = n_blocks * (k - 1) - chi2
    if denom <= 0:  # every block ranks the systems identically
        ff, ff_p = np.inf, 0.0
    else:
        ff = (n_blocks - 1) * chi2 / denom
        ff_p = float(stats.f.sf(ff, k - 1, (k - 1) * (n_blocks - 1)))
    se = np.sqrt(k * (k + 1) / (6.0 * n_blocks))
    q_alpha = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / np.sqrt(2)
    cd = q_alpha * se
    mr = pd.Series(mean_ranks, index=pd.Index(systems, name="system"), name="mean_rank")
    if posthoc == "bonferroni-dunn":
        if control is None:
            control = str(mr.idxmin())
        elif str(control) not in systems:
            raise UnknownSystemError(f"`control` {control!r} is not a system; systems: "
                                     f"{', '.join(systems)}")
        control = str(control)
    elif control is not None:
        raise ParameterError("`control` applies only to posthoc='bonferroni-dunn'; got "
                             f"posthoc={posthoc!r}")
    pairwise = _pairwise(posthoc, values, oriented, systems, mean_ranks, se, cd, alpha,
                         control, n_blocks)
    order = np.argsort(mean_ranks, kind="stable")
    return FriedmanResult(
        statistic=chi2, p_value=p, iman_davenport=float(ff), iman_davenport_p_value=ff_p,
        mean_ranks=mr.iloc[order], critical_difference=float(cd), pairwise=pairwise,
        ranks=pd.DataFrame(ranks, index=wide.index, columns=systems), n_blocks=n_blocks,
        n_systems=k, alpha=alpha, posthoc=posthoc, control=control,
        dropped=dict(wide.attrs.get("dropped", {})))


def _pairwise(posthoc, values, oriented, systems, mean_ranks, se, cd, alpha, control,
              n_blocks) -> pd.DataFrame:
    k = len(systems)
    if posthoc == "bonferroni-dunn":
        c = systems.index(control)
        pairs = [(c, j) for j in range(k) if j != c]
    else:
        pairs = list(itertools.combinations(range(k), 2))
    ia = np.array([a for a, _ in pairs])
    ib = np.array([b for _, b in pairs])
    diff = mean_ranks[ia] - mean_ranks[ib]
    if posthoc == "nemenyi":
        statistic = np.abs(diff) / se * np.sqrt(2)
        p = stats.studentized_range.sf(statistic, k, np.inf)
        p_adj = p  # single-step: the range distribution already covers all k systems
        crit = cd
    elif posthoc == "bonferroni-dunn":
        statistic = diff / se
        p = 2 * stats.norm.sf(np.abs(statistic))
        p_adj = np.minimum(p * (k - 1), 1.0)
        crit = stats.norm.ppf(1 - alpha / (2 * (k - 1))) * se
    else:
        # heavy: statsmodels, lazily
        from statsmodels.stats.multitest import multipletests

        statistic = np.empty(len(pairs))
        p = np.empty(len(pairs))
        for i, (a, b) in enumerate(pairs):
            d = oriented[:, a] - oriented[:, b]
            if np.all(d == 0):
                statistic[i], p[i] = np.nan, 1.0
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # few blocks: scipy notes the exact method
                w = stats.wilcoxon(values[:, a], values[:, b])
            statistic[i], p[i] = float(w.statistic), float(w.pvalue)
        p_adj = multipletests(p, method="holm")[1]
        crit = np.nan
    p = np.asarray(p, dtype=float)
    p_adj = np.asarray(p_adj, dtype=float)
    return pd.DataFrame({
        "system_a": [systems[a] for a in ia], "system_b": [systems[b] for b in ib],
        "mean_rank_a": mean_ranks[ia], "mean_rank_b": mean_ranks[ib],
        "rank_difference": diff, "statistic": statistic, "p_value": p,
        "p_adjusted": p_adj, "reject": p_adj <= alpha, "posthoc": posthoc,
        "critical_difference": crit, "n_blocks": n_blocks, "alpha": alpha},
        columns=list(PAIRWISE_COLUMNS))


# ---------------------------------------------------------------------- replicability
REPLICABILITY_METHODS = ("bonferroni", "fisher")
REPLICABILITY_COLUMNS = ("metric", "system_a", "system_b", "test", "alternative",
                         "better", "n_datasets", "method", "alpha", "k", "k_bonferroni", "datasets",
                         "partial_conjunction_p")


@dataclass(frozen=True)
class ReplicabilityResult(Result):
    """Replicability analysis over N test sets (Dror et al. 2017).

    Attributes
    ----------
    k : estimated number of test sets with an effect, k_hat = #{u : p~(u/N) <= alpha}
    partial_conjunction_p : list, u = 1..N, of p~(u/N) = max_{v <= u} p(v/N) (the
        monotone partial conjunction p-values ``k`` counts)
    datasets : the test sets Holm's procedure rejects at ``alpha`` (smallest p first)
    p_values : Series of the input p-values indexed by test set
    method : ``"bonferroni"`` or ``"fisher"``
    alpha : level
    k_bonferroni : k_hat with Bonferroni (= ``len(datasets)``, whatever ``method``)
    """

    k: int
    partial_conjunction_p: list
    datasets: list
    p_values: pd.Series
    method: str
    alpha: float
    k_bonferroni: int

    def to_frame(self) -> pd.DataFrame:
        """One row per dataset: its p-value, with the count ``k`` and the method."""
        frame = pd.DataFrame({"dataset": [str(d) for d in self.p_values.index],
                              "p_value": np.asarray(self.p_values, dtype=float)})
        frame["k"], frame["k_bonferroni"] = self.k, self.k_bonferroni
        frame["method"], frame["alpha"] = self.method, self.alpha
        return frame


def partial_conjunction(p_values, method="bonferroni") -> np.ndarray:
    """Partial conjunction p-values p(u/N), u = 1..N, *before* the monotone step.

    With p_(1) <= ... <= p_(N): Bonferroni p(u/N) = min(1, (N - u + 1) p_(u));
    Fisher p(u/N) = P(chi2_{2(N-u+1)} >= -2 sum_{i=u}^{N} log p_(i)).
    """
    p = np.sort(np.asarray(p_values, dtype=float))
    n = len(p)
    u = np.arange(1, n + 1)
    if method == "bonferroni":
        return np.minimum((n - u + 1) * p, 1.0)
    with np.errstate(divide="ignore"):
        logs = -2 * np.log(p)
    tail = np.cumsum(logs[::-1])[::-1]  # sum_{i=u}^{N} -2 log p_(i)
    return stats.chi2.sf(tail, 2 * (n - u + 1))


def _p_series(p_values) -> pd.Series:
    if isinstance(p_values, pd.Series):
        s = p_values.copy()
        s.index = s.index.astype(str)
    elif isinstance(p_values, Mapping):
        s = pd.Series(dict(p_values), dtype=float)
        s.index = s.index.astype(str)
    elif isinstance(p_values, (Sequence, np.ndarray)) and not isinstance(p_values, str):
        arr = list(p_values)
        s = pd.Series(arr, index=[f"dataset{i + 1}" for i in range(len(arr))], dtype=object)
    else:
        raise ParameterTypeError("`p_values` must be a sequence, a Series indexed by test "
                                 "set, or a compare table; got "
                                 f"{type(p_values).__name__}")
    if len(s) == 0:
        raise ParameterError("`p_values` is empty; give one p-value per test set")
    for name, v in s.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= float(v) <= 1:
            raise ParameterError(f"`p_values`: test set {name!r} has p-value {v!r}; "
                                 "p-values must be numbers in [0, 1]")
    if s.index.has_duplicates:
        raise ParameterError(f"`p_values`: test set(s) named twice: "
                             f"{list(s.index[s.index.duplicated()].unique())[:3]}")
    return s.astype(float)


def _replicability_one(s: pd.Series, alpha: float, method: str) -> ReplicabilityResult:
    pc = np.maximum.accumulate(partial_conjunction(s.values, method))
    k = int(np.sum(pc <= alpha))
    pc_b = np.maximum.accumulate(partial_conjunction(s.values, "bonferroni"))
    k_b = int(np.sum(pc_b <= alpha))
    # Holm's step-down on the individual p-values: reject p_(i) while p_(i) <= alpha/(N-i+1)
    # -- the same condition as the monotone Bonferroni partial conjunction, so it rejects
    # exactly the k_bonferroni smallest p-values (Dror et al. 2017, section 4)
    order = np.argsort(s.values, kind="stable")
    datasets = [str(x) for x in s.index[order[:k_b]]]
    return ReplicabilityResult(k=k, partial_conjunction_p=[float(x) for x in pc],
                               datasets=datasets, p_values=s, method=method, alpha=alpha,
                               k_bonferroni=k_b)


@checked(alpha=ALPHA, method=choice(REPLICABILITY_METHODS))
def replicability(p_values, *, alpha=0.05, method="bonferroni"):
    """How many test sets, and which ones, show the effect (Dror et al. 2017).

    Parameters
    ----------
    p_values : object
        one p-value per test set (the p-values of one comparison, e.g. "A better
        than B", on N test sets): a sequence (named ``dataset1..N``), a Series or mapping
        indexed by test set, or a compare table (:func:`multistat.compare`), in which case
        the analysis runs for every metric x pair x test across the table's datasets, for
        each claim "``better`` is the better system" (in the metric's direction)
    alpha : float, optional
        family-wise level
    method : str, optional
        how the partial conjunction p-values combine the N - u + 1 largest
        p-values: ``"bonferroni"`` (valid under any dependence between test sets) or
        ``"fisher"`` (independent test sets; more powerful)

    Returns
    -------
    ReplicabilityResult, or a DataFrame for a compare table
        Result fields ``k``, ``partial_conjunction_p`` (u = 1..N), ``datasets`` (Holm).
        The table has one row per metric x pair x test x claim with the columns
        :data:`REPLICABILITY_COLUMNS` (``datasets`` and ``partial_conjunction_p`` joined by
        ``;``). A replicated claim has a direction, so the raw two-sided ``p_value`` of
        each dataset becomes one-sided: p/2 where the estimate favours ``better``,
        1 - p/2 where it does not (exact for the t, sign, Wilcoxon and permutation tests,
        approximate for the bootstrap); a one-sided table gives one claim per pair.

    Notes
    -----
    The partial conjunction null H0(u/N) says fewer than u test sets have an effect.
    With sorted p-values p_(1) <= ... <= p_(N), Bonferroni gives
    p(u/N) = (N - u + 1) p_(u) and Fisher p(u/N) = P(chi2_{2(N-u+1)} >= -2 sum_{i>=u}
    log p_(i)). Testing u = 1, 2, ... in order with the monotone p~(u/N) =
    max_{v<=u} p(v/N) gives k_hat = max{u : p~(u/N) <= alpha}, the number of test sets
    with an effect, with family-wise error control. Holm's procedure on the individual
    p-values identifies which (it rejects the k_hat_Bonferroni smallest p-values).

    Examples
    --------
    The example of Dror et al.'s code (github.com/rtmdrr/replicability-analysis-NLP):

    >>> r = replicability([0.168, 0.297, 0.357, 0.019, 0.218, 0.001], alpha=0.05)
    >>> r.k, r.datasets
    (1, ['dataset6'])
    >>> replicability([0.168, 0.297, 0.357, 0.019, 0.218, 0.001], method="fisher").k
    2
    """
    if isinstance(p_values, pd.DataFrame):
        return _replicability_table(p_values, alpha, method)
    return _replicability_one(_p_series(p_values), alpha, method)


def _one_sided(g: pd.DataFrame):
    """``(better, p)`` pairs of one-sided p-values for the claims "a is better than b" and
    "b is better than a" (better in the metric's direction) from one compare row group.

    A two-sided p-value becomes p/2 in the direction of the estimate and 1 - p/2 in the
    other (exact for tests whose two-sided p doubles the smaller one-sided p: t, sign,
    Wilcoxon, the permutation test; approximate for the bootstrap). A one-sided table
    already states its claim."""
    p = g["p_value"].to_numpy(float)
    est = g["estimate"].to_numpy(float) if "estimate" in g else np.zeros(len(g))
    hib = (g["higher_is_better"].to_numpy(bool) if "higher_is_better" in g
           else np.ones(len(g), bool))
    alt = g["alternative"].iloc[0]
    a, b = g["system_a"].iloc[0], g["system_b"].iloc[0]
    if alt == "two-sided":
        oriented = np.where(hib, est, -est)
        half = p / 2
        return [(a, np.where(oriented > 0, half, 1 - half)),
                (b, np.where(oriented < 0, half, 1 - half))]
    greater = alt == "greater"
    return [(a if greater == bool(hib[0]) else b, p)]


def _replicability_table(table: pd.DataFrame, alpha: float, method: str) -> pd.DataFrame:
    need = ("dataset", "metric", "system_a", "system_b", "test", "p_value")
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise DataValidationError(f"`p_values` table lacks column(s) {missing}; pass a "
                                  "table from multistat.compare (or a Series of p-values)")
    table = table.assign(alternative=table.get("alternative", "two-sided"))
    rows = []
    keys = ["metric", "system_a", "system_b", "test", "alternative"]
    every = list(dict.fromkeys(table["dataset"].astype(str)))
    narrowed: list[str] = []  # claims tested on fewer test sets than the table has, why
    for key, g in table.groupby(keys, sort=False):
        finite = np.isfinite(g["p_value"].to_numpy(dtype=float))
        nan_on = [str(d) for d in g["dataset"][~finite]]
        absent = [d for d in every if d not in set(g["dataset"].astype(str))]
        if nan_on or absent:
            why = "; ".join(t for t in (
                f"no row on {', '.join(map(repr, absent))} (a system not in that test set)"
                if absent else "",
                f"p-value NaN on {', '.join(map(repr, nan_on))}" if nan_on else "") if t)
            narrowed.append(f"{key[1]} vs {key[2]} ({key[0]}, {key[3]}): {why}")
        g = g[finite]
        if len(g) == 0:
            continue
        if g["dataset"].duplicated().any():
            raise DataValidationError(f"`p_values` table: dataset "
                                      f"{g['dataset'][g['dataset'].duplicated()].iloc[0]!r} "
                                      f"appears twice for {dict(zip(keys, key))}")
        for better, p in _one_sided(g):
            r = _replicability_one(pd.Series(np.clip(p, 0, 1),
                                             index=g["dataset"].astype(str)), alpha, method)
            rows.append(dict(zip(keys, key), better=better, n_datasets=len(g),
                             method=method, alpha=alpha, k=r.k, k_bonferroni=r.k_bonferroni,
                             datasets=";".join(r.datasets),
                             partial_conjunction_p=";".join(
                                 f"{x:.6g}" for x in r.partial_conjunction_p)))
    if not rows:
        raise DataValidationError("`p_values` table has no finite p-value")
    out = pd.DataFrame(rows, columns=list(REPLICABILITY_COLUMNS))
    notes = []
    if narrowed:
        notes.append(f"{len(narrowed)} of {table.groupby(keys, sort=False).ngroups} "
                     f"pair(s) tested on fewer than the table's {len(every)} test sets: "
                     + "; ".join(narrowed[:5])
                     + (f"; and {len(narrowed) - 5} more" if len(narrowed) > 5 else ""))
        warnings.warn(notes[0], DroppedDataWarning, stacklevel=3)
    out.attrs["multistat"] = {"notes": notes, "narrowed": narrowed}
    return out


def wide_scores(results: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
    """Test sets x systems of oriented scores (larger is better) of one metric from a
    compare table (``metric`` may be left out when the table has one); only systems
    scored on every test set are kept."""

    cols = {"dataset", "metric", "system_a", "system_b", "score_a", "score_b"}
    if not cols <= set(results.columns):
        return pd.DataFrame()
    per = blocks_per_metric(results, None if metric is None else [metric])
    if len(per) > 1:
        raise ParameterError(f"`metric`: the table has metrics {list(per)}; name one "
                             "(each metric is its own Friedman test)")
    return next(iter(per.values()))


def across_results(results: pd.DataFrame, *, test: str | None = None,
                   alpha: float | None = None) -> tuple[dict, pd.DataFrame | None]:
    """The analyses across test sets of a compare table: one Friedman test per metric
    (blocks: the test sets; metrics with at least 3 systems scored on every one of at least
    2 test sets) and the replicability of every claim (Bonferroni and Fisher ``k``).

    Parameters
    ----------
    results : pandas.DataFrame
        A compare table with ``score_a``/``score_b`` and at least two datasets.
    test : str, optional
        The test whose one-sided p-values the replicability analysis counts (default:
        the table's first test).
    alpha : float, optional
        Level (default: the table's ``alpha``, else 0.05).

    Returns
    -------
    tuple
        ``({metric: FriedmanResult}, replicability table or None)``; ``({}, None)``
        when the table has one test set.

    Examples
    --------
    >>> import warnings, multistat
    >>> from multistat import cube
    >>> from multistat.demo import demo_frame
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     table = multistat.compare(cube.from_frame(demo_frame()), tests="t")
    >>> frs, rep = across_results(table)
    >>> isinstance(frs, dict)
    True
    """
    cols = {"dataset", "metric", "system_a", "system_b", "score_a", "score_b"}
    if not cols <= set(results.columns) or results["dataset"].nunique() < 2:
        return {}, None  # one test set: nothing across test sets
    if alpha is None:
        alpha = float(results["alpha"].iloc[0]) if "alpha" in results else 0.05
    with warnings.catch_warnings():  # the systems left out go to each result's notes
        warnings.simplefilter("ignore", DroppedDataWarning)
        blocks = blocks_per_metric(results)
        frs = {m: friedman(w, alpha=alpha) for m, w in blocks.items()
               if w.shape[0] >= 2 and w.shape[1] >= 3}
    if not frs:
        return {}, None
    rep = None
    if "test" in results:
        tests = list(dict.fromkeys(results["test"]))
        test = test if isinstance(test, str) and test in tests else tests[0]
        sub = results[results["test"] == test]
        with warnings.catch_warnings():  # the narrowed pairs are in the table's notes
            warnings.simplefilter("ignore", DroppedDataWarning)
            b = replicability(sub, alpha=alpha, method="bonferroni")
            f = replicability(sub, alpha=alpha, method="fisher")
        rep = b.assign(k_fisher=f["k"].to_numpy())
        rep.attrs = b.attrs
    return frs, rep
