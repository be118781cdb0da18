"""dask.distributed gives the local bits out of the box (issue 24, item 6).

A real ``dask scheduler`` and a real ``dask worker`` (with its nanny, as ``dask worker``
starts it) run on 127.0.0.1 *without* ``OPENBLAS_CORETYPE``: on an AVX-512 machine their
OpenBLAS picks its SkylakeX kernels, whose products round differently from the Haswell
kernels the command line pins in its own process (multistat/_blas.py). main (2008129):
the resampled columns differed from the local run (here 32 cells, up to 9.7e-17; the
issue measured up to 4.4e-16). Now multistat checks
the workers' kernels on the client and has their nannies restart them with the variable
(multistat/_scheduler.py): the table is identical, bit for bit.
"""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest
import test_distributed_faults as faults
from test_distributed_faults import _compare_cmd, _env, _free_port, _wait_for

distributed = pytest.importorskip("distributed")
study_path = faults.study_path  # the fixture: 6 systems x 2,000 instances

from multistat._blas import can_pin
from multistat._scheduler import (
    _worker_state,
    check_scheduler,
    match_workers_blas,
)


def _plain_env():
    env = _env()
    env.pop("OPENBLAS_CORETYPE", None)  # as a user's `dask worker` starts
    return env


@pytest.fixture()
def plain_cluster(tmp_path):
    """``dask scheduler`` + one ``dask worker`` (nanny, 2 threads), no BLAS pin."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs, logs = {}, {}

    def start(name, args):
        logs[name] = tmp_path / f"{name}.log"
        with open(logs[name], "w") as log:
            procs[name] = subprocess.Popen([str(faults.DASK), *args], env=_plain_env(),
                                           stdout=subprocess.DEVNULL, stderr=log)

    start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                        "--no-dashboard"])
    _wait_for(lambda: "Scheduler at" in logs["scheduler"].read_text(), 90, "the scheduler")
    start("worker", ["worker", address, "--nworkers", "1", "--nthreads", "2",
                     "--no-dashboard", "--host", "127.0.0.1"])
    with distributed.Client(address, timeout=60) as client:
        client.wait_for_workers(1, timeout=90)
    try:
        yield address, logs
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)


@pytest.mark.skipif(not can_pin(), reason="OpenBLAS's Haswell kernels need AVX2 + FMA")
def test_plain_dask_workers_give_the_local_bits(study_path, plain_cluster, tmp_path):
    address, _ = plain_cluster
    with distributed.Client(address, timeout=30) as client:
        before = {s["core"] for s in client.run(_worker_state).values()}
    out, ref = tmp_path / "dist.parquet", tmp_path / "threads.parquet"
    for target, scheduler in ((out, address), (ref, "threads")):
        run = subprocess.run(_compare_cmd(study_path, target, scheduler, 4000),
                             check=False, env=_env(), capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, run.stderr
    got, want = pd.read_parquet(out), pd.read_parquet(ref)
    assert len(got) == 15 * 2  # main (2008129): 32 cells differed, up to 9.7e-17
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    with distributed.Client(address, timeout=30) as client:
        after = {s["core"] for s in client.run(_worker_state).values()}
        assert after == {"Haswell"}, (before, after)
        # already pinned: nothing restarted the second time
        workers = set(client.scheduler_info()["workers"])
        assert match_workers_blas(client) == "Haswell"
        assert set(client.scheduler_info()["workers"]) == workers
    print("worker kernels before:", before)


def test_scheduler_addresses_are_checked_without_connecting():
    for ok in ("threads", "processes", "synchronous", "tcp://127.0.0.1:8786",
               "tls://host.example:1", "tcp://[::1]:8786", "inproc://10.0.0.1/1/1"):
        assert check_scheduler(ok) == ok
    for bad, match in (("http://nonsense:xx", "unknown protocol 'http'"),
                       ("tcp://nonsense:xx", r"expected tcp://HOST:PORT"),
                       ("tcp://host:0", "port from 1 to 65535"),
                       ("tcp://host", r"expected tcp://HOST:PORT"),
                       ("gpu", "`scheduler` must be 'threads'")):
        with pytest.raises(ValueError, match=match):
            check_scheduler(bad)
    with pytest.raises(TypeError, match="got int"):
        check_scheduler(3)
