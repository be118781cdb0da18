"""Issue 23.7: wide score files go straight into the cube (multistat.io._wide_cube),
with the same study and the same messages as the long route (read_scores + from_frame),
which is the reference here: each test builds both and compares them."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import multistat
from multistat import cube
from multistat.errors import DataValidationError, InputFileError, ParameterError
from multistat.io import read_scores
from multistat.io._wide_cube import read_wide_arrays


def _long_route(path, **kw):
    return cube.from_frame(read_scores(path, **kw))


def _write(tmp_path, frames, ext="parquet"):
    paths = {}
    for metric, frame in frames.items():
        p = tmp_path / f"{metric}.{ext}"
        if ext == "parquet":
            frame.to_parquet(p, index=False)
        else:
            frame.to_csv(p, index=False, sep="\t" if ext == "tsv" else ",")
        paths[metric] = str(p)
    return paths


def _frames(rng, S=5, n=40, shuffle_second=True, binary_third=True):
    systems = [f"sys{i}" for i in range(S)]
    inst = [f"doc{i:03d}" for i in range(n)]
    out = {}
    for m, metric in enumerate(["bleu", "ter", "acc"]):
        if metric == "acc" and binary_third:
            data = {s: rng.integers(0, 2, n).astype(float) for s in systems}
        else:
            data = {s: np.round(rng.normal(size=n), 3) for s in systems}
        frame = pd.DataFrame({"instance": inst, **data})
        if m == 1 and shuffle_second:  # another row order and column order
            frame = frame.iloc[rng.permutation(n)][["instance", *systems[::-1]]]
        out[metric] = frame
    return out


def test_wide_parquet_mapping_is_the_long_routes_study(tmp_path):
    paths = _write(tmp_path, _frames(np.random.default_rng(0)))
    fast = multistat.load(paths, lower_is_better="ter")
    assert read_wide_arrays(paths, lower_is_better="ter") is not None  # the fast route
    slow = _long_route(paths, lower_is_better="ter")
    xr.testing.assert_identical(cube.datasets(fast)[tmp_path.name],
                                cube.datasets(slow)[tmp_path.name])
    ds = cube.datasets(fast)[tmp_path.name]
    assert ds.kind.values.tolist() == ["mean", "mean", "binary"]
    assert ds.higher_is_better.values.tolist() == [True, False, True]


@pytest.mark.parametrize("ext", ["csv", "tsv"])
def test_one_wide_text_file_without_instance_column(tmp_path, ext):
    frame = _frames(np.random.default_rng(1))["bleu"].drop(columns="instance")
    path = _write(tmp_path, {"scores": frame}, ext)["scores"]
    fast = multistat.load(path, metric="bleu")
    slow = _long_route(path, metric="bleu")
    xr.testing.assert_identical(cube.datasets(fast)["scores"], cube.datasets(slow)["scores"])
    assert read_wide_arrays(path, metric="bleu") is not None


def test_other_layouts_still_take_the_long_route(tmp_path):
    rng = np.random.default_rng(2)
    long = pd.DataFrame({"system": np.repeat(["a", "b"], 5), "instance": list(range(5)) * 2,
                         "score": rng.normal(size=10)})
    p = tmp_path / "long.csv"
    long.to_csv(p, index=False)
    assert read_wide_arrays(str(p)) is None
    assert read_wide_arrays(str(p), missing="drop") is None
    xr.testing.assert_identical(cube.datasets(multistat.load(str(p)))["long"],
                                cube.datasets(_long_route(str(p)))["long"])


def _both_raise(paths, error, match, **kw):
    with pytest.raises(error) as slow:
        _long_route(paths, **kw)
    with pytest.raises(error, match=match) as fast:
        multistat.load(paths, **kw)
    return str(slow.value), str(fast.value)


def test_nan_score_names_file_row_system(tmp_path):
    frames = _frames(np.random.default_rng(3))
    frames["ter"].iloc[7, 3] = np.nan
    paths = _write(tmp_path, frames)
    slow, fast = _both_raise(paths, DataValidationError,
                             r"ter\.parquet, row \d+.*NaN score \(system 'sys\d'.*metric "
                             r"'ter'")
    assert fast == slow


def test_infinite_and_non_numeric_scores(tmp_path):
    frames = _frames(np.random.default_rng(4))
    frames["bleu"]["sys2"] = frames["bleu"]["sys2"].astype(str)  # text cells
    frames["bleu"].iloc[5, 3] = "n/a?"
    paths = _write(tmp_path, frames)
    slow, fast = _both_raise(paths, InputFileError,
                             r"bleu\.parquet.*column 'sys2'.*non-numeric score")
    assert fast == slow
    frames = _frames(np.random.default_rng(4))
    frames["acc"].iloc[2, 1] = np.inf
    paths = _write(tmp_path, frames)
    slow, fast = _both_raise(paths, DataValidationError,
                             r"acc\.parquet.*column 'sys0'.*infinite score")
    assert fast == slow


def test_duplicated_instance_names_the_instance(tmp_path):
    frames = _frames(np.random.default_rng(5))
    frames["acc"].iloc[3, 0] = frames["acc"].iloc[4, 0]
    paths = _write(tmp_path, frames)
    _, fast = _both_raise(paths, DataValidationError,
                          r"duplicated row.*system 'sys\d', metric 'acc', instance "
                          r"'doc004'")
    assert "acc.parquet" in fast


def test_missing_system_is_the_long_routes_message(tmp_path):
    frames = _frames(np.random.default_rng(6))
    frames["ter"] = frames["ter"].drop(columns=["sys1", "sys3"])
    paths = _write(tmp_path, frames)
    slow, fast = _both_raise(paths, DataValidationError,
                             re.escape("metric 'ter': system 'sys1' has no scores at all "
                                       "(other systems have 40 instances); 2 systems are "
                                       "incomplete"))
    assert fast == slow


def test_bad_system_name_and_unknown_lower_is_better(tmp_path):
    frames = _frames(np.random.default_rng(7))
    frames = {m: f.rename(columns={"sys0": "  "}) for m, f in frames.items()}
    paths = _write(tmp_path, frames)
    with pytest.raises(DataValidationError) as slow:
        _long_route(paths)
    with pytest.raises(DataValidationError, match=r"bleu\.parquet.*system name '  ' is whitespace only") as fast:
        multistat.load(paths)
    assert str(fast.value) == str(slow.value)
    paths = _write(tmp_path, _frames(np.random.default_rng(7)))
    slow, fast = _both_raise(paths, ParameterError,
                             r"`lower_is_better` names unknown metric\(s\) 'chrf'",
                             lower_is_better=["chrf"])
    assert fast == slow


def test_instance_sets_that_differ_take_the_long_route(tmp_path):
    # legal: the cube holds NaN where a metric lacks an instance (from_frame)
    frames = _frames(np.random.default_rng(8))
    frames["acc"] = frames["acc"].iloc[:-3]
    paths = _write(tmp_path, frames)
    study = multistat.load(paths)
    xr.testing.assert_identical(cube.datasets(study)[tmp_path.name],
                                cube.datasets(_long_route(paths))[tmp_path.name])
    assert np.isnan(cube.datasets(study)[tmp_path.name].score.values[:, 2, -3:]).all()


def test_boolean_score_column_as_the_long_route(tmp_path):
    # whatever read_scores does with a boolean score column (read as 0/1 or refused),
    # the wide route does the same: the same study, or the same error
    frames = _frames(np.random.default_rng(9))
    frames["acc"]["sys1"] = frames["acc"]["sys1"].astype(bool)
    paths = _write(tmp_path, frames)
    try:
        slow = _long_route(paths)
    except (InputFileError, DataValidationError) as exc:
        with pytest.raises(type(exc)) as fast:
            multistat.load(paths)
        assert str(fast.value) == str(exc)
    else:
        xr.testing.assert_identical(cube.datasets(multistat.load(paths))[tmp_path.name],
                                    cube.datasets(slow)[tmp_path.name])


def test_cli_load_of_one_wide_file(tmp_path, capsys):
    from conftest import run_cli

    frame = _frames(np.random.default_rng(10))["bleu"]
    path = _write(tmp_path, {"scores": frame})["scores"]
    status, stdout, err = run_cli(["load", path, "--metric", "bleu", "-o",
                                   str(tmp_path / "s.nc")], capsys)
    assert status == 0, err
    assert "dataset scores: 5 systems x 1 metrics x 40 instances" in stdout
    xr.testing.assert_identical(cube.datasets(cube.open_study(tmp_path / "s.nc"))["scores"],
                                cube.datasets(_long_route(path, metric="bleu"))["scores"])
    frame.iloc[3, 2] = np.nan
    frame.to_parquet(path, index=False)
    status, _, err = run_cli(["load", path, "--metric", "bleu", "-o",
                              str(tmp_path / "t.nc")], capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert re.search(r"scores\.parquet, row \d+.*NaN score \(system 'sys1'", err), err


def test_lower_is_better_of_a_long_file_and_of_another_metrics_file(tmp_path):
    # one long file: its metric column names the metrics, the wide route steps aside
    rng = np.random.default_rng(11)
    long = pd.DataFrame({"system": np.repeat(["a", "b"], 6), "instance": list(range(6)) * 2,
                         "metric": "error", "score": rng.normal(size=12)})
    p = tmp_path / "long.csv"
    long.to_csv(p, index=False)
    study = multistat.load(str(p), lower_is_better=("error",))
    assert not bool(cube.datasets(study)["long"].higher_is_better.values[0])
    # a NaN in one file of a mapping whose lower_is_better names another file's metric:
    # the NaN's own message, as the long route gives
    frames = _frames(np.random.default_rng(12))
    frames["bleu"].iloc[2, 2] = np.nan
    paths = _write(tmp_path, frames)
    slow, fast = _both_raise(paths, DataValidationError, r"bleu\.parquet.*NaN score",
                             lower_is_better=["ter"])
    assert fast == slow
