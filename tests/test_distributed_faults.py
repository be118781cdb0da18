"""Distributed faults with real processes (issue 13.7).

A real ``dask scheduler`` and two real ``dask worker`` processes are started on the
loopback interface with the ``distributed`` command line, and the installed ``multistat``
console script runs ``compare --scheduler tcp://127.0.0.1:PORT`` against them:

* a worker SIGKILLed while it is processing resampling tasks: the run completes and its
  table is identical, value for value, to the same run on the local threads scheduler
  (plans depend only on ``(seed, dataset, kind, block)``, so a re-run task gives the same
  bits on another worker);
* the scheduler SIGKILLed mid-run: the command prints one line ``multistat: error: ...``,
  exits with status 2, shows no traceback and leaves no output file.

Only 127.0.0.1 is used; every process is bounded in time and killed at the end.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

BIN = Path(sys.executable).parent
DASK = BIN / "dask"
MULTISTAT = BIN / "multistat"


def _env():
    env = dict(os.environ)
    env["DVC_NO_ANALYTICS"] = "1"
    # a lost scheduler is given up on after 5 s instead of the default 30 s
    env["DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"] = "5s"
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture()
def study_path(tmp_path):
    """6 correlated systems x 2,000 instances, one metric, written and loaded by the CLI."""
    rng = np.random.default_rng(11)
    n = 2000
    base = rng.normal(size=n)
    frame = pd.concat([
        pd.DataFrame({"system": f"s{s}", "metric": "m", "instance": np.arange(n),
                      "score": base + rng.normal(size=n) + 0.03 * s})
        for s in range(6)])
    csv = tmp_path / "scores.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "study.nc"
    subprocess.run([str(MULTISTAT), "load", str(csv), "--out", str(out)], check=True,
                   env=_env(), capture_output=True, timeout=120)
    return out


@pytest.fixture()
def cluster(tmp_path):
    """A dask scheduler and two single-threaded workers as separate OS processes."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = _env()
    procs = {}
    logs = {}

    def start(name, args):
        logs[name] = tmp_path / f"{name}.log"
        with open(logs[name], "w") as log:  # the child keeps its own descriptor
            procs[name] = subprocess.Popen([str(DASK), *args], env=env,
                                           stdout=subprocess.DEVNULL, stderr=log)

    start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                        "--no-dashboard"])
    _wait_for(lambda: "Scheduler at" in logs["scheduler"].read_text(), 90,
              "the dask scheduler")
    for w in ("worker1", "worker2"):
        start(w, ["worker", address, "--nworkers", "1", "--nthreads", "1",
                  "--no-dashboard", "--host", "127.0.0.1"])
    with distributed.Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=90)
    try:
        yield address, procs, logs
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)


def _compare_cmd(study, out, scheduler, n_resamples):
    return [str(MULTISTAT), "compare", str(study), "--tests", "bootstrap,permutation",
            "--n-resamples", str(n_resamples), "--out", str(out), "--scheduler", scheduler,
            "--no-progress"]


def _worker_pid_with_tasks(address, deadline):
    """PID of a worker that is processing tasks, polled from the scheduler."""
    with distributed.Client(address, timeout=30) as client:
        while time.monotonic() < deadline:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                return client.run(os.getpid, workers=[busy[0]])[busy[0]]
            time.sleep(0.05)
    return None


def test_worker_killed_mid_run_gives_identical_results(study_path, cluster, tmp_path):
    address, _, logs = cluster
    n_resamples = 20_000  # 20 blocks per resampling run; the kill lands while tasks run
    out = tmp_path / "dist.parquet"
    run = subprocess.Popen(_compare_cmd(study_path, out, address, n_resamples), env=_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = _worker_pid_with_tasks(address, time.monotonic() + 120)
    assert pid is not None, "no worker ever received a task"
    # the worker process that runs the tasks is a child of `dask worker` (the nanny);
    # SIGKILL it: its tasks are lost and the scheduler must re-run them elsewhere
    os.kill(pid, signal.SIGKILL)
    assert run.poll() is None, "the run had already finished: the kill tested nothing"
    _, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr
    ref = tmp_path / "threads.parquet"
    subprocess.run(_compare_cmd(study_path, ref, "threads", n_resamples), env=_env(),
                   check=True, capture_output=True, timeout=600)
    got, want = pd.read_parquet(out), pd.read_parquet(ref)
    assert len(got) == len(want) == 15 * 2
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    sched_log = logs["scheduler"].read_text()
    assert "Remove worker" in sched_log or "lost" in sched_log.lower(), sched_log[-2000:]


def test_scheduler_killed_mid_run_is_one_line_exit_2(study_path, cluster, tmp_path):
    address, procs, _ = cluster
    out = tmp_path / "never.parquet"
    run = subprocess.Popen(_compare_cmd(study_path, out, address, 100_000), env=_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = _worker_pid_with_tasks(address, time.monotonic() + 120)
    assert pid is not None, "no worker ever received a task"
    procs["scheduler"].kill()
    assert run.poll() is None, "the run had already finished: the kill tested nothing"
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 2, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("multistat: error:"), stderr
    assert "Traceback" not in stderr
    assert "scheduler" in lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(out.name)]


def _bootstrap_kernel(flag=None):
    """A resampling kernel (plan @ scores) whose first call, if ``flag`` is a path,
    SIGKILLs its own worker process; the flag file records that it happened."""
    def kernel(plan, data):
        if flag is not None and not os.path.exists(flag):
            Path(flag).write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return np.asarray(plan, dtype=float) @ data
    return kernel


def test_worker_dying_with_the_only_copy_of_the_data_is_run_again(tmp_path):
    # one worker (its nanny restarts it): the scattered scores die with it, and the
    # scheduler forgets every task that needed them (FutureCancelledError "already
    # forgotten", what the two-worker CLI test above met when the active memory manager
    # had dropped the other replica). resample scatters again and resubmits: the bits of
    # the threads scheduler, and each block's progress ticked once. Progress with an
    # address also needs no default client (it raised "No clients found" before).
    from multistat.engine import resample

    data = np.random.default_rng(3).normal(size=500)
    kw = dict(n=500, n_resamples=3000, seed=1, dataset="d")
    want = resample("bootstrap", _bootstrap_kernel(), data, scheduler="threads", **kw)
    flag, ticks = tmp_path / "killed", []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as lc:
        got = resample("bootstrap", _bootstrap_kernel(str(flag)), data,
                       scheduler=lc.scheduler_address, progress=ticks.append, **kw)
    assert flag.read_text() == "killed"  # the worker was killed mid-run
    assert np.array_equal(got, want)
    assert sum(ticks) == 3
