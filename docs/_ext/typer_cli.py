"""``.. typer-cli:: module:app``: a reference of every command of a typer app, generated
from the command definitions (usage, help, every option with its type, default and help).

typer (>= 0.26) builds its commands with its own copy of click, so the click-based
extensions (sphinx-click) do not see them; this walks ``typer.main.get_command(app)``,
whose commands keep click's interface (``params``, ``help``, ``commands``).
"""

from __future__ import annotations

import importlib
from typing import ClassVar

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def _literal(text: str) -> str:
    return "``" + text.replace("``", "` `") + "``" if text else ""


def _escape(text: str) -> str:
    return (text or "").replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`") \
        .replace("|", "\\|").replace("_", "\\_")


def _default(param) -> str:
    shown = getattr(param, "show_default", None)
    if isinstance(shown, str):
        return shown
    if shown is False:
        return ""
    value = param.default
    if value is None or callable(value) or getattr(param, "is_flag", False) and not value:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def _command_lines(path: list[str], cmd, level: int, marks: str) -> list[str]:
    title = " ".join(path)
    lines = [title, marks[level] * len(title), ""]
    text = (cmd.help or "").strip()
    if text:
        lines += [_escape(line) for line in text.splitlines()] + [""]
    pieces = [p for p in getattr(cmd, "params", [])]
    args = [p for p in pieces if getattr(p, "param_type_name", "") == "argument"]
    opts = [p for p in pieces if getattr(p, "param_type_name", "") == "option"]
    usage = " ".join([*path, "[OPTIONS]", *(a.name.upper() for a in args)])
    if getattr(cmd, "commands", None):
        usage = " ".join([*path, "COMMAND", "[ARGS]..."])
    lines += [".. code-block:: text", "", f"   {usage}", ""]
    if args:
        lines += ["**Arguments**", ""]
        for a in args:
            lines += [f"``{a.name.upper()}``", f"   {_escape(getattr(a, 'help', '') or '')}", ""]
    if opts:
        lines += ["**Options**", ""]
        for o in opts:
            flags = ", ".join(_literal(f) for f in [*o.opts, *o.secondary_opts])
            default = _default(o)
            help_text = _escape(o.help or "")
            if default:
                help_text += f" (default: {_literal(default)})"
            lines += [flags, f"   {help_text or '(no description)'}", ""]
    lines += ["``-h``, ``--help``", "   show the help and exit", ""]
    for name, sub in getattr(cmd, "commands", {}).items():
        lines += _command_lines([*path, name], sub, level + 1, marks)
    return lines


class TyperCli(SphinxDirective):
    """Render every command of the typer app named by the argument (``module:attr``);
    option ``:prepare:`` names a function ``module:func`` called first (it may complete
    the help from the library)."""

    required_arguments = 1
    option_spec: ClassVar[dict] = {"prog": str, "prepare": str}

    def run(self):
        module, _, attr = self.arguments[0].partition(":")
        app = getattr(importlib.import_module(module), attr)
        if "prepare" in self.options:
            pmod, _, pfunc = self.options["prepare"].partition(":")
            getattr(importlib.import_module(pmod), pfunc)()
        import typer

        root = typer.main.get_command(app)
        prog = self.options.get("prog", attr)
        lines = []
        for name, cmd in root.commands.items():
            lines += _command_lines([prog, name], cmd, 0, "-~^")
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="typer-cli"), node)
        return node.children


def setup(app):
    app.add_directive("typer-cli", TyperCli)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
