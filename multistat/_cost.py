"""Up-front estimate of the work a ``compare`` request asks for, so an absurd request
(e.g. 10^9 resamples, or a median bootstrap over 10^5 pairs of 10^6 instances) stops
before it starts, naming the estimate and the option that raises the limit.

The unit is one elementary operation on one score (an add, a compare, an index). The
model follows how the engine computes (per system first, pairs last):

- a resampling test draws its plan, ``B x n`` indices or signs, then for the *mean*
  (bootstrap, permutation) adds ``B x metrics x (systems x n + pairs)`` — each resample
  projects every system's scores once, then pairs are differences of per-system
  statistics; for the *median* ``B x metrics x pairs x n x log2 n`` — medians are per
  pair;
- closed-form tests (t, Wilcoxon, sign, McNemar...): ``metrics x pairs x n x log2 n``
  (sorting dominates rank tests; t and McNemar cost less).

Measured throughput (this model's operations per second, one ``compare`` on the demo
study, 2 shared cores, 2026-11-23): bootstrap 5e7, permutation 1.4e8, closed-form tests
(small n, overhead-bound) 1.4e6. So the default limit 10^13 is about two days of
bootstrap: far beyond what anyone asks for on purpose, far above every real study we
know (the largest leaderboard target, 200 systems x 10 metrics x 50,000
instances with 1,000 bootstrap resamples, is ~1e11, about half an hour).
"""

from __future__ import annotations

import math

# the limit and the throughput it is stated in, shared with the power simulations
from multistat._budget import DEFAULT_MAX_COST, OPS_PER_SECOND, check_cost  # noqa: F401
from multistat.significance import REGISTRY


def estimate_cost(*, n_systems: int, n_pairs: int, n_metrics: int, n_instances: int,
                  tests, n_resamples: int, statistic: str = "mean") -> float:
    """Estimated operations of comparing ``n_pairs`` pairs of ``n_systems`` systems on
    ``n_metrics`` metrics of ``n_instances`` instances with ``tests`` (one dataset).
    Each test's spec says whether it resamples and its ``cost_per_value`` (a multiple of
    the unit above); an unregistered name costs as a closed-form test."""

    n = max(int(n_instances), 1)
    log_n = max(math.log2(n), 1.0)
    total = 0.0
    for test in tests:
        spec = REGISTRY.get(test)
        scale = spec.cost_per_value if spec is not None else 1.0
        if spec is not None and spec.resampling:
            total += float(n_resamples) * n  # drawing the resampling plan
            if statistic == "median":
                total += scale * float(n_resamples) * n_metrics * n_pairs * n * log_n
            else:
                total += scale * float(n_resamples) * n_metrics * (n_systems * n + n_pairs)
        else:
            total += scale * float(n_metrics) * n_pairs * n * log_n
    return total


def study_cost(study, *, tests, n_resamples: int, statistic: str = "mean", pairs="all",
               metrics=None, datasets=None) -> float:
    """:func:`estimate_cost` summed over the datasets of ``study`` that the request
    selects (same ``pairs``/``metrics``/``datasets`` arguments as ``compare``)."""
    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    chosen, metric_names = cube.select(study, datasets=datasets, metrics=metrics)
    total = 0.0
    for ds in chosen.values():
        m = ds.sizes["metric"] if metric_names is None else sum(
            str(x) in metric_names for x in ds.metric.values)
        if not m:
            continue
        try:
            S = ds.sizes["system"]
            n_pairs = (S * (S - 1) // 2 if isinstance(pairs, str) and pairs == "all"
                       else len(cube.pair_indices(ds.system.values, pairs)))
        except Exception:  # noqa: BLE001 - compare itself reports a bad pair, by name
            n_pairs = ds.sizes["system"] * (ds.sizes["system"] - 1) // 2
        total += estimate_cost(n_systems=ds.sizes["system"], n_pairs=n_pairs, n_metrics=m,
                               n_instances=ds.sizes["instance"], tests=tests,
                               n_resamples=n_resamples, statistic=statistic)
    return total
