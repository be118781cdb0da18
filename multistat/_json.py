"""JSON read from files the user gives: duplicate keys and deep nesting refused.

The standard library keeps the *last* of two equal keys (``{"score": 0.3, "score": 1}`` is
``{"score": 1}``: a value dropped without a word) and recurses once per nesting level (a
deeply nested document raises ``RecursionError``, or a copy of it does later: pandas
deep-copies ``DataFrame.attrs``). :func:`no_duplicates` is an ``object_pairs_hook`` that
refuses the first; :func:`check_depth` bounds the second without recursion.
"""

from __future__ import annotations

import json

#: deepest nesting a metadata document may have (multistat writes 3 levels)
MAX_DEPTH = 64


class DuplicateKeyError(ValueError):
    """Raised by :func:`no_duplicates`; ``key`` is the repeated key."""

    def __init__(self, key: str):
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def no_duplicates(pairs) -> dict:
    """``object_pairs_hook`` for :func:`json.loads`: the object as a dict, or
    :class:`DuplicateKeyError` at the first key that appears twice."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def depth(obj, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a parsed JSON value (a scalar: 0), counted without recursion;
    stops counting past ``limit`` (returns ``limit + 1``)."""
    deepest, stack = 0, [(obj, 0)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, list):
            continue
        d += 1
        if d > limit:
            return d
        deepest = max(deepest, d)
        stack.extend((v, d) for v in value if isinstance(v, dict | list))
    return deepest


def loads_metadata(text, *, limit: int = MAX_DEPTH):
    """Parse a metadata document: :class:`ValueError` (with a plain reason) when it is
    not JSON, repeats a key or nests deeper than ``limit``."""
    try:
        value = json.loads(text, object_pairs_hook=no_duplicates)
    except RecursionError:
        raise ValueError(f"nested more than {limit} levels deep") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if depth(value, limit) > limit:
        raise ValueError(f"nested more than {limit} levels deep")
    return value
