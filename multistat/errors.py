"""Exceptions and warnings of multistat.

Every error a user can trigger is a :class:`MultistatError` subclass, so the command
line can catch one class, print its message on one line and exit with status 2.
``MultistatError`` inherits from ``ValueError``; :class:`ParameterTypeError` also from
``TypeError`` (scipy/scikit-learn convention: wrong type -> TypeError, wrong value ->
ValueError).
"""

from __future__ import annotations

import os

#: characters of a user value echoed in a message before it is cut with "..."
SHOW_LIMIT = 100


def _plain(value) -> str:
    """repr of ``value`` without numpy's scalar reprs (``np.str_('a')`` -> ``'a'``)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, (str, os.PathLike)):
        return repr(os.fspath(value) if isinstance(value, os.PathLike) else value)
    if isinstance(value, (list, tuple, set, frozenset)) or (
            hasattr(value, "tolist") and getattr(value, "ndim", 0) >= 1):
        items = list(value.tolist() if hasattr(value, "tolist") else value)
        return "[" + ", ".join(_plain(v) for v in items[:20]) + (
            f", ... ({len(items)} in all)" if len(items) > 20 else "") + "]"
    return " ".join(repr(value).split())


def show(value, limit: int = SHOW_LIMIT) -> str:
    """A value as an error message echoes it: a plain repr (strings quoted, control
    characters escaped, no numpy reprs), cut to ``limit`` characters with "..."."""
    text = _plain(value)
    if len(text) > limit:
        text = text[:limit] + "..."
    return text



class MultistatError(ValueError):
    """Base class of every error multistat raises on bad input or parameters."""


class ParameterError(MultistatError):
    """A parameter has a value outside its allowed set."""


class ParameterTypeError(MultistatError, TypeError):
    """A parameter has the wrong type."""


class InputFileError(MultistatError):
    """A score file cannot be read or parsed (names the file and line/column)."""


class DataValidationError(MultistatError):
    """Scores were read but violate the data model (duplicates, NaN, missing pairs...)."""


class UnknownSystemError(MultistatError):
    """A system named by the user is not in the study."""


class TestNotApplicableError(MultistatError):
    """A test cannot run on the data it was given (e.g. McNemar on non-binary scores)."""

    __test__ = False  # not a pytest class


class MissingExtraError(MultistatError, ImportError):
    """An optional dependency is not installed; the message names the extra that
    installs it (``pip install 'multistat[report]'``)."""


class PowerError(MultistatError):
    """Bad or infeasible power-analysis request."""


class InfeasibleError(PowerError):
    """No value in the feasible range reaches the requested target."""


class CostLimitError(ParameterError):
    """The estimated work of a request is far beyond reason (the message names the
    estimate and the option that raises the limit)."""


# ----------------------------------------------------------------------------- warnings
class MultistatWarning(UserWarning):
    """Base class of multistat's warnings (the test suite turns them into errors)."""


class DroppedDataWarning(MultistatWarning):
    """Rows or instances were removed (missing="drop"); the message says how many."""


class SmallSampleWarning(MultistatWarning):
    """Too few observations for the requested method to be reliable."""


class ConstantInputWarning(MultistatWarning):
    """All differences are identical (often all zero): the statistic is undefined."""


class SkippedTestWarning(MultistatWarning):
    """A default test was not run where it does not apply (e.g. t on a corpus metric)."""


class LowDegreesOfFreedomWarning(MultistatWarning):
    """A t test ran on very few degrees of freedom (a mixed-model fit whose Satterthwaite
    df is below :data:`multistat.significance.mixed.LOW_DF`): its interval and p-value
    rest on a t with infinite variance; the rows are flagged ``low_df``."""


class CompatibilityWarning(MultistatWarning):
    """A peer tool's (statistically questionable) definition was requested on purpose."""


# ----------------------------------------------------------------------------- power
class PowerParameterError(PowerError, ParameterError):
    """A power-analysis parameter is outside its allowed range (alpha, power,
    probabilities, agreement, an accuracy difference larger than the discordant share,
    or not exactly one quantity left ``None`` to solve for)."""


class ResamplingFloorWarning(MultistatWarning):
    """A resampling test's smallest possible p-value, after the correction over its
    family, is above alpha: no pair can be significant whatever the data (the message
    names the family, the floor and the number of resamples that would be needed)."""
