"""A .zarr study on a real dask.distributed cluster: the workers read their chunks of the
store themselves and the tables are bit-identical to the local run.

A real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (the fixture of
tests/test_distributed_faults.py). The driver (this process) cannot read a chunk: its
``ZarrStudy.read``/``read_systems`` raise, so every chunk the run needs was read by a
worker process; the driver sends the store's path, chunk bounds, centres and plan keys.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_distributed_faults import _env, cluster  # noqa: F401 - the cluster fixture
from test_zarr import _frames, _write

import multistat
from multistat.io._zarr import ZarrStudy, open_zarr, write_zarr

pytest.importorskip("zarr")
pytestmark = pytest.mark.slow  # starts a scheduler and two worker processes


def test_cluster_run_reads_on_the_workers_and_gives_the_local_bits(cluster, tmp_path,  # noqa: F811
                                                                   monkeypatch):
    address, _, _ = cluster
    paths = _write(tmp_path, _frames(seed=5, n=4000))
    store = write_zarr(list(paths.values()), tmp_path / "s.zarr", chunk=512, dataset="d")
    study = open_zarr(store)
    kw = dict(tests=("t", "bootstrap"), n_resamples=2000, seed=9)
    local = multistat.compare(study, **kw, scheduler="synchronous")
    local_rank = multistat.rank(study, n_resamples=2000, seed=9, scheduler="synchronous")

    def no_chunk_here(*args, **kwargs):
        raise AssertionError("the driver read a chunk of the store")

    monkeypatch.setattr(ZarrStudy, "read", no_chunk_here)
    monkeypatch.setattr(ZarrStudy, "read_systems", no_chunk_here)
    remote = multistat.compare(str(store), **kw, scheduler=address)
    pd.testing.assert_frame_equal(remote, local, check_exact=True)
    assert remote.attrs["multistat"]["input_sha256"] == local.attrs["multistat"][
        "input_sha256"]
    remote_rank = multistat.rank(study, n_resamples=2000, seed=9, scheduler=address)
    pd.testing.assert_frame_equal(remote_rank, local_rank, check_exact=True)
    assert np.isfinite(remote["p_value"]).all()
