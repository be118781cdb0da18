"""Every table the report reads besides the compare table is checked by one validator
(report/_inputs.py): columns, types, duplicates, not empty; one line naming the option,
the file, the column and the row (main, 3c3bb2d: KeyError, ValueError, TypeError or a
silent report from a `--meta`/`--systems` table with a column missing, text in a number
column or repeated rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from multistat.errors import DataValidationError
from multistat.report._inputs import SCHEMAS, check_table, read_table


def _systems():
    return pd.DataFrame({"dataset": "d", "metric": "m", "system": ["a", "b", "c"],
                         "score": [0.1, 0.2, 0.3], "ci_low": [0.0, 0.1, 0.2],
                         "ci_high": [0.2, 0.3, 0.4]})


def _pooled():
    return pd.DataFrame({"metric": "m", "system_a": ["a", "a"], "system_b": ["b", "c"],
                         "test": "t", "k": [3, 3], "estimate": [0.1, 0.2],
                         "ci_low": [0.0, 0.1], "ci_high": [0.2, 0.3], "p_value": [0.1, 0.01],
                         "tau2": [0.0, 0.0], "i2": [0.0, 0.0], "pi_low": [0.0, 0.1],
                         "pi_high": [0.2, 0.3]})


def test_good_tables_pass_unchanged():
    for kind, frame in (("systems", _systems()), ("pooled", _pooled())):
        assert check_table(frame, kind) is frame


@pytest.mark.parametrize("kind, make, edit, match", [
    ("systems", _systems, lambda t: t.drop(columns="score"), r"lacks column\(s\) \['score'\]"),
    ("systems", _systems, lambda t: t.assign(score=["x", 0.2, 0.3]),
     r"column 'score', row 0: 'x' is not a number"),
    ("systems", _systems, lambda t: t.assign(score=[True, False, True]),
     "holds True/False"),
    ("systems", _systems, lambda t: pd.concat([t, t.iloc[[1]]], ignore_index=True),
     r"2 rows repeat one dataset x metric x system \(first at row 1: .*system='b'"),
    ("systems", _systems, lambda t: t.assign(system=["a", None, "c"]),
     r"column 'system', row 1: missing"),
    ("systems", _systems, lambda t: t.assign(ci_low=["?", 0.1, 0.2]),
     r"column 'ci_low', row 0: '\?' is not a number"),
    ("systems", _systems, lambda t: t.iloc[:0], "is empty"),
    ("pooled", _pooled, lambda t: t.drop(columns=["k", "pi_low"]),
     r"lacks column\(s\) \['pi_low', 'k'\]"),
    ("pooled", _pooled, lambda t: t.assign(k=[2.5, 3]), r"column 'k', row 0: 2.5 is not a "
                                                        "whole number"),
    ("pooled", _pooled, lambda t: t.assign(k=["two", 3]), r"'two' is not a number"),
    ("pooled", _pooled, lambda t: t.assign(system_b="b"), "2 rows repeat one metric x "
                                                          "system_a x system_b x test"),
])
def test_each_fault_is_one_line_naming_column_and_row(kind, make, edit, match):
    with pytest.raises(DataValidationError, match=match):
        check_table(edit(make()), kind)


def test_the_recorded_key_of_a_pooled_table_is_used():
    t = _pooled().drop(columns=["system_a", "system_b", "test"]).iloc[:1]
    t.attrs["multistat"] = {"by": ["metric"]}
    assert check_table(t, "pooled") is t
    t2 = pd.concat([t, t], ignore_index=True)
    t2.attrs = t.attrs
    with pytest.raises(DataValidationError, match="2 rows repeat one metric"):
        check_table(t2, "pooled")


def test_read_table_names_the_option_and_the_file(tmp_path):
    path = tmp_path / "sys.parquet"
    _systems().assign(score=["a", "b", "c"]).to_parquet(path)
    with pytest.raises(DataValidationError, match=rf"`systems` \({path}\): column 'score'"):
        read_table(path, "systems")
    assert read_table(None, "systems") is None


def test_every_schema_accepts_a_table_with_its_own_columns():
    for kind, schema in SCHEMAS.items():
        cols = {c: ["x", "y"] for c in schema.text}
        cols.update({c: [0.5, 1.5] for c in (*schema.numbers, *schema.optional_numbers)})
        cols.update({c: np.array([1, 2]) for c in schema.integers})
        assert len(check_table(pd.DataFrame(cols), kind)) == 2, kind


def test_the_command_line_says_which_flag(tmp_path, capsys):
    from conftest import run_cli

    results = pd.DataFrame({"dataset": "d", "metric": "m", "system_a": ["a"],
                            "system_b": ["b"], "test": "t", "estimate": [0.1],
                            "p_value": [0.2]})
    results.to_parquet(tmp_path / "res.parquet")
    _pooled().assign(ci_low="a").to_parquet(tmp_path / "pooled.parquet")
    code, _, err = run_cli(["report", str(tmp_path / "res.parquet"), "--meta",
                            str(tmp_path / "pooled.parquet"), "--out", str(tmp_path / "r")],
                           capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"multistat: error: `--meta` ({tmp_path / 'pooled.parquet'}): column 'ci_low', "
        f"row 0: 'a' is not a number (2 such row(s))"]
    assert not (tmp_path / "r" / "report.html").exists()
