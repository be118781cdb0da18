"""Which public callables of multistat have valid numpydoc docstrings.

Runs :func:`numpydoc.validate.validate` on every callable in ``multistat.__all__`` (the
functions and classes; modules are left out) and counts a docstring as passing when it
has none of the errors in :data:`CHECKS`: a summary, every parameter documented (and no
unknown one) with a description under its ``name : type`` line, a ``Returns`` section
with a description. ``python docs/numpydoc_check.py`` prints each failure and the count.
"""

from __future__ import annotations

import inspect
import sys

#: numpydoc.validate error codes a public docstring must not have
CHECKS = {
    "GL08": "no docstring",
    "SS01": "no summary",
    "PR01": "a parameter is not documented",
    "PR02": "an unknown parameter is documented",
    "PR07": "a parameter has no description (the text sits on the type line)",
    "RT01": "no Returns section",
    "RT03": "a return value has no description",
}


def public_callables():
    """``{name: object}`` of the functions and classes in ``multistat.__all__``."""
    import multistat

    out = {}
    for name in multistat.__all__:
        obj = getattr(multistat, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            out[name] = obj
    return out


def failures(obj) -> list[tuple[str, str]]:
    """The :data:`CHECKS` errors of ``obj``'s docstring."""
    from numpydoc.validate import validate

    result = validate(f"{obj.__module__}.{obj.__qualname__}")
    errors = [(code, msg) for code, msg in result["errors"] if code in CHECKS]
    if inspect.isclass(obj):  # a class documents its constructor: no Returns section
        errors = [(c, m) for c, m in errors if not c.startswith("RT")]
    return errors


def main() -> int:
    items = public_callables()
    passed = 0
    for name, obj in sorted(items.items()):
        errs = failures(obj)
        if errs:
            print(f"{name}: " + "; ".join(f"{c} {m}" for c, m in errs))
        else:
            passed += 1
    print(f"{passed} of {len(items)} public callables pass")
    return 0 if passed == len(items) else 1


if __name__ == "__main__":
    sys.exit(main())
