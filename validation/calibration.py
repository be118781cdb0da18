"""Calibration suite: Type I error of every registered test and coverage of every interval.

``run_calibration`` draws many independent null data sets per setting (distribution x n),
runs them through the batch driver :func:`multistat.compare` as many systems of one study
with explicit pairs ``(2k, 2k+1)``, and tabulates

* ``kind="type_i_error"``: the share of data sets whose p-value is ``<= alpha`` when the
  tested hypothesis is true (nominal ``alpha``);
* ``kind="coverage"``: the share of intervals at ``confidence_level`` that contain the true
  value of the parameter (nominal ``confidence_level``), for every interval method.

Every cell carries its binomial standard error ``sqrt(nominal (1 - nominal) / R)`` and a
verdict: ``ok`` within 3 binomial SE of the nominal value, else ``conservative`` (rejects
less / covers more) or ``liberal`` (rejects more / covers less), with the reason.

Data (``draw``; every setting has ``theta`` known exactly or to Monte Carlo error far below
the test's own error):

* ``normal``: ``a = u + e1``, ``b = u + e2``, ``e ~ N(0, 1)``, ``u`` a shared item effect
  (pairing); differences symmetric about 0.
* ``skewed``: ``a = u + (Exp(1) - 1)``, ``b = u + N(0, 0.5^2)``; the differences are
  right-skewed with mean 0; each test is run at its own true value (mean 0 for t,
  bootstrap and permutation; the median for the sign test; the pseudo-median for
  Wilcoxon), computed once by Monte Carlo with 4 million draws (``TRUTH``).
* ``heavy``: ``e ~ t(2)`` (infinite variance), symmetric.
* ``likert``: ratings 1-5 drawn independently for both systems (many ties and zeros).
* ``binary``: 0/1 correctness ``Bernoulli(p_i)``, ``p_i ~ Beta(2, 2)`` per item (the
  classifier setting; McNemar applies).
* ``bleu``: corpus BLEU from per-sentence sufficient statistics (hypothesis/reference
  lengths, n-gram matches and totals) drawn exchangeably for both systems; bootstrap and
  permutation only (the closed-form tests do not apply to a corpus metric).

Independence of the replicates. One resampling plan serves every pair of a dataset
(``(seed, dataset, kind, block)``). A shared plan does not bias any replicate's p-value
(the plan is independent of the data) but it correlates the replicates, so the rejection
count is no longer binomial. The replicates are therefore spread over ``n_groups``
datasets with different names (independent plans), and ``se_cluster`` -- the standard
error from the spread of the per-dataset rates -- is reported next to the binomial SE;
their ratio (design effect) shows how much the shared plans matter.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from multistat import _atomic
from validation._cells import ALPHA, CONFIDENCE, cell, seed_of
from multistat.corpus import get_corpus_metric
from multistat.io import write_parquet

DISTRIBUTIONS = ("normal", "skewed", "heavy", "likert", "binary", "bleu")
SIZES = (20, 50, 200)
CI_METHODS = ("basic", "bca", "percentile", "studentized")
COLUMNS = ("kind", "test", "method", "distribution", "n", "replicates", "nominal", "rate",
           "se_binomial", "se_cluster", "lower_3se", "upper_3se", "verdict", "reason",
           "n_resamples", "seed")

_TRUTH_CACHE: dict = {}


# ------------------------------------------------------------------------------- data
def _skewed_d(rng, size):
    return (rng.exponential(1.0, size) - 1.0) - rng.normal(0.0, 0.5, size)


def truth(distribution: str) -> dict:
    """True mean, median and pseudo-median (Hodges-Lehmann functional) of ``a - b``."""
    if distribution != "skewed":
        return {"mean": 0.0, "median": 0.0, "pseudomedian": 0.0}
    if "skewed" not in _TRUTH_CACHE:
        rng = np.random.default_rng(20261123)
        d = _skewed_d(rng, 4_000_000)
        e = _skewed_d(rng, 4_000_000)
        # mean is 0 exactly by construction; median and pseudo-median by Monte Carlo
        # (4e6 draws: standard error about 6e-4, against a test-set sd of 1.1/sqrt(n))
        _TRUTH_CACHE["skewed"] = {"mean": 0.0, "median": float(np.median(d)),
                                  "pseudomedian": float(np.median((d + e) / 2))}
    return _TRUTH_CACHE["skewed"]


def draw(distribution: str, n: int, replicates: int, rng: np.random.Generator):
    """``(a, b)`` arrays ``(replicates, n)`` (for ``bleu``: statistics ``(R, n, 10)``)."""
    shape = (replicates, n)
    if distribution == "normal":
        u = rng.normal(0, 1, shape)
        return u + rng.normal(0, 1, shape), u + rng.normal(0, 1, shape)
    if distribution == "skewed":
        u = rng.normal(0, 1, shape)
        return u + rng.exponential(1.0, shape) - 1.0, u + rng.normal(0, 0.5, shape)
    if distribution == "heavy":
        u = rng.normal(0, 1, shape)
        return u + rng.standard_t(2, shape), u + rng.standard_t(2, shape)
    if distribution == "likert":
        p = [0.1, 0.2, 0.3, 0.25, 0.15]
        return (rng.choice(5, size=shape, p=p) + 1.0, rng.choice(5, size=shape, p=p) + 1.0)
    if distribution == "binary":
        pi = rng.beta(2, 2, shape)
        return ((rng.random(shape) < pi).astype(float), (rng.random(shape) < pi).astype(float))
    if distribution == "bleu":
        return _bleu_stats(n, replicates, rng)
    raise ValueError(f"unknown distribution {distribution!r}")


def _bleu_stats(n, replicates, rng):
    """Per-sentence BLEU statistics of two exchangeable systems on shared references."""
    ref = rng.poisson(18, (replicates, n)) + 4
    difficulty = rng.beta(6, 4, (replicates, n))  # sentence-level unigram precision

    def one():
        hyp = np.maximum(ref + np.rint(rng.normal(0, 2.5, ref.shape)), 4).astype(int)
        out = np.zeros((replicates, n, 10))
        out[..., 0], out[..., 1] = hyp, ref
        prec = np.clip(difficulty + rng.normal(0, 0.08, ref.shape), 0.01, 0.99)
        for k in range(1, 5):
            total = np.maximum(hyp - k + 1, 0)
            out[..., 1 + k] = rng.binomial(total, prec ** k)
            out[..., 5 + k] = total
        return out

    return one(), one()


# --------------------------------------------------------------------------- studies
def _study(distribution, a, b, n_groups):
    """``n_groups`` datasets, each with systems ``s0000, s0001, ...``; replicate ``k`` of
    a dataset is the pair ``(s{2k}, s{2k+1})``."""
    # heavy: xarray, lazily
    from multistat import cube

    R = a.shape[0]
    per = math.ceil(R / n_groups)
    nodes, pairs = {}, None
    for g in range(n_groups):
        sl = slice(g * per, min((g + 1) * per, R))
        m = sl.stop - sl.start
        if m <= 0:
            break
        systems = [f"s{i:05d}" for i in range(2 * m)]
        inst = [f"i{j:04d}" for j in range(a.shape[1])]
        if distribution == "bleu":
            cm = get_corpus_metric("bleu")
            st = np.empty((2 * m, 1) + a.shape[1:])
            st[0::2, 0], st[1::2, 0] = a[sl], b[sl]
            score = cm.instance_scores(st[:, 0])[:, None, :]
            ds = cube.make_dataset(f"g{g:03d}", score, systems=systems, metrics=["bleu"],
                                   instances=inst, kind=["corpus"], corpus_fn=[cm.name],
                                   stats=st)
        else:
            score = np.empty((2 * m, 1, a.shape[1]))
            score[0::2, 0], score[1::2, 0] = a[sl], b[sl]
            kind = "binary" if distribution == "binary" else "mean"
            ds = cube.make_dataset(f"g{g:03d}", score, systems=systems, metrics=["score"],
                                   instances=inst, kind=[kind])
        nodes[f"g{g:03d}"] = ds
        if pairs is None or len(pairs) < m:
            pairs = [(f"s{2 * k:05d}", f"s{2 * k + 1:05d}") for k in range(m)]
    return cube.make_study(nodes), pairs


def tests_for(distribution: str) -> list[str]:
    """Registered tests that apply to a setting (every registered test somewhere)."""
    # heavy: scipy.special, numpy, lazily
    from multistat.significance import REGISTRY

    out = []
    for name, spec in REGISTRY.items():
        if distribution == "bleu" and not spec.resampling:
            continue
        if spec.binary_only and distribution != "binary":
            continue
        out.append(name)
    return out


def _theta(test: str, distribution: str) -> float:
    t = truth(distribution)
    if test == "sign":
        return t["median"]
    if test == "wilcoxon":
        return t["pseudomedian"]
    return t["mean"]


# ------------------------------------------------------------------------------- run
def run_setting(distribution: str, n: int, *, replicates: int = 2000, n_groups: int = 40,
                n_resamples: int = 999, seed: int = 0, tests=None,
                ci_methods=CI_METHODS) -> list[dict]:
    """All cells of one (distribution, n) setting."""
    # heavy: xarray, scipy.special, lazily
    from multistat import compare

    s = seed_of("calibration", seed, distribution, n)
    rng = np.random.default_rng(s)
    a, b = draw(distribution, n, replicates, rng)
    study, pairs = _study(distribution, a, b, n_groups)
    rows = []
    for test in tests or tests_for(distribution):
        if distribution == "bleu" and test not in tests_for("bleu"):
            continue
        theta = _theta(test, distribution)
        methods = ci_methods if test == "bootstrap" else ("",)
        methods = [m for m in methods
                   if not (distribution == "bleu" and m == "studentized")]
        for mi, method in enumerate(methods):
            kw = {"ci_method": method} if method else {}
            table = compare(study, tests=(test,), pairs=pairs, null_value=theta,
                            alpha=ALPHA, confidence_level=CONFIDENCE, correction=None,
                            effect_sizes=False, n_resamples=n_resamples, seed=s,
                            scheduler="synchronous", **kw)
            group = table["dataset"].to_numpy()
            # the p-value does not depend on the interval method; a test without one
            # (ASO: eps_min is not a p-value) has no Type I error cell
            if mi == 0 and not np.all(np.isnan(table["p_value"].to_numpy(float))):
                hits = table["p_value"].to_numpy() <= ALPHA
                rates = pd.Series(hits).groupby(group).mean().to_numpy()
                rows.append(cell("type_i_error", test, "", distribution, n, hits, ALPHA,
                                  rates, n_resamples if table["n_resamples"].max() else 0,
                                  s))
            lo, hi = table["ci_low"].to_numpy(), table["ci_high"].to_numpy()
            if np.all(np.isnan(lo)):
                continue  # no interval (permutation)
            cover = (lo <= theta) & (theta <= hi)
            rates = pd.Series(cover).groupby(group).mean().to_numpy()
            rows.append(cell("coverage", test, method or _default_method(test),
                              distribution, n, cover, CONFIDENCE, rates,
                              n_resamples if test == "bootstrap" else 0, s))
    return rows


#: human-rating designs of the mixed model's calibration: Card et al. (2020) Table 16
#: variance preset, raters, items (every rater rates every item of both systems)
RATING_DESIGNS = (("high", 3, 100), ("high", 10, 50), ("low", 3, 100), ("low", 10, 50))


def run_ratings_setting(preset: str, raters: int, items: int, *, replicates: int = 500,
                        n_groups: int = 10, seed: int = 0) -> list[dict]:
    """Type I error and coverage of the ``"mixed"`` test on null rating studies drawn
    from Card et al.'s crossed model (no system effect) with the preset's standard
    deviations, through :func:`multistat.compare` on studies with ratings by rater."""
    # heavy: xarray, scipy.special, lazily
    from multistat import compare, cube

    # heavy: scipy.special, numpy, lazily
    from multistat.power import LIKERT_PRESETS

    v = LIKERT_PRESETS[preset]
    s = seed_of("ratings", seed, preset, raters, items)
    rng = np.random.default_rng(s)
    w0 = rng.normal(0, v.worker_intercept, (replicates, 1, raters))
    w1 = rng.normal(0, v.worker_slope, (replicates, 1, raters))
    i0 = rng.normal(0, v.item_intercept, (replicates, items, 1))
    i1 = rng.normal(0, v.item_slope, (replicates, items, 1))
    base = 0.5 + w0 + i0
    a = base + (w1 + i1) + rng.normal(0, v.sigma, (replicates, items, raters))
    b = base - (w1 + i1) + rng.normal(0, v.sigma, (replicates, items, raters))
    per = math.ceil(replicates / n_groups)
    p_values, lo, hi, group = [], [], [], []
    for g in range(n_groups):
        sl = slice(g * per, min((g + 1) * per, replicates))
        m = sl.stop - sl.start
        if m <= 0:
            break
        rating = np.empty((2 * m, 1, items, raters))
        rating[0::2, 0], rating[1::2, 0] = a[sl], b[sl]
        ds = cube.make_dataset(f"g{g:03d}", cube.run_mean(rating),
                               systems=[f"s{i:05d}" for i in range(2 * m)],
                               metrics=["rating"], instances=[f"i{j:04d}" for j in
                                                              range(items)],
                               rating=rating, raters=[f"r{j}" for j in range(raters)])
        pairs = [(f"s{2 * k:05d}", f"s{2 * k + 1:05d}") for k in range(m)]
        table = compare(cube.make_study({ds.attrs["dataset"]: ds}), tests=("mixed",),
                        pairs=pairs, alpha=ALPHA, confidence_level=CONFIDENCE,
                        correction=None, effect_sizes=False, scheduler="synchronous")
        p_values.append(table["p_value"].to_numpy())
        lo.append(table["ci_low"].to_numpy())
        hi.append(table["ci_high"].to_numpy())
        group.append(np.full(m, g))
    p, lo, hi, group = (np.concatenate(v_) for v_ in (p_values, lo, hi, group))
    dist = f"card-{preset} {raters} raters"
    hits = p <= ALPHA
    cover = (lo <= 0) & (0 <= hi)
    return [cell("type_i_error", "mixed", "", dist, items, hits, ALPHA,
                  pd.Series(hits).groupby(group).mean().to_numpy(), 0, s),
            cell("coverage", "mixed", "satterthwaite t", dist, items, cover, CONFIDENCE,
                  pd.Series(cover).groupby(group).mean().to_numpy(), 0, s)]


def _default_method(test: str) -> str:
    return {"t": "t", "wilcoxon": "walsh (test inversion with ties)",
            "sign": "test inversion (order statistics)",
            "mcnemar": "test inversion (clopper-pearson)"}.get(test, "")


def run_calibration(*, distributions=DISTRIBUTIONS, sizes=SIZES, replicates=2000,
                    n_groups=40, n_resamples=999, seed=0, tests=None,
                    ci_methods=CI_METHODS, progress=None, preferences=False
                    ) -> pd.DataFrame:
    """The calibration table (columns :data:`COLUMNS`), one row per cell. ``preferences``:
    add the Type I error of ``preference_test`` with several judgments per item
    (:mod:`validation._preferences`)."""
    rows = []
    for dist in distributions:
        for n in sizes:
            t0 = time.perf_counter()
            rows += run_setting(dist, n, replicates=replicates, n_groups=n_groups,
                                n_resamples=n_resamples, seed=seed, tests=tests,
                                ci_methods=ci_methods)
            if progress is not None:
                progress(f"{dist:>7} n={n:<4} {time.perf_counter() - t0:6.1f} s")
    if preferences:
        # heavy: scipy.special, numpy, lazily
        from validation._preferences import preference_rows

        rows += preference_rows(replicates=replicates, seed=seed)
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out.attrs["multistat"] = {"alpha": ALPHA, "confidence_level": CONFIDENCE,
                              "replicates": replicates, "n_groups": n_groups,
                              "n_resamples": n_resamples, "seed": seed}
    return out


# ---------------------------------------------------------------------------- output
def to_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown: one section per kind, off-nominal cells listed first."""
    # heavy: matplotlib, seaborn, lazily
    from multistat.report.formatting import to_markdown as markdown_table

    meta = table.attrs.get("multistat", {})
    intro = (f"alpha = {ALPHA}, interval level = {CONFIDENCE}; "
             f"{meta.get('replicates', '?')} null data sets per setting in "
             f"{meta.get('n_groups', '?')} datasets (independent resampling plans), "
             f"{meta.get('n_resamples', '?')} resamples; seed {meta.get('seed', '?')}. "
             "A cell is `ok` within 3 binomial SE of the nominal value. `se_cluster` is "
             "the SE from the spread of the per-dataset rates (shared plans within a "
             "dataset). Data and reasons: `validation/calibration.py`.")
    lines = ["# multistat calibration", "", intro, ""]
    cols = ["test", "method", "distribution", "n", "rate", "se_binomial", "se_cluster",
            "verdict", "reason"]
    for kind, title in (("type_i_error", "Type I error (nominal alpha = 0.05)"),
                        ("coverage", "Interval coverage (nominal 0.95)")):
        part = table[table["kind"] == kind]
        if part.empty:
            continue
        off = part[part["verdict"] != "ok"]
        summary = (f"{len(part)} cells, {len(off)} outside 3 binomial SE "
                   f"({(off['verdict'] == 'liberal').sum()} liberal, "
                   f"{(off['verdict'] == 'conservative').sum()} conservative).")
        order = part.assign(_ok=part["verdict"] == "ok").sort_values(
            ["_ok", "test", "method", "distribution", "n"], kind="stable")
        shown = order[cols].astype(str).assign(
            n=order["n"].astype(int).astype(str),
            **{c: order[c].map("{:.4f}".format) for c in ("rate", "se_binomial",
                                                          "se_cluster")})
        lines += [f"## {title}", "", summary, "", markdown_table(shown)]
    return "\n".join(lines)


def write_reports(table: pd.DataFrame, out_dir="reports/validation") -> tuple[Path, Path]:
    """Write ``calibration.parquet`` and ``calibration.md`` atomically."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = to_markdown(table) + "\n"
    pq = out / "calibration.parquet"
    # the project's writer: the run metadata (replicates, datasets, resamples, seed) under
    # the "multistat" key, so read_parquet gives it back and to_markdown can say it
    plain = table.copy()
    plain.attrs = {}  # the metadata once, not also nested under its attrs key
    write_parquet(plain, pq, metadata=table.attrs.get("multistat", {}))
    md = out / "calibration.md"
    _atomic.write_text(md, text)
    return pq, md


def main(argv=None) -> int:
    """``python -m validation.calibration [--quick] [--out DIR]`` (``make validate``)."""

    ap = argparse.ArgumentParser(prog="python -m validation.calibration",
                                 description="Type I error and interval coverage of every "
                                             "registered test (writes Parquet + Markdown)")
    ap.add_argument("--out", default="reports/validation", help="output directory")
    ap.add_argument("--replicates", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=40,
                    help="datasets (independent resampling plans) per setting")
    ap.add_argument("--resamples", type=int, default=999)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true",
                    help="a one-minute subset: normal and binary data, n = 20 and 50, "
                         "400 replicates")
    args = ap.parse_args(argv)
    kw = {"replicates": args.replicates, "n_groups": args.groups,
          "n_resamples": args.resamples, "seed": args.seed}
    if args.quick:
        kw.update(distributions=("normal", "binary"), sizes=(20, 50), replicates=400,
                  n_groups=8, n_resamples=499)
    t0 = time.perf_counter()
    table = run_calibration(progress=print, preferences=True, **kw)
    if not args.quick:  # the mixed model on Card et al.'s human-rating designs
        rows = []
        for preset, raters, items in RATING_DESIGNS:
            t1 = time.perf_counter()
            rows += run_ratings_setting(preset, raters, items, seed=args.seed,
                                        replicates=min(args.replicates, 500))
            print(f"  mixed card-{preset} {raters}x{items} {time.perf_counter() - t1:6.1f} s")
        meta = dict(table.attrs.get("multistat", {}))
        table = pd.concat([table, pd.DataFrame(rows, columns=list(COLUMNS))],
                          ignore_index=True)
        table.attrs["multistat"] = meta
    pq, md = write_reports(table, args.out)
    off = table[table["verdict"] != "ok"]
    print(f"{len(table)} cells in {time.perf_counter() - t0:.0f} s; {len(off)} outside 3 "
          f"binomial SE; wrote {pq} and {md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
