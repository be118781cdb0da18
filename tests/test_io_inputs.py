"""Inputs people have (issue 12.5): several files at once, a dataset per file, a folder or
glob of one-score-per-line files (one per system), comet-score output. Every file here is
written by the test in the format the tool writes; expected values are the written ones."""

from __future__ import annotations

import numpy as np
import pytest

import multistat as ms
from multistat.errors import DataValidationError, InputFileError, ParameterError

LONG = "system\tinstance\tscore\nA\t1\t0.5\nA\t2\t0.7\nB\t1\t0.4\nB\t2\t0.1\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_several_files_and_dataset_from_filename(tmp_path):
    a = write(tmp_path / "wmt" / "newstest.tsv", LONG)
    b = write(tmp_path / "wmt" / "flores.tsv", LONG.replace("0.5", "0.9"))
    frame = ms.read_scores([a, b], dataset_from_filename=True)
    assert list(dict.fromkeys(frame["dataset"])) == ["newstest", "flores"]
    assert frame.loc[frame.dataset == "flores", "score"].tolist() == [0.9, 0.7, 0.4, 0.1]
    assert frame.attrs["source"]["paths"] == [str(a), str(b)]
    study = ms.from_frame(frame)
    assert list(study.children) == ["newstest", "flores"]
    # without the flag both files are one dataset (named after their folder): here the
    # same (system, instance) twice, an error naming both files
    with pytest.raises(DataValidationError,
                       match=r"dataset 'wmt', system 'A', metric 'score', instance '1' at "
                             r".*newstest\.tsv, line 2 and .*flores\.tsv, line 2"):
        ms.read_scores([a, b])
    with pytest.raises(ParameterError, match=r"dataset_from_filename=True` names each"):
        ms.read_scores([a, b], dataset_from_filename=True, dataset="x")
    with pytest.raises(ParameterError, match=r"the same file is given twice"):
        ms.read_scores([a, a])
    # files holding different systems of one test set go together
    c = write(tmp_path / "parts" / "c.tsv", "system\tinstance\tscore\nC\t1\t0.2\nC\t2\t0.3\n")
    frame = ms.read_scores([a, c], dataset="news")
    assert sorted(set(frame.system)) == ["A", "B", "C"] and set(frame.dataset) == {"news"}


def _lines(folder, scores):
    for name, values in scores.items():
        write(folder / f"{name}.seg.txt", "".join(f"{v}\n" for v in values))


def test_folder_and_glob_of_one_score_per_line_files(tmp_path):
    scores = {"sysA": [0.25, 0.5, 0.75], "sysB": [0.125, 0.0, 1.5], "sysC": [1, 2, 3]}
    folder = tmp_path / "bleurt"
    _lines(folder, scores)
    write(folder / ".hidden", "not a system\n")
    for given in (folder, str(folder / "*.seg.txt"), sorted(folder.glob("*.txt"))):
        frame = ms.read_scores(given, metric="bleurt")
        assert set(frame.dataset) == {"bleurt"} and set(frame.metric) == {"bleurt"}
        for name, values in scores.items():
            part = frame[frame.system == f"{name}.seg"]
            assert part["instance"].tolist() == ["0", "1", "2"]
            assert part["score"].tolist() == [float(v) for v in values]
    study = ms.load(folder)
    assert study["bleurt"].system.values.tolist() == ["sysA.seg", "sysB.seg", "sysC.seg"]
    with pytest.raises(InputFileError, match=r"nothing-\*\.txt: no file matches"):
        ms.read_scores(str(tmp_path / "nothing-*.txt"))


def test_one_score_per_line_errors_name_file_and_line(tmp_path):
    _lines(tmp_path / "a", {"x": [0.1, 0.2, 0.3], "y": [0.1, 0.2, 0.3]})
    write(tmp_path / "a" / "z.txt", "0.1\n0.2 0.5\n0.3\n")
    with pytest.raises(InputFileError, match=r"z\.txt, line 2: malformed line: expected 1 "
                                             r"fields separated by whitespace, found 2"):
        ms.read_scores(tmp_path / "a")
    write(tmp_path / "a" / "z.txt", "0.1\nabc\n0.3\n")
    with pytest.raises(InputFileError, match=r"z\.txt, line 2, system 'z': non-numeric "
                                             r"score 'abc'"):
        ms.read_scores(tmp_path / "a")
    write(tmp_path / "a" / "z.txt", "0.1\n0.2\n")
    with pytest.raises(DataValidationError, match=r"system 'z' lacks 1 of 3 instances "
                                                  r"\(e\.g\. '2'\)"):
        ms.read_scores(tmp_path / "a")
    write(tmp_path / "b" / "x.seg.txt", "1\n2\n3\n")
    with pytest.raises(InputFileError, match=r"would all be system 'x\.seg'"):
        ms.read_scores([tmp_path / "a" / "x.seg.txt", tmp_path / "b" / "x.seg.txt"])
    with pytest.raises(ParameterError, match=r"a file of one score per line is one system"):
        ms.read_scores(tmp_path / "b", dataset_from_filename=True)


def _comet_output(files, seg_scores, json_path=None):
    """Text as comet-score (Unbabel/COMET comet/cli/score.py, COMET 2.x) prints it: the
    segments of every system, segment by segment, then one system score per file."""
    out = []
    for i in range(len(seg_scores[0])):
        for j, f in enumerate(files):
            out.append(f"{f}\tSegment {i}\tscore: {seg_scores[j][i]:.4f}")
    for j, f in enumerate(files):
        out.append(f"{f}\tscore: {sum(seg_scores[j]) / len(seg_scores[j]):.4f}")
    if json_path:
        out.append(f"Predictions saved in: {json_path}.")
    return "\n".join(out) + "\n"


def test_comet_score_output(tmp_path):
    rng = np.random.default_rng(5)
    seg = rng.uniform(0.3, 0.95, size=(3, 40))
    files = ["hyps/online-A.txt", "hyps/online-B.txt", "hyps/uedin.en-de.txt"]
    path = write(tmp_path / "wmt20.comet", _comet_output(files, seg.tolist(), "out.json"))
    frame = ms.read_scores(path)
    assert set(frame.metric) == {"comet"} and set(frame.dataset) == {"wmt20"}
    assert list(dict.fromkeys(frame.system)) == ["online-A", "online-B", "uedin.en-de"]
    for j, name in enumerate(["online-A", "online-B", "uedin.en-de"]):
        got = frame[frame.system == name]
        assert got["instance"].tolist() == [str(i) for i in range(40)]
        np.testing.assert_allclose(got["score"], np.round(seg[j], 4), rtol=0, atol=1e-12)
    # older COMET (< 1.0): no file column, "System score:" at the end; one file per system
    for name, row in (("sys1", seg[0]), ("sys2", seg[1])):
        text = "".join(f"Segment {i}\tscore: {v:.4f}\n" for i, v in enumerate(row))
        write(tmp_path / "old" / f"{name}.out", text + f"System score: {row.mean():.4f}\n")
    old = ms.read_scores(tmp_path / "old", metric="comet-da")
    assert sorted(set(old.system)) == ["sys1", "sys2"] and set(old.metric) == {"comet-da"}


def test_comet_score_output_errors(tmp_path):
    seg = [[0.5, 0.6, 0.7], [0.4, 0.5, 0.9]]
    text = _comet_output(["a.txt", "b.txt"], seg)
    path = write(tmp_path / "c.txt", text.replace("b.txt\tSegment 1\tscore: 0.5000",
                                                  "b.txt\tSegment 1\tscore: n/a?"))
    with pytest.raises(InputFileError, match=r"c\.txt, line 4: non-numeric score 'n/a\?'"):
        ms.read_scores(path)
    path = write(tmp_path / "g.txt", text.replace("b.txt\tSegment 1\tscore: 0.5000",
                                                  "Traceback (most recent call last):"))
    with pytest.raises(InputFileError, match=r"g\.txt, line 4: not a line of comet-score "
                                             r"output .*'Traceback \(most recent call last\):'"):
        ms.read_scores(path)
    # a truncated output: the system score no longer is the mean of its segments
    lines = text.splitlines()
    write(tmp_path / "t.txt", "\n".join(lines[:4] + lines[6:]) + "\n")
    with pytest.raises(InputFileError, match=r"t\.txt, line 5: the system score 0\.6000 of "
                                             r"'a\.txt' is not the mean of its 2 segment"):
        ms.read_scores(tmp_path / "t.txt")
    write(tmp_path / "s.txt", "a.txt\tscore: 0.6000\nb.txt\tscore: 0.6000\n")
    with pytest.raises(InputFileError, match=r"s\.txt: comet-score output without "
                                             r"per-segment lines"):
        ms.read_scores(tmp_path / "s.txt")
    with pytest.raises(ParameterError, match=r"format='comet' has no named columns; drop "
                                             r"`instance_col`"):
        ms.read_scores(tmp_path / "c.txt", format="comet", instance_col="seg")
