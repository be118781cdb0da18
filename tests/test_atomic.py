"""Atomic writes (multistat._atomic): the target holds the old or the new content, never
a part, whatever happens to the writer."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from conftest import popen_own_session

from multistat._atomic import atomic_open, atomic_path, write_bytes, write_text


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_write_text_and_bytes_replace_content(tmp_path):
    target = tmp_path / "out.md"
    write_text(target, "old\n")
    assert target.read_text() == "old\n"
    write_text(target, "néw\n")
    assert target.read_text(encoding="utf-8") == "néw\n"
    png = tmp_path / "f.png"
    write_bytes(png, b"\x89PNG\r\n")
    assert png.read_bytes() == b"\x89PNG\r\n"
    assert _leftovers(tmp_path) == []


def test_new_file_gets_umask_mode_and_existing_file_keeps_its_mode(tmp_path):
    target = tmp_path / "a.txt"
    write_text(target, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600
    os.chmod(target, 0o640)
    write_text(target, "y")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_failure_inside_the_block_leaves_old_file_and_no_temp(tmp_path):
    target = tmp_path / "results.parquet"
    pd.DataFrame({"a": [1, 2]}).to_parquet(target)
    before = target.read_bytes()
    with pytest.raises(RuntimeError, match="boom"), atomic_path(target) as tmp:
        tmp.write_bytes(b"PAR1")  # a partial Parquet file
        raise RuntimeError("boom")
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []
    with pytest.raises(RuntimeError), atomic_open(target, "wb") as fh:
        fh.write(b"partial")
        raise RuntimeError("boom")
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_temp_keeps_the_suffix_for_writers_that_look_at_it(tmp_path):
    target = tmp_path / "frame.parquet"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.endswith(".parquet")
        assert tmp.name.startswith(".")  # hidden, never the target's name
        pd.DataFrame({"x": [1.5]}).to_parquet(tmp)
    assert pd.read_parquet(target)["x"].tolist() == [1.5]


def test_atomic_open_refuses_append(tmp_path):
    with pytest.raises(ValueError, match="whole files"), atomic_open(tmp_path / "x", "a"):
        pass


_WRITER = r"""
import sys
import numpy as np
from multistat._atomic import write_bytes
target = sys.argv[1]
i = 0
while True:
    i += 1
    # ~8 MB, every byte equal to the round number: a torn file would mix values
    write_bytes(target, bytes([i % 251]) * 8_000_000)
"""


def test_sigkill_at_random_moments_never_leaves_a_partial_file(tmp_path):
    target = tmp_path / "big.bin"
    target.write_bytes(bytes([250]) * 8_000_000)
    rng = np.random.default_rng(20261123)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for delay in rng.uniform(0.05, 0.6, size=8):
        proc = popen_own_session([sys.executable, "-c", _WRITER, str(target)], env=env)
        try:
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        data = target.read_bytes()
        assert len(data) == 8_000_000
        assert data.count(data[:1]) == len(data)  # one round's content, whole
    # a kill may leave a hidden temp file behind, never anything under the target's name
    assert all(p.name.startswith(".big.bin.") for p in tmp_path.iterdir() if p != target)


# ------------------------------------------------- the command line, killed at random
def _scores(path, seed, n_systems=4, n=2000):
    rng = np.random.default_rng(seed)
    systems = np.repeat([f"sys{i}" for i in range(n_systems)], n)
    instances = np.tile([f"doc{j}" for j in range(n)], n_systems)
    scores = rng.normal(0, 1, size=n_systems * n).round(6)
    pd.DataFrame({"system": systems, "instance": instances, "score": scores}).to_csv(
        path, index=False)
    return path


def _run_killed(args, env, delay):
    proc = popen_own_session([sys.executable, "-m", "multistat.cli", *map(str, args)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
    return proc.wait()


def test_cli_load_and_compare_killed_at_random_leave_old_or_new_output(tmp_path):
    """Real SIGKILLs at random moments of `load` and `compare` runs whose output exists:
    afterwards the output is the old file byte for byte or the complete new one."""
    from multistat import cube
    from multistat.io import read_parquet

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MPLBACKEND": "Agg"}
    new_csv, old_csv = _scores(tmp_path / "new.csv", 1), _scores(tmp_path / "old.csv", 2)
    jobs = {}
    for name, out, make in (
            ("load", tmp_path / "study.nc",
             lambda out, src: ["load", src, "-o", out]),
            ("compare", tmp_path / "results.parquet",
             lambda out, src: ["compare", src, "-o", out, "--tests", "t,bootstrap",
                               "--n-resamples", 1000, "--no-effect-sizes",
                               "--no-progress"])):
        # old output (from other scores), the complete new output, and the time a run takes
        src_new = new_csv if name == "load" else tmp_path / "new.nc"
        src_old = old_csv if name == "load" else tmp_path / "old.nc"
        if name == "compare":
            cube.save(cube.load(new_csv), src_new)
            cube.save(cube.load(old_csv), src_old)
        subprocess.run([sys.executable, "-m", "multistat.cli", *map(str, make(out, src_old))],
                       env=env, check=True, capture_output=True)
        old = out.read_bytes()
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "multistat.cli", *map(str, make(out, src_new))],
                       env=env, check=True, capture_output=True)
        took = time.perf_counter() - start
        reference = (cube.open_study(out) if name == "load" else read_parquet(out))
        jobs[name] = (out, make(out, src_new), old, reference, took)

    rng = np.random.default_rng(20261123)
    outcomes = []
    kills = {"load": 0, "compare": 0}
    took = {name: job[-1] for name, job in jobs.items()}
    for trial in range(24):
        if min(kills.values()) >= 3:
            break
        name = ("load", "compare")[trial % 2]
        out, args, old, reference, _ = jobs[name]
        out.write_bytes(old)
        # most of a run is start-up and computing; aim at its second half, where it writes
        delay = float(rng.uniform(0.45, 1.1) * took[name])
        status = _run_killed(args, env, delay)
        if status == -signal.SIGKILL:
            kills[name] += 1
        else:  # it finished first (the shared machine got faster): aim earlier next time
            took[name] *= 0.7
        data = out.read_bytes()
        if data == old:
            outcomes.append((name, status, "old"))
            continue
        if name == "load":
            import xarray as xr

            xr.testing.assert_identical(cube.open_study(out), reference)
        else:
            pd.testing.assert_frame_equal(read_parquet(out), reference)
        outcomes.append((name, status, "new"))
    visible = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert visible == ["new.csv", "new.nc", "old.csv", "old.nc", "results.parquet",
                       "study.nc"], visible
    # the kills really interrupted runs (SIGKILL status): at least 3 of each command (the
    # delay adapts when a run outlives its kill, which machine load makes happen)
    assert min(kills.values()) >= 3, (kills, outcomes)
    print(outcomes, {k: round(v[-1], 2) for k, v in jobs.items()})
