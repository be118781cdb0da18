"""One run request: every option of a ``compare`` run, validated once, frozen.

:class:`RunRequest` holds what a run of :func:`multistat.compare` needs, in six groups:

* the **selection**: ``tests``, ``pairs``, ``metrics``, ``datasets``;
* the **hypothesis**: ``alternative``, ``null_value``, ``alpha``, ``confidence_level``,
  ``statistic``;
* **resampling**: ``n_resamples``, ``seed``, ``ci_method``, ``bootstrap_pvalue``,
  ``cluster``;
* **correction**: ``correction`` and its ``family``;
* the **extras**: ``effect_sizes``, ``power``, ``mde_power``, ``equivalence_margin``,
  ``test_options``;
* **execution**: ``scheduler``, ``n_chunks``, ``memory_limit`` (held as a
  :class:`~multistat._budget.Budget`), ``max_cost``, ``progress``.

Each default is written here once, and :meth:`RunRequest.__post_init__` is the one
validator: every construction, :func:`dataclasses.replace` and
:meth:`RunRequest.with_options` runs it, so a request that exists is valid and its values
are normalized (``tests`` a tuple, ``seed`` an int, ``"none"`` correction None, the memory
limit a Budget, ...). ``compare``, ``rank``, the equivalence columns, the Westfall-Young
step-down, the report and the command line read the request's fields and check nothing
again (in the manner of scipy's ``BootstrapMethod`` and scikit-learn's declared parameter
constraints). What depends on the study (systems named by ``pairs``, binary metrics for
McNemar, the estimated cost) is checked by ``compare`` before it computes anything.

A test's capabilities come from its registry spec
(:class:`~multistat.significance.TestSpec`): which tests the Westfall-Young step-down
takes, which have a TOST, which resample. Nothing here names a test.

Example
-------
>>> from multistat.request import RunRequest
>>> req = RunRequest(tests="t", alpha=0.01)
>>> req.tests, req.level, req.correction
(('t',), 0.99, 'holm')
>>> req.with_options(correction="none").correction is None
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from multistat._budget import DEFAULT_MAX_COST, Budget
from multistat._scheduler import check_scheduler
from multistat._typing import DEFAULT_N_RESAMPLES, STATISTICS
from multistat._validation import (
    ALPHA,
    ALTERNATIVE,
    CONFIDENCE_LEVEL,
    N_RESAMPLES,
    REAL,
    SEED,
    Option,
    check_choice,
    check_positive,
    check_probability,
    check_real,
    choice,
    integer,
    optional,
)
from multistat.correct import METHODS
from multistat.errors import ParameterError, ParameterTypeError, show
from multistat.significance import REGISTRY, TestSpec, get_test

#: the tests ``compare`` runs unless told otherwise
DEFAULT_TESTS = ("t", "wilcoxon", "sign", "bootstrap", "permutation")
#: corrections by resampling step-down over the shared plan (:mod:`multistat.comparison.stepdown`)
STEPDOWN_CORRECTIONS = ("westfall-young", "westfall-young-maxT", "westfall-young-minP")
CI_METHODS = ("basic", "bca", "percentile", "studentized")
BOOTSTRAP_PVALUES = ("shifted", "berg-kirkpatrick", "sacrebleu")


def _names(name: str, value: object) -> tuple[Any, ...] | None:
    """None, or a tuple of names (one string is one name)."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    try:
        return tuple(value)  # type: ignore[arg-type]  # any iterable; TypeError if not
    except TypeError:
        raise ParameterTypeError(f"`{name}` must be a name or a list of names; got "
                                 f"{type(value).__name__}") from None


def _pairs(value: Any) -> str | tuple[Any, ...]:
    """``"all"``, ``"baseline:<system>"``, or a tuple of ``(a, b)`` name pairs (checked
    against each dataset's systems by ``compare``)."""
    if isinstance(value, str):
        return value
    try:
        pairs = tuple(tuple(p) if not isinstance(p, str) else p for p in value)
    except TypeError:
        raise ParameterTypeError("`pairs` must be 'all', 'baseline:<system>' or a list of "
                                 f"(a, b) pairs; got {type(value).__name__}") from None
    seen: set[Any] = set()
    for pair in pairs:  # a repeated pair would count twice in its correction family
        if pair in seen:
            raise ParameterError(f"`pairs` lists the pair {show(pair)} twice; each pair "
                                 "once (a repeated pair would be counted twice by the "
                                 "correction)")
        seen.add(pair)
    return pairs


def _power(value: object) -> bool | float:
    if value is True or value is False:
        return value
    if value is None:
        return False
    target = check_real("power", value)
    if not math.isfinite(target) or target == 0:
        raise ParameterError("`power` must be False, True (retrospective) or the nonzero "
                             f"difference to detect, in metric units; got {show(value)}")
    return target


#: the fields of :class:`RunRequest` checked by a declared option alone (shared with every
#: analysis family: :mod:`multistat._validation`); cross-field checks follow in
#: :meth:`RunRequest.__post_init__`
FIELD_OPTIONS = {
    "alternative": ALTERNATIVE, "null_value": REAL, "alpha": ALPHA,
    "statistic": choice(STATISTICS), "n_resamples": N_RESAMPLES, "seed": SEED,
    "ci_method": choice(CI_METHODS), "bootstrap_pvalue": choice(BOOTSTRAP_PVALUES),
    "mde_power": Option(check_probability, "the power of the mde column, in (0, 1)"),
}


@dataclass(frozen=True)
class RunRequest:
    """The options of one ``compare`` run (see :func:`multistat.compare` for each field).

    Build it with keywords (``RunRequest(tests=("t",), alpha=0.01)``), derive another with
    :meth:`with_options`; both validate. ``confidence_level=None`` means ``1 - alpha``
    (:attr:`level`); ``memory_limit`` is held as a :class:`~multistat._budget.Budget`.

    Parameters
    ----------
    tests, pairs, metrics, datasets : optional
        What is compared: the tests (names in the registry
        :mod:`multistat.significance`), the pairs of systems, and the metrics and
        datasets to keep.
    alternative, null_value, alpha, confidence_level, statistic : optional
        The hypothesis: its direction and margin on the difference a - b, the level of
        the decisions and of the intervals, and what the resampling tests compare.
    n_resamples, seed, ci_method, bootstrap_pvalue, cluster : optional
        The resampling: the shared plan's size and seed, the bootstrap interval and
        p-value, and resampling whole groups.
    correction, family : optional
        The multiple-testing correction and its families.
    effect_sizes, power, mde_power, equivalence_margin, test_options : optional
        Extra columns (effect sizes, power, the minimum detectable difference, TOST)
        and the options of single tests.
    scheduler, n_chunks, memory_limit, max_cost, progress : optional
        How the run is executed; none of them changes a result (``max_cost`` stops a
        run before it starts).

    See Also
    --------
    multistat.compare : every field in detail; ``compare(study, request)`` runs it.
    """

    # selection
    tests: Any = DEFAULT_TESTS
    pairs: Any = "all"
    metrics: Any = None
    datasets: Any = None
    # hypothesis
    alternative: str = "two-sided"
    null_value: float = 0.0
    alpha: float = 0.05
    confidence_level: float | None = None
    statistic: str = "mean"
    # resampling
    n_resamples: int = DEFAULT_N_RESAMPLES
    seed: Any = 0
    ci_method: str = "basic"
    bootstrap_pvalue: str = "shifted"
    cluster: str | None = None
    # correction
    correction: str | None = "holm"
    family: Any = None
    # extras
    effect_sizes: bool = True
    power: Any = False
    mde_power: float = 0.8
    equivalence_margin: float | None = None
    test_options: Mapping[str, Any] | None = None
    # execution
    scheduler: Any = "threads"
    n_chunks: int | None = None
    memory_limit: Any = None
    max_cost: float | None = DEFAULT_MAX_COST
    progress: bool = False

    def __post_init__(self) -> None:

        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        tests = _names("tests", self.tests)
        if not tests:
            raise ParameterError("`tests` is empty; name at least one of "
                                 f"{', '.join(sorted(REGISTRY))}")
        for t in tests:
            get_test(t)
        if len(set(tests)) != len(tests):
            raise ParameterError(f"`tests` lists a test twice: {tests}")
        put("tests", tests)
        put("pairs", _pairs(self.pairs))
        put("metrics", _names("metrics", self.metrics))
        put("datasets", _names("datasets", self.datasets))
        for name, option in FIELD_OPTIONS.items():  # the declared options, in order
            put(name, option(name, getattr(self, name)))
        alpha = self.alpha
        if self.confidence_level is None:
            if 1 - alpha == 1:  # the default level 1 - alpha rounds to 1
                raise ParameterError(
                    f"`alpha` {alpha!r} is too small: the intervals' level 1 - alpha rounds "
                    "to 1 (alpha must exceed 5.6e-17 = 2**-54, or give `confidence_level`)")
        else:
            put("confidence_level", CONFIDENCE_LEVEL("confidence_level", self.confidence_level))
        correction = None if self.correction == "none" else self.correction

        if correction is not None and correction not in METHODS + STEPDOWN_CORRECTIONS:
            raise ParameterError(f"`correction` must be one of "
                                 f"{', '.join(METHODS + STEPDOWN_CORRECTIONS)}, 'none' or "
                                 f"None; got {show(correction)}")
        put("correction", correction)
        if correction in STEPDOWN_CORRECTIONS:
            closed = [t for t in tests if not REGISTRY[t].joint_null]
            if closed:
                have = [s.name for s in REGISTRY.values() if s.joint_null]
                raise ParameterError(
                    f"correction='westfall-young' needs a resampling test ({' or '.join(have)}"
                    "): its joint null distribution comes from their shared plan; "
                    f"{', '.join(closed)} {'is' if len(closed) == 1 else 'are'} closed-form "
                    f"or keep no resampled arrays — run tests=('{have[0]}',), or use "
                    "correction='holm'")
            if self.statistic != "mean":
                raise ParameterError("correction='westfall-young' works on the mean (or "
                                     "corpus metric) statistic; got statistic="
                                     f"{self.statistic!r}")
        put("family", self.family if self.family is None or isinstance(self.family, str)
            else _names("family", self.family))
        if self.cluster is not None:
            put("cluster", check_choice("cluster", self.cluster, ("group",)))
            # the TOST of a closed-form test (t-cluster) runs on the same groups
            resampled = [t for t in tests if REGISTRY[t].resampling]
            if correction in STEPDOWN_CORRECTIONS or (self.equivalence_margin is not None
                                                      and resampled):
                raise ParameterError("cluster='group' is not available with Westfall-Young "
                                     "corrections or equivalence margins of resampling "
                                     "tests (their resampling plans are iid); use "
                                     "correction='holm'")
        put("effect_sizes", bool(self.effect_sizes))
        put("power", _power(self.power))
        if self.equivalence_margin is not None:
            margin = check_real("equivalence_margin", self.equivalence_margin)
            if not (margin > 0 and math.isfinite(margin)):
                raise ParameterError("`equivalence_margin` must be a positive number "
                                     f"(metric units); got {margin!r}")
            put("equivalence_margin", margin)
        put("test_options", _check_test_options(self.test_options, tests))

        put("scheduler", check_scheduler(self.scheduler))  # an address too, always
        put("n_chunks", optional(integer(minimum=1))("n_chunks", self.n_chunks))
        put("memory_limit", Budget.of(self.memory_limit))
        max_cost = self.max_cost
        if max_cost is None or (isinstance(max_cost, float) and math.isinf(max_cost)
                                and max_cost > 0):
            max_cost = None
        else:
            max_cost = check_positive("max_cost", max_cost)
        put("max_cost", max_cost)
        put("progress", bool(self.progress))

    # ------------------------------------------------------------------ derived values
    @property
    def level(self) -> float:
        """The intervals' confidence level: ``confidence_level``, or ``1 - alpha``."""
        return 1 - self.alpha if self.confidence_level is None else self.confidence_level

    @property
    def budget(self) -> Budget:
        """The working-memory budget every layer sizes its slabs by."""
        return Budget.of(self.memory_limit)  # held as a Budget: returned as it is

    @property
    def stepdown(self) -> bool:
        """Whether the correction is the Westfall-Young step-down over the shared plan."""
        return self.correction in STEPDOWN_CORRECTIONS

    @property
    def specs(self) -> list[TestSpec]:
        """The registry specs of :attr:`tests`, in order."""

        return [REGISTRY[t] for t in self.tests]

    def with_options(self, **changes: Any) -> RunRequest:
        """A new request with ``changes`` applied (validated; unknown names refused)."""
        unknown = sorted(set(changes) - set(option_names()))
        if unknown:
            raise ParameterTypeError(
                f"unknown option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(u) for u in unknown)}; a run request takes "
                f"{', '.join(option_names())}")
        return dataclasses.replace(self, **changes) if changes else self

    def metadata(self) -> dict[str, Any]:
        """The request as the table's run metadata records it (JSON values)."""
        return {"seed": self.seed, "tests": list(self.tests), "statistic": self.statistic,
                "pairs": self.pairs if isinstance(self.pairs, str) else
                [list(p) for p in self.pairs],
                "alternative": self.alternative, "null_value": self.null_value,
                "alpha": self.alpha, "confidence_level": self.level,
                "n_resamples": self.n_resamples, "correction": self.correction or "none",
                "family": self.family if self.family is None or isinstance(self.family, str)
                else list(self.family),
                "ci_method": self.ci_method, "bootstrap_pvalue": self.bootstrap_pvalue,
                "test_options": {k: dict(v) for k, v in (self.test_options or {}).items()},
                "mde_power": self.mde_power}


def option_names() -> tuple[str, ...]:
    """Every option a run request takes (its public fields), in declaration order."""
    return tuple(f.name for f in dataclasses.fields(RunRequest) if f.init)


def build_request(request: RunRequest | None = None, /, **options: Any) -> RunRequest:
    """``request`` (default: all defaults) with ``options`` applied: the one way a run
    request is made from keywords (``compare``, ``rank`` and the command line use it)."""
    if request is None:
        request = RunRequest()
    elif not isinstance(request, RunRequest):
        raise ParameterTypeError("`request` must be a multistat.RunRequest (or None); got "
                                 f"{type(request).__name__}")
    return request.with_options(**options)


def _check_test_options(test_options: object, tests: tuple[str, ...]
                        ) -> dict[str, dict[str, Any]]:
    """``{test: {option: value}}`` checked against the tests run and their signatures."""

    if test_options is None:
        return {}
    if not isinstance(test_options, Mapping):
        raise ParameterError("`test_options` must be a dict {test name: {option: value}}; "
                             f"got {type(test_options).__name__}")
    out = {}
    for name, opts in test_options.items():
        if name not in tests:
            raise ParameterError(f"`test_options` names test {name!r}, which is not among "
                                 f"the tests run ({', '.join(tests)})")
        if not isinstance(opts, Mapping):
            raise ParameterError(f"`test_options[{name!r}]` must be a dict of options; got "
                                 f"{type(opts).__name__}")
        allowed = REGISTRY[name].options()
        fixed = {"alternative", "null_value", "confidence_level"}  # compare's own keywords
        for key in opts:
            if key in fixed or (allowed is not None and key not in allowed):
                ok = sorted((allowed or set()) - fixed)
                raise ParameterError(
                    f"`test_options[{name!r}]`: unknown option {key!r}; {name} takes "
                    f"{', '.join(ok) if ok else 'no options'}"
                    + (f" ({key} is set for all tests by compare's own keyword)"
                       if key in fixed else ""))
        out[name] = dict(opts)
    return out
