"""Hostile input, loader side (issue 13.2): Parquet columns that are not numbers or text,
JSON lines that are not objects, date/time scores, blank and path-like names. Each gives
one line naming the file and the row/line and column."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import multistat
from multistat.errors import DataValidationError, InputFileError
from multistat.io import read_scores


def _parquet(tmp_path, name, **columns):
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


BASE = {"system": pa.array(["A", "A", "B", "B"]), "instance": pa.array(["1", "2", "1", "2"]),
        "score": pa.array([0.1, 0.2, 0.3, 0.4])}


def test_parquet_columns_that_are_not_numbers_or_text(tmp_path):
    cols = dict(BASE, score=pa.array([[1], [2], [3, 4], [5]], pa.list_(pa.int64())))
    with pytest.raises(InputFileError, match=r"l\.parquet, row 0, column 'score': score "
                                             r"column holds a value of type ndarray: '\[1\]'; "
                                             r"scores must be numbers"):
        read_scores(_parquet(tmp_path, "l.parquet", **cols))
    cols = dict(BASE, system=pa.array([{"a": 1}, {"a": 1}, {"a": 2}, {"a": 2}],
                                      pa.struct([("a", pa.int64())])))
    with pytest.raises(InputFileError, match=r"s\.parquet, row 0, column 'system': system "
                                             r"column holds a value of type dict"):
        read_scores(_parquet(tmp_path, "s.parquet", **cols))
    cols = dict(BASE, instance=pa.array([b"1", b"2", b"1", b"2"], pa.binary()))
    with pytest.raises(InputFileError, match=r"b\.parquet, row 0, column 'instance': "
                                             r"instance column holds a value of type bytes"):
        read_scores(_parquet(tmp_path, "b.parquet", **cols))
    # decimals and dictionary-encoded text are numbers and text
    cols = dict(BASE, score=pa.array([1, 2, 3, 4], pa.int64()).cast(pa.decimal128(21, 2)),
                system=pa.array(["A", "A", "B", "B"]).dictionary_encode())
    frame = read_scores(_parquet(tmp_path, "ok.parquet", **cols))
    assert frame["score"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_date_and_time_scores_are_refused(tmp_path):
    stamps = [datetime.datetime(2024, 1, d) for d in (1, 2, 3, 4)]
    cols = dict(BASE, score=pa.array(stamps, pa.timestamp("ns")))
    with pytest.raises(InputFileError, match=r"t\.parquet, row 0, column 'score': score "
                                             r"column holds dates/times \(datetime64\[ns\]\)"):
        read_scores(_parquet(tmp_path, "t.parquet", **cols))
    cols = dict(BASE, score=pa.array([datetime.date(2024, 1, d) for d in (1, 2, 3, 4)],
                                     pa.date32()))
    with pytest.raises(InputFileError, match=r"d\.parquet, row 0, column 'score': score "
                                             r"column holds"):
        read_scores(_parquet(tmp_path, "d.parquet", **cols))
    cols = dict(BASE, score=pa.array([1, 2, 3, 4], pa.duration("s")))
    with pytest.raises(InputFileError, match=r"column 'score': score column holds dates/times"):
        read_scores(_parquet(tmp_path, "u.parquet", **cols))
    # a date as an identifier is its text
    cols = dict(BASE, instance=pa.array(stamps[:2] * 2, pa.timestamp("s")))
    frame = read_scores(_parquet(tmp_path, "i.parquet", **cols))
    assert frame["instance"].tolist()[:2] == ["2024-01-01 00:00:00", "2024-01-02 00:00:00"]
    path = tmp_path / "t.csv"
    path.write_text("system,instance,score\nA,1,2024-01-01\nA,2,1\nB,1,1\nB,2,1\n")
    with pytest.raises(InputFileError, match=r"t\.csv, line 2, column 'score': non-numeric "
                                             r"score '2024-01-01'"):
        read_scores(path)


def test_json_lines_that_are_not_objects(tmp_path):
    for line, what in (("null", "null"), ("[1, 2]", "an array"), ('"A"', "a string"),
                       ("3", "a number")):
        path = tmp_path / "x.jsonl"
        path.write_text('{"system": "A", "instance": 1, "score": 1}\n' + line + "\n")
        with pytest.raises(InputFileError, match=rf"x\.jsonl, line 2: expected a JSON object "
                                                 rf"per line, found {what}"):
            read_scores(path)
    path = tmp_path / "n.jsonl"
    path.write_text('{"system": {"x": 1}, "instance": 1, "score": 1}\n'
                    '{"system": "B", "instance": 1, "score": 1}\n')
    with pytest.raises(InputFileError, match=r"n\.jsonl, line 1, column 'system': system "
                                             r"column holds a value of type dict"):
        read_scores(path)
    path = tmp_path / "big.jsonl"
    path.write_text('{"system": "A", "instance": 1, "score": 1' + "0" * 400 + "}\n"
                    '{"system": "B", "instance": 1, "score": 1}\n')
    with pytest.raises(DataValidationError, match=r"big\.jsonl, line 1, column 'score': "
                                                  r"infinite score"):
        read_scores(path)


@pytest.mark.parametrize("name, why", [("", "is blank"), ("  ", "is whitespace only")])
def test_blank_system_names(tmp_path, name, why):
    path = tmp_path / "s.csv"
    path.write_text(f"system,instance,score\nA,1,1\nA,2,2\n\"{name}\",1,1\n\"{name}\",2,2\n")
    if name == "":  # an empty cell is a missing value, reported as such
        with pytest.raises(InputFileError, match=r"s\.csv, line 4, column 'system': empty "
                                                 r"system"):
            read_scores(path)
        return
    with pytest.raises(DataValidationError, match=rf"s\.csv, line 4: system name '{name}' "
                                                  rf"{why}"):
        read_scores(path)


@pytest.mark.parametrize("name", [".", "..", "a/b", "a\\\\b", " "])
def test_path_like_dataset_names(tmp_path, name):
    path = tmp_path / "s.csv"
    path.write_text("dataset,system,instance,score\n"
                    + "".join(f"\"{name}\",{s},{i},{i}\n" for s in "AB" for i in (1, 2)))
    with pytest.raises(DataValidationError, match=r"s\.csv, line 2: dataset name .* (is a "
                                                  r"path component|contains a path "
                                                  r"separator|is whitespace only)"):
        read_scores(path)
    plain = tmp_path / "p.csv"
    plain.write_text("system,instance,score\nA,1,1\nA,2,2\nB,1,1\nB,2,3\n")
    with pytest.raises(DataValidationError, match=r"p\.csv, line 2: dataset name"):
        read_scores(plain, dataset=name)
    assert np.isfinite(read_scores(plain)["score"]).all()


@pytest.mark.parametrize("a, b, why", [
    ("m1", "m1 ", "surrounding whitespace"),
    ("caf\u00e9", "cafe\u0301", "Unicode normalisation"),
    ("sysA", "sys\u200bA", "invisible characters"),
])
def test_names_that_look_alike_are_refused_for_systems_and_raters(tmp_path, a, b, why):
    # two systems (or raters) that no one can tell apart would be compared as two
    from multistat.errors import DataValidationError

    rows = ["system,instance,metric,rater,score"]
    for s in (a, b):
        rows += [f"{s},i{i},likert,r1,{i % 5}" for i in range(4)]
    path = tmp_path / "sys.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=f"system names .* {why}"):
        multistat.read_scores(path, rater_col="rater")
    rows = ["system,instance,metric,rater,score"]
    rows += [f"x,i{i},likert,{r},{i % 5}" for i in range(4) for r in (a, b)]
    path = tmp_path / "raters.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=f"rater names .* {why}"):
        multistat.read_scores(path, rater_col="rater")


def test_a_json_true_id_is_not_instance_1(tmp_path):
    from multistat.errors import InputFileError

    path = tmp_path / "s.jsonl"
    path.write_text('{"system": "a", "instance": 1, "metric": "m", "score": 0.5}\n'
                    '{"system": "a", "instance": true, "metric": "m", "score": 0.7}\n')
    with pytest.raises(InputFileError, match=r"line 2.*instance column holds the boolean "
                                             r"True"):
        multistat.read_scores(path)
