"""The report's Jinja2 templates (``multistat/report/templates/*.j2``, package data),
rendered with autoescape on: every value is escaped unless it is a
:class:`markupsafe.Markup` built by the report's own escaping helpers."""

from __future__ import annotations

from functools import lru_cache

import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one template environment (autoescape on, undefined names are errors)."""
    return jinja2.Environment(loader=jinja2.PackageLoader("multistat.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False)


def render(name: str, **values) -> str:
    """The template ``name`` rendered with ``values``."""
    return environment().get_template(name).render(**values)
