"""Progress of a ``compare`` run: a bar in estimated seconds of work, advanced per slab.

Before the run, :meth:`Progress.start` estimates the cost of every (dataset, test) from
the study's sizes with a rough per-operation cost model (:data:`COST`, calibrated on 2
cores); the bar's total is that estimate, so tqdm's rate and "time left" are in seconds.
Each test then advances the bar inside its share as it works: closed-form tests once per
slab of pairs, resampling tests once per finished block of 1000 resamples; when a test
finishes, the bar jumps to the end of its share (the estimate was too low or too high).
Runs estimated at more than :data:`ANNOUNCE_SECONDS` first print what will be computed.
"""

from __future__ import annotations

import sys

from multistat import cube
from multistat.errors import MultistatError
from multistat.significance.rank import EFFECT_BYTES_PER_VALUE

#: rough seconds per unit of work on 2 cores: a pair x metric x instance of a closed-form
#: test by family, and for resampling a resample x system x metric x instance (the plan
#: products) plus a resample x pair x metric (differences, sorts, counts)
COST = {"parametric": 3e-9, "binary": 3e-9, "rank": 4e-7, "effects": 4e-7,
        "other": 2e-7, "resample_system": 1.5e-9, "resample_pair": 4e-8}
ANNOUNCE_SECONDS = 300.0


class _Null:
    def tick(self, dataset, test, units=1.0):
        pass

    def share(self, dataset, test):
        return None

    def finish(self, dataset):
        pass

    def close(self):
        pass


class Progress(_Null):
    """The bar: ``tick(dataset, test, units)`` (a slab of pairs or a resampling block),
    ``share(dataset, test)`` (the same as a callback), ``finish(dataset)``, ``close()``."""

    def __init__(self, bar, plan):
        self.bar = bar
        self.plan = plan  # {(dataset, test): [seconds, units, done_seconds]}

    @classmethod
    def start(cls, progress, all_ds, specs, metrics, pairs, n_resamples, effect_sizes,
              budget):
        if not progress:
            return _Null()
        plan, desc = estimate(all_ds, specs, metrics, pairs, n_resamples, effect_sizes,
                              budget)
        total = sum(v[0] for v in plan.values()) or 1.0
        if total > ANNOUNCE_SECONDS:
            print(f"multistat compare: {desc}; estimated {_fmt(total)} on this machine",
                  file=sys.stderr)
        # heavy: tqdm, lazily (only with a progress bar)
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="multistat compare", unit="s",
                   bar_format="{l_bar}{bar}| [{elapsed}<{remaining}]")
        return cls(bar, plan)

    def tick(self, dataset, test, units=1.0):
        entry = self.plan.get((dataset, test))
        if entry is None:
            return
        sec, n_units, done = entry
        step = min(sec * units / max(n_units, 1), sec - done)
        if step > 0:
            entry[2] += step
            self.bar.update(step)

    def share(self, dataset, test):
        return lambda units: self.tick(dataset, test, units)

    def finish(self, dataset):
        for (ds, _), entry in self.plan.items():
            if ds == dataset and entry[2] < entry[0]:
                self.bar.update(entry[0] - entry[2])
                entry[2] = entry[0]

    def close(self):
        self.bar.close()


def _fmt(sec: float) -> str:
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 7200:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def estimate(all_ds, specs, metrics, pairs, n_resamples, effect_sizes, budget):
    """``(plan, description)``: ``{(dataset, test): [seconds, units, 0.0]}`` with the
    estimated seconds and the number of progress units (chunks of pairs, or resampling
    blocks) each will report (test ``""``: the effect sizes)."""

    plan = {}
    n_pairs_total = n_metrics_total = 0
    blocks = -(-n_resamples // 1000)
    for name, ds in all_ds.items():
        S = ds.sizes["system"]
        names = [str(m) for m in ds.metric.values]
        M = sum(1 for m in names if metrics is None or m in metrics)
        n = ds.sizes["instance"]
        try:
            P = len(cube.pair_indices(ds.system.values, pairs))
        except MultistatError:  # an unknown system: compare reports it
            P = S * (S - 1) // 2
        n_pairs_total = max(n_pairs_total, P)
        n_metrics_total += M
        per_value = max([s.bytes_per_value for s in specs if not s.all_pairs] +
                        [EFFECT_BYTES_PER_VALUE if effect_sizes else 0, 16])
        n_chunks = len(budget.chunks(P, M * n * per_value)) if P else 1
        for spec in specs:
            if spec.all_pairs:
                sec = n_resamples * (COST["resample_system"] * S * M * n
                                     + COST["resample_pair"] * P * M)
                plan[(name, spec.name)] = [sec, blocks, 0.0]
            else:
                sec = COST.get(spec.family, COST["other"]) * P * M * n
                plan[(name, spec.name)] = [sec, n_chunks, 0.0]
        if effect_sizes:
            plan[(name, "")] = [COST["effects"] * P * M * n, n_chunks, 0.0]
    n_res = sum(1 for s in specs if s.resampling)
    desc = (f"{n_pairs_total} pairs x {n_metrics_total} metrics x {len(specs)} tests"
            + (f" x {n_resamples} resamples ({n_res} resampling tests)" if n_res else ""))
    return plan, desc


__all__ = ["Progress", "estimate"]
