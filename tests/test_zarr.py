"""Studies larger than memory: wide Parquet -> chunked Zarr store (multistat.io._zarr),
and compare/rank streamed over its chunks (multistat.significance._streamed).

The reference everywhere is the same study loaded in memory from the same files
(multistat.load) and run through the same compare/rank: the bootstrap's plans are the
same counts, so p-values and decisions are equal; t statistics, estimates and intervals
are the same sums in another order (float tolerance, 1e-12 relative). Between streamed
runs (memory limits, schedulers) the tables are identical, bit for bit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_cli

import multistat
from multistat._budget import Budget
from multistat.errors import (
    DataValidationError,
    MissingExtraError,
    ParameterError,
    SkippedTestWarning,
    TestNotApplicableError,
)
from multistat.io._zarr import open_zarr, write_zarr

zarr = pytest.importorskip("zarr")

S, N = 6, 3000
KW = {"n_resamples": 2000, "seed": 3}


def _frames(seed=0, n=N, shuffle=True):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    labels = np.array([f"q{i:05d}" for i in range(n)])
    acc = pd.DataFrame({"instance": labels[rng.permutation(n)] if shuffle else labels,
                        **{f"s{j}": 3 + base + rng.normal(size=n) + 0.04 * j
                           for j in range(S)}})
    em = pd.DataFrame({"instance": labels,
                       **{f"s{j}": (rng.random(n) < 0.4 + 0.03 * j).astype(float)
                          for j in range(S)}})
    return {"acc": acc, "em": em}


def _write(tmp_path, frames, row_group_size=700):
    paths = {}
    for metric, frame in frames.items():
        paths[metric] = tmp_path / f"{metric}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), paths[metric],
                       row_group_size=row_group_size)
    return paths


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """(store, the same study in memory) of two metrics, one binary, labels shuffled."""
    tmp = tmp_path_factory.mktemp("zarr")
    paths = _write(tmp, _frames())
    store = write_zarr(list(paths.values()), tmp / "s.zarr", chunk=512, dataset="d",
                       memory_limit="16MiB")
    memory = multistat.load({m: str(p) for m, p in paths.items()}, dataset="d")
    return open_zarr(store), memory


def _same_columns(a, b):
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b)


def test_store_holds_the_canonical_cube(studies, tmp_path, monkeypatch):
    study, memory = studies
    ds = multistat.cube.datasets(memory)["d"]
    order = np.argsort(ds.instance.values.astype(str), kind="stable")
    expected = ds.score.values[..., order]
    assert study.systems == tuple(ds.system.values.astype(str))
    assert study.metrics == ("acc", "em") and study.kind == ("mean", "binary")
    np.testing.assert_array_equal(study.read(0, study.n), expected)
    np.testing.assert_array_equal(study.instances(), np.sort(ds.instance.values.astype(str)))
    assert len(study.bounds()) == -(-N // 512)
    # the files are read record batch by record batch, never whole
    paths = _write(tmp_path, _frames(seed=1))

    def whole(*args, **kwargs):
        raise AssertionError("a whole Parquet file was read")

    monkeypatch.setattr(pq.ParquetFile, "read", whole)
    monkeypatch.setattr(pq, "read_table", whole)
    store = write_zarr(list(paths.values()), tmp_path / "t.zarr", memory_limit="16MiB",
                       chunk=256)
    whole_buffer = open_zarr(store).read(0, N)
    # buffers of two chunks: six passes over the shuffled file, six flushes of the
    # sorted one; the same store
    monkeypatch.setattr(Budget, "rows", lambda self, *args, **kwargs: 700)
    store = write_zarr(list(paths.values()), tmp_path / "u.zarr", chunk=256)
    np.testing.assert_array_equal(open_zarr(store).read(0, N), whole_buffer)


def test_bad_input_is_named(tmp_path):
    frames = _frames(n=50)
    frames["acc"].loc[7, "s2"] = np.nan
    paths = _write(tmp_path, {"acc": frames["acc"]})
    with pytest.raises(DataValidationError, match=r"acc.parquet: row 8, system 's2': "
                                                  r"missing score"):
        write_zarr([paths["acc"]], tmp_path / "a.zarr")
    assert not (tmp_path / "a.zarr").exists()
    assert not list(tmp_path.glob(".a.zarr*"))  # the temporary store is removed
    frames = _frames(n=50)
    frames["acc"].loc[3, "instance"] = frames["acc"].loc[4, "instance"]
    paths = _write(tmp_path, {"acc": frames["acc"]})
    with pytest.raises(DataValidationError, match="appears more than once"):
        write_zarr([paths["acc"]], tmp_path / "b.zarr")
    frames = _frames(n=50)
    frames["em"] = frames["em"].iloc[:-1]
    paths = _write(tmp_path, frames)
    with pytest.raises(DataValidationError, match="its instances differ"):
        write_zarr(list(paths.values()), tmp_path / "c.zarr")
    frames = _frames(n=50)
    frames["acc"]["s1"] = "x"
    paths = _write(tmp_path, {"acc": frames["acc"]})
    with pytest.raises(DataValidationError, match="column 's1' holds .*string, not scores"):
        write_zarr([paths["acc"]], tmp_path / "d.zarr")
    (tmp_path / "e.zarr").mkdir()
    with pytest.raises(ParameterError, match="exists; remove it"):
        write_zarr([paths["acc"]], tmp_path / "e.zarr")


@pytest.mark.slow  # ~4 s of first-call imports and JIT, up to 9 s on a loaded machine
def test_compare_equals_the_in_memory_run(studies):
    study, memory = studies
    kw = dict(tests=("t", "bootstrap"), **KW)
    ref = multistat.compare(memory, **kw)
    got = multistat.compare(study, **kw, memory_limit="16MiB")
    _same_columns(ref, got)
    for col in ("dataset", "metric", "system_a", "system_b", "test", "reject", "n"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy(), err_msg=col)
    boot = (ref["test"] == "bootstrap").to_numpy()
    # the same plans: resampled p-values equal
    np.testing.assert_array_equal(got["p_value"][boot], ref["p_value"][boot])
    np.testing.assert_array_equal(got["p_adjusted"][boot], ref["p_adjusted"][boot])
    for col in ("estimate", "statistic", "p_value", "p_adjusted", "ci_low", "ci_high", "se",
                "score_a", "score_b", "cohens_d", "hedges_g", "cohens_d_ci_low", "mde"):
        np.testing.assert_allclose(got[col], ref[col], rtol=1e-12, atol=1e-15, err_msg=col)
    assert got["wilcoxon_r"].isna().all() and got["hodges_lehmann"].isna().all()
    assert got["note"].str.contains("not computed on a .zarr study").all()
    # the max-T step-down over the same per-system arrays: the same adjusted p-values
    kw["tests"] = ("bootstrap",)
    ref = multistat.compare(memory, **kw, correction="westfall-young")
    got = multistat.compare(study, **kw, correction="westfall-young")
    np.testing.assert_array_equal(got["p_adjusted"], ref["p_adjusted"])


def test_streamed_runs_are_bit_identical_across_memory_and_schedulers(studies):
    study, _ = studies
    kw = dict(tests=("t", "bootstrap"), **KW)
    a = multistat.compare(study, **kw, memory_limit="16MiB", scheduler="synchronous")
    b = multistat.compare(study, **kw, memory_limit="1GiB", scheduler="threads")
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a.attrs["multistat"]["input_sha256"] == b.attrs["multistat"]["input_sha256"]


def test_default_tests_skip_those_not_streamed_and_named_ones_are_refused(studies):
    study, _ = studies
    with pytest.warns(SkippedTestWarning, match="wilcoxon, sign, permutation: default "
                                                "tests that cannot run on a .zarr study"):
        table = multistat.compare(study, n_resamples=1000)
    assert set(table["test"]) == {"t", "bootstrap"}
    assert set(table.attrs["multistat"]["skipped_not_streamed"]) == {
        "wilcoxon", "sign", "permutation"}
    with pytest.raises(ParameterError, match=r"`tests`: wilcoxon cannot run on a \.zarr "
                                             r"study .* streamed over its chunks are t, "
                                             "bootstrap"):
        multistat.compare(study, tests=("t", "wilcoxon"))
    with pytest.raises(ParameterError, match="streams the bootstrap of the mean"):
        multistat.compare(study, tests=("bootstrap",), statistic="median")
    with pytest.raises(ParameterError, match="`ci_method`: a .zarr study streams"):
        multistat.compare(study, tests=("bootstrap",), ci_method="bca")
    with pytest.raises(ParameterError, match="per-system scores"):
        multistat.compare(study, tests=("t",), return_systems=True)


def test_the_slab_refuses_what_needs_the_whole_cube(studies):
    from multistat.significance._streamed import streamed_slab

    study, _ = studies
    slab = streamed_slab(study, [0], scheduler="synchronous", budget="16MiB")
    with pytest.raises(TestNotApplicableError, match="the tests streamed over its chunks"):
        slab.scores  # noqa: B018 - the property raises
    with pytest.raises(TestNotApplicableError, match="beyond the memory limit"):
        slab.system_scores(np.arange(S).repeat(200))
    np.testing.assert_array_equal(slab.system_scores([1])[0], study.read(0, study.n, [0])[1])


def test_rank_equals_the_in_memory_leaderboard(studies):
    study, memory = studies
    ref = multistat.rank(memory, n_resamples=2000, seed=3)
    got = multistat.rank(study, n_resamples=2000, seed=3)
    _same_columns(ref, got)
    for col in ("dataset", "metric", "system", "rank", "rank_ci_low", "rank_ci_high",
                "expected_rank", "p_best", "rank_range_low", "rank_range_high", "cluster",
                "beats", "beaten_by"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy(), err_msg=col)
    for col in ("score", "ci_low", "ci_high"):  # Wilson for em, bootstrap for acc
        np.testing.assert_allclose(got[col], ref[col], rtol=1e-12, atol=1e-15, err_msg=col)
    pairs = multistat.leaderboard.ranking.rank_with_pairs(study, n_resamples=2000, seed=3)
    np.testing.assert_array_equal(pairs.table["cluster"], ref["cluster"])


def test_cli_load_compare_rank(tmp_path, capsys):
    paths = _write(tmp_path, {"acc": _frames(n=800)["acc"]})
    store = tmp_path / "s.zarr"
    status, out, err = run_cli(["load", paths["acc"], "--out", store, "--chunk-instances",
                                "256", "--memory-limit", "32MiB"], capsys)
    assert status == 0 and f"wrote {store}" in out, err
    status, out, err = run_cli(["compare", store, "--tests", "t,bootstrap", "--n-resamples",
                                "1000", "--out", tmp_path / "c.parquet", "--memory-limit",
                                "64MiB", "--no-progress"], capsys)
    assert status == 0, err
    table = pd.read_parquet(tmp_path / "c.parquet")
    assert len(table) == 2 * S * (S - 1) // 2
    status, out, err = run_cli(["rank", store, "--n-resamples", "1000", "--out",
                                tmp_path / "r.parquet", "--memory-limit", "64MiB",
                                "--eee-out", tmp_path / "r.jsonl"], capsys)
    assert status == 0, err
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == S
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == S  # one per system
    # one line, exit 2: an option a store cannot take, a test it cannot stream, no store
    for argv, message in (
            (["load", paths["acc"], "--out", tmp_path / "x.zarr", "--run-col", "r"],
             "--run-col apply to .nc studies only"),
            (["compare", store, "--tests", "sign", "--out", tmp_path / "y.parquet"],
             "sign cannot run on a .zarr study"),
            (["compare", tmp_path / "none.zarr", "--out", tmp_path / "z.parquet"],
             "no such Zarr store")):
        status, out, err = run_cli(argv, capsys)
        assert status == 2 and message in err and err.count("\n") == 1, err


def test_a_missing_extra_is_one_line(monkeypatch, tmp_path):
    import multistat._lazy as lazy

    monkeypatch.setattr(lazy, "find_spec", lambda name: None if name == "zarr" else 1)
    with pytest.raises(MissingExtraError, match=r"^studies larger than memory \(\.zarr "
                                                r"stores\): the 'large' extra is not "
                                                r"installed \(zarr is missing\); pip "
                                                r"install 'multistat\[large\]'$"):
        write_zarr([tmp_path / "a.parquet"], tmp_path / "a.zarr")


def test_plan_rows_fit_the_budget():
    from multistat._budget import Budget
    from multistat.significance._streamed import plan_group_rows

    class Big:  # 200 systems x 2,000,000 instances in chunks of 16,384
        systems, n, chunk = tuple(range(200)), 2_000_000, 16_384

    rows = plan_group_rows(Big, 1, Budget.of("1GiB"))
    assert rows % 4 == 0 and 100 <= rows <= 300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plan_group_rows(Big, 1, Budget.of("16MiB")) == 4  # at least 4 rows
