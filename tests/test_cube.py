"""Tests of multistat.cube: the study data model, NetCDF round trip, dask chunking, pairs."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import (
    DATA_FILE,
    MQM_ZHEN,
    REALSUMM,
    REALSUMM_OPTIONS,
    ComputeCounter,
    small_dataset,
)

from multistat import cube
from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    InputFileError,
    MultistatError,
    ParameterError,
    UnknownSystemError,
)


# ======================================================================== real data
class TestFromFrameRealData:
    def test_mqm_zhen_shape_and_metadata(self, mqm_frame):
        study = cube.from_frame(mqm_frame)
        (name, ds), = cube.datasets(study).items()
        assert name == "zhen.avg_seg_scores"  # file name without suffix
        assert dict(ds.sizes) == {"system": 10, "metric": 1, "instance": 2000}
        assert ds.score.dims == ("system", "metric", "instance")
        assert ds.score.dtype == np.float64
        assert bool(ds.higher_is_better.sel(metric="mqm"))  # negated penalties
        assert str(ds.kind.sel(metric="mqm").values) == "mean"
        # cell check against the raw file: first data line of zhen.avg_seg_scores.tsv
        raw = pd.read_csv(MQM_ZHEN, sep=r"\s+", dtype={"seg_id": str})
        first = raw.iloc[0]
        got = ds.score.sel(system=first["system"], metric="mqm", instance=first["seg_id"])
        assert float(got) == first["mqm_avg_score"]
        # the whole cube against a pandas pivot of the raw file
        pivot = raw.pivot(index="system", columns="seg_id", values="mqm_avg_score")
        pivot = pivot.loc[ds.system.values, ds.instance.values]
        np.testing.assert_array_equal(ds.score.values[:, 0, :], pivot.to_numpy())
        assert (ds.score.values <= 0).all()  # MQM penalties are <= 0 (data README)

    def test_realsumm_shape(self):
        study = cube.load(REALSUMM, **REALSUMM_OPTIONS)
        ds = cube.datasets(study)["scores"]
        assert dict(ds.sizes) == {"system": 25, "metric": 15, "instance": 100}
        assert sum(s.startswith("abs/") for s in ds.system.values) == 14
        assert ds.higher_is_better.values.all()
        # raw line 2 of scores.csv.gz: "abs,presumm_out_trans_abs,52,rouge_1_f_score,0.42719"
        assert float(ds.score.sel(system="abs/presumm_out_trans_abs",
                                  metric="rouge_1_f_score", instance="52")) == 0.42719

    def test_data_file_pairs(self, data_file_study):
        ds = cube.datasets(data_file_study)["data-file"]
        assert dict(ds.sizes) == {"system": 2, "metric": 1, "instance": 2001}
        assert list(ds.system.values) == ["A", "B"]
        raw = np.loadtxt(DATA_FILE)
        np.testing.assert_array_equal(ds.score.values[:, 0, :], raw.T)

    def test_real_study_round_trip(self, mqm_frame, tmp_path):
        study = cube.from_frame(mqm_frame)
        path = cube.save(study, tmp_path / "sub" / "mqm.nc")
        assert path.exists()
        xr.testing.assert_identical(cube.open_study(path), study)
        # load() of a .nc path reopens it
        xr.testing.assert_identical(cube.load(path), study)


# ======================================================================== make_dataset
class TestValidation:
    def make(self, score, **kw):
        n_s, n_m, n_i = np.shape(score)
        kw.setdefault("systems", [f"s{i}" for i in range(n_s)])
        kw.setdefault("metrics", [f"m{i}" for i in range(n_m)])
        kw.setdefault("instances", range(n_i))
        return cube.make_dataset("d", score, **kw)

    def test_labels_become_strings(self):
        ds = self.make(np.zeros((2, 1, 3)), instances=[1, 2, 3])
        assert list(ds.instance.values) == ["1", "2", "3"]
        assert ds.attrs["dataset"] == "d"

    def test_one_system(self):
        with pytest.raises(DataValidationError,
                           match=r"dataset 'd': at least 2 systems are needed; got 1 \(s0\)"):
            self.make(np.zeros((1, 1, 3)))

    def test_one_instance(self):
        with pytest.raises(DataValidationError,
                           match=r"dataset 'd': at least 2 instances are needed; got 1$"):
            self.make(np.zeros((2, 1, 1)))

    def test_partial_nan(self):
        score = np.zeros((3, 2, 4))
        score[1, 1, 2] = np.nan
        with pytest.raises(DataValidationError,
                           match=r"^dataset 'd', metric 'm1': instance '2' is missing for "
                                 r"some systems only$"):
            self.make(score)

    def test_nan_for_all_systems_is_a_dropped_instance(self):
        score = np.zeros((3, 2, 4))
        score[:, 1, 2] = np.nan
        ds = self.make(score)
        assert int(ds.score.isnull().sum()) == 3

    def test_infinite(self):
        score = np.zeros((2, 1, 3))
        score[0, 0, 0] = -np.inf
        with pytest.raises(DataValidationError, match=r"dataset 'd': infinite scores"):
            self.make(score)

    def test_duplicated_labels(self):
        with pytest.raises(DataValidationError,
                           match=r"dataset 'd': duplicated system labels \['x'\]"):
            self.make(np.zeros((2, 1, 3)), systems=["x", "x"])
        with pytest.raises(DataValidationError,
                           match=r"dataset 'd': duplicated instance labels \['1'\]"):
            self.make(np.zeros((2, 1, 3)), instances=["1", "1", 1])

    def test_shape_mismatch(self):
        with pytest.raises(ParameterError,
                           match=r"`score` must have shape \(3, 1, 3\) \(system, metric, "
                                 r"instance\); got \(2, 1, 3\)"):
            self.make(np.zeros((2, 1, 3)), systems=["a", "b", "c"])

    def test_stats_shape_mismatch(self):
        with pytest.raises(ParameterError,
                           match=r"`stats` must have shape \(2, 1, 3\) \+ \(stat,\); got "
                                 r"\(2, 1, 2, 4\)"):
            self.make(np.zeros((2, 1, 3)), stats=np.zeros((2, 1, 2, 4)))

    def test_metric_metadata_length(self):
        with pytest.raises(ParameterError,
                           match=r"`higher_is_better` must have one value per metric \(1\); "
                                 r"got 2"):
            self.make(np.zeros((2, 1, 3)), higher_is_better=[True, False])

    def test_unknown_kind(self):
        with pytest.raises(ParameterError,
                           match=r"`kind` must be 'mean', 'binary' or 'corpus' per metric; "
                                 r"got 'ratio' for metric 'm0'"):
            self.make(np.zeros((2, 1, 3)), kind=["ratio"])

    def test_make_study_errors(self):
        ds = self.make(np.zeros((2, 1, 3)))
        with pytest.raises(DataValidationError, match=r"a study needs at least one dataset"):
            cube.make_study({})
        with pytest.raises(DataValidationError,
                           match=r"dataset name 'a/b' contains a path separator"):
            cube.make_study({"a/b": ds})

    def test_errors_are_multistat_errors(self):
        # the CLI catches MultistatError (exit 2); ValueError for library users
        assert issubclass(DataValidationError, MultistatError)
        assert issubclass(DataValidationError, ValueError)


# ======================================================================== from_frame
def long_frame(rows, metrics=None):
    frame = pd.DataFrame(rows, columns=["dataset", "system", "metric", "instance", "score"])
    frame.attrs["metrics"] = metrics or {}
    return frame


class TestFromFrame:
    def test_orders_and_metadata(self):
        frame = long_frame([
            ("d", "b", "err", "x2", 3.0), ("d", "b", "err", "x1", 4.0),
            ("d", "a", "err", "x2", 1.0), ("d", "a", "err", "x1", 2.0)],
            metrics={"err": {"higher_is_better": False, "kind": "binary"}})
        ds = cube.datasets(cube.from_frame(frame))["d"]
        # labels in order of first appearance
        assert list(ds.system.values) == ["b", "a"]
        assert list(ds.instance.values) == ["x2", "x1"]
        np.testing.assert_array_equal(ds.score.values[:, 0], [[3.0, 4.0], [1.0, 2.0]])
        assert not bool(ds.higher_is_better[0]) and str(ds.kind.values[0]) == "binary"

    def test_to_frame_inverts_from_frame(self, toy_study):
        frame = cube.to_frame(toy_study)
        assert list(frame.columns) == ["dataset", "system", "metric", "instance", "score"]
        # NaN (dropped) rows are left out: 3 dropped instances x 4 systems
        assert len(frame) == 4 * 3 * 23 - 3 * 4 + 3 * 3 * 11
        frame.attrs["metrics"] = cube.metric_info(toy_study)
        back = cube.from_frame(frame)
        for name, ds in cube.datasets(toy_study).items():
            other = cube.datasets(back)[name]
            # a metric-wise dropped instance comes back as NaN for every system
            xr.testing.assert_identical(other, ds)

    def test_missing_columns(self):
        with pytest.raises(DataValidationError,
                           match=r"score frame lacks column\(s\) \['instance'\]; has "
                                 r"\['dataset', 'system', 'metric', 'score'\]"):
            cube.from_frame(pd.DataFrame(columns=["dataset", "system", "metric", "score"]))

    def test_system_lacking_instance(self):
        frame = long_frame([("d", "a", "m", "1", 1.0), ("d", "a", "m", "2", 2.0),
                            ("d", "b", "m", "1", 3.0)])
        with pytest.raises(DataValidationError,
                           match=r"dataset 'd', metric 'm': system\(s\) \['b'\] lack "
                                 r"instance '2' \(1 incomplete instance\(s\) in all\)"):
            cube.from_frame(frame)

    def test_duplicates(self):
        frame = long_frame([("d", "a", "m", "1", 1.0), ("d", "a", "m", "1", 2.0),
                            ("d", "b", "m", "1", 3.0)])
        with pytest.raises(DataValidationError,
                           match=r"dataset 'd': duplicated \(system, metric, instance\) "
                                 r"\('a', 'm', '1'\)"):
            cube.from_frame(frame)

    def test_fewer_than_two_systems(self):
        frame = long_frame([("d", "a", "m", "1", 1.0), ("d", "a", "m", "2", 2.0)])
        with pytest.raises(DataValidationError, match=r"at least 2 systems are needed"):
            cube.from_frame(frame)


# ======================================================================== save / open
class TestRoundTrip:
    def test_two_datasets_different_instances_and_systems(self, toy_study, tmp_path):
        path = cube.save(toy_study, tmp_path / "study.nc")
        back = cube.open_study(path)
        xr.testing.assert_identical(back, toy_study)
        assert list(back.children) == ["toy", "other"]
        assert back["other"].sizes["system"] == 3 and back["toy"].sizes["instance"] == 23
        # dtypes survive exactly (bool flags are stored as int8 on disk)
        ds = cube.datasets(back)["toy"]
        assert ds.higher_is_better.dtype == bool
        assert ds.score.dtype == np.float64
        assert list(ds.higher_is_better.values) == [True, True, False]
        assert list(ds.kind.values) == ["mean", "mean", "binary"]
        # result is in memory, the file is closed (it can be overwritten at once)
        assert ds.score.chunks is None
        cube.save(back, path)
        xr.testing.assert_identical(cube.open_study(path), toy_study)

    def test_dropped_instances_survive(self, tmp_path):
        # instance 2 of metric x is NaN for system a: dropped for x only (all systems)
        csv = tmp_path / "scores.csv"
        csv.write_text("system,metric,instance,score\n"
                       "a,x,1,0.5\na,x,2,\na,x,3,0.25\n"
                       "b,x,1,0.75\nb,x,2,0.1\nb,x,3,0.0\n"
                       "a,y,1,1.5\na,y,2,2.5\na,y,3,3.5\n"
                       "b,y,1,1.0\nb,y,2,2.0\nb,y,3,3.0\n")
        with pytest.warns(DroppedDataWarning, match=r"1"):
            study = cube.load(csv, missing="drop")
        ds = cube.datasets(study)["scores"]
        assert list(ds.instance.values) == ["1", "2", "3"]
        np.testing.assert_array_equal(np.isnan(ds.score.sel(metric="x").values),
                                      [[False, True, False]] * 2)
        assert not np.isnan(ds.score.sel(metric="y").values).any()
        back = cube.open_study(cube.save(study, tmp_path / "s.nc"))
        xr.testing.assert_identical(back, study)
        assert int(back["scores"].score.isnull().sum()) == 2

    def test_stats_and_unit_coordinates_survive(self, tmp_path):
        from multistat.units import evaluation_units

        rng = np.random.default_rng(3)
        ds = cube.make_dataset("c", rng.random((2, 1, 6)), systems="ab", metrics=["bleu"],
                               instances=range(6), kind=["corpus"], corpus_fn=["bleu"],
                               stats=rng.integers(0, 9, (2, 1, 6, 3)))
        study = evaluation_units(cube.make_study([ds]), size=2, seed=0)
        back = cube.open_study(cube.save(study, tmp_path / "c.nc"))
        xr.testing.assert_identical(back, study)
        assert back["c"].attrs["unit_size"] == 2

    def test_save_chunked_study(self, toy_study, tmp_path):
        path = cube.save(cube.chunk(toy_study, system=2), tmp_path / "c.nc")
        xr.testing.assert_identical(cube.open_study(path), toy_study)

    def test_open_missing_file(self, tmp_path):
        with pytest.raises(InputFileError, match=r"nothing\.nc: no such study file"):
            cube.open_study(tmp_path / "nothing.nc")

    def test_open_other_netcdf(self, tmp_path):
        plain = tmp_path / "plain.nc"
        xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(plain, engine="h5netcdf")
        with pytest.raises(InputFileError,
                           match=r"plain\.nc: not a multistat study: no dataset groups"):
            cube.open_study(plain)
        tree = tmp_path / "tree.nc"
        xr.DataTree.from_dict({"/g": xr.Dataset({"a": ("x", np.arange(3.0))})}).to_netcdf(
            tree, engine="h5netcdf")
        with pytest.raises(InputFileError,
                           match=r"tree\.nc: not a multistat study: group 'g' lacks "
                                 r"\['score', 'higher_is_better', 'kind', 'corpus_fn'\]"):
            cube.open_study(tree)

    def test_open_not_netcdf(self, tmp_path):
        path = tmp_path / "bad.nc"
        path.write_text("not a netcdf file\n")
        with pytest.raises(InputFileError,
                           match=r"bad\.nc: not a multistat study \(NetCDF\) file"):
            cube.open_study(path)


# ======================================================================== dask
class TestChunk:
    def test_chunks_and_laziness(self, toy_study):
        with ComputeCounter() as counter:
            chunked = cube.chunk(toy_study, system=2)
            ds = cube.datasets(chunked)["toy"]
            assert isinstance(ds.score.data, da.Array)
            # system chunks of 2, one metric per chunk, instances whole
            assert ds.score.chunks == ((2, 2), (1, 1, 1), (23,))
            # metadata coordinates stay in memory (reading them computes nothing)
            assert ds.kind.chunks is None and ds.higher_is_better.chunks is None
            assert list(ds.kind.values) == ["mean", "mean", "binary"]
            doubled = ds.score * 2 - ds.score.mean("instance")
            assert isinstance(doubled.data, da.Array)
            assert counter.count == 0  # nothing computed yet
            values = doubled.values
            assert counter.count == 1
        eager = cube.datasets(toy_study)["toy"].score
        np.testing.assert_array_equal(values, (eager * 2 - eager.mean("instance")).values)

    def test_default_chunks_keep_systems_whole(self, toy_study):
        ds = cube.datasets(cube.chunk(toy_study))["other"]
        assert ds.score.chunks == ((3,), (1, 1, 1), (11,))
        xr.testing.assert_identical(ds.compute(), cube.datasets(toy_study)["other"])


# ======================================================================== pair_indices
class TestPairIndices:
    SYSTEMS = ("a", "b", "c", "d")

    def test_all(self):
        pairs = cube.pair_indices(self.SYSTEMS, "all")
        assert pairs == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
        assert len(pairs) == 4 * 3 // 2

    def test_baseline(self):
        # every other system against the baseline (estimates are system - baseline)
        assert cube.pair_indices(self.SYSTEMS, "baseline:c") == [(0, 2), (1, 2), (3, 2)]

    def test_list(self):
        assert cube.pair_indices(self.SYSTEMS, [("d", "a"), ["b", "c"]]) == [(3, 0), (1, 2)]
        assert cube.pair_indices(np.array(self.SYSTEMS), [("a", "b")]) == [(0, 1)]

    def test_unknown_system(self):
        with pytest.raises(UnknownSystemError,
                           match=r"unknown system 'z'; the study has a, b, c, d"):
            cube.pair_indices(self.SYSTEMS, "baseline:z")
        with pytest.raises(UnknownSystemError, match=r"unknown system 'z'"):
            cube.pair_indices(self.SYSTEMS, [("a", "z")])
        with pytest.raises(UnknownSystemError, match=r"unknown system ''"):
            cube.pair_indices(self.SYSTEMS, "baseline:")

    def test_self_pair(self):
        with pytest.raises(ParameterError, match=r"`pairs`: system 'b' compared with itself"):
            cube.pair_indices(self.SYSTEMS, [("a", "c"), ("b", "b")])

    @pytest.mark.parametrize("spec", ["every", "baseline", "ALL"])
    def test_bad_string(self, spec):
        with pytest.raises(ParameterError,
                           match=r"`pairs` must be 'all', 'baseline:<system>' or a list of "
                                 rf"\(a, b\) system pairs; got '{spec}'"):
            cube.pair_indices(self.SYSTEMS, spec)

    @pytest.mark.parametrize("spec", [3, None, [("a",)], [("a", "b", "c")], ["ab"]])
    def test_bad_list(self, spec):
        with pytest.raises(ParameterError,
                           match=r"`pairs` must be 'all', 'baseline:<system>' or a list of "
                                 r"\(a, b\) system pairs; got"):
            cube.pair_indices(self.SYSTEMS, spec)


# ======================================================================== load
def test_load_reads_score_files(tmp_path):
    csv = tmp_path / "tiny.csv"
    csv.write_text("system,instance,score\na,1,1\na,2,0\nb,1,0\nb,2,0\n")
    ds = cube.datasets(cube.load(csv))["tiny"]
    assert str(ds.kind.values[0]) == "binary"  # every score is 0/1
    np.testing.assert_array_equal(ds.score.values[:, 0], [[1, 0], [0, 0]])
    assert cube.metric_info(cube.load(csv)) == {
        "score": {"higher_is_better": True, "kind": "binary", "corpus_fn": ""}}


def test_datasets_of_a_single_dataset():
    ds = small_dataset("solo")
    assert list(cube.datasets(ds)) == ["solo"]


# ======================================================================== hostile studies
class TestHostileStudies:
    """NetCDF files that are not multistat studies or ask for absurd work: one line naming
    the file and the group, before any data is read (issue 13.2)."""

    def _tree(self, tmp_path, ds, name="s.nc"):
        path = tmp_path / name
        xr.DataTree.from_dict({"/d": ds}).to_netcdf(path, engine="h5netcdf")
        return path

    def _good(self):
        return cube.make_dataset("d", np.arange(6.0).reshape(2, 1, 3), systems=["a", "b"],
                                 metrics=["m"], instances=["0", "1", "2"])

    def test_huge_declared_dimensions_refused_before_loading(self, tmp_path):
        import h5py

        path = tmp_path / "huge.nc"
        ds = self._good().assign_coords(higher_is_better=("metric", np.array([1], "i1")))
        xr.DataTree.from_dict({"/d": ds}).to_netcdf(path, engine="h5netcdf")
        with h5py.File(path, "a") as f:  # a 4 TB score declared in a small chunked file
            del f["d/score"]
            f["d"].create_dataset("score", shape=(2, 1, 2**38), dtype="f8", chunks=(1, 1, 1024))
        assert path.stat().st_size < 1 << 20
        with pytest.raises(InputFileError, match=r"huge\.nc: .*(needs|not a multistat)"):
            cube.open_study(path)
        with pytest.raises(InputFileError, match=r"limit of"):
            cube.open_study(self._tree(tmp_path, self._good(), "ok.nc"), max_bytes=10)

    def test_wrong_types_and_metadata(self, tmp_path):
        good = self._good().assign_coords(higher_is_better=("metric", np.array([1], "i1")))
        text = good.assign(score=good.score.astype(str))
        with pytest.raises(InputFileError, match=r"group 'd': `score` holds <U\d+, not numbers"):
            cube.open_study(self._tree(tmp_path, text, "t.nc"))
        kind = good.assign_coords(kind=("metric", np.array(["x" * 500])))
        with pytest.raises(InputFileError, match=r"group 'd': unknown metric kind 'x{100}\.\.\.'"):
            cube.open_study(self._tree(tmp_path, kind, "k.nc"))
        runs = good.assign_attrs(n_runs=10**12)
        runs = runs.assign(run_score=(("system", "metric", "instance", "run"),
                                      np.zeros((2, 1, 3, 1))))
        with pytest.raises(InputFileError, match=r"n_runs=1000000000000 but the run dimension"):
            cube.open_study(self._tree(tmp_path, runs, "r.nc"))
        dot = tmp_path / "dot.nc"
        xr.DataTree.from_dict({"/..": good}).to_netcdf(dot, engine="h5netcdf")
        with pytest.raises(InputFileError, match=r"dot\.nc: not a multistat study"):
            cube.open_study(dot)
