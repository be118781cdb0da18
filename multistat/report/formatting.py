"""Formatting of report tables: numbers, p-values and intervals as text, the display
versions of leaderboards and pairwise tables, and Markdown and LaTeX rendering.

Split from :mod:`multistat.report.tables` (which builds the tables from the compare
table) so that each module has one job. Every cell that comes from the data is escaped:
Markdown cells for ``|``, ``\\`` and the HTML-significant ``&``, ``<``, ``>`` (a system
named ``<script>`` stays text when the Markdown is rendered to HTML); LaTeX cells for every
special character.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

_EFFECT_LABEL = {
    "estimate": "difference",
    "cohens_d": "Cohen's d_z",
    "hedges_g": "Hedges' g",
    "wilcoxon_r": "Wilcoxon r",
    "hodges_lehmann": "Hodges-Lehmann",
}


def _finite(v) -> bool:
    try:
        return v is not None and bool(np.isfinite(float(v)))
    except (TypeError, ValueError):
        return False


def _fmt(v, digits: int = 3) -> str:
    """Number with ``digits`` significant digits, "–" for NaN/None."""
    if not _finite(v):
        return "–"
    v = float(v)
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    if -4 <= mag < 6:
        dec = max(digits - 1 - mag, 0)
        return f"{v:.{dec}f}"
    return f"{v:.{digits - 1}e}"


def _fmt_p(p) -> str:
    if not _finite(p):
        return "–"
    p = float(p)
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def _with_ci(est, lo, hi, pct="CI") -> str:
    if not _finite(est):
        return "not computed"
    s = _fmt(est)
    if _finite(lo) and _finite(hi):
        s += f" [{_fmt(lo)}, {_fmt(hi)}] ({pct})"
    return s


# ----------------------------------------------------------------------------- display
def leaderboard_display(lb: pd.DataFrame) -> pd.DataFrame:
    """String version of one leaderboard for papers: Rank, System, Score [CI], Beats."""
    pct = lb["confidence_level"].dropna()
    pct = f"{100 * float(pct.iloc[0]):g}% CI" if len(pct) else "CI"
    arrow = "↑" if bool(lb["higher_is_better"].iloc[0]) else "↓"
    return pd.DataFrame({
        "Rank": lb["rank"].astype(int).astype(str),
        "System": lb["system"].astype(str),
        f"Score {arrow} [{pct}]": [
            _fmt(s, 4) + (f" [{_fmt(lo, 4)}, {_fmt(hi, 4)}]" if _finite(lo) else "")
            for s, lo, hi in zip(lb["score"], lb["ci_low"], lb["ci_high"])],
        "Beats": [f"{w} of {c}" for w, c in zip(lb["wins"], lb["compared"])],
    })


def pairwise_display(pw: pd.DataFrame) -> pd.DataFrame:
    """String version of a pairwise table (one dataset × metric)."""
    eff = [f"{_EFFECT_LABEL.get(e, e)} " + _with_ci(v, lo, hi) if e else "–"
           for e, v, lo, hi in zip(pw["effect"], pw["effect_value"], pw["effect_ci_low"],
                                   pw["effect_ci_high"])]
    return pd.DataFrame({
        "A": pw["system_a"].astype(str), "B": pw["system_b"].astype(str),
        "n": [str(int(v)) if _finite(v) else "–" for v in pw["n"]],
        "A − B [CI]": [_with_ci(e, lo, hi) for e, lo, hi in
                       zip(pw["estimate"], pw["ci_low"], pw["ci_high"])],
        "Effect size [CI]": eff,
        "p": [_fmt_p(p) for p in pw["p_value"]],
        "p adj.": [_fmt_p(p) for p in pw["p_adjusted"]],
        "Better": [w if w else "n.s." for w in pw["winner"]],
        "Power": [_fmt(p) for p in pw["power"]],
    })


_MD_TABLE = str.maketrans({"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;",
                           ">": "&gt;", "\n": " ", "\r": " "})


def markdown_escape(text) -> str:
    """One Markdown table cell as literal text: ``\\`` and ``|`` backslash-escaped, the
    HTML-significant ``&``, ``<`` and ``>`` as entities, line breaks as spaces."""
    return str(text).translate(_MD_TABLE)


def to_markdown(frame: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown table of a (string) frame; every cell and header is
    escaped (:func:`markdown_escape`)."""
    def cell(v) -> str:
        s = "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
        return markdown_escape(s)
    head = "| " + " | ".join(cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---:" if _numeric_col(frame[c]) else "---" for c in frame.columns) \
        + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def _numeric_col(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "−": "$-$", "↑": r"$\uparrow$", "↓": r"$\downarrow$", "–": "--"}


_LATEX_TABLE = str.maketrans(_LATEX_SPECIAL)


def latex_escape(text) -> str:
    """Escape LaTeX special characters of one cell (user strings are never markup)."""
    return str(text).translate(_LATEX_TABLE)


def to_latex(frame: pd.DataFrame, *, caption: str | None = None, label: str | None = None
             ) -> str:
    """A booktabs ``table`` of a (string) frame; every cell and header is escaped.

    Needs ``\\usepackage{booktabs}`` in the document preamble.
    """
    align = "".join("r" if _numeric_col(frame[c]) else "l" for c in frame.columns)
    lines = [r"\begin{table}[ht]", r"\centering", r"\small"]
    if caption:
        lines.append(r"\caption{" + latex_escape(caption) + "}")
    if label:
        lines.append(r"\label{" + latex_escape(label) + "}")
    lines += [r"\begin{tabular}{" + align + "}", r"\toprule",
              " & ".join(latex_escape(c) for c in frame.columns) + r" \\", r"\midrule"]
    for row in frame.itertuples(index=False):
        lines.append(" & ".join(latex_escape("" if (isinstance(v, float) and np.isnan(v))
                                             else v) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def effect_label(name: str) -> str:
    """Human label of an effect column (``"estimate"`` → ``"difference"``)."""
    return _EFFECT_LABEL.get(name, name)
