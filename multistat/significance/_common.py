"""Helpers shared by the closed-form test modules (parametric, rank, sign, binary) and
by :mod:`multistat.effect`: checks of the hypothesis keywords and the paired input, the
per-row note and warning bookkeeping, interval ends, and the "constant differences" rule.

They sit below every test family, so that no family imports another's private names.
"""

from __future__ import annotations

import warnings

import numpy as np

from multistat._validation import check_alternative, check_probability, check_real
from multistat.errors import DataValidationError
from multistat.significance._base import as_pairs

__all__ = [
    "CONSTANT_RTOL", "DIFF_CONSTANT_RTOL", "add_note", "check_hypothesis", "check_paired",
    "checked_diff", "constant_rows", "empty_notes", "estimate_inside", "interval_quantile",
    "one_sided_ends", "row_scale", "scalar", "warn_rows",
]


def check_hypothesis(alternative, null_value, confidence_level):
    """The hypothesis keywords every test takes, checked: ``(alternative, null_value,
    confidence_level)``."""
    return (check_alternative(alternative), check_real("null_value", null_value),
            check_probability("confidence_level", confidence_level))


def check_paired(x, y, alternative, null_value, confidence_level, overflow="raise"):
    """Validate the shared keywords and the paired input; return cleaned values.

    Returns ``x, y, alternative, null_value, confidence_level`` with ``x``, ``y`` float64
    arrays of the same shape (instances on the last axis).
    """
    alternative, null_value, confidence_level = check_hypothesis(
        alternative, null_value, confidence_level)
    x, y = as_pairs(x, y, overflow=overflow)
    bad = ~(np.isfinite(x) & np.isfinite(y))
    if bad.any():
        raise DataValidationError(
            f"paired samples contain NaN or infinite values in {int(bad.sum())} pair(s); "
            "drop incomplete pairs before testing (multistat.io drops them and reports how "
            "many)"
        )
    return x, y, alternative, null_value, confidence_level


def checked_diff(x, y, alternative, null_value, confidence_level, *, is_diff=False):
    """``(x - y, alternative, null_value, confidence_level)``, checked as
    :func:`check_paired` does; ``is_diff``: ``x`` is ``x - y`` itself, which the caller
    found finite (a :func:`multistat.compare` slab), so only the keywords are checked."""
    if is_diff:
        return (x, *check_hypothesis(alternative, null_value, confidence_level))
    x, y, alternative, null_value, confidence_level = check_paired(
        x, y, alternative, null_value, confidence_level)
    return x - y, alternative, null_value, confidence_level


def scalar(a):
    """0-d arrays become numpy scalars (``a[()]``); other arrays pass through."""
    a = np.asarray(a)
    return a[()] if a.ndim == 0 else a


def empty_notes(shape) -> np.ndarray:
    return np.full(shape, "", dtype=object)


def add_note(notes: np.ndarray, mask, text: str) -> None:
    """Append ``text`` to the notes of the rows selected by ``mask`` (in place)."""
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), notes.shape)
    for idx in zip(*np.nonzero(mask)) if notes.ndim else ([()] if mask else []):
        notes[idx] = text if not notes[idx] else f"{notes[idx]}; {text}"


def warn_rows(mask, category, text: str, *, stacklevel: int = 3) -> None:
    """One warning per call saying how many rows ``text`` applies to."""
    count = int(np.count_nonzero(mask))
    if count:
        total = int(np.size(mask))
        where = "" if total == 1 else f" ({count} of {total} rows)"
        warnings.warn(f"{text}{where}", category, stacklevel=stacklevel)


def estimate_inside(estimate, low, high, notes: np.ndarray, what: str) -> np.ndarray:
    """``estimate`` moved into its own interval ``[low, high]`` where it lies outside,
    with a note saying so. A rank test's interval is the set of nulls it
    does not reject; with many ties (Likert, 0/1 scores) the test can reject the usual
    point estimate itself - at the median every zero difference is dropped - so the set
    is open there, e.g. ``(0, 0.5)`` around a median of 0. The estimate is then the
    value nearest to it that the test does not reject: the interval's end (the nearest
    float inside). Rows with an empty or NaN interval keep their estimate."""
    est = np.asarray(estimate, dtype=float)
    lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    with np.errstate(invalid="ignore"):
        out = (est < lo) | (est > hi)  # NaN compares False: kept
    if not np.any(out):
        return estimate
    add_note(notes, out, f"the {what} of the differences lies outside the interval (the "
              "test rejects it: its zero differences are dropped there); estimate: the "
              "nearest value the test does not reject")
    return scalar(np.where(out, np.clip(est, lo, hi), est))


def interval_quantile(confidence_level: float, alternative: str) -> float:
    """Upper tail probability used by each end of the interval: (1-cl)/2 or 1-cl."""
    return (1.0 - confidence_level) / 2.0 if alternative == "two-sided" else 1.0 - confidence_level


def one_sided_ends(low, high, alternative):
    """Open the unused end of a one-sided interval (scipy convention: +-inf)."""
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    if alternative == "greater":
        high = np.where(np.isnan(low), np.nan, np.inf)
    elif alternative == "less":
        low = np.where(np.isnan(high), np.nan, -np.inf)
    return low, high


#: "constant" means zero variance up to the rounding of the scores: sd of the differences
#: at most this times max |score|, not exact equality -- a - (a - 0.1) in
#: floating point varies by a few ulps of |a|. Four units in the last place (2^-50,
#: 8.9e-16): rounding each score to nearest moves a difference by at most one ulp of the
#: largest score, and the subtraction by half of one more. It was 1e-12 (about 4,500
#: ulps), which called every pair constant whose scores sit far from 0: scores moved by
#: 1.7e12 (millisecond timestamps) with differences of sd 0.3 gave p = NaN
CONSTANT_RTOL = 2.0 ** -50
#: the same relative to max |d| when only the differences are known (effect sizes of one
#: pair): differences formed from larger scores carry more ulps of their own magnitude
DIFF_CONSTANT_RTOL = 1e-12


def row_scale(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """max(|x|, |y|) per row (1 where it is 0 or not finite): the scale the tests divide
    by, so that p-values do not depend on the units (1e-300 or 1e300 alike)."""
    with np.errstate(invalid="ignore"):
        s = np.maximum(np.max(np.abs(x), axis=-1), np.max(np.abs(y), axis=-1))
    return np.where((s > 0) & np.isfinite(s), s, 1.0)


def constant_rows(d: np.ndarray, scale=None) -> np.ndarray:
    """Rows whose differences have zero variance relative to ``scale``: ``sd <=
    CONSTANT_RTOL * scale`` with ``scale = max(|x|, |y|)``, or, when ``scale`` is not
    given, ``sd <= DIFF_CONSTANT_RTOL * max |d|``; computed on ``d / scale`` so that
    neither tiny nor huge scores underflow or overflow. Both are unchanged when the
    scores move by a constant that keeps ``d`` exact, the first up to the rounding of the
    moved scores."""
    rtol = CONSTANT_RTOL
    if scale is None:
        rtol = DIFF_CONSTANT_RTOL
        scale = np.max(np.abs(d), axis=-1)
        scale = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
    if d.shape[-1] < 2:
        return np.zeros(d.shape[:-1], dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        sd = (d / np.asarray(scale)[..., None]).std(axis=-1, ddof=1)
    return sd <= rtol
