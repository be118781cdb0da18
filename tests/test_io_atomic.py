"""The writers C owns (Parquet, NetCDF study) write atomically through multistat._atomic:
a failure mid-write leaves the old file intact and no temporary file behind."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from multistat import cube
from multistat.io import read_parquet, write_parquet


def _study():
    rng = np.random.default_rng(0)
    ds = cube.make_dataset("d", rng.normal(size=(2, 1, 5)), systems=["a", "b"],
                           metrics=["m"], instances=range(5))
    return cube.make_study({"d": ds})


def test_write_parquet_failure_keeps_old_file(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    path = tmp_path / "r.parquet"
    write_parquet(pd.DataFrame({"x": [1.0, 2.0]}), path)
    before = path.read_bytes()
    real = pq.write_table

    def half(table, where, **kw):  # write a real file, then die before returning
        real(table, where, **kw)
        with open(where, "r+b") as fh:
            fh.truncate(4)
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(pq, "write_table", half)
    with pytest.raises(OSError, match="simulated"):
        write_parquet(pd.DataFrame({"x": [3.0]}), path)
    assert path.read_bytes() == before
    assert read_parquet(path)["x"].tolist() == [1.0, 2.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.parquet"]


def test_save_failure_keeps_old_study(tmp_path, monkeypatch):
    import xarray as xr

    path = tmp_path / "s.nc"
    study = _study()
    cube.save(study, path)
    before = path.read_bytes()

    def broken(self, where, **kw):  # a path, or the in-memory buffer small studies use
        if hasattr(where, "write"):
            where.write(b"\x89HDF")
        else:
            with open(where, "wb") as fh:
                fh.write(b"\x89HDF")
        raise RuntimeError("killed (simulated)")

    monkeypatch.setattr(xr.DataTree, "to_netcdf", broken)
    with pytest.raises(RuntimeError, match="simulated"):
        cube.save(study, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.nc"]
    monkeypatch.undo()
    back = cube.open_study(path)
    np.testing.assert_array_equal(back["d"].score.values, study["d"].score.values)
