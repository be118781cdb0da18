"""A hostile sweep of the command line over the human-judgement, preference,
meta-analysis, meta-evaluation and LLM-log families.

Each case writes a generated bad (or edge) input, runs one command in this process
(``multistat.cli.main``), and classifies the result:

* ``clean-error``   exit 2 with one ``multistat: error:`` line, no traceback;
* ``correct``       exit 0 where the case is a valid edge input (or a bad one that the
                    command accepts with a ``multistat: warning:`` saying what it did);
* ``traceback``     exit 1 ("internal error"), a Python traceback, or any other status;
* ``write-through`` an output written by a failed run, or an input changed;
* ``silent``        exit 0 on an input that must be refused, with no warning;
* ``wrong-refusal`` a valid edge input refused.

Run ``python -m validation.hostile_sweep [--only FAMILY] [--json out.json]``; it prints
the count per class and every case outside ``clean-error``/``correct``. The fast subset in
``tests/test_hostile_sweep.py`` runs a few dozen representative cases.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

REFUSE, ACCEPT = "refuse", "accept"


@dataclass
class Case:
    """One command on one generated input."""

    family: str
    name: str
    #: writes the inputs into the folder; returns the argv (``{out}`` is the output)
    make: object
    expect: str = REFUSE
    outputs: tuple[str, ...] = ("out.parquet",)
    extra: dict = field(default_factory=dict)


# ----------------------------------------------------------------- base inputs (valid)
def ratings(seed=0, systems=("A", "B", "C"), items=12, raters=("r1", "r2", "r3")):
    rng = np.random.default_rng(seed)
    rows = [(s, f"i{i}", r, float(rng.integers(1, 6))) for s in systems
            for i in range(items) for r in raters]
    return pd.DataFrame(rows, columns=["system", "instance", "rater", "score"])


def battles(seed=0, n=60, models=("m1", "m2", "m3", "m4")):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(models), n)
    b = (a + rng.integers(1, len(models), n)) % len(models)
    win = rng.choice(["model_a", "model_b", "tie"], n, p=[0.45, 0.4, 0.15])
    return pd.DataFrame({"model_a": np.array(models)[a], "model_b": np.array(models)[b],
                         "winner": win})


def compare_table(seed=0, datasets=("d1", "d2", "d3")):
    rng = np.random.default_rng(seed)
    rows = []
    for d in datasets:
        for a, b in (("s1", "s2"), ("s1", "s3"), ("s2", "s3")):
            rows.append((d, "bleu", a, b, "t", rng.normal(0.5, 0.3),
                         rng.uniform(0.1, 0.3), rng.uniform(0, 1)))
    return pd.DataFrame(rows, columns=["dataset", "metric", "system_a", "system_b", "test",
                                       "estimate", "se", "p_value"])


def metaeval_scores(seed=0, systems=("s1", "s2", "s3", "s4"), items=15):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=len(systems))
    rows = []
    for j, s in enumerate(systems):
        for i in range(items):
            h = quality[j] + rng.normal()
            rows += [(s, f"seg{i}", "mqm", h), (s, f"seg{i}", "bleu", h + rng.normal()),
                     (s, f"seg{i}", "chrf", h + 2 * rng.normal())]
    return pd.DataFrame(rows, columns=["system", "instance", "metric", "score"])


#: real Every Eval Ever instance-level logs of two models (tests/data/llm/eee)
EEE = Path(__file__).resolve().parents[1] / "tests" / "data" / "llm" / "eee" / \
    "arith_capitals" / "multistat"


def eee_records() -> dict[str, list[dict]]:
    """``{model folder: its sample records}`` of the real logs."""
    out = {}
    for folder in sorted(EEE.iterdir()):
        (path,) = folder.glob("*_samples.jsonl")
        out[folder.name] = [json.loads(line) for line in path.read_text("utf-8").splitlines()
                            if line.strip()]
    return out


# --------------------------------------------------------------- table mutations
def _write(frame: pd.DataFrame, path: Path) -> Path:
    """CSV, or Parquet for a ``.parquet`` path (a column mixing text and numbers is
    written as text)."""
    if path.suffix == ".parquet":
        frame = frame.copy()
        for c in frame.columns:
            if frame[c].dtype == object:
                kinds = {type(v) for v in frame[c] if v is not None and v == v}
                if len(kinds) > 1:
                    frame[c] = frame[c].map(lambda v: v if v is None or v != v else str(v))
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def mutations(frame: pd.DataFrame, names: list[str], numbers: list[str]):
    """``(name, expect, writer)`` for a valid table: each writer takes a path and writes
    a mutated copy there."""
    out = []

    def add(name, expect, fn):
        out.append((name, expect, fn))

    add("valid", ACCEPT, lambda p: _write(frame, p))
    for c in frame.columns:
        add(f"drop column {c}", REFUSE, lambda p, c=c: _write(frame.drop(columns=c), p))
    for c in names:
        add(f"missing {c} cell", REFUSE,
            lambda p, c=c: _write(frame.assign(**{c: frame[c].where(frame.index != 1)}), p))
        add(f"whitespace twin in {c}", REFUSE,
            lambda p, c=c: _write(frame.assign(**{c: frame[c].where(
                frame.index != 2, frame[c].astype(str) + " ")}), p))
        add(f"control character in {c}", REFUSE,
            lambda p, c=c: _write(frame.assign(**{c: frame[c].where(
                frame.index != 2, frame[c].astype(str) + "\x07")}), p))
        add(f"zero-width space in {c}", REFUSE,
            lambda p, c=c: _write(frame.assign(**{c: frame[c].where(
                frame.index != 2, frame[c].astype(str) + "\u200b")}), p))
        add(f"empty string in {c}", REFUSE,
            lambda p, c=c: _write(frame.assign(**{c: frame[c].where(frame.index != 3, "")}),
                                  p))
    for c in numbers:
        for label, value in (("text", "abc"), ("inf", "inf"), ("-inf", "-inf"),
                             ("true", "True"), ("1e999", "1e999")):
            add(f"{label} in {c}", REFUSE,
                lambda p, c=c, v=value: _write(frame.astype({c: object}).assign(
                    **{c: frame[c].astype(object).where(frame.index != 1, v)}), p))
        add(f"NaN in {c}", "either",
            lambda p, c=c: _write(frame.assign(**{c: frame[c].where(frame.index != 1)}), p))
        add(f"huge {c} (1e300 scale)", ACCEPT,
            lambda p, c=c: _write(frame.assign(**{c: frame[c] * 1e300}), p))
        add(f"tiny {c} (1e-300 scale)", ACCEPT,
            lambda p, c=c: _write(frame.assign(**{c: frame[c] * 1e-300}), p))
    add("duplicated first row", REFUSE, lambda p: _write(pd.concat([frame.iloc[:1], frame]),
                                                         p))
    add("one row", REFUSE, lambda p: _write(frame.iloc[:1], p))
    add("header only", REFUSE, lambda p: _write(frame.iloc[:0], p))
    add("empty file", REFUSE, lambda p: p.write_bytes(b""))
    add("binary garbage", REFUSE, lambda p: p.write_bytes(bytes(range(256)) * 4))
    add("latin-1 bytes", REFUSE, lambda p: p.write_bytes(
        frame.to_csv(index=False).replace(str(frame[names[0]].iloc[0]), "caf\xe9", 1)
        .encode("latin-1")) if p.suffix != ".parquet" else p.write_bytes(b"PAR1\xe9PAR1"))
    add("a folder instead of a file", REFUSE, lambda p: p.mkdir())
    add("a missing file", REFUSE, lambda p: None)
    add("extra unnamed column", ACCEPT, lambda p: _write(frame.assign(extra="x"), p))
    add("rows shuffled", ACCEPT, lambda p: _write(frame.sample(frac=1.0, random_state=3), p))
    return out


# ------------------------------------------------------------------- the cases
def cases() -> list[Case]:
    out: list[Case] = []
    rat = ratings()
    for name, expect, write in mutations(rat, ["system", "instance", "rater"], ["score"]):
        for cmd in (["agreement", "--n-resamples", "50"], ["components"]):
            out.append(Case("human", f"{cmd[0]}: {name}", _rated(cmd, write), expect))
    # every rating equal: no spread to agree on
    out.append(Case("human", "agreement: all ratings equal", _rated(
        ["agreement", "--n-resamples", "50"], lambda p: _write(rat.assign(score=3.0), p)),
        "either"))
    out.append(Case("human", "components: all ratings equal", _rated(
        ["components"], lambda p: _write(rat.assign(score=3.0), p)), "either"))
    out.append(Case("human", "components: one rater", _rated(
        ["components"], lambda p: _write(rat[rat["rater"] == "r1"], p)), REFUSE))
    out.append(Case("human", "agreement: unknown level", _rated(
        ["agreement", "--level", "cardinal"], lambda p: _write(rat, p)), REFUSE))
    out.append(Case("human", "agreement: ratio level with negative ratings", _rated(
        ["agreement", "--level", "ratio"], lambda p: _write(rat.assign(
            score=rat["score"] - 3), p)), REFUSE))

    bat = battles()
    for name, expect, write in mutations(bat, ["model_a", "model_b", "winner"], []):
        if name == "duplicated first row":
            expect = ACCEPT  # two battles of one pair with one outcome are two battles
        out.append(Case("preferences", f"preferences: {name}", _command(
            ["preferences", "--n-resamples", "50"], write, "battles.csv"), expect))
    for label, winner, expect in (("winner 'draw'", "draw", REFUSE),
                                  ("winner 'MODEL_A'", "MODEL_A", REFUSE),
                                  ("winner 'tie (bothbad)'", "tie (bothbad)", ACCEPT)):
        out.append(Case("preferences", f"preferences: {label}", _command(
            ["preferences", "--n-resamples", "50"],
            lambda p, w=winner: _write(bat.assign(winner=bat["winner"].where(
                bat.index != 0, w)), p), "battles.csv"), expect))
    out.append(Case("preferences", "preferences: a system against itself", _command(
        ["preferences", "--n-resamples", "50"],
        lambda p: _write(bat.assign(model_b=bat["model_b"].where(bat.index != 0,
                                                                 bat["model_a"])), p),
        "battles.csv"), REFUSE))
    out.append(Case("preferences", "preferences: disconnected systems", _command(
        ["preferences", "--n-resamples", "50"],
        lambda p: _write(pd.DataFrame({"model_a": ["a", "a", "c", "c"],
                                       "model_b": ["b", "b", "d", "d"],
                                       "winner": ["model_a", "model_b", "model_a",
                                                  "tie"]}), p), "battles.csv"), "either"))
    out.append(Case("preferences", "preferences: anchor not a system", _command(
        ["preferences", "--n-resamples", "50", "--anchor", "nobody"],
        lambda p: _write(bat, p), "battles.csv"), REFUSE))

    cmp_ = compare_table()
    for name, expect, write in mutations(cmp_, ["dataset", "metric", "system_a",
                                                "system_b", "test"], ["estimate", "se"]):
        if name.startswith(("NaN in", "one row")):
            expect = "either"  # dropped with a warning / nothing to pool
        if name == "drop column p_value":
            expect = ACCEPT  # meta pools estimates and standard errors only
        out.append(Case("meta", f"meta: {name}", _command(["meta"], write,
                                                          "results.parquet"), expect))
    out.append(Case("meta", "meta: negative se", _command(
        ["meta"], lambda p: _write(cmp_.assign(se=-cmp_["se"]), p), "results.parquet"),
        "either"))
    out.append(Case("meta", "meta: unknown method", _command(
        ["meta", "--method", "bayes"], lambda p: _write(cmp_, p), "results.parquet"),
        REFUSE))
    out.append(Case("meta", "meta: a CSV compare table", _command(
        ["meta"], lambda p: _write(cmp_, p), "results.csv"), "either"))

    mev = metaeval_scores()
    for name, expect, write in mutations(mev, ["system", "instance", "metric"], ["score"]):
        if name.startswith("NaN in"):
            expect = REFUSE  # load's default --missing raise
        out.append(Case("metaeval", f"meta-evaluate: {name}", _command(
            ["meta-evaluate", "--human", "mqm", "--n-resamples", "50"], write,
            "scores.csv"), expect))
    out.append(Case("metaeval", "meta-evaluate: human metric absent", _command(
        ["meta-evaluate", "--human", "esa", "--n-resamples", "50"],
        lambda p: _write(mev, p), "scores.csv"), REFUSE))
    out.append(Case("metaeval", "meta-evaluate: only the human metric", _command(
        ["meta-evaluate", "--human", "mqm", "--n-resamples", "50"],
        lambda p: _write(mev[mev["metric"] == "mqm"], p), "scores.csv"), REFUSE))
    out.append(Case("metaeval", "meta-evaluate: constant human scores", _command(
        ["meta-evaluate", "--human", "mqm", "--n-resamples", "50"],
        lambda p: _write(mev.assign(score=mev["score"].where(mev["metric"] != "mqm", 1.0)),
                         p), "scores.csv"), "either"))

    for name, expect, edit in eee_mutations():
        out.append(Case("llm", f"load eee: {name}", _eee_command(edit), expect,
                        outputs=("out.nc",)))
    return out


def eee_mutations():
    """``(name, expect, edit)``: ``edit(records)`` changes the per-model record lists."""
    def set_field(path, value, model="alpha", i=0):
        def edit(recs):
            obj = recs[model][i]
            for k in path[:-1]:
                obj = obj[k]
            if value is _DELETE:
                obj.pop(path[-1], None)
            else:
                obj[path[-1]] = value
        return edit

    out = [("valid", ACCEPT, lambda recs: None)]
    for path in (("sample_id",), ("evaluation",), ("evaluation", "score"), ("model_id",),
                 ("evaluation_name",)):
        out.append((f"no {'.'.join(path)}", REFUSE, set_field(path, _DELETE)))
    for label, value in (("true", True), ("a list", [1]), ("null", None), ("an object", {})):
        out.append((f"sample_id {label}", REFUSE, set_field(("sample_id",), value)))
    out.append(("score true (a binary score)", "either",
                set_field(("evaluation", "score"), True)))
    for label, value in (("text", "high"), ("a list", [0.5]), ("1e999", 1e999),
                         ("NaN", float("nan"))):
        out.append((f"score {label}", REFUSE, set_field(("evaluation", "score"), value)))
    out.append(("duplicate sample", REFUSE,
                lambda recs: recs["alpha"].append(dict(recs["alpha"][0]))))
    out.append(("model name with trailing space", REFUSE,
                set_field(("model_id",), "multistat/alpha ", i=1)))
    out.append(("model name with a control character", REFUSE,
                set_field(("model_id",), "multistat/al\x07pha", i=1)))
    out.append(("sample ids NFC/NFD twins", REFUSE, lambda recs: (
        recs["alpha"][0].update(sample_id="caf\u00e9"),
        recs["alpha"][1].update(sample_id="cafe\u0301"))))
    out.append(("a truncated last line", REFUSE, "truncate"))
    out.append(("an empty file", REFUSE, "empty"))
    out.append(("not JSON", REFUSE, "garbage"))
    out.append(("huge scores (1e300)", ACCEPT, lambda recs: [
        r["evaluation"].update(score=r["evaluation"]["score"] * 1e300)
        for m in recs for r in recs[m]]))
    return out


_DELETE = object()


def _command(cmd, write, filename):
    def make(folder: Path):
        path = folder / filename
        write(path)
        return [*cmd, str(path), "-o", "{out}"]
    return make


def _rated(cmd, write):
    """``load --rater-col rater`` of the written ratings, then ``cmd`` on the study."""
    def make(folder: Path):
        path = folder / "ratings.csv"
        write(path)
        study = folder / "study.nc"
        return [["load", str(path), "--rater-col", "rater", "-o", str(study)],
                [*cmd, str(study), "-o", "{out}"]]
    return make


def _eee_command(edit):
    def make(folder: Path):
        import shutil

        root = folder / "logs"
        shutil.copytree(EEE, root)
        recs = eee_records()
        if callable(edit):
            edit(recs)
        for model, rows in recs.items():
            (path,) = (root / model).glob("*_samples.jsonl")
            text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in rows)
            if edit == "truncate" and model == "alpha":
                text = text[:-25]
            elif edit == "empty" and model == "alpha":
                text = ""
            elif edit == "garbage" and model == "alpha":
                text = "this is not json\n" + text
            path.write_text(text, encoding="utf-8")
        return ["load", str(root), "--format", "eee", "-o", "{out}"]
    return make


# ------------------------------------------------------------------- running them
def _digest(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run_case(case: Case, folder: Path) -> dict:
    """Run one case in ``folder``; its classification and what was seen."""
    from multistat import cli

    folder.mkdir(parents=True, exist_ok=True)
    steps = case.make(folder)
    steps = steps if isinstance(steps[0], list) else [steps]
    out_path = folder / case.outputs[0]
    for i, argv in enumerate(steps):
        argv = [str(out_path) if a == "{out}" else a for a in argv]
        before = _digest(folder)
        status, err = _run(cli, argv)
        if status != 0:  # a refusal (or a crash) of an earlier step ends the case
            break
    after = _digest(folder)
    changed = [k for k, v in before.items() if after.get(k) != v]
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("multistat:")]
    if changed:
        kind = "write-through"
    elif status != 0 and out_path.exists():
        kind = "write-through"
    elif status == 2 and len([ln for ln in lines if "error:" in ln]) == 1 \
            and "Traceback" not in err:
        kind = "clean-error" if case.expect in (REFUSE, "either") else "wrong-refusal"
    elif status == 0 and "Traceback" not in err:
        warned = any("warning:" in ln for ln in lines)
        kind = ("correct" if case.expect in (ACCEPT, "either") or warned else "silent")
    else:
        kind = "traceback"
    return {"family": case.family, "case": case.name, "expect": case.expect,
            "status": status, "kind": kind, "stderr": err.strip()[-400:],
            "changed": changed}


def _run(cli, argv) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), \
            warnings.catch_warnings():
        warnings.simplefilter("default")
        try:
            cli.main(argv)
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - the sweep records everything
            status = 1
            stderr.write(f"Traceback (uncaught): {type(exc).__name__}: {exc}\n")
    return status, stderr.getvalue()


def sweep(only: str | None = None) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        for i, case in enumerate(cases()):
            if only and case.family != only:
                continue
            results.append(run_case(case, Path(tmp) / f"case{i:04d}"))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one family: human, preferences, meta, metaeval, llm")
    parser.add_argument("--json", help="write every result to this JSON file")
    args = parser.parse_args(argv)
    results = sweep(args.only)
    counts = Counter(r["kind"] for r in results)
    print(f"{len(results)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    by_family = Counter((r["family"], r["kind"]) for r in results)
    for (fam, kind), n in sorted(by_family.items()):
        print(f"  {fam:12s} {kind:14s} {n}")
    for r in results:
        if r["kind"] not in ("clean-error", "correct"):
            print(f"[{r['kind']}] {r['case']} (exit {r['status']}): "
                  f"{r['stderr'].splitlines()[-1] if r['stderr'] else ''}"[:300])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if all(r["kind"] in ("clean-error", "correct") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
