"""Tests of multistat.io: loaders, validation messages, Parquet round trip.

Real data are read from the slices in tests/data (see its README.md); synthetic
fixtures are written into pytest's tmp_path.
"""

from __future__ import annotations

import gzip
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import MQM_ZHEN, REALSUMM
from conftest import NLPSTATTEST as NLPST

from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    InputFileError,
    MultistatError,
    ParameterError,
    ParameterTypeError,
)
from multistat.io import COLUMNS, read_parquet, read_scores, write_parquet


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def one_line(exc_info):
    message = str(exc_info.value)
    assert "\n" not in message and "\r" not in message
    return message


def check_frame(frame):
    """Invariants of every validated frame."""
    assert tuple(frame.columns) == COLUMNS
    for c in COLUMNS[:4]:
        assert pd.api.types.is_string_dtype(frame[c].dtype)
        assert all(isinstance(v, str) for v in frame[c].iloc[:5])
    assert frame["score"].dtype == np.float64
    assert np.isfinite(frame["score"].to_numpy()).all()
    assert not frame.duplicated(["dataset", "system", "metric", "instance"]).any()
    # every system has the same instances per (dataset, metric): pairs are paired
    for _, part in frame.groupby(["dataset", "metric"]):
        sets = part.groupby("system")["instance"].apply(frozenset)
        assert sets.nunique() == 1
    assert set(frame.attrs["metrics"]) == set(frame["metric"])
    assert isinstance(frame.attrs["dropped"], list)


LONG_CSV = """system,instance,score
A,s1,0.5
A,s2,0.25
A,s3,1.0
B,s1,0.75
B,s2,0.5
B,s3,0.0
"""


# ======================================================================== real data
class TestRealData:
    def test_mqm_zhen(self):
        # the .tsv is space-separated: sniffed without sep, and with sep=r"\s+"
        kwargs = {"format": "long", "score_col": "mqm_avg_score", "instance_col": "seg_id",
                  "metric": "mqm"}
        frame = read_scores(MQM_ZHEN, sep=r"\s+", **kwargs)
        check_frame(frame)
        pd.testing.assert_frame_equal(frame, read_scores(MQM_ZHEN, **kwargs))
        assert frame.shape == (10 * 2000, 5)
        assert frame["system"].nunique() == 10
        assert frame["instance"].nunique() == 2000
        # negated error penalties: higher is better, the default
        assert frame.attrs["metrics"] == {"mqm": {"higher_is_better": True, "kind": "mean"}}
        assert frame.attrs["dropped"] == []
        assert set(frame["dataset"]) == {"zhen.avg_seg_scores"}
        # instances keep file order: seg_id 1..2000
        first = frame[frame["system"] == frame["system"].iat[0]]
        assert list(first["instance"]) == [str(i) for i in range(1, 2001)]
        look = frame.set_index(["system", "instance"])["score"]
        # raw file line 2: "DeepMind.381 -5.666667 1"
        assert look[("DeepMind.381", "1")] == -5.666667
        # raw file line 5001: "Human-A.0 -8.666667 1000"
        assert look[("Human-A.0", "1000")] == -8.666667
        # raw file line 20001 (last): "WeChat_AI.1525 -5.000000 2000"
        assert look[("WeChat_AI.1525", "2000")] == -5.0
        # MQM scores are penalties <= 0 (data README)
        assert frame["score"].max() <= 0

    def test_mqm_default_higher_is_better(self):
        frame = read_scores(MQM_ZHEN, score_col="mqm_avg_score", instance_col="seg_id")
        # no metric given: the metric is named after the score column
        assert frame.attrs["metrics"] == {
            "mqm_avg_score": {"higher_is_better": True, "kind": "mean"}}

    def test_realsumm_duplicate_system_name(self):
        # 'bart_out' is listed under both summary types with identical scores
        with pytest.raises(DataValidationError,
                           match=r"1500 duplicated rows .* system 'bart_out', metric 'js-2', "
                                 r"instance '52' at line 92 and line 21152 \(identical "
                                 r"scores\); .*add it to system_col") as exc:
            read_scores(REALSUMM, instance_col="doc_id")
        one_line(exc)

    def test_realsumm(self):
        frame = read_scores(REALSUMM, instance_col="doc_id",
                            system_col=["summary_type", "system"])
        check_frame(frame)
        assert frame.shape == (25 * 100 * 15, 5)
        assert frame["system"].nunique() == 25
        assert frame["metric"].nunique() == 15
        assert frame["instance"].nunique() == 100
        assert sum(s.startswith("abs/") for s in frame["system"].unique()) == 14
        assert set(frame["dataset"]) == {"scores"}
        assert all(v == {"higher_is_better": True, "kind": "mean"}
                   for v in frame.attrs["metrics"].values())
        look = frame.set_index(["system", "metric", "instance"])["score"]
        # raw line 2: "abs,presumm_out_trans_abs,52,rouge_1_f_score,0.42719"
        assert look[("abs/presumm_out_trans_abs", "rouge_1_f_score", "52")] == 0.42719
        # raw line 30001: "ext,banditsumm_out,7,litepyramid_recall,0.7142857142857143"
        assert look[("ext/banditsumm_out", "litepyramid_recall", "7")] == 0.7142857142857143
        # raw lines 96 / 21156: bart_out rouge_1_f_score on doc 52 is 0.54929 in both
        assert look[("abs/bart_out", "rouge_1_f_score", "52")] == 0.54929
        assert look[("ext/bart_out", "rouge_1_f_score", "52")] == 0.54929

    def test_nlpstattest_data_file(self):
        frame = read_scores(NLPST / "data-file.txt")
        check_frame(frame)
        assert frame.attrs["source"]["format"] == "pairs"
        assert frame.shape == (2 * 2001, 5)
        assert list(frame["system"].unique()) == ["A", "B"]
        assert set(frame["metric"]) == {"score"}
        assert set(frame["dataset"]) == {"data-file"}
        a = frame[frame["system"] == "A"]
        b = frame[frame["system"] == "B"]
        assert list(a["instance"]) == [str(i) for i in range(2001)]
        # line 1 "0.262025 0.596949"; line 1001 "0.168145 0.198616"; last "0.143274 0.165717"
        assert (a["score"].iat[0], b["score"].iat[0]) == (0.262025, 0.596949)
        assert (a["score"].iat[1000], b["score"].iat[1000]) == (0.168145, 0.198616)
        assert (a["score"].iat[-1], b["score"].iat[-1]) == (0.143274, 0.165717)

    def test_nlpstattest_named_systems(self):
        frame = read_scores(NLPST / "data-file.txt", systems=("sys1", "sys2"),
                            metric="sentence_bleu", dataset="wmt18")
        assert list(frame["system"].unique()) == ["sys1", "sys2"]
        assert set(frame["metric"]) == {"sentence_bleu"}
        assert set(frame["dataset"]) == {"wmt18"}

    @pytest.mark.parametrize("name", ["data-h0-equal-beta", "data-h0-equal-normal",
                                      "data-h1-greater-beta", "data-h1-greater-normal",
                                      "data-h1-less-beta", "data-h1-less-normal"])
    def test_nlpstattest_samples(self, name):
        # data-h1-greater-beta ends with a blank CRLF line: allowed at the end
        frame = read_scores(NLPST / name)
        check_frame(frame)
        assert frame.shape == (200, 5)

    def test_nlpstattest_small_and_gz(self):
        assert read_scores(NLPST / "10-lines.txt").shape == (14, 5)
        frame = read_scores(NLPST / "data-h1-less-normal-speed.gz")   # first 5,000 lines
        assert frame.shape == (10_000, 5)

    def test_nlpstattest_bad(self):
        with pytest.raises(InputFileError,
                           match=r"BAD\.txt, line 1: malformed line: expected 2 fields "
                                 r"separated by whitespace, found 3: '0\.262025 0\.596949 "
                                 r"0\.44444'") as exc:
            read_scores(NLPST / "BAD.txt")
        one_line(exc)


# ======================================================================== long tables
class TestLong:
    def test_csv(self, tmp_path):
        frame = read_scores(write(tmp_path, "run.csv", LONG_CSV))
        check_frame(frame)
        assert frame.attrs["source"]["format"] == "long"
        assert list(frame["system"]) == ["A"] * 3 + ["B"] * 3
        assert list(frame["instance"]) == ["s1", "s2", "s3"] * 2
        assert list(frame["score"]) == [0.5, 0.25, 1.0, 0.75, 0.5, 0.0]
        assert set(frame["dataset"]) == {"run"}
        assert set(frame["metric"]) == {"score"}

    def test_tsv_txt_gz_and_sep(self, tmp_path):
        ref = read_scores(write(tmp_path, "run.csv", LONG_CSV))
        variants = {
            "run.tsv": (LONG_CSV.replace(",", "\t"), {}),
            "run.txt": (LONG_CSV.replace(",", "  "), {}),
            "run.dat": (LONG_CSV.replace(",", ";"), {"sep": ";"}),
        }
        for name, (text, kwargs) in variants.items():
            frame = read_scores(write(tmp_path, name, text), format="long", **kwargs)
            pd.testing.assert_frame_equal(frame, ref)
        gz = tmp_path / "run.csv.gz"
        gz.write_bytes(gzip.compress(LONG_CSV.encode()))
        pd.testing.assert_frame_equal(read_scores(gz), ref)

    def test_sniffing_and_leading_blank_lines(self, tmp_path):
        ref = read_scores(write(tmp_path, "run.csv", LONG_CSV))
        # comma-separated .txt and tab-separated .csv are recognised from the first line
        for name, text in (("c.txt", LONG_CSV), ("t.csv", LONG_CSV.replace(",", "\t"))):
            pd.testing.assert_frame_equal(
                read_scores(write(tmp_path, name, text), dataset="run"), ref)
        # the header is the first non-blank line; line numbers still count from the top
        with pytest.raises(InputFileError, match=r"b\.csv, line 6, column 'score': "
                                                 r"non-numeric score 'x'"):
            read_scores(write(tmp_path, "b.csv", "\n\n" + LONG_CSV.replace("1.0", "x")))

    def test_header_named_pairs_file_is_wide(self, tmp_path):
        frame = read_scores(write(tmp_path, "h.txt", "sysA sysB\n1 2\n3 4\n"))
        assert frame.attrs["source"]["format"] == "wide"
        assert list(frame["system"].unique()) == ["sysA", "sysB"]

    def test_jsonl_json_parquet_from_dataframe(self, tmp_path):
        ref = read_scores(write(tmp_path, "run.csv", LONG_CSV))
        df = pd.read_csv(tmp_path / "run.csv")
        df.to_json(tmp_path / "run.jsonl", orient="records", lines=True)
        df.to_json(tmp_path / "run.json", orient="records")
        df.to_parquet(tmp_path / "run.parquet")
        for name in ("run.jsonl", "run.json", "run.parquet"):
            pd.testing.assert_frame_equal(read_scores(tmp_path / name), ref)

    def test_json_variants(self, tmp_path):
        rows = [{"system": "A", "instance": 1, "score": 0.5},
                {"system": "B", "instance": 1, "score": "0.25"},  # numbers as text are fine
                {"system": "A", "instance": 2, "score": None},
                {"system": "B", "instance": 2, "score": 1}]
        # a .json file holding JSON lines is read as JSON lines; null is a missing value
        path = write(tmp_path, "l.json", "\n".join(json.dumps(r) for r in rows) + "\n")
        with pytest.raises(DataValidationError, match=r"l\.json, line 3: NaN score"):
            read_scores(path)
        rows[2]["score"] = "bad"
        path = write(tmp_path, "a.json", json.dumps(rows))
        with pytest.raises(InputFileError,
                           match=r"a\.json, record 2, column 'score': non-numeric score 'bad'"):
            read_scores(path)
        with pytest.raises(InputFileError, match=r"r\.json, record 0: expected a JSON object, "
                                                 r"found an array: '\[1, 2\]'"):
            read_scores(write(tmp_path, "r.json", "[[1, 2], [3, 4]]"))
        with pytest.raises(InputFileError, match=r"s\.json, line 1: not valid JSON"):
            read_scores(write(tmp_path, "s.json", "[{]"))

    def test_composite_instance_col(self, tmp_path):
        text = ("system,doc,seg,score\nA,d1,1,1\nA,d1,2,2\nA,d2,1,3\n"
                "B,d1,1,4\nB,d1,2,5\nB,d2,1,6\n")
        frame = read_scores(write(tmp_path, "c.csv", text), instance_col=["doc", "seg"])
        assert list(frame["instance"]) == ["d1/1", "d1/2", "d2/1"] * 2

    def test_columns_metric_dataset(self, tmp_path):
        text = ("test_set,sys,seg,metric_name,value,extra\n"
                "wmt,X,007,bleu,30,z\nwmt,Y,007,bleu,20,z\nwmt,X,8,bleu,10,z\n"
                "wmt,Y,8,bleu,40,z\nwmt,X,007,acc,1,z\nwmt,Y,007,acc,0,z\n"
                "wmt,X,8,acc,1,z\nwmt,Y,8,acc,1,z\nnews,X,1,bleu,5,z\nnews,Y,1,bleu,6,z\n"
                "news,X,2,bleu,7,z\nnews,Y,2,bleu,8,z\n")
        frame = read_scores(write(tmp_path, "s.csv", text), system_col="sys",
                            instance_col="seg", score_col="value", metric_col="metric_name",
                            dataset_col="test_set", lower_is_better="bleu")
        check_frame(frame)
        assert list(frame["dataset"].unique()) == ["wmt", "news"]
        # identifiers verbatim ("007" is not turned into 7); order = first appearance
        wmt = frame[frame["dataset"] == "wmt"]
        assert list(wmt["metric"].unique()) == ["bleu", "acc"]
        assert list(wmt["instance"].iloc[:2]) == ["007", "8"]
        assert frame.attrs["metrics"] == {
            "bleu": {"higher_is_better": False, "kind": "mean"},
            "acc": {"higher_is_better": True, "kind": "binary"}}

    def test_default_metric_and_dataset_columns(self, tmp_path):
        text = "dataset,system,metric,instance,score\nd,A,m,1,1\nd,B,m,1,2\nd,A,m,2,3\nd,B,m,2,4\n"
        frame = read_scores(write(tmp_path, "x.csv", text))
        assert set(frame["dataset"]) == {"d"} and set(frame["metric"]) == {"m"}

    def test_sorted_deterministically(self, tmp_path):
        text = "system,instance,score\nB,2,1\nA,2,2\nA,1,3\nB,1,4\n"
        frame = read_scores(write(tmp_path, "x.csv", text))
        assert list(zip(frame["system"], frame["instance"], frame["score"])) == [
            ("B", "2", 1.0), ("B", "1", 4.0), ("A", "2", 2.0), ("A", "1", 3.0)]

    def test_na_tokens_are_missing_values(self, tmp_path):
        for token in ("", "NA", "nan", "NaN", "null", "None", "N/A"):
            text = f"system,instance,score\nA,1,1\nB,1,{token}\nA,2,1\nB,2,2\nA,3,0\nB,3,1\n"
            with pytest.warns(DroppedDataWarning):
                frame = read_scores(write(tmp_path, "x.csv", text), missing="drop")
            assert list(frame["instance"]) == ["2", "3", "2", "3"]


# ======================================================================== wide tables
class TestWide:
    def test_wide_with_instance_column(self, tmp_path):
        text = "instance,sysA,sysB,sysC\ni1,1,2,3\ni2,4,5,6\n"
        frame = read_scores(write(tmp_path, "w.csv", text))
        check_frame(frame)
        assert frame.attrs["source"]["format"] == "wide"
        assert list(frame["system"].unique()) == ["sysA", "sysB", "sysC"]
        assert list(frame["score"]) == [1, 4, 2, 5, 3, 6]
        assert list(frame["instance"]) == ["i1", "i2"] * 3
        assert set(frame["metric"]) == {"score"}

    def test_wide_numbered_rows_metric_and_systems(self, tmp_path):
        text = "sysA,sysB,notes\n1,2,x\n4,5,y\n7,8,z\n"
        frame = read_scores(write(tmp_path, "w.tsv", text.replace(",", "\t")),
                            format="wide", metric="chrf", systems=["sysA", "sysB"])
        check_frame(frame)
        assert list(frame["instance"]) == ["0", "1", "2"] * 2
        assert set(frame["metric"]) == {"chrf"}
        # without `systems` the text column 'notes' is taken for a system and refused
        with pytest.raises(InputFileError,
                           match=r"w\.tsv, line 2, column 'notes': non-numeric score 'x'"):
            read_scores(tmp_path / "w.tsv", format="wide")

    def test_wide_metric_column(self, tmp_path):
        text = "metric,instance,A,B\nbleu,1,1,2\nbleu,2,3,4\nter,1,5,6\nter,2,7,8\n"
        frame = read_scores(write(tmp_path, "w.csv", text), lower_is_better=["ter"])
        assert frame.attrs["metrics"]["ter"]["higher_is_better"] is False
        assert frame.shape == (8, 5)

    def test_wide_one_file_per_metric(self, tmp_path):
        folder = tmp_path / "study1"
        folder.mkdir()
        bleu = write(folder, "bleu.csv", "instance,A,B\n1,30,31\n2,20,25\n")
        acc = write(folder, "acc.csv", "instance,A,B\n1,1,0\n2,0,0\n")
        frame = read_scores({"bleu": bleu, "acc": acc})
        check_frame(frame)
        assert list(frame["metric"].unique()) == ["bleu", "acc"]
        assert set(frame["dataset"]) == {"study1"}
        assert frame.attrs["metrics"]["acc"]["kind"] == "binary"
        assert frame.attrs["metrics"]["bleu"]["kind"] == "mean"
        with pytest.raises(ParameterError, match=r"metric names come from the mapping keys"):
            read_scores({"bleu": bleu}, metric="x")
        with pytest.raises(ParameterError, match=r"mapping \{metric: path\} is read as "
                                                 r"format='wide'; got format='long'"):
            read_scores({"bleu": bleu}, format="long")
        with pytest.raises(ParameterError, match=r"mapping \{metric: path\} is empty"):
            read_scores({})

    def test_wide_refuses_long_options(self, tmp_path):
        path = write(tmp_path, "w.csv", "A,B\n1,2\n3,4\n")
        with pytest.raises(ParameterError, match=r"format='wide' takes the systems from the "
                                                 r"column names; drop `system_col`"):
            read_scores(path, format="wide", system_col="A")

    def test_wide_parquet(self, tmp_path):
        pd.DataFrame({"A": [1.0, 2.0], "B": [3.0, 4.0]}).to_parquet(tmp_path / "w.parquet")
        frame = read_scores(tmp_path / "w.parquet")
        assert list(frame["score"]) == [1, 2, 3, 4]


# ======================================================================== pairs
class TestPairs:
    def test_pairs_crlf_tabs_and_trailing_blank(self, tmp_path):
        path = tmp_path / "p"
        path.write_bytes(b"1 2\r\n3\t 4\r\n5 6\r\n\r\n  \r\n")
        frame = read_scores(path)
        assert list(frame["score"]) == [1, 3, 5, 2, 4, 6]
        assert list(frame["instance"]) == ["0", "1", "2"] * 2

    def test_pairs_blank_line_inside(self, tmp_path):
        with pytest.raises(InputFileError,
                           match=r"p\.txt, line 2: malformed line: blank line between data"):
            read_scores(write(tmp_path, "p.txt", "1 2\n\n3 4\n"))

    def test_pairs_short_and_long_lines(self, tmp_path):
        with pytest.raises(InputFileError, match=r"line 3: malformed line: expected 2 fields "
                                                 r"separated by whitespace, found 1: '5'"):
            read_scores(write(tmp_path, "p.txt", "1 2\n3 4\n5\n6 7\n"))
        with pytest.raises(InputFileError, match=r"line 2: .*found 3: '3 4 5'"):
            read_scores(write(tmp_path, "p.txt", "1 2\n3 4 5\n6 7\n"))
        with pytest.raises(InputFileError, match=r"line 1: .*found 1: '1'"):
            read_scores(write(tmp_path, "p.txt", "1\n3 4\n"), format="pairs")

    def test_pairs_long_line_truncated(self, tmp_path):
        long_line = " ".join(["0.5"] * 100)
        with pytest.raises(InputFileError, match=r"found 100: '0\.5 0\.5 .*\.\.\.'$") as exc:
            read_scores(write(tmp_path, "p.txt", f"1 2\n{long_line}\n"))
        assert len(one_line(exc)) < 250

    def test_pairs_non_numeric(self, tmp_path):
        with pytest.raises(InputFileError,
                           match=r"p\.txt, line 2, column 2 \(system 'B'\): "
                                 r"non-numeric score '0\.3x'"):
            read_scores(write(tmp_path, "p.txt", "1 2\n0.2 0.3x\n"), format="pairs")

    def test_pairs_nan_and_drop(self, tmp_path):
        path = write(tmp_path, "p.txt", "1 2\nnan 4\n5 6\n7 8\n")
        with pytest.raises(DataValidationError,
                           match=r"p\.txt, line 2: NaN score \(system 'A', dataset 'p', "
                                 r"metric 'score', instance '1'; 1 NaN score for this "
                                 r"metric\); pass missing='drop'"):
            read_scores(path)
        with pytest.warns(DroppedDataWarning,
                          match=r"dropped 1 of 4 instances for all 2 systems \(1 NaN score"):
            frame = read_scores(path, missing="drop")
        # the pair is dropped for both systems: B's 4 is gone too
        assert list(frame["score"]) == [1, 5, 7, 2, 6, 8]
        assert list(frame["instance"]) == ["0", "2", "3"] * 2
        assert frame.attrs["dropped"] == [
            "dataset 'p', metric 'score', instance '1': NaN score for 'A'"]

    def test_pairs_options(self, tmp_path):
        path = write(tmp_path, "p.txt", "1 2\n3 4\n")
        with pytest.raises(ParameterError, match=r"`systems` for format='pairs' must be two "
                                                 r"names"):
            read_scores(path, systems=("A", "B", "C"))
        with pytest.raises(ParameterError, match=r"`systems` must be two different names"):
            read_scores(path, systems=("A", "A"))
        with pytest.raises(ParameterError, match=r"format='pairs' has no named columns; drop "
                                                 r"`score_col`"):
            read_scores(path, format="pairs", score_col="x")

    def test_pairs_sep(self, tmp_path):
        frame = read_scores(write(tmp_path, "p.csv", "1,2\n3,4\n"), format="pairs")
        assert list(frame["score"]) == [1, 3, 2, 4]


# ======================================================================== errors
class TestErrors:
    def test_not_found_and_directory(self, tmp_path):
        with pytest.raises(InputFileError, match=r"nope\.csv: no such file"):
            read_scores(tmp_path / "nope.csv")
        (tmp_path / "empty").mkdir()  # a folder is read file by file (one system each)
        with pytest.raises(InputFileError, match=r"empty: the folder holds no score files"):
            read_scores(tmp_path / "empty")
        with pytest.raises(ParameterTypeError, match=r"`path` must be a file path"):
            read_scores(3)

    def test_empty(self, tmp_path):
        for name, text in (("e.csv", ""), ("e.txt", "\n  \n"), ("e.jsonl", "\n")):
            with pytest.raises(InputFileError, match=rf"{re.escape(name)}: the file is empty"):
                read_scores(write(tmp_path, name, text))
        with pytest.raises(InputFileError, match=r"h\.csv: the file has a header but no data"):
            read_scores(write(tmp_path, "h.csv", "system,instance,score\n"))
        pd.DataFrame({"system": [], "instance": [], "score": []}).to_parquet(
            tmp_path / "e.parquet")
        with pytest.raises(InputFileError, match=r"e\.parquet: the file has no rows"):
            read_scores(tmp_path / "e.parquet")

    def test_malformed_long_lines(self, tmp_path):
        with pytest.raises(InputFileError,
                           match=r"m\.csv, line 5: malformed line: expected 3 fields separated "
                                 r"by commas, found 4: 'B,s1,0\.75,9'"):
            read_scores(write(tmp_path, "m.csv", LONG_CSV.replace("B,s1,0.75", "B,s1,0.75,9")))
        with pytest.raises(InputFileError,
                           match=r"m\.csv, line 3: malformed line: expected 3 fields separated "
                                 r"by commas, found 2: 'A,s2'"):
            read_scores(write(tmp_path, "m.csv", LONG_CSV.replace("A,s2,0.25", "A,s2")))
        # every data line one field too many (pandas would silently shift to an index)
        with pytest.raises(InputFileError, match=r"line 2: malformed line: expected 2 fields"):
            read_scores(write(tmp_path, "m.csv", "system,score\nA,1,x\nB,2,y\n"))
        with pytest.raises(InputFileError, match=r"line 3: .*expected 3 fields separated by "
                                                 r"whitespace, found 2: 'A 1'"):
            read_scores(write(tmp_path, "m.txt", "system instance score\nA 0 1\nA 1\n"))

    def test_non_numeric_score(self, tmp_path):
        with pytest.raises(InputFileError,
                           match=r"n\.csv, line 5, column 'score': non-numeric score 'good'"):
            read_scores(write(tmp_path, "n.csv", LONG_CSV.replace("B,s1,0.75", "B,s1,good")))
        df = pd.read_csv(tmp_path / "n.csv")
        df.to_json(tmp_path / "n.jsonl", orient="records", lines=True)
        with pytest.raises(InputFileError,
                           match=r"n\.jsonl, line 4, column 'score': non-numeric score 'good'"):
            read_scores(tmp_path / "n.jsonl")
        df.to_parquet(tmp_path / "n.parquet")
        with pytest.raises(InputFileError,
                           match=r"n\.parquet, row 3, column 'score': non-numeric score 'good'"):
            read_scores(tmp_path / "n.parquet")

    def test_infinite_score(self, tmp_path):
        with pytest.raises(DataValidationError,
                           match=r"i\.csv, line 3, column 'score': infinite score inf \(1 "
                                 r"infinite score in this column\); scores must be finite"):
            read_scores(write(tmp_path, "i.csv", LONG_CSV.replace("0.25", "inf")))
        with pytest.raises(DataValidationError, match=r"infinite score -inf"):
            read_scores(write(tmp_path, "i.csv", LONG_CSV.replace("0.25", "-Infinity")))

    def test_nan_raise(self, tmp_path):
        with pytest.raises(DataValidationError,
                           match=r"x\.csv, line 3: NaN score \(system 'A', dataset 'x', "
                                 r"metric 'score', instance 's2'; 1 NaN score for this "
                                 r"metric\); pass missing='drop' to drop those instances"):
            read_scores(write(tmp_path, "x.csv", LONG_CSV.replace("0.25", "NaN")))

    def test_duplicates(self, tmp_path):
        with pytest.raises(DataValidationError,
                           match=r"d\.csv: 1 duplicated row for the same \(dataset, system, "
                                 r"metric, instance\); first: dataset 'd', system 'A', metric "
                                 r"'score', instance 's1' at line 2 and line 8 \(scores '0\.5', "
                                 r"'0\.9'\)"):
            read_scores(write(tmp_path, "d.csv", LONG_CSV + "A,s1,0.9\n"))

    def test_missing_instances(self, tmp_path):
        text = LONG_CSV.replace("B,s2,0.5\n", "").replace("B,s3,0.0\n", "")
        with pytest.raises(DataValidationError,
                           match=r"m\.csv: dataset 'm', metric 'score': system 'B' lacks 2 of "
                                 r"3 instances \(e\.g\. 's2', 's3'\); pass missing='drop'"):
            read_scores(write(tmp_path, "m.csv", text))

    def test_system_without_a_metric(self, tmp_path):
        text = ("system,metric,instance,score\nA,m1,1,1\nB,m1,1,2\nA,m1,2,1\nB,m1,2,2\n"
                "A,m2,1,1\nA,m2,2,1\n")
        with pytest.raises(DataValidationError,
                           match=r"metric 'm2': system 'B' has no scores at all \(other "
                                 r"systems have 2 instances\)"):
            read_scores(write(tmp_path, "m.csv", text))

    def test_fewer_than_two(self, tmp_path):
        with pytest.raises(DataValidationError,
                           match=r"dataset 'one' has 1 system \('A'\); a comparison needs at "
                                 r"least 2"):
            read_scores(write(tmp_path, "one.csv", "system,instance,score\nA,1,1\nA,2,2\n"))
        with pytest.raises(DataValidationError,
                           match=r"dataset 'two', metric 'score' has 1 instance \('1'\); at "
                                 r"least 2 are needed"):
            read_scores(write(tmp_path, "two.csv", "system,instance,score\nA,1,1\nB,1,2\n"))
        with pytest.raises(DataValidationError, match=r"has 1 instance"):
            read_scores(write(tmp_path, "p.txt", "1 2\n"))

    def test_unknown_column(self, tmp_path):
        path = write(tmp_path, "u.csv", LONG_CSV)
        with pytest.raises(InputFileError,
                           match=r"u\.csv: no column 'seg' \(instance_col\); available "
                                 r"columns: 'system', 'instance', 'score'"):
            read_scores(path, instance_col="seg")
        with pytest.raises(InputFileError, match=r"no column 'm' \(metric_col\)"):
            read_scores(path, metric_col="m")
        with pytest.raises(InputFileError, match=r"no column 'sys' \(system_col\)"):
            read_scores(path, system_col="sys")

    def test_wrong_separator_hint(self, tmp_path):
        path = write(tmp_path, "u.csv", LONG_CSV.replace(",", ";"))
        with pytest.raises(InputFileError, match=r"available columns: 'system;instance;score' "
                                                 r"\(the header has one column only.*pass sep"):
            read_scores(path, format="long")

    def test_bad_parameters(self, tmp_path):
        path = write(tmp_path, "x.csv", LONG_CSV)
        with pytest.raises(ParameterError, match=r"`format` must be one of 'long', 'wide', "
                                                 r"'pairs', 'lines', 'comet', 'inspect', "
                                                 r"'lm-eval', 'helm', 'eee'; got 'csv'"):
            read_scores(path, format="csv")
        with pytest.raises(ParameterError, match=r"`missing` must be one of 'raise', 'drop', "
                                                 r"'keep'; got 'omit'"):
            read_scores(path, missing="omit")
        with pytest.raises(ParameterError, match=r"`lower_is_better` names unknown metric\(s\) "
                                                 r"'ter'; the metrics are 'score'"):
            read_scores(path, lower_is_better=["ter"])
        with pytest.raises(ParameterTypeError, match=r"`lower_is_better` must be a metric name"):
            read_scores(path, lower_is_better=3)
        with pytest.raises(ParameterError, match=r"`sep` must be one character"):
            read_scores(path, sep="::")
        with pytest.raises(ParameterError, match=r"`sep` applies to delimited text files only"):
            read_scores(write(tmp_path, "x.jsonl", "{}\n"), sep=",")
        with pytest.raises(ParameterError, match=r"pass either `metric_col` \(a column\) or "
                                                 r"`metric=`"):
            read_scores(path, metric_col="m", metric="m")
        with pytest.raises(ParameterError, match=r"`systems` applies to format='pairs'"):
            read_scores(path, format="long", systems=["A"])
        with pytest.raises(ParameterTypeError, match=r"`metric` must be a non-empty string"):
            read_scores(path, metric="")
        with pytest.raises(ParameterTypeError, match=r"`system_col` must be a column name "
                                                     r"\(str\) or a list of names; got 3"):
            read_scores(path, system_col=3)
        with pytest.raises(ParameterError, match=r"`score_col` must name one column; got "):
            read_scores(path, score_col=["a", "b"])

    def test_fixed_metric_conflicts_with_column(self, tmp_path):
        path = write(tmp_path, "x.csv", "system,metric,instance,score\nA,m,1,1\nB,m,1,1\n")
        with pytest.raises(ParameterError, match=r"`metric='bleu'` fixes the metric, but .* "
                                                 r"has a 'metric' column"):
            read_scores(path, metric="bleu")

    def test_duplicate_header_and_empty_id(self, tmp_path):
        with pytest.raises(InputFileError, match=r"line 1: column 'score' appears more than "
                                                 r"once in the header"):
            read_scores(write(tmp_path, "h.csv", "system,score,score\nA,1,1\nB,1,2\n"))
        with pytest.raises(InputFileError,
                           match=r"e\.csv, line 3, column 'system': empty system .*: ',s2,0\.25'"):
            read_scores(write(tmp_path, "e.csv", LONG_CSV.replace("A,s2", ",s2")))

    def test_bad_json(self, tmp_path):
        with pytest.raises(InputFileError,
                           match=r"b\.jsonl, line 2: not valid JSON \(.*\): '\{\"system\": "):
            read_scores(write(tmp_path, "b.jsonl",
                              '{"system": "A", "instance": 1, "score": 1}\n'
                              '{"system": "B", "instance": 1, "score": \n'))
        with pytest.raises(InputFileError, match=r"b\.jsonl, line 1: expected a JSON object "
                                                 r"per line, found an array: '\[1, 2\]'"):
            read_scores(write(tmp_path, "b.jsonl", '[1, 2]\n{"a": 1}\n'))

    def test_not_utf8_and_not_parquet(self, tmp_path):
        path = tmp_path / "l.csv"
        path.write_bytes(b"system,instance,score\nA\xff,1,1\n")
        with pytest.raises(InputFileError, match=r"l\.csv: not UTF-8 text"):
            read_scores(path)
        with pytest.raises(InputFileError, match=r"f\.parquet: not a readable Parquet file"):
            read_scores(write(tmp_path, "f.parquet", "hello"))


# ======================================================================== missing="drop"
class TestDrop:
    TEXT = ("system,metric,instance,score\n"
            "A,m1,1,1\nB,m1,1,2\nC,m1,1,3\n"
            "A,m1,2,\nB,m1,2,2\nC,m1,2,3\n"      # NaN for A on instance 2
            "A,m1,3,1\nC,m1,3,3\n"               # B lacks instance 3
            "A,m1,4,1\nB,m1,4,0\nC,m1,4,1\n"
            "A,m1,5,0\nB,m1,5,1\nC,m1,5,1\n"
            "A,m2,1,1\nB,m2,1,2\nC,m2,1,3\n"
            "A,m2,2,1\nB,m2,2,2\nC,m2,2,3\n")

    def test_drop_whole_instances(self, tmp_path):
        path = write(tmp_path, "d.csv", self.TEXT)
        with pytest.warns(DroppedDataWarning) as record:
            frame = read_scores(path, missing="drop")
        check_frame(frame)
        assert len(record) == 1  # one warning per (dataset, metric) with drops
        assert record[0].filename == __file__  # points at the caller of read_scores
        assert re.search(r"d\.csv: dataset 'd', metric 'm1': dropped 2 of 5 instances for all "
                         r"3 systems \(1 NaN score, 1 absent row; e\.g\. instance\(s\) '2', '3'\)",
                         str(record[0].message))
        m1 = frame[frame["metric"] == "m1"]
        assert list(m1["instance"]) == ["1", "4", "5"] * 3
        assert len(frame[frame["metric"] == "m2"]) == 6  # m2 untouched
        assert frame.attrs["dropped"] == [
            "dataset 'd', metric 'm1', instance '2': NaN score for 'A'",
            "dataset 'd', metric 'm1', instance '3': no row for 'B'",
        ]
        # the remaining m1 scores are 0/1 but only after the drop: kind follows the data kept
        assert frame.attrs["metrics"]["m1"]["kind"] == "mean"

    def test_drop_keeps_file_order(self, tmp_path):
        # instance 1 is dropped for m1 only; m2 must still list 1 before 2 (file order)
        text = ("system,metric,instance,score\nA,m1,1,1\nB,m1,1,\nA,m1,2,1\nB,m1,2,2\n"
                "A,m1,3,1\nB,m1,3,2\nA,m2,1,1\nB,m2,1,2\nA,m2,2,1\nB,m2,2,2\n")
        with pytest.warns(DroppedDataWarning, match=r"metric 'm1': dropped 1 of 3"):
            frame = read_scores(write(tmp_path, "d.csv", text), missing="drop")
        assert list(frame["instance"]) == ["2", "3", "2", "3", "1", "2", "1", "2"]

    def test_drop_to_too_few(self, tmp_path):
        path = write(tmp_path, "d.csv", "system,instance,score\nA,1,1\nB,1,\nA,2,1\nB,2,3\n")
        with (pytest.raises(DataValidationError,
                            match=r"metric 'score': 1 instance left after dropping 1 with "
                                  r"missing or NaN scores; at least 2"),
              pytest.warns(DroppedDataWarning)):
            read_scores(path, missing="drop")

    def test_nothing_dropped_no_warning(self, tmp_path):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            frame = read_scores(write(tmp_path, "x.csv", LONG_CSV), missing="drop")
        assert frame.attrs["dropped"] == []


# ======================================================================== kind / metadata
def test_kind_binary_and_higher_is_better(tmp_path):
    text = "system,instance,score\nA,1,1\nB,1,0\nA,2,0\nB,2,0\n"
    frame = read_scores(write(tmp_path, "b.csv", text))
    assert frame.attrs["metrics"] == {"score": {"higher_is_better": True, "kind": "binary"}}
    text = "system,instance,score\nA,1,1\nB,1,0.5\nA,2,0\nB,2,0\n"
    frame = read_scores(write(tmp_path, "b.csv", text), lower_is_better="score")
    assert frame.attrs["metrics"] == {"score": {"higher_is_better": False, "kind": "mean"}}


# ======================================================================== parquet I/O
class TestParquet:
    def test_round_trip(self, tmp_path):
        frame = read_scores(write(tmp_path, "x.csv", LONG_CSV))
        frame.attrs["not_json"] = object()
        meta = {"seed": 0, "params": {"alpha": 0.05, "b": [1, 2]}, "source": "override",
                "x": 0.1 + 0.2}
        out = write_parquet(frame, tmp_path / "sub" / "x.parquet", metadata=meta)
        back = read_parquet(out)
        pd.testing.assert_frame_equal(back, frame[list(COLUMNS)], check_exact=True)
        stored = back.attrs["multistat"]
        assert stored["seed"] == 0 and stored["params"] == {"alpha": 0.05, "b": [1, 2]}
        assert stored["x"] == 0.1 + 0.2  # exact float round trip
        assert stored["source"] == "override"  # metadata wins over attrs
        assert stored["metrics"] == frame.attrs["metrics"]
        assert stored["dropped"] == []
        assert "not_json" not in stored
        assert back.attrs["metrics"] == frame.attrs["metrics"]
        # the pyarrow schema carries the key b"multistat"
        import pyarrow.parquet as pq
        assert json.loads(pq.read_schema(out).metadata[b"multistat"]) == stored

    def test_round_trip_scores_exact(self, tmp_path):
        rng = np.random.default_rng(0)
        df = pd.DataFrame({"a": rng.standard_normal(1000), "b": np.arange(1000)})
        back = read_parquet(write_parquet(df, tmp_path / "r.parquet", metadata={}))
        pd.testing.assert_frame_equal(back, df, check_exact=True)
        assert back.attrs["multistat"] == {}

    def test_errors(self, tmp_path):
        with pytest.raises(ParameterError, match=r"`metadata\['f'\]` is not JSON-serialisable"):
            write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "a.parquet",
                          metadata={"f": object()})
        with pytest.raises(ParameterTypeError, match=r"`frame` must be a pandas DataFrame"):
            write_parquet([1], tmp_path / "a.parquet", metadata={})
        with pytest.raises(InputFileError, match=r"z\.parquet: no such file"):
            read_parquet(tmp_path / "z.parquet")
        with pytest.raises(InputFileError, match=r"t\.parquet: not a readable Parquet file"):
            read_parquet(write(tmp_path, "t.parquet", "text"))


def test_all_errors_are_multistat_errors(tmp_path):
    # the CLI catches MultistatError; nothing else may escape on bad input
    for text in ("", "a\n", "system,instance,score\nA,1,x\n", "1 2 3\n"):
        with pytest.raises(MultistatError):
            read_scores(write(tmp_path, "q.txt", text))
