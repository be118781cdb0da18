"""Parameter checks shared by every public function.

Each checker returns the cleaned value or raises :class:`~multistat.errors.ParameterError`
(``ValueError``) / :class:`~multistat.errors.ParameterTypeError` (``TypeError``) with a
message naming the parameter, the allowed values and what was given.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

from multistat._typing import ALTERNATIVES
from multistat.errors import ParameterError, ParameterTypeError


def check_choice(name: str, value, allowed: Iterable[str]):
    allowed = tuple(allowed)
    if not isinstance(value, str):
        raise ParameterTypeError(
            f"`{name}` must be one of {', '.join(map(repr, allowed))}; got {value!r} "
            f"of type {type(value).__name__}"
        )
    if value not in allowed:
        raise ParameterError(
            f"`{name}` must be one of {', '.join(map(repr, allowed))}; got {value!r}"
        )
    return value


def check_alternative(alternative: str) -> str:
    return check_choice("alternative", alternative, ALTERNATIVES)


def check_probability(name: str, value, *, open_low=True, open_high=True) -> float:
    """A number in (0, 1) (or with closed ends when ``open_*`` is False)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"`{name}` must be a real number; got {value!r}")
    value = float(value)
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok) or not np.isfinite(value):
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise ParameterError(f"`{name}` must be in {lo}, {hi}; got {value!r}")
    return value


def check_int(name: str, value, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ParameterTypeError(f"`{name}` must be an integer; got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ParameterError(f"`{name}` must be an integer >= {minimum}; got {value!r}")
    return value


def check_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ParameterError(f"`{name}` must be a finite real number; got {value!r}")
    return float(value)


def check_seed(seed) -> int | np.random.SeedSequence:
    """Seeds are non-negative integers (0 is a seed) or a SeedSequence; None is refused
    where reproducibility is part of the contract."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParameterTypeError(
            f"`seed` must be a non-negative integer or numpy.random.SeedSequence; got {seed!r}"
        )
    if seed < 0:
        raise ParameterError(f"`seed` must be a non-negative integer; got {seed!r}")
    return int(seed)
