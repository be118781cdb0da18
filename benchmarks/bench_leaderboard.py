"""Leaderboard scale (issue 9): multistat beside the scipy reference, one row per study.

Every row runs in a fresh Python process, so its peak resident memory (the child's own
``ru_maxrss``) belongs to that row alone; the scipy references run in processes of their
own. Rows (``--rows`` picks some, comma-separated; default all):

==========  =====================================================================
t           100 systems x 2 metrics x 10,000 instances, ``tests=("t",)`` (the median of
            ``--repeat`` calls after a warm-up call on the same study: the steady state;
            the first call of a fresh process in the note) vs chunked ``scipy.stats.ttest_rel`` (1,000
            pairs a chunk, the median of as many passes); max |difference| of t and p
wilcoxon    same study, ``tests=("wilcoxon",)`` (timed after a warm-up call on a 3 x 1 x 200
            study, so the numba kernels' cache is loaded; medians as for t; the first call
            in the note) vs chunked ``scipy.stats.wilcoxon``
sign        same study, ``tests=("sign",)`` vs ``scipy.stats.binomtest`` per pair
all5        same study, the five default tests + effect sizes: time and peak RSS
s300        300 systems x 1 metric x 2,000 instances, defaults: peak RSS
n2m         2 systems x 2,000,000 instances, defaults: peak RSS; then the command line
            ``multistat compare study.nc --tests t,wilcoxon,sign`` on the same study
linear      200 systems x 10 metrics x 50,000 instances, bootstrap (1,000) + t +
            Wilcoxon at n/4, n/2, n: time and RSS, to show growth linear in n
            (``--linear-pairs baseline``: the pairs against one system only, same cube)
rank        (issue 10) 100 systems x 1 metric x 10,000 instances, B = 1,000:
            ``multistat.rank`` (bootstrap decisions, clusters, rank ranges and rank
            intervals) beside the bootstrap it reuses, ``compare(tests=("bootstrap",))``
==========  =====================================================================

A scipy reference that would take longer than ``--ref-budget`` seconds (default 120) is
timed on the first pairs only and extrapolated linearly in the number of pairs; the
output says so. ``--quick`` shrinks every study (for checking the script, a minute or
two); the full run takes several minutes and up to ~4 GiB. Results are also written to
``benchmarks/results/leaderboard.json`` and ``.md`` (``--out`` to change). Run:
``.venv/bin/python benchmarks/bench_leaderboard.py [--quick] [--rows t,wilcoxon]``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, table

GIB = 2**30
DECIMALS = [4]  # --decimals (set in main)


# ----------------------------------------------------------------------------- studies
def make_study(S, M, n, seed=0, decimals=4):
    """Synthetic leaderboard: a shared per-instance difficulty, system offsets spread
    over 0.2 sd, unit noise; scores rounded to ``decimals`` (as metric scores are
    printed: differences tie now and then; None: continuous)."""
    from multistat import cube

    rng = np.random.default_rng(seed)
    score = np.empty((S, M, n))
    offsets = np.linspace(0.0, 0.2, S)
    for m in range(M):  # one metric at a time: no (S, M, n) temporaries
        base = rng.normal(size=n)
        for s in range(S):
            v = base + offsets[s] + rng.normal(size=n)
            score[s, m] = v if decimals is None else np.round(v, decimals)
    return cube.make_study({"lb": cube.make_dataset(
        "lb", score, systems=[f"s{i:03d}" for i in range(S)],
        metrics=[f"m{j}" for j in range(M)], instances=range(n))})


def compare_kwargs(**kw):
    """Only the keywords this version of ``compare`` takes (``memory_limit`` is new; since
    the run request, every option goes through ``**overrides``: all are taken)."""
    from multistat.comparison import compare

    params = inspect.signature(compare).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(kw)
    return {k: v for k, v in kw.items() if k in params}


# ----------------------------------------------------------------------------- children
def child_multistat(spec: dict) -> dict:
    """One multistat run; writes the table's key columns to ``spec['dump']`` if given."""
    from multistat.comparison import compare

    S, M, n = spec["S"], spec["M"], spec["n"]
    study = make_study(S, M, n, decimals=spec.get("decimals"))
    kw = compare_kwargs(tests=tuple(spec["tests"]) if spec.get("tests") else None,
                        effect_sizes=spec.get("effect_sizes", False),
                        n_resamples=spec.get("B", 10_000), seed=0,
                        memory_limit=spec.get("memory_limit"),
                        ci_method=spec.get("ci_method"), pairs=spec.get("pairs_arg"))
    for key in ("tests", "ci_method", "pairs"):  # None: the library's default
        if kw.get(key) is None:
            kw.pop(key, None)
    if spec.get("warmup"):  # compare's lazy imports and first-call paths: on a tiny
        # study, or (warmup_n None) on the row's own study, the steady state of a process
        # that has compared a study of this size before (its large buffers mapped)
        n_warm = spec.get("warmup_n", 30)
        compare(study if n_warm is None else make_study(
            3, 1, n_warm, seed=1, decimals=spec.get("decimals")), **kw)
    t0 = time.perf_counter()
    if spec.get("fn") == "rank":  # issue 10: the leaderboard on the same plan
        from multistat.leaderboard.ranking import rank

        tab = rank(study, n_resamples=spec.get("B", 10_000), seed=0)
        return {"wall_s": time.perf_counter() - t0, "rows": len(tab)}
    walls = []
    for _ in range(max(1, spec.get("repeat", 1))):  # the same call again: its median
        t0 = time.perf_counter()
        tab = compare(study, **kw)
        walls.append(time.perf_counter() - t0)
    if spec.get("dump"):
        keep = ["system_a", "system_b", "metric", "test", "statistic", "p_value", "estimate"]
        np.savez(spec["dump"], **{c: tab[c].to_numpy() for c in keep})
    return {"wall_s": float(np.median(walls)), "walls_s": walls, "rows": len(tab)}


def child_cli(spec: dict) -> dict:
    """The command line on the same study saved as a study file (``.nc``): ``multistat
    compare FILE --tests ... --out ...`` in a process of its own; its peak RSS (the
    grandchild's, so neither the study built here nor the saving counts)."""
    import resource

    from multistat import cube

    path = Path(spec["dir"]) / f"cli-{spec['S']}x{spec['M']}x{spec['n']}.nc"
    cube.save(make_study(spec["S"], spec["M"], spec["n"], decimals=spec.get("decimals")),
              path)
    cmd = [sys.executable, "-c", ("import sys; from multistat.cli import main; "
                                  "sys.exit(main())"), "compare", str(path), "--out",
           str(path.with_suffix(".parquet")), "--no-progress", *spec.get("args", [])]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["?"])[-1][:200])
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"wall_s": wall, "cli_peak_rss_mib": rss, "command": " ".join(
        ["multistat", *cmd[3:4], path.name, *spec.get("args", [])])}


def _pairs_from_dump(path, test):
    z = np.load(path, allow_pickle=True)
    keep = z["test"] == test
    a = np.array([int(s[1:]) for s in z["system_a"][keep]])
    b = np.array([int(s[1:]) for s in z["system_b"][keep]])
    m = np.array([int(s[1:]) for s in z["metric"][keep]])
    return a, b, m, z["p_value"][keep], z["statistic"][keep]


def child_reference(spec: dict) -> dict:
    """scipy on the first ``spec['pairs']`` pair-metrics of multistat's table, in chunks
    of 1,000 pairs; compares p-values (and t) with multistat's. ``spec['repeat']``: the
    pass that many times, its median time."""
    import scipy.stats  # noqa: F401 - imported before the clock starts

    S, M, n = spec["S"], spec["M"], spec["n"]
    X = np.asarray(make_study(S, M, n, decimals=spec.get("decimals"))["lb"].ds["score"]
                   .values)
    a, b, m, p_ms, stat_ms = _pairs_from_dump(spec["dump"], spec["test"])
    k = min(spec.get("pairs") or len(a), len(a))
    a, b, m, p_ms, stat_ms = a[:k], b[:k], m[:k], p_ms[:k], stat_ms[:k]
    walls = []
    for _ in range(max(1, spec.get("repeat", 1))):  # the same pairs again: the median
        t0 = time.perf_counter()
        p_ref, stat_ref = _reference_pass(spec["test"], X, a, b, m, k)
        walls.append(time.perf_counter() - t0)
    out = {"wall_s": float(np.median(walls)), "walls_s": walls, "pairs_timed": k,
           "pairs_total": spec["total"],
           "max_abs_dp": float(np.max(np.abs(p_ref - p_ms))) if k else float("nan")}
    if spec["test"] != "wilcoxon":  # scipy's two-sided W is min(W+, W-), ours W+
        out["max_abs_dstat"] = float(np.max(np.abs(stat_ref - stat_ms))) if k else np.nan
    return out


def _reference_pass(test, X, a, b, m, k):
    """scipy's p-values (and statistics) for the first ``k`` pair-metrics, 1,000 pairs a
    chunk."""
    from scipy import stats

    p_ref = np.empty(k)
    stat_ref = np.empty(k)
    for s in range(0, k, 1000):
        sl = slice(s, s + 1000)
        x, y = X[a[sl], m[sl]], X[b[sl], m[sl]]
        if test == "t":
            r = stats.ttest_rel(x, y, axis=-1)
            p_ref[sl], stat_ref[sl] = r.pvalue, r.statistic
        elif test == "wilcoxon":
            r = stats.wilcoxon(x, y, axis=-1)  # auto: normal approximation for n > 50
            p_ref[sl], stat_ref[sl] = r.pvalue, np.nan
        else:  # sign: counts by numpy, the exact test by scipy, pair by pair
            pos = np.count_nonzero(x > y, axis=-1)
            neg = np.count_nonzero(x < y, axis=-1)
            for i in range(len(pos)):
                p_ref[s + i] = stats.binomtest(int(pos[i]), int(pos[i] + neg[i])).pvalue
            stat_ref[sl] = pos
    return p_ref, stat_ref


def _child_main(path):
    spec = json.loads(Path(path).read_text())
    child = {"reference": child_reference, "cli": child_cli}.get(spec["kind"],
                                                                 child_multistat)
    out = child(spec)
    import resource

    # a CLI row reports the command's own process (the grandchild)
    out["peak_rss_mib"] = out.pop("cli_peak_rss_mib", None) or (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(out))


def run_child(spec: dict, tmp: Path, timeout: float | None = None) -> dict:
    """``spec`` in a fresh interpreter; its JSON answer (with its own peak RSS)."""
    spec = {"decimals": DECIMALS[0], **spec}
    path = tmp / f"spec-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, __file__, "--_child", str(path)], check=False,
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)
    if proc.returncode:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- rows
def _versus_scipy(name, test, target, S, M, n, args, tmp, warmup=False, warmup_n=30):
    """multistat beside chunked scipy. ``warmup``: time compare after a call on a tiny
    study (its lazy imports done, as scipy's import is outside the reference's time), and
    also report the first call of a fresh process (imports included) in the note;
    ``warmup_n``: the tiny study's instances (Wilcoxon: > 50, the large-n path); None: the
    warm-up call is on the row's own study (the steady state)."""
    dump = str(tmp / f"{name}.npz")
    repeat = args.repeat if warmup else 1
    ms = run_child({"kind": "multistat", "S": S, "M": M, "n": n, "tests": [test],
                    "dump": dump, "memory_limit": args.memory_limit, "warmup": warmup,
                    "warmup_n": warmup_n, "repeat": repeat},
                   tmp)
    row = {"row": name, "study": f"{S}x{M}x{n:,}", "what": f'tests=("{test}",)',
           "multistat_s": ms.get("wall_s"), "multistat_rss_mib": ms.get("peak_rss_mib"),
           "target": target}
    if "error" in ms:
        row["note"] = f"multistat failed: {ms['error']}"
        return row
    first = None
    if warmup:
        first = run_child({"kind": "multistat", "S": S, "M": M, "n": n, "tests": [test],
                           "memory_limit": args.memory_limit}, tmp).get("wall_s")
    total = S * (S - 1) // 2 * M
    # pilot on a few pairs, then as many as fit in the reference budget
    pilot = run_child({"kind": "reference", "S": S, "M": M, "n": n, "test": test,
                       "dump": dump, "pairs": min(total, 200), "total": total}, tmp)
    per_pair = pilot["wall_s"] / max(pilot["pairs_timed"], 1)
    k = total if per_pair * total <= args.ref_budget else max(
        200, int(args.ref_budget / max(per_pair, 1e-9)))
    # the whole reference again, as often as multistat's call, when that fits the budget
    again = repeat if per_pair * k * repeat <= args.ref_budget else 1
    ref = pilot if k <= pilot["pairs_timed"] and again == 1 else run_child(
        {"kind": "reference", "S": S, "M": M, "n": n, "test": test, "dump": dump,
         "pairs": k, "total": total, "repeat": again}, tmp)
    ref_s = ref["wall_s"] * total / ref["pairs_timed"]
    row.update(reference=f"chunked scipy ({test})" if test != "sign"
               else "scipy.stats.binomtest per pair",
               reference_s=ref_s, speedup=ref_s / ms["wall_s"],
               max_abs_dp=ref["max_abs_dp"], max_abs_dstat=ref.get("max_abs_dstat"))
    notes = []
    if ref["pairs_timed"] < total:
        notes.append(f"scipy timed on {ref['pairs_timed']:,} of {total:,} pair-metrics, "
                     "extrapolated linearly")
    if repeat > 1:
        walls = ", ".join(f"{w:.3g}" for w in ms["walls_s"])
        notes.append(f"multistat_s the median of {repeat} calls in one process ({walls} s)"
                     + (f", reference_s the median of {again} passes" if again > 1 else ""))
    if warmup:
        notes.append("multistat_s after a warm-up call on " + (
            "the same study (steady state)" if warmup_n is None else
            f"a 3x1x{warmup_n} study")
                     + (f"; first call of a fresh process (lazy imports included) "
                        f"{first:.3g} s, speedup {ref_s / first:.3g}x" if first else ""))
    if notes:
        row["note"] = "; ".join(notes)
    return row


def _multistat_only(name, what, S, M, n, args, tmp, target, **spec):
    ms = run_child({"kind": "multistat", "S": S, "M": M, "n": n,
                    "memory_limit": args.memory_limit, **spec}, tmp)
    row = {"row": name, "study": f"{S}x{M}x{n:,}", "what": what,
           "multistat_s": ms.get("wall_s"), "multistat_rss_mib": ms.get("peak_rss_mib"),
           "target": target}
    if "error" in ms:
        row["note"] = f"failed: {ms['error']}"
    return row


def row_t(args, tmp):
    S, M, n = args.size(100, 2, 10_000)
    # a 40 ms call: timed in the steady state (after a call on the same study), as the
    # reference's passes are; the first call of a fresh process is in the note
    return [_versus_scipy("t", "t", ">= 50x faster, same numbers to 1e-10", S, M, n, args,
                          tmp, warmup=True, warmup_n=None)]


def row_wilcoxon(args, tmp):
    S, M, n = args.size(100, 2, 10_000)
    return [_versus_scipy("wilcoxon", "wilcoxon", ">= 2x faster, same p-values", S, M, n,
                          args, tmp, warmup=True, warmup_n=200)]


def row_sign(args, tmp):
    S, M, n = args.size(100, 2, 10_000)
    return [_versus_scipy("sign", "sign", "(issue table: 15 s, 6 GB before)", S, M, n,
                          args, tmp)]


def row_all5(args, tmp):
    S, M, n = args.size(100, 2, 10_000)
    return [_multistat_only("all5", "5 default tests + effect sizes, B=10,000", S, M, n,
                            args, tmp, "peak RSS <= 3 GiB", effect_sizes=True)]


def row_s300(args, tmp):
    S, M, n = args.size(300, 1, 2_000)
    return [_multistat_only("s300", "defaults (5 tests + effect sizes)", S, M, n, args, tmp,
                            "completes, peak RSS <= 3 GiB", effect_sizes=True)]


def row_n2m(args, tmp):
    """compare() with the defaults, then the command line with ``--tests t,wilcoxon,sign``
    (no ``--systems-out``: the per-system bootstrap table must not be built)."""
    S, M, n = args.size(2, 1, 2_000_000, systems=1, instances=500)
    rows = [_multistat_only("n2m", "defaults (5 tests + effect sizes)", S, M, n, args, tmp,
                            "completes, peak RSS <= 4 GiB", effect_sizes=True)]
    cli_args = ["--tests", "t,wilcoxon,sign"] + (
        ["--memory-limit", args.memory_limit] if args.memory_limit else [])
    cli = run_child({"kind": "cli", "S": S, "M": M, "n": n, "dir": str(tmp),
                     "args": cli_args}, tmp)
    row = {"row": "n2m", "study": f"{S}x{M}x{n:,}", "what": cli.get("command", "CLI"),
           "multistat_s": cli.get("wall_s"), "multistat_rss_mib": cli.get("peak_rss_mib"),
           "target": "completes, peak RSS <= 4 GiB"}
    row["note"] = (f"failed: {cli['error']}" if "error" in cli else
                   "command line on the saved study (.nc); time includes start-up, "
                   "reading and writing")
    return rows + [row]


def row_linear(args, tmp):
    """``--linear-pairs baseline``: the same cube (so the same copies of it and the same
    budget), but only the S - 1 pairs against the first system; the time of all pairs
    is then bounded by the measured time x (all pairs / baseline pairs) (the per-system
    parts, bootstrap means and the Gram matrix, do not grow with the pairs)."""
    S, M, n = args.size(200, 10, 50_000, metrics=5, instances=25)
    baseline = args.linear_pairs == "baseline"
    ratio = (S * (S - 1) // 2) / (S - 1) if baseline else 1.0
    extra = {"pairs_arg": "baseline:s000"} if baseline else {}
    what = "bootstrap(B=1,000) + t + wilcoxon" + (
        f", baseline pairs only ({S - 1:,} of {S * (S - 1) // 2:,})" if baseline else "")
    rows = []
    for frac in (4, 2, 1):
        rows.append(_multistat_only(
            "linear", what, S, M, n // frac, args, tmp,
            "completes, RSS <= 4 GiB, time linear in n", tests=["bootstrap", "t", "wilcoxon"],
            B=1000, **extra))
    base = rows[-1].get("multistat_s")
    for r, frac in zip(rows, (4, 2, 1)):
        if base and r.get("multistat_s"):
            r["note"] = (f"time / time(n) = {r['multistat_s'] / base:.2f} "
                         f"(linear: {1 / frac:.2f})")
            if baseline:
                r["note"] += (f"; all pairs: at most {r['multistat_s'] * ratio:,.0f} s "
                              f"(x {ratio:.0f})")
    return rows


def row_rank(args, tmp):
    """rank() beside the bootstrap compare it reuses (same study, plan and B)."""
    S, M, n = args.size(100, 1, 10_000)
    common = {"kind": "multistat", "S": S, "M": M, "n": n, "B": 1000,
              "memory_limit": args.memory_limit}
    # the bootstrap rank runs: percentile intervals (rank shows no pair intervals)
    boot = run_child({**common, "tests": ["bootstrap"], "ci_method": "percentile"}, tmp)
    rk = run_child({**common, "fn": "rank"}, tmp)
    row = {"row": "rank", "study": f"{S}x{M}x{n:,}",
           "what": "rank(): bootstrap decisions (Holm), clusters, rank ranges, rank "
                   "intervals, B=1,000",
           "multistat_s": rk.get("wall_s"), "multistat_rss_mib": rk.get("peak_rss_mib"),
           "reference": 'compare(tests=("bootstrap",), B=1,000, ci_method="percentile")',
           "reference_s": boot.get("wall_s"),
           "target": "about the cost of the bootstrap it reuses"}
    if "error" in rk or "error" in boot:
        row["note"] = f"failed: {rk.get('error') or boot.get('error')}"
    else:
        row["speedup"] = boot["wall_s"] / rk["wall_s"]
        row["note"] = f"rank / bootstrap = {rk['wall_s'] / boot['wall_s']:.2f}"
    return [row]


#: row name -> function(args, tmp) -> list of result rows
ROWS = {
    "t": row_t,
    "wilcoxon": row_wilcoxon,
    "sign": row_sign,
    "all5": row_all5,
    "s300": row_s300,
    "n2m": row_n2m,
    "linear": row_linear,
    "rank": row_rank,
}


# ----------------------------------------------------------------------------- output
#: multistat_s: wall seconds of the compare() call (study built, imports done; rows t and
#: wilcoxon: after a warm-up call on a tiny study, the note gives a process's first call);
#: multistat_rss_mib: the child process's peak RSS (study included); speedup:
#: reference_s / multistat_s; max_abs_dp / max_abs_dstat: largest |difference| from scipy
#: over the pair-metrics the reference ran (Wilcoxon: scipy's two-sided statistic is
#: min(W+, W-), multistat's W+, so only p-values are compared)
COLS = ["row", "study", "what", "multistat_s", "multistat_rss_mib", "reference",
        "reference_s", "speedup", "max_abs_dp", "max_abs_dstat", "target", "note"]


def markdown(rows, header) -> str:
    def cell(key, v):
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:,.0f}" if key.endswith("_mib") else f"{v:.3g}"
        return str(v).replace("|", "\\|")

    lines = [f"# Leaderboard benchmark\n\n{header}\n",
             "| " + " | ".join(COLS) + " |", "|" + "---|" * len(COLS)]
    lines += ["| " + " | ".join(cell(c, r.get(c)) for c in COLS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_results(out_dir: Path, rows, header, quick):
    from multistat._atomic import write_text

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "leaderboard-quick" if quick else "leaderboard"
    write_text(out_dir / f"{stem}.json",
               json.dumps({"header": header, "rows": rows}, indent=1, default=float) + "\n")
    write_text(out_dir / f"{stem}.md", markdown(rows, header))
    return out_dir / f"{stem}.md"


class Sizes(argparse.Namespace):
    def size(self, S, M, n, *, systems=5, metrics=1, instances=5):
        """The row's study, shrunk by ``--quick`` (by default systems / 5, instances / 5)."""
        if not self.quick:
            return S, M, n
        return max(2, S // systems), max(1, M // metrics), max(50, n // instances)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default=",".join(ROWS),
                   help=f"comma-separated subset of: {', '.join(ROWS)}")
    p.add_argument("--quick", action="store_true",
                   help="studies shrunk (systems / 5, instances / 5 to / 50): a check of "
                        "the script, a few minutes")
    p.add_argument("--repeat", type=int, default=3,
                   help="rows t and wilcoxon: time multistat's call (after the warm-up) and "
                        "the scipy reference this many times each, and compare medians")
    p.add_argument("--ref-budget", type=float, default=120.0,
                   help="seconds a scipy reference may take before it is extrapolated")
    p.add_argument("--memory-limit", default=None,
                   help="passed to compare(memory_limit=...) when compare takes it")
    p.add_argument("--linear-pairs", choices=("all", "baseline"), default="all",
                   help="row linear: every pair (the target), or only the pairs against "
                        "the first system, same cube, the all-pairs time bounded by "
                        "scaling (when the full row would take hours)")
    p.add_argument("--decimals", default="4",
                   help="round the synthetic scores to this many decimals ('none': "
                        "continuous); ties make the rank tests' work heavier")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"),
                   help="folder for leaderboard.json/.md")
    p.add_argument("--_child", help=argparse.SUPPRESS)
    args = p.parse_args(argv, namespace=Sizes())
    if args._child:
        return _child_main(args._child)
    DECIMALS[0] = None if str(args.decimals).lower() == "none" else int(args.decimals)
    names = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in names if r not in ROWS]
    if unknown:
        p.error(f"unknown row(s) {', '.join(unknown)}; choose from {', '.join(ROWS)}")
    header = (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
              f"{'QUICK (studies shrunk)' if args.quick else 'full sizes'}; scores "
              f"rounded to {DECIMALS[0]} decimals; peak RSS per row in a fresh process")
    print(header, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="multistat-bench-") as tmp:
        for name in names:
            t0 = time.perf_counter()
            got = ROWS[name](args, Path(tmp))
            rows.extend(got)
            for r in got:
                print(f"  {name}: {json.dumps(r, default=float)}  "
                      f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    print(table(rows, [c for c in COLS if any(r.get(c) is not None for r in rows)]))
    path = write_results(Path(args.out), rows, header, args.quick)
    print(f"written: {path} (and .json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
