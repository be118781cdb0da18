"""Several runs per system and instance groups: loader (read_scores run_col/group_col),
data model (score = run average, run_score per run, group coordinate), NetCDF round trip.
Expected values are worked out by hand from the small files written here."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import multistat as ms
from multistat import cube
from multistat.errors import DataValidationError, ParameterError

RUNS = """system,doc,seg,seed,score
A,d1,s1,1,0.5
A,d1,s1,2,0.7
A,d1,s2,1,0.4
A,d1,s2,2,0.6
A,d2,s3,1,0.1
A,d2,s3,2,0.3
B,d1,s1,7,0.2
B,d1,s2,7,0.3
B,d2,s3,7,0.9
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_runs_are_data_and_the_score_is_their_mean(tmp_path):
    path = write(tmp_path, "runs.csv", RUNS)
    frame = ms.read_scores(path, instance_col="seg", run_col="seed")
    assert list(frame.columns) == ["dataset", "system", "metric", "instance", "score", "run"]
    assert frame["run"].tolist() == ["1", "2"] * 3 + ["7"] * 3
    ds = cube.from_frame(frame)["runs"].to_dataset()
    assert ds.attrs["n_runs"] == 3 and ds.run.values.tolist() == ["1", "2", "7"]
    assert ds.run_score.dims == ("system", "metric", "instance", "run")
    a = ds.run_score.sel(system="A", metric="score").values
    b = ds.run_score.sel(system="B", metric="score").values
    np.testing.assert_array_equal(a, [[0.5, 0.7, np.nan], [0.4, 0.6, np.nan],
                                      [0.1, 0.3, np.nan]])
    np.testing.assert_array_equal(b, [[np.nan, np.nan, 0.2], [np.nan, np.nan, 0.3],
                                      [np.nan, np.nan, 0.9]])
    # score = mean over the runs each system has: A (0.5+0.7)/2, (0.4+0.6)/2, (0.1+0.3)/2
    np.testing.assert_allclose(ds.score.sel(metric="score").values,
                               [[0.6, 0.5, 0.2], [0.2, 0.3, 0.9]], rtol=0, atol=1e-15)


def test_without_run_col_runs_are_duplicates(tmp_path):
    path = write(tmp_path, "runs.csv", RUNS)
    with pytest.raises(DataValidationError,
                       match=r"duplicated row.*instance 's1' at line 2 and line 3 .*run_col"):
        ms.read_scores(path, instance_col="seg")


def test_missing_run_is_an_error_or_dropped(tmp_path):
    text = RUNS.replace("A,d1,s2,2,0.6\n", "")
    path = write(tmp_path, "runs.csv", text)
    with pytest.raises(DataValidationError,
                       match=r"system 'A' has no score for instance 's2' in run\(s\) '2'"):
        ms.read_scores(path, instance_col="seg", run_col="seed")
    with pytest.warns(ms.errors.DroppedDataWarning, match="dropped 1 of 3 instances"):
        frame = ms.read_scores(path, instance_col="seg", run_col="seed", missing="drop")
    assert sorted(set(frame["instance"])) == ["s1", "s3"]
    assert frame.attrs["dropped"] == [
        "dataset 'runs', metric 'score', instance 's2': a run missing for 'A'"]


def test_same_run_twice_is_a_duplicate(tmp_path):
    path = write(tmp_path, "runs.csv", RUNS + "B,d2,s3,7,0.8\n")
    with pytest.raises(DataValidationError,
                       match=r"system 'B'.*instance 's3', run '7' at line 10 and line 11"):
        ms.read_scores(path, instance_col="seg", run_col="seed")


def test_groups_kept_per_instance_and_round_trip(tmp_path):
    path = write(tmp_path, "runs.csv", RUNS)
    frame = ms.read_scores(path, instance_col="seg", run_col="seed", group_col="doc")
    assert frame.columns[-2:].tolist() == ["run", "group"]
    study = cube.from_frame(frame)
    ds = study["runs"].to_dataset()
    assert ds.group.dims == ("instance",)
    assert ds.group.values.tolist() == ["d1", "d1", "d2"]
    cube.save(study, tmp_path / "s.nc")
    back = cube.open_study(tmp_path / "s.nc")["runs"].to_dataset()
    xr.testing.assert_identical(back, ds)
    assert isinstance(back.attrs["n_runs"], int)
    assert cube.to_frame(study)["group"].tolist() == ["d1", "d1", "d2"] * 2


def test_instance_in_two_groups_is_an_error(tmp_path):
    text = RUNS.replace("B,d1,s2,7,0.3", "B,d2,s2,7,0.3")
    path = write(tmp_path, "runs.csv", text)
    with pytest.raises(DataValidationError,
                       match=r"dataset 'runs': instance 's2' is in two groups, 'd1' and 'd2' "
                             r"\(at .*runs\.csv, line 4 and .*runs\.csv, line 9\)"):
        ms.read_scores(path, instance_col="seg", run_col="seed", group_col="doc")


def test_wide_tables_take_run_and_group_columns(tmp_path):
    text = ("doc,seed,A,B\n"
            "d1,1,0.5,0.2\nd1,1,0.4,0.3\nd2,1,0.1,0.9\n"
            "d1,2,0.7,0.1\nd1,2,0.6,0.2\nd2,2,0.3,0.8\n")
    frame = ms.read_scores(write(tmp_path, "w.csv", text), run_col="seed", group_col="doc")
    ds = cube.from_frame(frame)["w"].to_dataset()
    # instances are numbered within each run: rows 1-3 of run 1 and of run 2
    assert ds.instance.values.tolist() == ["0", "1", "2"]
    assert ds.group.values.tolist() == ["d1", "d1", "d2"]
    np.testing.assert_allclose(ds.score.sel(metric="score").values,
                               [[0.6, 0.5, 0.2], [0.15, 0.25, 0.85]], rtol=0, atol=1e-15)


def test_run_and_group_options_checked(tmp_path):
    path = write(tmp_path, "runs.csv", RUNS)
    with pytest.raises(ms.errors.InputFileError, match=r"no column 'epoch' \(run_col\)"):
        ms.read_scores(path, instance_col="seg", run_col="epoch")
    with pytest.raises(ParameterError, match=r"`group_col='seg'` names a column already"):
        ms.read_scores(path, instance_col="seg", group_col="seg")
    pairs = write(tmp_path, "p.txt", "1 2\n3 4\n")
    with pytest.raises(ParameterError, match=r"format='pairs' has no named columns; drop "
                                             r"`run_col`"):
        ms.read_scores(pairs, run_col="seed")


def test_compare_runs_on_run_averaged_scores(tmp_path):
    # the instance-level tests see the run-averaged scores: compare's t test equals scipy's
    # paired t test on per-(system, instance) means computed here with pandas
    import pandas as pd
    from scipy import stats

    rng = np.random.default_rng(3)
    rows = ["system,seg,seed,score"]
    for s in ("A", "B"):
        for i in range(30):
            for r in range(3):
                rows.append(f"{s},{i},{r},{rng.normal(0.1 if s == 'A' else 0.0):.6f}")
    path = write(tmp_path, "r.csv", "\n".join(rows) + "\n")
    study = ms.load(path, instance_col="seg", run_col="seed")
    res = ms.compare(study, tests=("t",))
    means = pd.read_csv(path).groupby(["system", "seg"])["score"].mean()
    ref = stats.ttest_rel(means["A"].to_numpy(), means["B"].to_numpy())
    assert len(res) == 1
    assert res["p_value"].iloc[0] == pytest.approx(ref.pvalue, rel=1e-10)
