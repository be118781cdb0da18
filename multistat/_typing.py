"""The choices and defaults shared across multistat (the lowest layer: every
module may import it)."""

from __future__ import annotations

ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")
STATISTICS: tuple[str, ...] = ("mean", "median")

#: the resamples of every resampling test and plan unless told otherwise
DEFAULT_N_RESAMPLES = 10_000
