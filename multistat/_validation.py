"""The one set of parameter checks of multistat (public functions, the power package and
the command line all use these).

Each checker returns the cleaned value or raises, with a message naming the parameter,
the allowed values and what was given (echoed values cut to ~100 characters, no numpy
reprs). One error type per fault:

- wrong type (a string where a number is expected, a float where an integer is):
  :class:`~multistat.errors.ParameterTypeError` (a ``TypeError``);
- a value outside the allowed set or range, NaN or +-inf:
  :class:`~multistat.errors.ParameterError` (a ``ValueError``).

``error=`` may name a subclass of ``ParameterError`` for the value faults (the power
package passes :class:`~multistat.errors.PowerParameterError`, so its errors are also
``PowerError``); the fault, the message and the base class stay the same.
"""

from __future__ import annotations

import math
import numbers
import unicodedata
from collections.abc import Iterable

import numpy as np

from multistat._typing import ALTERNATIVES
from multistat.errors import ParameterError, ParameterTypeError, show

#: largest seed accepted (seeds are stored as unsigned 64-bit integers)
MAX_SEED = 2**64 - 1


def _is_real(value) -> bool:
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)


def check_choice(name: str, value, allowed: Iterable[str], *, error=ParameterError):
    """``value`` is one of the strings ``allowed``."""
    allowed = tuple(allowed)
    if not isinstance(value, str):
        raise ParameterTypeError(
            f"`{name}` must be one of {', '.join(map(repr, allowed))}; got {show(value)} "
            f"of type {type(value).__name__}")
    if value not in allowed:
        raise error(f"`{name}` must be one of {', '.join(map(repr, allowed))}; "
                    f"got {show(value)}")
    return str(value)


def check_alternative(alternative, *, error=ParameterError) -> str:
    return check_choice("alternative", alternative, ALTERNATIVES, error=error)


def check_real(name: str, value, *, error=ParameterError) -> float:
    """A finite real number (NaN and +-inf refused)."""
    if not _is_real(value):
        raise ParameterTypeError(f"`{name}` must be a real number; got {show(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise error(f"`{name}` must be a finite real number; got {show(value)}")
    return value


def check_positive(name: str, value, *, minimum: float = 0.0, error=ParameterError) -> float:
    """A finite real number ``> minimum``."""
    value = check_real(name, value, error=error)
    if not value > minimum:
        raise error(f"`{name}` must be > {minimum:g}; got {show(value)}")
    return value


def check_probability(name: str, value, *, open_low=True, open_high=True,
                      error=ParameterError) -> float:
    """A number in (0, 1) (alpha, power), or with closed ends when ``open_*`` is False
    (``[0, 1]``: a probability such as p1, agreement, a baseline accuracy)."""
    value = check_real(name, value, error=error)
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok):
        if not open_low and not open_high:
            raise error(f"`{name}` must be a probability in [0, 1]; got {show(value)}")
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise error(f"`{name}` must be in {lo}, {hi}; got {show(value)}")
    return value


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None,
              error=ParameterError) -> int:
    """An integer (an integral float such as ``10.0`` is accepted) within the bounds."""
    if not _is_real(value):
        raise ParameterTypeError(f"`{name}` must be an integer; got {show(value)}")
    if not isinstance(value, numbers.Integral):
        if math.isfinite(float(value)) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterTypeError(f"`{name}` must be an integer; got {show(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise error(f"`{name}` must be an integer >= {minimum}; got {show(value)}")
    if maximum is not None and value > maximum:
        raise error(f"`{name}` must be an integer <= {maximum}; got {show(value)}")
    return value


def check_seed(seed, *, name: str = "seed") -> int | np.random.SeedSequence:
    """Seeds are integers in [0, 2**64 - 1] (0 is a seed) or a SeedSequence; None is
    refused where reproducibility is part of the contract."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise ParameterTypeError(
            f"`{name}` must be a non-negative integer or numpy.random.SeedSequence; "
            f"got {show(seed)}")
    if seed < 0:
        raise ParameterError(f"`{name}` must be a non-negative integer; got {show(seed)}")
    if seed > MAX_SEED:
        raise ParameterError(f"`{name}` must fit in 64 bits (0 to 2**64 - 1); got "
                             f"{show(seed)}")
    return int(seed)


def bad_name(name: str, role: str) -> str | None:
    """Why ``name`` cannot name a ``role`` (``"dataset"``, ``"system"``, ``"metric"``), or
    None if it can: blank or whitespace-only names never; a dataset name also becomes a
    NetCDF group and file names, so ``.``, ``..`` and names containing ``/`` or ``\\``
    are refused too; NUL and other control characters (tab, newline, ESC...) never. The
    one naming rule of the loaders
    (:mod:`multistat.io`) and of :func:`multistat.cube.make_study`."""
    if not name.strip():
        return "is blank" if not name else "is whitespace only"
    if role == "dataset":
        if name in (".", ".."):
            return "is a path component ('.' or '..')"
        if "/" in name or "\\" in name:
            return "contains a path separator"
    if "\x00" in name:
        return "contains a NUL character"
    ctrl = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if ctrl is not None:  # tab, newline, escape...: never visible, break lines and files
        return f"contains the control character U+{ord(ctrl):04X}"
    return None


def whitespace_twins(names) -> tuple[str, str] | None:
    """Two of ``names`` that differ only by surrounding whitespace (``"a"`` and
    ``"a "``), or None: they would become two systems (metrics, datasets) that no one
    can tell apart."""
    seen: dict[str, str] = {}
    for name in names:
        key = name.strip()
        if key in seen and seen[key] != name:
            return seen[key], name
        seen.setdefault(key, name)
    return None
