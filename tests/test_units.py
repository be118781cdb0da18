"""Tests of multistat.units.evaluation_units (NLPStatTest manual section 3.1, appendix C.1).

Reference values are computed directly with numpy (``numpy.array_split`` is how
NLPStatTest partitions the data into evaluation units).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from conftest import DATA_FILE, ComputeCounter, small_dataset
from hypothesis import given, settings
from hypothesis import strategies as st

from multistat import cube
from multistat.errors import DataValidationError, ParameterError, ParameterTypeError
from multistat.units import evaluation_units, partition


def toy(n_instances=23, **kw):
    return cube.make_study([small_dataset("toy", n_instances=n_instances, **kw)])


def values(study, name="toy"):
    return cube.datasets(study)[name].score.values


def direct_units(x, size, reduce=np.mean, remainder="spread"):
    """Units of a 1-d array the NLPStatTest way (reference implementation)."""
    k = len(x) // size
    if remainder == "spread":
        chunks = np.array_split(x, k)
    else:
        chunks = [x[i * size:(i + 1) * size] for i in range(k)]
    return np.array([reduce(c) for c in chunks])


class TestPartition:
    @pytest.mark.parametrize("n, size, expected", [
        (23, 3, [4, 4, 3, 3, 3, 3, 3]), (2001, 7, [8] * 6 + [7] * 279), (10, 5, [5, 5]),
        (11, 5, [6, 5]), (99, 1, [1] * 99),
        # 13 // 5 = 2 units share a remainder of 3: units of 7 and 6, not 5 or 6
        (13, 5, [7, 6])])
    def test_nlpstattest_partition(self, n, size, expected):
        groups = partition(n, size)
        k = n // size
        assert len(groups) == k
        # larger units first, cover 0..n-1 in order (expected sizes worked out by hand)
        lengths = [len(g) for g in groups]
        assert lengths == expected
        assert lengths == sorted(lengths, reverse=True)
        np.testing.assert_array_equal(np.concatenate(groups), np.arange(n))
        for g, ref in zip(groups, np.array_split(np.arange(n), k)):
            np.testing.assert_array_equal(g, ref)

    def test_drop_remainder(self):
        groups = partition(23, 3, "drop")
        assert [len(g) for g in groups] == [3] * 7
        np.testing.assert_array_equal(np.concatenate(groups), np.arange(21))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 300), data=st.data())
def test_partition_property(n, data):
    """Any n and size: numpy.array_split units covering every instance once; unit means
    weighted by unit sizes give back the total (nothing lost or counted twice)."""
    size = data.draw(st.integers(2, n // 2)) if n >= 4 else 1
    groups = partition(n, size)
    k = n // size
    assert len(groups) == k
    # array_split: the first n mod k units hold ceil(n / k), the others floor(n / k)
    lengths = [len(g) for g in groups]
    assert lengths == [-(-n // k)] * (n % k) + [n // k] * (k - n % k)
    assert min(lengths) >= size
    if n >= size**2:  # then the remainder never gives a unit more than one extra
        assert max(lengths) <= size + 1
    np.testing.assert_array_equal(np.concatenate(groups), np.arange(n))
    if size == 1:
        return
    x = np.random.default_rng(n).normal(size=(2, 1, n))
    ds = cube.make_dataset("p", x, systems="ab", metrics=["m"], instances=range(n))
    out = cube.datasets(evaluation_units(cube.make_study([ds]), size=size))["p"]
    np.testing.assert_allclose((out.score.values * out.unit_n.values).sum(-1),
                               x.sum(-1), rtol=1e-10, atol=1e-10)


class TestValues:
    @pytest.mark.parametrize("size", [2, 3, 5, 7])
    def test_mean_spread_against_numpy(self, size):
        study = toy()
        got = values(evaluation_units(study, size=size))
        x = values(study)
        k = 23 // size
        assert got.shape == (4, 3, k)
        for s in range(4):
            for m in (0, 2):  # metrics without dropped instances
                np.testing.assert_allclose(got[s, m], direct_units(x[s, m], size),
                                           rtol=1e-15, atol=1e-15)

    def test_unit_sizes_coordinate(self):
        ds = cube.datasets(evaluation_units(toy(), size=3))["toy"]
        # 23 = 2 * 4 + 5 * 3 (numpy.array_split: the first n % k units get one more)
        assert list(ds.unit_n.values) == [4, 4, 3, 3, 3, 3, 3]
        assert list(ds.instance.values) == [f"unit-{i:05d}" for i in range(7)]
        assert ds.attrs["unit_size"] == 3 and ds.attrs["instances_before_units"] == 23
        assert ds.attrs["unit_remainder"] == "spread" and ds.attrs["unit_seed"] == -1

    def test_dropped_instances_are_left_out_per_metric(self):
        # metric m2 has instances 2, 5, 7 dropped (NaN for all systems): its units are
        # built from the 20 remaining instances, so it has 20 // 3 = 6 units, then NaN
        study = toy()
        x = values(study)
        got = values(evaluation_units(study, size=3))
        for s in range(4):
            kept = x[s, 1][~np.isnan(x[s, 1])]
            np.testing.assert_allclose(got[s, 1, :6], direct_units(kept, 3), rtol=1e-15)
            assert np.isnan(got[s, 1, 6])

    def test_median(self):
        study = toy()
        x = values(study)
        got = values(evaluation_units(study, size=4, statistic="median"))
        for s in range(4):
            np.testing.assert_array_equal(got[s, 0], direct_units(x[s, 0], 4, np.median))
        ds = cube.datasets(evaluation_units(study, size=4, statistic="median"))["toy"]
        assert ds.attrs["unit_statistic"] == "median"

    def test_drop_remainder_values(self):
        study = toy()
        x = values(study)
        got = values(evaluation_units(study, size=5, remainder="drop"))
        assert got.shape[-1] == 4  # 23 // 5 full units; the last 3 instances left out
        np.testing.assert_allclose(got[:, 0], x[:, 0, :20].reshape(4, 4, 5).mean(-1),
                                   rtol=1e-15)

    def test_size_one_is_identity(self):
        study = toy()
        assert evaluation_units(study, size=1) is study

    def test_two_units(self):
        study = toy(nan_metric=False)
        got = values(evaluation_units(study, size=11))  # 23 // 11 = 2 units: 12 + 11
        np.testing.assert_allclose(got[..., 0], values(study)[..., :12].mean(-1), rtol=1e-15)
        np.testing.assert_allclose(got[..., 1], values(study)[..., 12:].mean(-1), rtol=1e-15)

    def test_metadata_kept(self):
        ds = cube.datasets(evaluation_units(toy(), size=2))["toy"]
        assert list(ds.higher_is_better.values) == [True, True, False]
        assert list(ds.system.values) == ["sys0", "sys1", "sys2", "sys3"]
        # m3 is binary: its units are proportions (0, 1/3, 0.5, ...), a `mean` metric now
        m3 = ds.score.sel(metric="m3").values
        assert ((m3 >= 0) & (m3 <= 1)).all() and 0.5 in m3 and not np.isin(m3, [0, 1]).all()
        assert list(ds.kind.values) == ["mean", "mean", "mean"]
        # a pure shuffle (size 1) keeps 0/1 scores: still binary
        shuffled = cube.datasets(evaluation_units(toy(), size=1, seed=0))["toy"]
        assert list(shuffled.kind.values) == ["mean", "mean", "binary"]

    def test_corpus_statistics_are_summed(self):
        rng = np.random.default_rng(7)
        stats = rng.integers(0, 10, (2, 1, 9, 3)).astype(float)
        score = rng.random((2, 1, 9))
        ds = cube.make_dataset("c", score, systems="ab", metrics=["bleu"], instances=range(9),
                               kind=["corpus"], corpus_fn=["bleu"], stats=stats)
        out = cube.datasets(evaluation_units(cube.make_study([ds]), size=4,
                                             statistic="median"))["c"]
        # 9 // 4 = 2 units: instances 0..4 and 5..8
        np.testing.assert_array_equal(out.stats.values[:, 0, 0], stats[:, 0, :5].sum(1))
        np.testing.assert_array_equal(out.stats.values[:, 0, 1], stats[:, 0, 5:].sum(1))
        # the informative score of a corpus metric is the unit mean whatever `statistic`
        np.testing.assert_allclose(out.score.values[:, 0, 0], score[:, 0, :5].mean(1))

    def test_data_file_size_7(self, data_file_study):
        raw = np.loadtxt(DATA_FILE)  # 2001 lines: system A, system B
        ds = cube.datasets(evaluation_units(data_file_study, size=7))["data-file"]
        # 2001 = 285 * 7 + 6: 6 units of 8 and 279 units of 7
        assert ds.sizes["instance"] == 285
        assert list(np.bincount(ds.unit_n.values))[7:] == [279, 6]
        for s in range(2):
            np.testing.assert_allclose(ds.score.values[s, 0], direct_units(raw[:, s], 7),
                                       rtol=1e-14)


class TestShuffle:
    def test_same_permutation_for_every_system(self):
        study = toy(nan_metric=False)
        x = values(study)
        shuffled = values(evaluation_units(study, size=1, seed=11))
        # size 1 with a seed is a pure permutation of the instances ...
        perm = [int(np.flatnonzero(x[0, 0] == v)[0]) for v in shuffled[0, 0]]
        assert sorted(perm) == list(range(23)) and perm != list(range(23))
        # ... and the same one for every system and metric (pairs preserved)
        np.testing.assert_array_equal(shuffled, x[..., perm])

    @pytest.mark.parametrize("statistic", ["mean", "median"])
    def test_pairs_preserved(self, statistic):
        # the units of the difference a - b equal the difference of the units (mean is
        # linear); for the median, unit i of every system holds the same instances
        study = toy(nan_metric=False)
        x = values(study)
        diff = x[[0]] - x[[1]]
        diff_study = cube.make_study([cube.make_dataset(
            "toy", np.concatenate([diff, np.zeros_like(diff)]), systems=["d", "zero"],
            metrics=["m1", "m2", "m3"], instances=[f"i{j:03d}" for j in range(23)],
            kind=["mean", "mean", "binary"])])
        units = values(evaluation_units(study, size=3, seed=4, statistic=statistic))
        diff_units = values(evaluation_units(diff_study, size=3, seed=4,
                                             statistic=statistic))
        if statistic == "mean":
            np.testing.assert_allclose(units[0] - units[1], diff_units[0], atol=1e-14)
        else:
            ref = values(evaluation_units(study, size=1, seed=4))  # the shuffled order
            np.testing.assert_array_equal(units[0, 0], direct_units(ref[0, 0], 3, np.median))
            np.testing.assert_array_equal(units[1, 0], direct_units(ref[1, 0], 3, np.median))

    def test_seed_reproducible(self):
        study = toy()
        a = evaluation_units(study, size=3, seed=0)  # 0 is a seed: it shuffles
        b = evaluation_units(study, size=3, seed=0)
        xr.testing.assert_identical(a, b)
        assert not np.allclose(values(a)[:, 0], values(evaluation_units(study, size=3))[:, 0])
        assert not np.allclose(values(a)[:, 0], values(evaluation_units(study, size=3,
                                                                        seed=1))[:, 0])
        assert cube.datasets(a)["toy"].attrs["unit_seed"] == 0


    def test_seed_sequence(self, tmp_path):
        # a SeedSequence is the same seed as its entropy, and the result can be saved
        study = toy()
        a = evaluation_units(study, size=3, seed=np.random.SeedSequence(5))
        xr.testing.assert_identical(a, evaluation_units(study, size=3, seed=5))
        big = evaluation_units(study, size=3, seed=np.random.SeedSequence(2**70))
        assert cube.datasets(big)["toy"].attrs["unit_seed"] == str(2**70)
        xr.testing.assert_identical(cube.open_study(cube.save(big, tmp_path / "b.nc")), big)


class TestLazy:
    @pytest.mark.parametrize("kw", [{"size": 3}, {"size": 4, "statistic": "median", "seed": 5},
                                    {"size": 4, "remainder": "drop"}])
    def test_dask_equals_numpy_and_stays_lazy(self, kw):
        study = cube.make_study([small_dataset("toy", n_instances=23),
                                 small_dataset("other", n_systems=3, n_instances=11, seed=1)])
        eager = evaluation_units(study, **kw)
        chunked = cube.chunk(study, system=2)
        with ComputeCounter() as counter:
            lazy = evaluation_units(chunked, **kw)
            for name, ds in cube.datasets(lazy).items():
                assert isinstance(ds.score.data, da.Array)
                assert ds.score.chunks[:2] == cube.datasets(chunked)[name].score.chunks[:2]
            assert counter.count == 0  # nothing computed while building the graph
            computed = {n: ds.compute() for n, ds in cube.datasets(lazy).items()}
            assert counter.count == 2
        for name, ds in cube.datasets(eager).items():
            xr.testing.assert_identical(computed[name], ds)


    def test_chunks_over_instances(self):
        # chunked by the user over instances too: units span the chunk borders
        study = toy()
        ds = cube.datasets(study)["toy"].chunk({"instance": 5, "system": 3})
        lazy = evaluation_units(cube.make_study([ds]), size=3)
        assert isinstance(cube.datasets(lazy)["toy"].score.data, da.Array)
        xr.testing.assert_identical(cube.datasets(lazy)["toy"].compute(),
                                    cube.datasets(evaluation_units(study, size=3))["toy"])


class TestErrors:
    def test_size_zero(self):
        with pytest.raises(ParameterError, match=r"`size` must be an integer >= 1; got 0"):
            evaluation_units(toy(), size=0)

    def test_size_not_integer(self):
        with pytest.raises(ParameterTypeError, match=r"`size` must be an integer; got 2\.5"):
            evaluation_units(toy(), size=2.5)

    @pytest.mark.parametrize("size, k", [(24, 0), (23, 1), (12, 1)])
    def test_size_leaves_fewer_than_two_units(self, size, k):
        with pytest.raises(DataValidationError,
                           match=rf"evaluation unit size {size} is too large: 23 instances "
                                 rf"make {k} unit\(s\), at least 2 are needed \(size <= 11\)"):
            evaluation_units(toy(nan_metric=False), size=size)

    def test_size_too_large_for_a_metric_with_dropped_instances(self):
        # m2 keeps 20 of 23 instances: size 11 gives 2 units for m1, 1 for m2
        with pytest.raises(DataValidationError,
                           match=r"size 11 is too large: 20 instances make 1 unit\(s\)"):
            evaluation_units(toy(), size=11)

    def test_bad_statistic(self):
        with pytest.raises(ParameterError,
                           match=r"`statistic` must be one of 'mean', 'median'; got 'max'"):
            evaluation_units(toy(), size=2, statistic="max")

    def test_bad_remainder(self):
        with pytest.raises(ParameterError,
                           match=r"`remainder` must be one of 'spread', 'drop'; got 'pad'"):
            evaluation_units(toy(), size=2, remainder="pad")

    def test_bad_seed(self):
        with pytest.raises(ParameterError,
                           match=r"`seed` must be a non-negative integer; got -1"):
            evaluation_units(toy(), size=2, seed=-1)
