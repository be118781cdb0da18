"""The result object and the registry shared by every significance test.

Contract for a registered test function::

    func(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
         **options) -> TestResult

``x`` and ``y`` are paired arrays with the instances on the **last** axis; leading axes
are batch axes (e.g. pairs), so one call tests many pairs at once and every field of the
result is an array of the leading shape (a 0-d array/float for 1-d input).
Hypotheses are about the difference ``a - b`` (``x - y``) of the test's statistic:
``alternative="greater"`` means H1: theta(x - y) > null_value.

``compare`` runs every test through its spec's batch entry (:meth:`TestSpec.run`,
:mod:`multistat.significance._batch`): study slab + pair indices + context ->
``BatchResult``; a spec without ``batch`` is run through ``func`` over slabs of pairs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from multistat._result import Result
from multistat.errors import DataValidationError, ParameterError
from multistat.significance import _batch


@dataclass(frozen=True)
class TestResult(Result):
    """Outcome of one paired test (fields may be arrays over batch axes).

    Attributes
    ----------
    test : registry name of the test
    statistic : the test statistic (t, W, number of positive signs, ...)
    p_value : p-value for ``alternative``
    estimate : point estimate of theta(a - b) in metric units (mean, median, HL...)
    ci_low, ci_high : confidence interval for theta(a - b) at ``confidence_level``
    n : number of pairs used (after removing zeros where the test does)
    alternative, null_value : the hypothesis tested
    statistic_kind : "mean", "median" or "corpus"
    note : empty, or why a value is NaN / what was adjusted
    extra : further named arrays (e.g. ``z`` for Wilcoxon) that go into the tidy table
    """

    __test__ = False  # not a pytest class

    test: str
    statistic: Any
    p_value: Any
    estimate: Any
    ci_low: Any
    ci_high: Any
    confidence_level: float
    n: Any
    alternative: str
    null_value: float
    statistic_kind: str = "mean"
    note: Any = ""
    extra: dict = field(default_factory=dict)
    _ci_fn: Callable[[float], tuple[Any, Any]] | None = field(default=None, repr=False,
                                                              compare=False)

    def confidence_interval(self, confidence_level: float | None = None):
        """``(low, high)``; another level than the stored one is recomputed if possible."""
        if confidence_level is None or confidence_level == self.confidence_level:
            return self.ci_low, self.ci_high
        if self._ci_fn is None:
            raise ParameterError(
                f"`confidence_level` {confidence_level!r}: this result only holds the "
                f"{self.confidence_level!r} interval; rerun the test with that level"
            )
        return self._ci_fn(confidence_level)

    def to_dict(self) -> dict:
        """Flat mapping of the public fields (arrays kept as arrays)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if not f.name.startswith("_") and f.name != "extra"}
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class TestSpec:
    """A registry entry: the function, its batch entry and what it assumes (manual Table 3).

    Attributes
    ----------
    name, func : registry name and the per-call test function (contract above)
    family : ``"parametric" | "rank" | "resampling" | "binary"`` (or a new one)
    statistic_kinds : statistics it can test: ``("mean",)``, ``("median",)``, ...
    assumes_symmetric, assumes_normal : its assumptions about the differences; they decide
        the recommended / non-preferred / inappropriate lists of
        :func:`multistat.analyze` (manual Table 2)
    binary_only : needs 0/1 scores (``compare`` refuses other metrics)
    resampling : uses a resampling plan (``compare`` records ``seed`` and
        ``n_resamples``; it is non-preferred in the analysis for its cost)
    description : one line for listings
    batch : ``batch(slab, ia, ib, ctx) -> BatchResult`` (see
        :mod:`multistat.significance._batch`); None: the vectorized ``func`` over slabs
        of pairs (:func:`~multistat.significance._batch.closed_form_batch`)
    supports_corpus : can test a corpus-level metric (BLEU from sufficient statistics);
        otherwise such rows are NaN with a note
    all_pairs : the batch takes every pair of a group in one call (it shares per-system
        work across pairs and slabs the pairs itself); otherwise ``compare`` calls it
        once per slab of pairs sized by the memory budget
    bytes_per_value : working memory of the batch per pair x metric x instance, used to
        size the slabs of pairs
    advised : :func:`multistat.analyze` may recommend it (NLPStatTest's Table 2 is about
        tests of paired per-instance scores); False for tests of another design, such as
        ratings by rater (``"mixed"``) or two unpaired samples (``"mannwhitney"``)
    reasons : the advice :func:`multistat.analyze` shows for it, by situation of the
        differences: ``"normal"`` (symmetric and normal), ``"symmetric"`` (symmetric, not
        normal), ``"skewed"``; a missing situation gets the generic reason of its list
    joint_null : its batch keeps per-system arrays on the shared resampling plan
        (:attr:`~multistat.significance.BatchResult.resampled`: ``"dist"`` bootstrap
        distributions, ``"flips"`` sign-flipped sums, or corpus ``"swapped"``/``"total"``
        statistics) from which every pair's resampled statistic is formed: the
        Westfall-Young step-down (``correction="westfall-young"``) takes it
    score_distribution : its ``"dist"`` arrays are each system's bootstrap distribution
        of its score as the leaderboard shows it (mean or corpus metric, the shared plan
        of :func:`multistat.system_scores`): :func:`multistat.rank` reuses them for its
        rank intervals instead of drawing the plan again
    equivalence : valid at any ``null_value`` with one-sided alternatives, its estimate
        on the metric's scale: ``compare(equivalence_margin=...)`` runs its two one-sided
        tests (TOST) in the same walk
    estimate_label : what its ``estimate`` is, for the report's axes (``None``: from the
        row's ``statistic_kind``: mean, median or corpus score of A - B)
    effect_size : the effect columns that match its statistic, in the order the report
        prefers them (e.g. ``("wilcoxon_r", "hodges_lehmann")``; None: by
        ``statistic_kind``)
    null_statistic : ``n -> value`` of its ``statistic`` when A and B do not differ (the
        sign test's n/2, Wilcoxon's n(n+1)/4), so the report reads a direction from the
        statistic where the estimate is exactly 0; None: the estimate decides
    p_floor : ``p_floor(B, *, alternative, bootstrap_pvalue, n_units) ->`` the smallest
        p-value it can give with ``B`` resamples (:mod:`multistat.pfloor` warns when a
        family's correction cannot reach ``alpha`` from it); None: its p-value is no
        count over resamples
    cost_per_value : the cost model's operations per pair x metric x instance (closed
        form, before the log n of sorting) or per resample x instance (resampling), as a
        multiple of the built-in tests' unit (:mod:`multistat._cost`)
    uses_runs : it reads the per-run scores of a study with runs (ASO); the other tests
        use the run means and their note says so
    cluster_resampling : with ``cluster="group"`` it respects the groups: it resamples
        whole groups (the bootstrap and permutation tests) or uses them in its standard
        error (``"t-cluster"``); the others treat instances as independent and their
        note says so
    label : the report's name of the test (default: the registry name)
    missing : what ``compare`` gives the test on a study with holes (``missing="keep"``,
        instances only some systems have; :mod:`multistat.significance._holes`):
        ``"pairwise"`` (default) runs it on each pair's joint instances, the instances
        both systems have; ``"own"`` hands it the scores with their NaN cells, which it
        handles itself (the unpaired tests use each system's own scores, ``"mixed"`` its
        ratings)
    """

    __test__ = False

    name: str
    func: Callable[..., TestResult]
    family: str  # "parametric" | "rank" | "resampling" | "binary"
    statistic_kinds: tuple[str, ...]  # statistics it can test: ("mean",), ("median",), ...
    assumes_symmetric: bool
    assumes_normal: bool
    binary_only: bool = False
    resampling: bool = False
    description: str = ""
    batch: Callable[..., Any] | None = field(default=None, compare=False)
    supports_corpus: bool = False
    all_pairs: bool = False
    bytes_per_value: int = 64
    advised: bool = True
    reasons: Mapping[str, str] = field(default_factory=dict, compare=False)
    joint_null: bool = False
    score_distribution: bool = False
    equivalence: bool = False
    estimate_label: str | None = None
    effect_size: tuple[str, ...] | None = None
    null_statistic: Callable[[Any], Any] | None = field(default=None, compare=False)
    p_floor: Callable[..., float] | None = field(default=None, compare=False)
    cost_per_value: float = 1.0
    uses_runs: bool = False
    cluster_resampling: bool = False
    label: str = ""
    missing: str = "pairwise"

    def run(self, slab, ia, ib, ctx):
        """This test on pairs ``(ia, ib)`` of ``slab`` with context ``ctx`` ->
        :class:`~multistat.significance._batch.BatchResult` ``(len(ia), metrics)``."""
        ia = np.asarray(ia, dtype=np.intp)
        ib = np.asarray(ib, dtype=np.intp)
        if slab.is_corpus and not self.supports_corpus:
            others = [s.name for s in REGISTRY.values() if s.supports_corpus]
            return _batch.not_applicable(
                self.name, (len(ia), slab.shape[1]),
                f"{self.name}: not applicable to a corpus metric (use "
                f"{' or '.join(others) or 'a test for corpus metrics'})",
                self.statistic_kinds[0])
        if self.batch is not None:
            return self.batch(slab, ia, ib, ctx)
        return _batch.closed_form_batch(self, slab, ia, ib, ctx)

    def options(self) -> set[str] | None:
        """Option names ``compare(test_options={name: {...}})`` may give this test (None:
        any; the function takes ``**kwargs``)."""
        names = _batch.accepted_keywords(self.func)
        if names is None:
            return None
        ctx_fields = {f.name for f in dataclasses.fields(_batch.Context)} - {
            "options", "budget", "progress"}
        return (names | (ctx_fields if self.resampling else set())) - {
            "x", "y"}


REGISTRY: dict[str, TestSpec] = {}


def register(spec: TestSpec) -> TestSpec:
    if spec.name in REGISTRY:
        raise ParameterError(f"test {spec.name!r} is registered twice")
    REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> TestSpec:
    """Remove a registered test (e.g. one a test registered for itself)."""
    try:
        return REGISTRY.pop(name)
    except KeyError:
        raise ParameterError(f"test {name!r} is not registered") from None


def get_test(name: str) -> TestSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParameterError(
            f"unknown test {name!r}; known tests: {', '.join(sorted(REGISTRY))}"
        ) from None


def as_pairs(x, y, *, overflow: str = "raise") -> tuple[np.ndarray, np.ndarray]:
    """Validate paired input: same shape, at least one instance, float64.

    ``overflow="raise"``: finite scores whose difference ``x - y`` overflows the float
    range (scores near +-1.8e308) raise a :class:`DataValidationError` saying so;
    ``"allow"`` leaves it to the caller (the t test rescales and notes it)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ParameterError(
            f"paired samples must have the same shape; got x {x.shape} and y {y.shape}"
        )
    if x.ndim == 0 or x.shape[-1] < 1:
        raise ParameterError("paired samples need at least one instance on the last axis")
    if overflow == "raise":
        overflow_check(x, y)
    return x, y


def overflow_check(x, y, where: str = "") -> None:
    """Raise if ``x - y`` overflows for finite ``x`` and ``y``."""
    with np.errstate(over="ignore", invalid="ignore"):
        bad = np.isinf(x - y)
        if not bad.any():  # the common case: no infinite difference at all
            return
        bad &= np.isfinite(x) & np.isfinite(y)
    if bad.any():
        big = float(np.max(np.abs(np.where(bad, x, 0.0))))
        raise DataValidationError(
            f"overflow{where}: the difference a - b of {int(bad.sum())} score pair(s) "
            f"exceeds the float range (|scores| up to {big:.3g}); rescale the scores "
            f"(e.g. divide by 1e300) -- the tests do not depend on the units")
