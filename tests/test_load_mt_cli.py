"""Issue 23.4: the MT path from the command line. ``multistat load-mt`` with plain-text
system files named by ``--system-name-from``, several reference files (repeated, a folder,
a glob), several test sets in one call (``--test-set``), the corpus scores it prints, and
``multistat merge``. Data: the WMT17 en-de slice (tests/data/wmt17-en-de: 10 systems x 600
segments, written out here as sacrebleu-style plain-text files). Reference values:
sacrebleu 2.x ``corpus_score`` with its defaults on the same segments (on the full 3,004
segments sacrebleu gives 26.60 for LIUM-NMT, 22.67 for C-3MA, 26.33 for FBK; SOURCE.md)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import run_cli as run

from multistat import cube
from multistat.corpus import get_corpus_metric

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU, CHRF

DATA = Path(__file__).resolve().parent / "data" / "wmt17-en-de"


@pytest.fixture(scope="module")
def wmt():
    hyp = pd.read_csv(DATA / "hypotheses.tsv.gz", sep="\t", keep_default_na=False, dtype=str)
    ref = pd.read_csv(DATA / "references.tsv.gz", sep="\t", keep_default_na=False, dtype=str)
    assert (ref["segment"].astype(int) == np.arange(600)).all()
    outputs = {s: part.set_index("segment").loc[ref["segment"], "hypothesis"].tolist()
               for s, part in hyp.groupby("system", sort=False)}
    return outputs, ref["reference"].tolist()


def _write(folder: Path, outputs, refs, lo=0, hi=600):
    """WMT-style names: newstest2017.<system>.<id>.en-de, one segment per line."""
    (folder / "systems").mkdir(parents=True)
    for i, (s, lines) in enumerate(outputs.items()):
        (folder / "systems" / f"newstest2017.{s}.{4900 + i}.en-de").write_text(
            "\n".join(lines[lo:hi]) + "\n", encoding="utf-8")
    (folder / "ref.de").write_text("\n".join(refs[lo:hi]) + "\n", encoding="utf-8")
    return folder / "systems", folder / "ref.de"


PATTERN = r"newstest2017\.(?P<system>.+)\.\d+\.en-de"


def _corpus(ds, metric):
    j = [str(m) for m in ds.metric.values].index(metric)
    cm = get_corpus_metric(str(ds.corpus_fn.values[j]))
    return dict(zip([str(s) for s in ds.system.values],
                    cm.score(ds["stats"].values[:, j, :, :cm.n_stats], axis=-2)))


def test_text_files_named_by_pattern_equal_sacrebleu(tmp_path, wmt, capsys):
    outputs, refs = wmt
    systems, ref = _write(tmp_path, outputs, refs)
    out = tmp_path / "study.nc"
    status, stdout, err = run(["load-mt", str(systems), str(ref), "--system-name-from",
                               PATTERN, "--no-progress", "--dataset", "wmt17", "-o",
                               str(out)], capsys)
    assert status == 0, err
    ds = cube.datasets(cube.open_study(out))["wmt17"]
    assert sorted(map(str, ds.system.values)) == sorted(outputs)
    bleu, chrf = _corpus(ds, "bleu"), _corpus(ds, "chrf")
    for s, lines in outputs.items():
        assert bleu[s] == pytest.approx(BLEU().corpus_score(lines, [refs]).score, abs=1e-9)
        assert chrf[s] == pytest.approx(CHRF().corpus_score(lines, [refs]).score, abs=1e-9)
    # the printed table: every system with its corpus BLEU and chrF, best BLEU first
    rows = [line.split() for line in stdout.splitlines() if line.startswith("  ")][1:]
    assert [r[0] for r in rows] == sorted(outputs, key=lambda s: -bleu[s])
    for name, b, c in rows:
        assert float(b) == pytest.approx(bleu[name], abs=0.005)
        assert float(c) == pytest.approx(chrf[name], abs=0.005)
    assert "corpus scores, dataset wmt17 (600 segments)" in stdout


def test_several_reference_files_repeated_folder_and_glob(tmp_path, wmt, capsys):
    outputs, refs = wmt
    systems, ref = _write(tmp_path, outputs, refs, 0, 200)
    refs, outputs = refs[:200], {s: lines[:200] for s, lines in outputs.items()}
    # a second reference stream (another system's output as a pseudo-reference: only the
    # multi-reference bookkeeping is under test, against sacrebleu with the same streams)
    ref2 = tmp_path / "refs" / "ref2.de"
    ref2.parent.mkdir()
    ref2.write_text("\n".join(outputs["online-F"]) + "\n", encoding="utf-8")
    (tmp_path / "refs" / "ref1.de").write_text(ref.read_text("utf-8"), encoding="utf-8")
    expected = {s: BLEU().corpus_score(lines, [refs, outputs["online-F"]]).score
                for s, lines in outputs.items()}
    for k, ref_args in enumerate([[str(ref), str(ref2)], [str(tmp_path / "refs")],
                                  [str(tmp_path / "refs" / "ref*.de")]]):
        out = tmp_path / f"s{k}.nc"
        status, _, err = run(["load-mt", str(systems), *ref_args, "--metrics", "bleu",
                              "--system-name-from", PATTERN, "--no-progress", "-o",
                              str(out)], capsys)
        assert status == 0, err
        got = _corpus(cube.datasets(cube.open_study(out))["translations"], "bleu")
        for s in outputs:
            assert got[s] == pytest.approx(expected[s], abs=1e-9), (ref_args, s)


def test_several_test_sets_one_study_and_merge(tmp_path, wmt, capsys):
    outputs, refs = wmt
    a_sys, a_ref = _write(tmp_path / "a", outputs, refs, 0, 150)
    b_sys, b_ref = _write(tmp_path / "b", outputs, refs, 150, 300)
    both = tmp_path / "both.nc"
    status, stdout, err = run(["load-mt", "--test-set", f"first={a_sys}:{a_ref}",
                               "--test-set", f"second={b_sys}:{b_ref}", "--metrics", "bleu",
                               "--system-name-from", PATTERN, "--no-progress", "-o",
                               str(both)], capsys)
    assert status == 0, err
    study = cube.datasets(cube.open_study(both))
    assert list(study) == ["first", "second"]
    for name, (lo, hi) in (("first", (0, 150)), ("second", (150, 300))):
        got = _corpus(study[name], "bleu")
        for s, lines in outputs.items():
            ref_bleu = BLEU().corpus_score(lines[lo:hi], [refs[lo:hi]]).score
            assert got[s] == pytest.approx(ref_bleu, abs=1e-9)
        assert f"corpus scores, dataset {name} (150 segments)" in stdout
    # the same two datasets loaded one by one, then merged
    parts = []
    for name, sys_dir, ref in (("first", a_sys, a_ref), ("second", b_sys, b_ref)):
        parts.append(tmp_path / f"{name}.nc")
        assert run(["load-mt", str(sys_dir), str(ref), "--metrics", "bleu", "--dataset",
                    name, "--system-name-from", PATTERN, "--no-progress", "-o",
                    str(parts[-1])], capsys)[0] == 0
    merged = tmp_path / "merged.nc"
    status, stdout, err = run(["merge", *map(str, parts), "-o", str(merged)], capsys)
    assert status == 0, err
    assert "dataset second: 10 systems x 1 metrics x 150 instances" in stdout
    again = cube.datasets(cube.open_study(merged))
    for name in ("first", "second"):
        xr.testing.assert_identical(again[name], study[name])
    status, _, err = run(["merge", str(parts[0]), str(both), "-o", str(tmp_path / "m2.nc")],
                         capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert re.search(r"dataset 'first' is in both .*first\.nc and .*both\.nc", err)


def test_system_names_from_a_table(tmp_path, wmt, capsys):
    outputs, refs = wmt
    systems, ref = _write(tmp_path, outputs, refs, 0, 50)
    files = sorted(p.name for p in systems.iterdir())
    table = tmp_path / "names.tsv"
    pd.DataFrame({"file": files, "system": [f"team{i}" for i in range(len(files))]}).to_csv(
        table, sep="\t", index=False)
    out = tmp_path / "s.nc"
    status, _, err = run(["load-mt", str(systems), str(ref), "--metrics", "bleu",
                          "--system-name-from", str(table), "--no-progress", "-o", str(out)],
                         capsys)
    assert status == 0, err
    ds = cube.datasets(cube.open_study(out))["translations"]
    assert sorted(map(str, ds.system.values)) == sorted(f"team{i}" for i in range(10))


@pytest.mark.parametrize("extra, message", [
    (["--system-name-from", r"nomatch\.(.+)"],
     r"the pattern 'nomatch\\\\\.\(\.\+\)' does not match system file 'newstest2017"),
    (["--system-name-from", r"newstest(2017)"],
     r"gives two files the system name '2017' \(newstest2017\.C-3MA\.\d+\.en-de, "),
    (["--system-name-from", "(unclosed"],
     r"--system-name-from '\(unclosed': neither a file nor a regular expression"),
    (["--test-set", "x=a:b"],
     r"give HYPOTHESES REFERENCES or --test-set NAME=HYPS:REFS \(repeatable\), not both"),
])
def test_load_mt_errors_are_one_line(tmp_path, wmt, capsys, extra, message):
    outputs, refs = wmt
    systems, ref = _write(tmp_path, outputs, refs, 0, 20)
    status, _, err = run(["load-mt", str(systems), str(ref), *extra, "--no-progress", "-o",
                          str(tmp_path / "s.nc")], capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err


@pytest.mark.parametrize("args, message", [
    (["--test-set", "broken"], r"--test-set 'broken': expected NAME=HYPOTHESES:REFERENCES"),
    (["--test-set", "a=x:y", "--test-set", "a=x:z"], r"test set 'a' is given twice"),
    ([], r"give HYPOTHESES and REFERENCES, or --test-set"),
    (["--test-set", "a=x:y", "--dataset", "d"], r"--test-set names each dataset; drop"),
])
def test_test_set_errors(tmp_path, capsys, args, message):
    status, _, err = run(["load-mt", *args, "-o", str(tmp_path / "s.nc")], capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err


def test_several_references_need_text_files_with_a_table(tmp_path, capsys):
    status, _, err = run(["load-mt", str(DATA / "hypotheses.tsv.gz"),
                          str(DATA / "references.tsv.gz"), str(DATA / "references.tsv.gz"),
                          "-o", str(tmp_path / "s.nc")], capsys)
    assert status == 2
    assert "with a hypotheses table give one references table" in err
