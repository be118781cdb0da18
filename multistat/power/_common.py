"""Shared helpers of the power package: parameter checks and a bracketing root finder.

The checks are those of :mod:`multistat._validation` (one set for the whole library):
value faults raise :class:`~multistat.errors.PowerParameterError` (a ``PowerError`` and a
``ParameterError``, hence a ``ValueError``), type faults
:class:`~multistat.errors.ParameterTypeError`, with a message naming the parameter, the
allowed range and the value given.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from multistat import _validation as _v
from multistat._lazy import lazy_module
from multistat.errors import InfeasibleError, PowerParameterError

optimize = lazy_module("scipy.optimize")  # imported on first use


# The parameter checks are multistat's one set (multistat._validation), raising
# PowerParameterError (a ParameterError and a PowerError) for value faults and
# ParameterTypeError for type faults, with the same messages as everywhere else.
def real(name: str, value) -> float:
    return _v.check_real(name, value, error=PowerParameterError)


def open_unit(name: str, value) -> float:
    """A number strictly inside (0, 1) (alpha, power)."""
    return _v.check_probability(name, value, error=PowerParameterError)


def closed_unit(name: str, value) -> float:
    """A probability in [0, 1] (p1, p2, agreement, baseline accuracy...)."""
    return _v.check_probability(name, value, open_low=False, open_high=False,
                                error=PowerParameterError)


def positive(name: str, value, *, minimum: float = 0.0) -> float:
    return _v.check_positive(name, value, minimum=minimum, error=PowerParameterError)


def integer(name: str, value, *, minimum: int = 1) -> int:
    return _v.check_int(name, value, minimum=minimum, error=PowerParameterError)


def alternative(value) -> str:
    return _v.check_alternative(value, error=PowerParameterError)


def choice(name: str, value, allowed) -> str:
    return _v.check_choice(name, value, allowed, error=PowerParameterError)


def given(**checked) -> list:
    """Validate the parameters that were given: ``name=(value, checker)`` with
    ``checker(name, value)``; ``None`` (the quantity to solve for) passes through."""
    return [None if value is None else check(name, value)
            for name, (value, check) in checked.items()]


def n_at_least_one(name: str, value) -> float:
    return positive(name, value, minimum=1.0)


def one_unknown(**params) -> str:
    """Name of the single parameter that is ``None``; error otherwise."""
    missing = [k for k, v in params.items() if v is None]
    if len(missing) != 1:
        names = ", ".join(f"`{k}`" for k in params)
        got = ", ".join(f"`{k}`" for k in missing) if missing else "none"
        raise PowerParameterError(
            f"exactly one of {names} must be None (the quantity to solve for); "
            f"got {len(missing)} left None: {got}"
        )
    return missing[0]


def solve(func: Callable[[float], float], lo: float, hi: float, *, what: str,
          target_name: str, target: float, range_text: str | None = None,
          hi_max: float | None = None) -> float:
    """Root of ``func(x) = target`` in ``[lo, hi]`` (func monotone or at least bracketing).

    With ``hi_max``, ``hi`` is a first guess doubled (and ``lo`` moved up) until the root
    is bracketed or ``hi_max`` is reached (keeps noncentral distributions in range).
    Raises :class:`InfeasibleError` naming the range when the target is not bracketed.
    """
    f_lo = func(lo) - target
    f_hi = func(hi) - target
    if hi_max is not None:
        while f_lo * f_hi > 0 and hi < hi_max:
            lo, f_lo = hi, f_hi
            hi = min(hi * 2, hi_max)
            f_hi = func(hi) - target
    rng = range_text or f"[{lo:.6g}, {hi:.6g}]"
    if f_lo == 0:
        return float(lo)
    if f_hi == 0:
        return float(hi)
    if f_lo * f_hi > 0 or not (math.isfinite(f_lo) and math.isfinite(f_hi)):
        reached = (func(lo), func(hi))
        raise InfeasibleError(
            f"no {what} within the feasible range {rng} reaches {target_name} = {target:g} "
            f"({target_name} runs from {reached[0]:.4g} to {reached[1]:.4g} over that range)"
        )
    return float(optimize.brentq(lambda x: func(x) - target, lo, hi, xtol=1e-13,
                                 rtol=4 * 2.220446049250313e-16, maxiter=500))

