"""HTML building blocks of the report's pages: the style sheet, escaping, a table and an
embedded figure. Below every section module (html, across, meta, preferences), so each
can build its part without importing the page that includes it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

__all__ = ["CSS", "escape", "figure", "png_size", "table"]

#: the style sheet of the report's pages
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
margin:0;color:#1a1a1a;background:#fff;line-height:1.45}
main{max-width:1500px;margin:0 auto;padding:1rem 2rem 4rem}
h1{font-size:1.7rem;margin:.6rem 0 .2rem}h2{font-size:1.35rem;margin-top:2.2rem;
border-bottom:2px solid #0072B2;padding-bottom:.2rem}h3{font-size:1.1rem;margin:1.4rem 0 .4rem}
h4{font-size:1rem;margin:1rem 0 .3rem}
p.meta{color:#555;margin-top:0}
nav{background:#f4f7fa;border:1px solid #d8e0e8;padding:.6rem 1rem;border-radius:4px}
nav ol{margin:.2rem 0;columns:3 18rem}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.86rem}
th,td{border-bottom:1px solid #ddd;padding:.22rem .6rem;text-align:left;vertical-align:top}
th{background:#eef2f6;position:sticky;top:0}
tbody tr:nth-child(even){background:#fafafa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.sig{color:#0060a0;font-weight:600}
figure{margin:.6rem 0 1.2rem}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.85rem}
details{margin:.4rem 0 .8rem}summary{cursor:pointer;color:#0060a0;font-weight:600}
.grid{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}
.grid>table{flex:0 0 auto}.grid>figure{flex:1 1 480px;max-width:820px;margin-top:.4rem}
.note{background:#fff8e6;border-left:4px solid #E69F00;padding:.4rem .8rem}
section.family{border-top:1px solid #ccc;margin-top:2rem}
"""


def escape(text) -> str:
    """Escape one user-supplied string for HTML text or a quoted attribute."""
    return html.escape("" if text is None else str(text), quote=True)


def table(frame: pd.DataFrame, *, cls: str = "", attrs: Mapping[str, str] | None = None,
           numeric: Iterable[str] = ()) -> str:
    numeric = set(numeric)
    extra = "".join(f' {k}="{escape(v)}"' for k, v in (attrs or {}).items())
    head = "".join(f"<th scope=\"col\">{escape(c)}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for c, v in zip(frame.columns, row):
            v = "" if v is None or (isinstance(v, float) and np.isnan(v)) else v
            klass = ' class="num"' if c in numeric else ""
            cells.append(f"<td{klass}>{escape(v)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="{escape(cls)}"{extra}><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def figure(png: bytes, alt: str, caption: str = "", full: tuple[str, str] | None = None) -> str:
    data = base64.b64encode(png).decode("ascii")
    img = f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'
    link = ""
    if full is not None:  # (relative href, link text): the full-size file beside the page
        img = f'<a class="full" href="{escape(full[0])}">{img}</a>'
        link = f' <a class="full" href="{escape(full[0])}">{escape(full[1])}</a>'
    cap = f"<figcaption>{escape(caption)}{link}</figcaption>" if caption or link else ""
    # never narrower than the image (or the page): a flex row would squeeze tall figures
    style = f' style="min-width:min(100%,{png_size(png)[0]}px)"'
    return f"<figure{style}>{img}{cap}</figure>"


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, from the PNG header (IHDR)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
