"""`multistat load-mt` on WMT's own layout (tests/data/wmt24-layout-en-de, see its
SOURCE.md): domains from documents/ or metadata/, canary lines skipped, errors that name
the file and the line, and every input checked before any metric is computed. Corpus
scores are checked against sacrebleu run on the same lines."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import assert_one_line_error as one_line_error
from conftest import run_cli as run
from sacrebleu.metrics import BLEU

from multistat import cube
from multistat.corpus import get_corpus_metric
from multistat.io._mt_text import read_domains, read_lines, read_test_set

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "wmt24-layout-en-de"
SYSTEMS = SLICE / "system-outputs" / "en-de"
REFS = [SLICE / "references" / "en-de.refA.txt.gz", SLICE / "references" / "en-de.refB.txt.gz"]
DOCS = SLICE / "documents" / "en-de.docs.gz"
META = SLICE / "metadata" / "en-de.jsonl.gz"


def _lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [line.rstrip() for line in fh]


def _corpus(ds, metric):
    j = [str(m) for m in ds.metric.values].index(metric)
    cm = get_corpus_metric(str(ds.corpus_fn.values[j]))
    stats = ds[cube.STATS].values[:, j, :, :cm.n_stats]
    return dict(zip([str(s) for s in ds.system.values], cm.score(stats, axis=-2)))


def _load(tmp_path, capsys, *extra, name="s.nc"):
    out = tmp_path / name
    # 7 of the 21 systems (a quoted glob, as on the command line): uedin-nmt, xmu,
    # xmu-lowercased, LIUM-NMT, LIUM-NMT-copy and the two LMU systems
    status, text, err = run(["load-mt", str(SYSTEMS / "[uxL]*"), *map(str, REFS),
                             "--dataset", "en-de",
                             "--metrics", "bleu", "--no-progress", "-o", str(out),
                             *map(str, extra)], capsys)
    return status, text, err, out


def test_the_slice_has_wmt24s_shape():
    files = sorted(SYSTEMS.iterdir())
    assert len(files) == 21
    canary = _lines(REFS[0])[0]
    assert canary.startswith("CANARY GUID ")
    for f in [*files, *REFS]:  # every text file starts with the canary line
        lines = _lines(f)
        assert len(lines) == 601 and lines[0] == canary, f.name
    assert read_domains(DOCS) == read_domains(META)
    assert sorted(set(read_domains(DOCS))) == ["canary", "long", "short"]


@pytest.mark.slow  # three loads of 7 systems x 600 segments (about 10 s on two busy cores)
def test_domains_split_the_test_set_and_equal_sacrebleu(tmp_path, capsys):
    status, text, err, out = _load(tmp_path, capsys, "--domains", DOCS)
    assert status in (0, None), err
    assert "en-de: skipped the canary line(s) 1 of every file (10 files" in err
    nodes = cube.datasets(cube.open_study(out))
    assert {k: v.sizes["instance"] for k, v in nodes.items()} == {"en-de-short": 424,
                                                                   "en-de-long": 176}
    domains = read_domains(DOCS)[1:]
    refs = [_lines(r)[1:] for r in REFS]
    for system in ("uedin-nmt", "xmu-lowercased", "LIUM-NMT-copy"):
        hyp = _lines(SYSTEMS / f"{system}.txt.gz")[1:]
        for d in ("short", "long"):
            keep = [i for i, x in enumerate(domains) if x == d]
            want = BLEU().corpus_score([hyp[i] for i in keep],
                                       [[r[i] for i in keep] for r in refs]).score
            got = _corpus(nodes[f"en-de-{d}"], "bleu")[system]
            assert got == pytest.approx(want, abs=1e-9), (system, d)
    # the metadata file gives the same split; --by both adds the whole test set
    status, _, err, out2 = _load(tmp_path, capsys, "--domains", META, "--by", "both",
                                 name="b.nc")
    assert status in (0, None), err
    both = cube.datasets(cube.open_study(out2))
    assert list(both) == ["en-de", "en-de-short", "en-de-long"]
    assert both["en-de"].sizes["instance"] == 600
    assert _corpus(both["en-de-long"], "bleu") == _corpus(nodes["en-de-long"], "bleu")


def test_canary_keep_and_no_domains(tmp_path, capsys):
    status, _, err, out = _load(tmp_path, capsys, "--canary", "keep")
    assert status in (0, None), err
    assert "canary" not in err
    assert cube.datasets(cube.open_study(out))["en-de"].sizes["instance"] == 601
    status, _, err = run(["load-mt", str(SYSTEMS), str(REFS[0]), "--by", "domain", "-o",
                          str(tmp_path / "x.nc")], capsys)
    one_line_error(status, err, "--by domain needs each segment's domain: --domains FILE")


def _copy(tmp_path) -> Path:
    """A plain-text (uncompressed) copy of three systems, the references and documents."""
    root = tmp_path / "wmt"
    (root / "sys").mkdir(parents=True)
    for s in ("uedin-nmt", "KIT", "FBK"):
        (root / "sys" / f"{s}.txt").write_text(
            "\n".join(_lines(SYSTEMS / f"{s}.txt.gz")) + "\n", encoding="utf-8")
    for r in (*REFS, DOCS):
        (root / r.name.removesuffix(".gz")).write_text("\n".join(_lines(r)) + "\n",
                                                       encoding="utf-8")
    return root


def test_errors_name_the_file_and_the_line(tmp_path, capsys):
    root = _copy(tmp_path)
    kit = root / "sys" / "KIT.txt"
    data = kit.read_bytes()
    lines = data.split(b"\n")
    # cut in the middle of a two-byte character on line 715 of a longer file: the first
    # 714 lines whole, then half of "ü"
    cut = b"\n".join(lines[:300]) + b"\n" + "Gr".encode() + "ü".encode()[:1]
    kit.write_bytes(cut)
    status, _, err = run(["load-mt", str(root / "sys"), str(root / "en-de.refA.txt"),
                          "-o", str(tmp_path / "o.nc"), "--no-progress"], capsys)
    one_line_error(status, err, "system file", "KIT.txt", "line 301: not UTF-8",
                   "truncated")
    assert "position" not in err
    # a file that simply ends early: its count against the reference's
    kit.write_bytes(b"\n".join(lines[:300]) + b"\n")
    status, _, err = run(["load-mt", str(root / "sys"), str(root / "en-de.refA.txt"),
                          "-o", str(tmp_path / "o.nc"), "--no-progress"], capsys)
    one_line_error(status, err, "KIT.txt", "has 300 lines (truncated?)", "has 601")
    # a gzip stream cut short: the line where reading stopped
    gz = root / "sys" / "KIT.txt.gz"
    kit.unlink()
    blob = gzip.compress(data, mtime=0)
    gz.write_bytes(blob[: len(blob) // 2])
    status, _, err = run(["load-mt", str(root / "sys"), str(root / "en-de.refA.txt"),
                          "-o", str(tmp_path / "o.nc"), "--no-progress"], capsys)
    one_line_error(status, err, "KIT.txt.gz", "cannot read past line", "truncated?")
    # a domain file of the wrong length
    gz.unlink()
    kit.write_bytes(data)
    docs = root / "en-de.docs"
    docs.write_text("\n".join(docs.read_text().splitlines()[:-1]) + "\n")
    status, _, err = run(["load-mt", str(root / "sys"), str(root / "en-de.refA.txt"),
                          "--domains", str(docs), "-o", str(tmp_path / "o.nc")], capsys)
    one_line_error(status, err, "domain file", "en-de.docs", "has 600 lines", "has 601")


def test_every_input_is_checked_before_any_metric(tmp_path, capsys, monkeypatch):
    root = _copy(tmp_path)
    calls = []
    import multistat._translations as tr

    real = tr._extract
    monkeypatch.setattr(tr, "_extract", lambda *a, **k: calls.append(1) or real(*a, **k))
    # the second test set's reference is missing: nothing is extracted for the first
    status, _, err = run(["load-mt", "--test-set", f"a={root / 'sys'}:{root / 'en-de.refA.txt'}",
                          "--test-set", f"b={root / 'sys'}:{root / 'missing.txt'}",
                          "-o", str(tmp_path / "o.nc")], capsys)
    one_line_error(status, err, "--test-set b:", "missing.txt")
    assert calls == []
    # a system file of another length in the second set: the same
    short = tmp_path / "short"
    short.mkdir()
    for f in (root / "sys").iterdir():
        short.joinpath(f.name).write_text("\n".join(f.read_text().splitlines()[:100]) + "\n")
    status, _, err = run(["load-mt", "--test-set", f"a={root / 'sys'}:{root / 'en-de.refA.txt'}",
                          "--test-set", f"b={short}:{root / 'en-de.refA.txt'}",
                          "-o", str(tmp_path / "o.nc")], capsys)
    one_line_error(status, err, "--test-set b:", "has 100 lines (truncated?)")
    assert calls == []


def test_a_table_with_a_domain_column_and_a_canary_row(tmp_path, capsys):
    refs = [_lines(r) for r in REFS]
    domains = read_domains(DOCS)
    ref_rows = [{"segment": i, "reference": refs[0][i], "domain": domains[i]}
                for i in range(101)]
    hyp_rows = [{"system": s, "segment": i, "hypothesis": _lines(SYSTEMS / f"{s}.txt.gz")[i]}
                for s in ("uedin-nmt", "KIT", "FBK") for i in range(101)]
    (tmp_path / "refs.jsonl").write_text("\n".join(json.dumps(r) for r in ref_rows) + "\n")
    (tmp_path / "hyps.jsonl").write_text("\n".join(json.dumps(r) for r in hyp_rows) + "\n")
    out = tmp_path / "t.nc"
    status, _, err = run(["load-mt", str(tmp_path / "hyps.jsonl"), str(tmp_path / "refs.jsonl"),
                          "--domain-col", "domain", "--dataset", "t", "--metrics", "bleu",
                          "--no-progress", "-o", str(out)], capsys)
    assert status in (0, None), err
    assert "t: skipped 1 canary segment(s) (0)" in err
    nodes = cube.datasets(cube.open_study(out))
    sizes = {k: v.sizes["instance"] for k, v in nodes.items()}
    n_short = domains[1:101].count("short")
    assert sizes == {"t-short": n_short, "t-long": 100 - n_short}
    keep = [i for i in range(1, 101) if domains[i] == "long"]
    hyp = _lines(SYSTEMS / "KIT.txt.gz")
    want = BLEU().corpus_score([hyp[i] for i in keep], [[refs[0][i] for i in keep]]).score
    assert _corpus(nodes["t-long"], "bleu")["KIT"] == pytest.approx(want, abs=1e-9)
    status, _, err = run(["load-mt", str(tmp_path / "hyps.jsonl"), str(tmp_path / "refs.jsonl"),
                          "--domain-col", "genre", "-o", str(tmp_path / "u.nc")], capsys)
    one_line_error(status, err, "refs.jsonl", "lacks column(s) ['genre']")


def test_reader_functions(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("CANARY GUID 1\nx\ny\n".encode())
    assert read_lines(p) == ["CANARY GUID 1", "x", "y"]
    ts = read_test_set("t", {"A": p}, [p], canary="keep")
    assert ts.skipped == () and len(ts.references[0]) == 3
    with pytest.raises(Exception, match="2 input file\\(s\\) of test set 't' do not exist"):
        read_test_set("t", {"A": tmp_path / "no1", "B": tmp_path / "no2"}, [p])
    with pytest.raises(Exception, match="`canary` must be one of auto, keep"):
        read_test_set("t", {"A": p}, [p], canary="drop")
    j = tmp_path / "m.jsonl"
    j.write_text('{"domain": "news"}\n{"genre": "x"}\n')
    with pytest.raises(Exception, match="m.jsonl' line 2: no 'domain' key"):
        read_domains(j)


def test_reader_docstring_examples_run():
    import doctest

    import multistat.io._mt_text as mod
    from multistat.leaderboard import across

    for m in (mod, across):
        result = doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, m.__name__


def test_several_test_sets_each_with_its_own_domains(tmp_path, capsys):
    root = _copy(tmp_path)
    sets = [f"a={root / 'sys'}:{root / 'en-de.refA.txt'},{root / 'en-de.refB.txt'}",
            f"b={root / 'sys'}:{root / 'en-de.refA.txt'}"]
    out = tmp_path / "two.nc"
    status, _, err = run(["load-mt", "--test-set", sets[0], "--test-set", sets[1],
                          "--domains", f"a={root / 'en-de.docs'}", "--by", "both",
                          "--metrics", "bleu", "--no-progress", "-o", str(out)], capsys)
    assert status in (0, None), err
    nodes = cube.datasets(cube.open_study(out))
    assert {k: v.sizes["instance"] for k, v in nodes.items()} == {
        "a": 600, "a-short": 424, "a-long": 176, "b": 600}
    status, _, err = run(["load-mt", "--test-set", sets[0], "--domains",
                          str(root / "en-de.docs"), "-o", str(tmp_path / "x.nc")], capsys)
    one_line_error(status, err, "--domains", "with --test-set give NAME=FILE")
