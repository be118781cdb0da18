"""Parts of the report page that its sections share: the study summary, the overview, the
data-analysis summary, one dataset × metric's heatmaps, adjacent-pair power panels,
histogram pairs and the power section. They tabulate and draw the tables they are given
(:mod:`multistat.report.sections`); nothing here computes a statistic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from multistat import _atomic
from multistat.errors import ParameterError
from multistat.report import plots as _plots
from multistat.report import tables as _tables
from multistat.report._markup import escape as _e
from multistat.report._markup import figure as _img
from multistat.report._markup import png_size as _png_size
from multistat.report._markup import table as _table

ANALYSIS_COLS = ("dataset", "metric", "system_a", "system_b", "n", "skewness",
                 "normality_test", "normality_p", "test_statistic", "recommended",
                 "non_preferred", "inappropriate")


def rank_order(board, ds, metric, fallback: list) -> list:
    """Systems of one dataset × metric in the ranking's order (rank, then name), else
    ``fallback`` (the leaderboard's)."""
    if board is None:
        return fallback
    b = board[(board["dataset"].astype(str) == ds) & (board["metric"].astype(str) == metric)]
    if len(b) != len(fallback) or set(b["system"].astype(str)) != set(fallback):
        return fallback
    return list(b.sort_values(["rank", "system"], kind="stable")["system"].astype(str))


def heatmaps(part, ds, metric, test, annotate, order, figdir, slug, dpi) -> str:
    """The page's heatmap and, linked from it, the full-size one: the same PNG when the
    page shrinks it by at most :data:`~multistat.report.plots.PAGE_SHRINK` (up to about 30
    systems), else a compact one at most :data:`~multistat.report.plots.PAGE_WIDTH` wide
    (labels thinned) and ``figures/heatmap-full_<slug>.png`` with every label and
    number."""
    cap = ("Row system A vs column system B, in rank order; blue: A significantly better, "
           "orange: A significantly worse, grey: not significant (after correction).")
    if _plots.heatmap_fits(order, _plots.PAGE_WIDTH / _plots.PAGE_SHRINK):
        # the full-size figure shrinks by at most PAGE_SHRINK on the page: it is the page's
        page = _plots.heatmap(part, ds, metric, test=test, annotate=annotate, order=order)
        png = _plots.save_png(page, figdir / f"heatmap_{slug}.png", dpi=dpi)
        name, size = f"heatmap_{slug}.png", _png_size(png)
    else:
        page = _plots.heatmap(part, ds, metric, test=test, annotate=annotate, order=order,
                              max_width=_plots.PAGE_WIDTH)
        png = _plots.save_png(page, figdir / f"heatmap_{slug}.png", dpi=dpi)
        name = f"heatmap-full_{slug}.png"
        full = _plots.heatmap(part, ds, metric, test=test, annotate=annotate, order=order)
        size = _png_size(_plots.save_png(full, figdir / name, dpi=dpi))
        cap += (" The page shows a reduced image; the full-size image has every system's "
                "name and every number.")
    w, h = size
    return _img(png, f"pairwise heatmap of {ds} {metric}", cap,
                full=(f"figures/{name}", f"Full-size image ({int(w):,} × {int(h):,} px)."))


def adjacent_power(cv, det_all, order, ds, metric, figdir, slug, dpi) -> str:
    """Power panels of the first :data:`~multistat.report.plots.MAX_POWER_PANELS` adjacent
    pairs in rank order, and a table of every adjacent pair."""
    png = _plots.save_png(_plots.adjacent_power(cv, ds, metric),
                          figdir / f"power_adjacent_{slug}.png", dpi=dpi)
    adj = det_all[(det_all["dataset"] == ds) & (det_all["metric"] == metric)
                  & det_all["adjacent"]]
    cap = _plots.MAX_POWER_PANELS
    h = [_img(png, f"power against the true difference, adjacent pairs of {ds} {metric}",
              "Paired-t power at this test set's size against the true difference, for "
              f"pairs adjacent in the leaderboard (the pairs that decide where a cluster "
              f"ends; at most the first {cap} in rank order are drawn, every adjacent pair "
              "is in the table below); dashed: 80 % power, dotted: the pair's smallest "
              "detectable difference.")]
    drawn = set(map(tuple, cv[["system_a", "system_b"]].drop_duplicates()
                    .to_numpy()[:cap].tolist()))
    f, pos = _tables._fmt, {s: i + 1 for i, s in enumerate(order)}
    table = pd.DataFrame({
        "Positions": [f"{pos.get(a, '?')} → {pos.get(b, '?')}"
                      for a, b in zip(adj["system_a"], adj["system_b"])],
        "System A": adj["system_a"].to_numpy(), "System B": adj["system_b"].to_numpy(),
        "n": adj["n"].to_numpy(),
        "A − B": [f(v) for v in adj["difference"]],
        "sd of A − B": [f(v) for v in adj["sd"]],
        f"smallest detectable ({100 * float(adj['power_level'].iloc[0]):g} % power)"
        if len(adj) else "smallest detectable": [f(v) for v in adj["mde"]],
        "panel": ["drawn" if (a, b) in drawn else "" for a, b in
                  zip(adj["system_a"], adj["system_b"])]})
    h.append(f"<details><summary>{len(adj)} adjacent pairs ({min(cap, len(drawn))} drawn "
             "above): difference, its standard deviation and the smallest detectable "
             "difference</summary>")
    h.append(_table(table, cls="adjacent", numeric=("n", "A − B", "sd of A − B")))
    h.append("</details>")
    return "".join(h)


def write_table(tabdir: Path, kind: str, slug: str, frame: pd.DataFrame, caption: str):
    _atomic.write_text(tabdir / f"{kind}_{slug}.md", _tables.to_markdown(frame))
    _atomic.write_text(tabdir / f"{kind}_{slug}.tex",
                       _tables.to_latex(frame, caption=caption, label=f"tab:{kind}-{slug}"))


def summary_table(res: pd.DataFrame, study, meta: Mapping) -> pd.DataFrame:
    rows = [("datasets", ", ".join(pd.unique(res["dataset"]))),
            ("metrics", str(res["metric"].nunique())),
            ("systems", str(len(pd.unique(pd.concat([res["system_a"], res["system_b"]]))))),
            ("comparisons (rows)", str(len(res))),
            ("tests", ", ".join(pd.unique(res["test"])))]
    if study is not None:
        # heavy: xarray, lazily
        from multistat import cube

        for name, ds in cube.datasets(study).items():
            rows.append((f"dataset {name}", (f"{ds.sizes['system']} systems × "
                                            f"{ds.sizes['metric']} metrics × "
                                            f"{ds.sizes['instance']} instances")))
    n = pd.to_numeric(res.get("n", pd.Series(dtype=float)), errors="coerce").dropna()
    if len(n):
        rows.append(("n per comparison", f"{int(n.min())}–{int(n.max())}"
                     if n.min() != n.max() else str(int(n.min()))))
    for key in ("alternative", "correction", "family", "confidence_level"):
        if key in res:
            vals = pd.unique(res[key].dropna().astype(str))
            text = ", ".join(vals) if len(vals) else "none"
            if key == "family" and len(vals) > 3:
                text = f"{len(vals)} correction families, e.g. {vals[0]}"
            rows.append((key.replace("_", " "), text))
        elif key in meta:
            rows.append((key.replace("_", " "), str(meta[key])))
    rows.append(("α", ", ".join(pd.unique(res["alpha"].astype(str)))))
    for name, sigs in sacrebleu_signatures(meta, study).items():
        for metric, sig in sigs.items():
            rows.append((f"sacrebleu signature ({name}, {metric})", str(sig)))
    for key in ("n_resamples", "seed", "statistic", "ci_method", "bootstrap_pvalue",
                "multistat_version", "input_sha256"):
        if key in meta:
            rows.append((key.replace("_", " "), str(meta[key])))
        elif key in res:
            vals = pd.unique(res[key].dropna().astype(str))
            if len(vals):
                rows.append((key.replace("_", " "), ", ".join(vals)))
    return pd.DataFrame(rows, columns=["item", "value"])


def sacrebleu_signatures(meta: Mapping, study) -> dict:
    """{dataset: {metric: signature}}: from the results' metadata, else from the study."""

    sigs = meta.get("sacrebleu")
    if not isinstance(sigs, Mapping):
        sigs = {}
    out = {str(k): dict(v) for k, v in sigs.items() if isinstance(v, Mapping)}
    if study is not None:
        # heavy: xarray, lazily
        from multistat import cube

        for name, ds in cube.datasets(study).items():
            sig = ds.attrs.get("sacrebleu")
            if sig and name not in out:
                out[str(name)] = json.loads(sig) if isinstance(sig, str) else dict(sig)
    return out


def overview_table(res, lb_all, chosen, small=None) -> pd.DataFrame:
    rows = []
    for (ds, metric), t in chosen.items():
        part = res[(res["dataset"] == ds) & (res["metric"] == metric) & (res["test"] == t)]
        lb = lb_all[(lb_all["dataset"] == ds) & (lb_all["metric"] == metric)]
        top = lb.iloc[0]
        k = len(lb)
        beats_all = int(top["wins"]) == int(top["compared"]) and int(top["compared"]) > 0
        row = {"dataset": ds, "metric": metric,
               "direction": "higher is better" if bool(top["higher_is_better"])
               else "lower is better",
               "test": t, "systems": k, "pairs": len(part),
               "significant pairs": int(part["significant"].sum()),
               "leader": f"{top['system']} ({_tables._fmt(top['score'], 4)})",
               "leader significantly best": "yes" if beats_all else
               f"no (beats {int(top['wins'])} of {int(top['compared'])})"}
        if small is not None and (ds, metric) in small.index:
            row["smallest detectable difference"] = _tables._fmt(
                small.loc[(ds, metric), "mde_min"], 3)
        if "power" in part and pd.to_numeric(part["power"], errors="coerce").notna().any():
            pw = pd.to_numeric(part["power"], errors="coerce").dropna()
            row["median power"] = _tables._fmt(pw.median())
            row["pairs with power < 0.8"] = f"{int((pw < 0.8).sum())} of {len(pw)}"
        rows.append(row)
    return pd.DataFrame(rows)


def analysis_summary(an: pd.DataFrame, chosen) -> pd.DataFrame:
    rows = []
    an = an.assign(dataset=an["dataset"].astype(str), metric=an["metric"].astype(str))
    for (ds, metric), g in an.groupby(["dataset", "metric"], sort=False):
        row = {"dataset": ds, "metric": metric, "pairs": len(g)}
        if "n" in g:
            row["n"] = str(int(pd.to_numeric(g["n"], errors="coerce").median()))
        if "skewness" in g:
            s = pd.to_numeric(g["skewness"], errors="coerce")
            row["skewness (min … max)"] = f"{_tables._fmt(s.min())} … {_tables._fmt(s.max())}"
        if "normality_p" in g:
            p = pd.to_numeric(g["normality_p"], errors="coerce")
            test = ", ".join(pd.unique(g.get("normality_test", pd.Series(["?"])).astype(str)))
            row["normality rejected (p < 0.05)"] = f"{int((p < 0.05).sum())} of " \
                                                   f"{int(p.notna().sum())} ({test})"
        if "test_statistic" in g:
            vc = g["test_statistic"].astype(str).value_counts()
            row["statistic"] = ", ".join(f"{k}: {v}" for k, v in vc.items())
        if "recommended" in g:
            rec = g["recommended"].astype(str).value_counts()
            row["recommended (most pairs)"] = f"{rec.index[0]} ({rec.iloc[0]} of {len(g)})"
            shown = chosen.get((ds, metric))
            if shown is not None:
                ok = g["recommended"].astype(str).str.split(",").map(
                    lambda xs, s=shown: s in [x.strip() for x in xs]).sum()
                row["shown test recommended for"] = f"{int(ok)} of {len(g)} pairs ({shown})"
        rows.append(row)
    return pd.DataFrame(rows)


def hist_pairs(spec, study, ds, metric, lb) -> list[tuple[str, str]]:
    if spec is None or study is None:
        return []
    # heavy: xarray, lazily
    from multistat import cube

    dsets = cube.datasets(study)
    if ds not in dsets or metric not in dsets[ds]["metric"].values:
        return []
    if spec == "top2":
        return [tuple(lb["system"].iloc[:2])] if len(lb) >= 2 else []
    out = []
    for item in spec:
        if len(item) != 4:
            raise ParameterError(f"`histogram_pairs` items must be (dataset, metric, "
                                 f"system_a, system_b); got {item!r}")
        if str(item[0]) == ds and str(item[1]) == metric:
            out.append((str(item[2]), str(item[3])))
    return out


_FACETS = ("dataset", "metric", "system_a", "system_b", "test", "scenario", "method", "kind")


def _power_subject(g: pd.DataFrame) -> str:
    """"dataset · metric: a vs b" from a power table's constant columns ("" if absent)."""
    def one(*cols):
        for c in cols:
            if c in g and g[c].nunique() == 1:
                return str(g[c].iloc[0])
        return None
    ds, metric = one("dataset"), one("metric")
    a, b = one("system_a", "a"), one("system_b", "b")
    where = " · ".join(x for x in (ds, metric) if x)
    pair = f"{a} vs {b}" if a and b else ""
    return ": ".join(x for x in (where, pair) if x)


def _power_design(g: pd.DataFrame) -> str:
    """The constant design columns of a power table, as a figure title."""
    bits = [_power_subject(g)] if _power_subject(g) else []
    for col, fmt in (("scenario", "{}"), ("test", "{} test"), ("method", "{} method"),
                     ("alternative", "{}"), ("alpha", "α = {}"),
                     ("n_simulations", "{} simulations per n")):
        if col in g and g[col].nunique() == 1:
            v = g[col].iloc[0]
            bits.append(fmt.format(f"{v:g}" if isinstance(v, float) else v))
    return ", ".join(bits)


def power_section(res, powers, figdir, dpi, cap) -> str:
    has_col = "power" in res and pd.to_numeric(res["power"], errors="coerce").notna().any()
    if not powers and not has_col:
        return ""
    h = ['<section id="power"><h2>Power</h2>']
    if has_col:
        p = pd.to_numeric(res["power"], errors="coerce")
        h.append(f"<p>Power of the tested comparisons (compare table): median "
                 f"{_e(_tables._fmt(p.median()))}; {int((p < 0.8).sum())} of "
                 f"{int(p.notna().sum())} comparisons have power below 0.8 — a "
                 f"non-significant result there says little.</p>")
    n_fig = 0
    for title, tab in powers:
        if tab is None or tab.empty:
            continue
        h.append(f"<h3>{_e(title)}</h3>")
        if "n" not in tab or "power" not in tab:
            h.append(f'<p class="note">This table has no <code>n</code>/<code>power</code> '
                     f"columns to plot; columns: {_e(', '.join(map(str, tab.columns)))}</p>")
        else:
            facets = [c for c in _FACETS if c in tab and tab[c].nunique() > 1]
            groups = list(tab.groupby(facets, sort=False)) if facets else [((), tab)]
            for key, g in groups:
                if n_fig >= cap:
                    h.append(f'<p class="note">Only the first {cap} power figures are '
                             f"drawn; all rows are in the table below.</p>")
                    break
                key = key if isinstance(key, tuple) else (key,)
                label = " · ".join(f"{f} {v}" for f, v in zip(facets, key))
                label = ", ".join(x for x in (label, _power_design(g)) if x) or title
                fig = _plots.power_curve_plot(g, title=label)
                png = _plots.save_png(fig, figdir / f"power_{n_fig + 1:02d}.png",
                                      dpi=dpi)
                h.append(_img(png, f"power curve {label}",
                              "Power against sample size; dashed line: 80 % power."))
                n_fig += 1
        shown = tab.copy()
        for c in shown.columns:
            if pd.api.types.is_float_dtype(shown[c]):
                shown[c] = [_tables._fmt(v, 4) for v in shown[c]]
        h.append(f"<details><summary>{len(tab)} rows</summary>")
        h.append(_table(shown, cls="power"))
        h.append("</details>")
    h.append("</section>")
    return "".join(h)
