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

import functools
import inspect
import math
import numbers
import types
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import numpy as np

from multistat._typing import ALTERNATIVES
from multistat.errors import ParameterError, ParameterTypeError, show

#: largest seed accepted (seeds are stored as unsigned 64-bit integers)
MAX_SEED = 2**64 - 1

_P = ParamSpec("_P")
_R = TypeVar("_R")
#: the error class of value faults: ParameterError or a subclass of it
ErrorType = type[ParameterError]


def _is_real(value: object) -> bool:
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real)


def check_choice(name: str, value: object, allowed: Iterable[str], *,
                 error: ErrorType = ParameterError) -> str:
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


def check_alternative(alternative: object, *, error: ErrorType = ParameterError) -> str:
    return check_choice("alternative", alternative, ALTERNATIVES, error=error)


def check_real(name: str, value: object, *, error: ErrorType = ParameterError) -> float:
    """A finite real number (NaN and +-inf refused)."""
    if not isinstance(value, numbers.Real) or not _is_real(value):
        raise ParameterTypeError(f"`{name}` must be a real number; got {show(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise error(f"`{name}` must be a finite real number; got {show(number)}")
    return number


def check_positive(name: str, value: object, *, minimum: float = 0.0,
                   error: ErrorType = ParameterError) -> float:
    """A finite real number ``> minimum``."""
    number = check_real(name, value, error=error)
    if not number > minimum:
        raise error(f"`{name}` must be > {minimum:g}; got {show(number)}")
    return number


def check_probability(name: str, value: object, *, open_low: bool = True,
                      open_high: bool = True, error: ErrorType = ParameterError) -> float:
    """A number in (0, 1) (alpha, power), or with closed ends when ``open_*`` is False
    (``[0, 1]``: a probability such as p1, agreement, a baseline accuracy)."""
    number = check_real(name, value, error=error)
    low_ok = number > 0 if open_low else number >= 0
    high_ok = number < 1 if open_high else number <= 1
    if not (low_ok and high_ok):
        if not open_low and not open_high:
            raise error(f"`{name}` must be a probability in [0, 1]; got {show(number)}")
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise error(f"`{name}` must be in {lo}, {hi}; got {show(number)}")
    return number


def check_int(name: str, value: object, *, minimum: int | None = None,
              maximum: int | None = None, error: ErrorType = ParameterError) -> int:
    """An integer (an integral float such as ``10.0`` is accepted) within the bounds."""
    if not isinstance(value, numbers.Real) or not _is_real(value):
        raise ParameterTypeError(f"`{name}` must be an integer; got {show(value)}")
    if isinstance(value, numbers.Integral):
        number = int(value)
    elif math.isfinite(float(value)) and float(value).is_integer():
        number = int(float(value))
    else:
        raise ParameterTypeError(f"`{name}` must be an integer; got {show(value)}")
    if minimum is not None and number < minimum:
        raise error(f"`{name}` must be an integer >= {minimum}; got {show(number)}")
    if maximum is not None and number > maximum:
        raise error(f"`{name}` must be an integer <= {maximum}; got {show(number)}")
    return number


def check_seed(seed: object, *, name: str = "seed") -> int | np.random.SeedSequence:
    """Seeds are integers in [0, 2**64 - 1] (0 is a seed) or a SeedSequence; None is
    refused where reproducibility is part of the contract."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise ParameterTypeError(
            f"`{name}` must be a non-negative integer or numpy.random.SeedSequence; "
            f"got {show(seed)}")
    number = int(seed)  # an Integral (numpy integers too): exactly
    if number < 0:
        raise ParameterError(f"`{name}` must be a non-negative integer; got {show(seed)}")
    if number > MAX_SEED:
        raise ParameterError(f"`{name}` must fit in 64 bits (0 to 2**64 - 1); got "
                             f"{show(seed)}")
    return number


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


def name_key(name: str) -> str:
    """What a reader sees of a name: NFC-normalised, without invisible format characters
    (zero-width space and joiners, soft hyphen, byte-order mark: Unicode category Cf) and
    without surrounding whitespace. Two names with one key cannot be told apart."""
    visible = "".join(c for c in unicodedata.normalize("NFC", name)
                      if unicodedata.category(c) != "Cf")
    return visible.strip()


def twin_names(names: Iterable[str]) -> tuple[str, str] | None:
    """Two of ``names`` that look the same but differ (surrounding whitespace, ``"a"`` and
    ``"a "``; composed and decomposed accents; an invisible zero-width character), or
    None: they would become two systems (metrics, raters...) that no one can tell apart.

    Examples
    --------
    >>> twin_names(["m1", "m2", "m1 "])
    ('m1', 'm1 ')
    >>> twin_names(["caf\u00e9", "cafe\u0301"])  # NFC and NFD of one word
    ('café', 'café')
    >>> twin_names(["a", "b"]) is None
    True
    """
    seen: dict[str, str] = {}
    for name in names:
        key = name_key(name)
        if key in seen and seen[key] != name:
            return seen[key], name
        seen.setdefault(key, name)
    return None


def twins_why(a: str, b: str) -> str:
    """How two twin names differ, in words."""
    if a.strip() == b.strip():
        return "differ only by surrounding whitespace"
    if unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b):
        return "differ only by Unicode normalisation (composed and decomposed accents)"
    return "differ only by invisible characters (e.g. a zero-width space)"


# ------------------------------------------------------------------ declared options
@dataclass(frozen=True)
class Option:
    """One declared option: ``check(name, value)`` returns the cleaned value or raises
    with the shared message (the command line turns `` `name` `` into its flag).

    The same declarations serve :class:`multistat.RunRequest`'s fields and the keywords
    of every analysis family (:func:`checked`), so an option is checked, worded and
    defaulted one way everywhere."""

    check: Callable[[str, Any], Any]
    doc: str = ""

    def __call__(self, name: str, value: object) -> Any:
        return self.check(name, value)


def choice(allowed: Iterable[str], doc: str = "") -> Option:
    """An option whose value is one of ``allowed``."""
    allowed = tuple(allowed)
    return Option(lambda name, value: check_choice(name, value, allowed),
                  doc or "one of " + ", ".join(allowed))


def optional(option: Option) -> Option:
    """``option``, or None (``"none"`` is read as None, as on the command line)."""
    return Option(lambda name, value: None if value is None or value == "none"
                  else option(name, value), f"{option.doc}, or None")


def integer(minimum: int | None = None, maximum: int | None = None) -> Option:
    """An integer option within ``[minimum, maximum]``."""
    return Option(lambda name, value: check_int(name, value, minimum=minimum,
                                                maximum=maximum),
                  f"an integer >= {minimum}" if minimum is not None else "an integer")


#: the options shared by compare, rank and every analysis family
ALPHA = Option(check_probability, "the significance level, in (0, 1)")
CONFIDENCE_LEVEL = Option(check_probability, "the intervals' level, in (0, 1)")
N_RESAMPLES = integer(minimum=1)
SEED = Option(lambda name, value: check_seed(value, name=name),
              "an integer >= 0, a SeedSequence or a Generator's seed")
ALTERNATIVE = Option(lambda name, value: check_alternative(value),
                     "two-sided, less or greater")
REAL = Option(check_real, "a finite number")


def checked(**declared: Option) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Validate a function's keyword options once, on entry, by their declarations.

    Each named parameter is replaced by ``declared[name](name, value)`` before the body
    runs; the body reads clean values and checks none of them again. The undecorated
    function is ``fn.__wrapped__`` (for callers that pass values already checked), and
    the declarations are ``fn.options``.

    Examples
    --------
    >>> from multistat._validation import ALPHA, SEED, checked
    >>> @checked(alpha=ALPHA, seed=SEED)
    ... def run(data, *, alpha=0.05, seed=0):
    ...     return alpha, seed
    >>> run([], alpha=0.01)
    (0.01, 0)
    >>> run([], alpha=2)
    Traceback (most recent call last):
    ...
    multistat.errors.ParameterError: `alpha` must be in (0, 1); got 2.0
    """
    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        fn_name = getattr(fn, "__name__", "checked")
        signature = inspect.signature(fn)
        unknown = set(declared) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{fn_name} has no parameter(s) {sorted(unknown)}")

        type_error = ParameterTypeError

        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise type_error(f"{fn_name}(): {exc}") from None
            bound.apply_defaults()
            for name, option in declared.items():
                bound.arguments[name] = option(name, bound.arguments[name])
            return fn(*bound.args, **bound.kwargs)

        # the wrapper lives in the function's own module (its globals), so doctest and
        # the documentation find it there, as they find the function itself
        where = getattr(fn, "__globals__", {})
        relocated = types.FunctionType(wrapper.__code__, where, fn_name, None,
                                       wrapper.__closure__)
        functools.update_wrapper(relocated, fn)
        relocated.__dict__["options"] = dict(declared)  # a function attribute
        return relocated
    return decorate
