"""Literal aliases shared across multistat."""

from __future__ import annotations

from typing import Literal

Alternative = Literal["two-sided", "less", "greater"]
Statistic = Literal["mean", "median"]
MetricKind = Literal["mean", "binary", "corpus"]
MissingPolicy = Literal["raise", "drop"]

ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")
STATISTICS: tuple[str, ...] = ("mean", "median")
