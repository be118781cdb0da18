"""Where a run's resampling is computed: checking ``scheduler`` and keeping the bits of a
dask.distributed cluster those of this process.

:func:`check_scheduler` refuses a ``scheduler`` that is neither a local scheduler name, a
``distributed.Client``, nor a well-formed dask address (``tcp://host:port``, ``tls://``,
``ws://``, ``wss://``, ``ucx://``, ``inproc://``), whatever the tests of the run (a run of
closed-form tests never contacts the scheduler, so a wrong address would otherwise pass
unnoticed); :func:`probe` connects once, for the command line.

:func:`match_workers_blas` is called on every client the engine uses: workers
started with plain ``dask worker`` load OpenBLAS with the kernels their CPU prefers
(SkylakeX on AVX-512 machines), whose products round differently from the Haswell kernels
the command line pins in its own process (:mod:`multistat._blas`); the tables then differ
from a local run in the last bit (4.4e-16 measured). OpenBLAS reads
``OPENBLAS_CORETYPE`` once, when it is loaded, so a running worker cannot be switched:
workers whose kernels differ from this process's are restarted by their nanny with the
variable set (a nanny plugin registered under :data:`PLUGIN_NAME`, which also applies
to workers that join later). A worker without a nanny cannot be restarted: the run stops with one
line
saying how to start it. Each task also checks its process's kernels
(:func:`check_task_blas`), so a worker that joins unpinned mid-run cannot change a bit
silently.
"""

from __future__ import annotations

import functools
import logging
import os
import re

from threadpoolctl import threadpool_info

from multistat._lazy import require_extra
from multistat.errors import ParameterError, ParameterTypeError

#: local dask schedulers
LOCAL = ("threads", "processes", "synchronous", "sync", "single-threaded")
#: dask.distributed comm protocols (distributed.comm.registry.backends)
PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
#: name of the nanny plugin that sets the BLAS kernels of the workers
PLUGIN_NAME = "multistat-openblas-coretype"

_HOST_PORT = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:/\[\]]+)):(?P<port>\d{1,5})")


def _is_client(obj) -> bool:
    return type(obj).__name__ == "Client" and type(obj).__module__.startswith("distributed")


def check_scheduler(scheduler, name: str = "scheduler"):
    """``scheduler`` if it is a local scheduler name, a ``distributed.Client`` or a
    well-formed dask.distributed address; else a :class:`ParameterError` naming ``name``,
    what is wrong and what is allowed."""
    if _is_client(scheduler) or (isinstance(scheduler, str) and scheduler in LOCAL):
        return scheduler
    if not isinstance(scheduler, str):
        raise ParameterTypeError(f"`{name}` must be 'threads', 'processes', 'synchronous', "
                                 f"a dask.distributed address or Client; got "
                                 f"{type(scheduler).__name__}")
    allowed = (f"`{name}` must be 'threads', 'processes', 'synchronous' or a "
               f"dask.distributed address such as 'tcp://host:8786'")
    if "://" not in scheduler:
        raise ParameterError(f"{allowed}; got {scheduler!r}")
    protocol, location = scheduler.split("://", 1)
    if protocol not in PROTOCOLS:
        raise ParameterError(f"`{name}` {scheduler!r}: unknown protocol {protocol!r}; a "
                             f"dask.distributed address starts with one of "
                             f"{', '.join(p + '://' for p in PROTOCOLS)}")
    if protocol == "inproc":
        if not location:
            raise ParameterError(f"`{name}` {scheduler!r}: no address after inproc://")
        return scheduler
    m = _HOST_PORT.fullmatch(location)
    if m is None or not 0 < int(m["port"]) < 65536:
        raise ParameterError(f"`{name}` {scheduler!r}: expected {protocol}://HOST:PORT with "
                             f"a port from 1 to 65535")
    return scheduler


def probe(scheduler, name: str = "--scheduler", timeout: float = 10.0) -> None:
    """Connect to the scheduler at ``scheduler`` (an address) and disconnect: a
    :class:`ParameterError` naming ``name`` if nothing answers within ``timeout`` s."""
    if not isinstance(scheduler, str) or scheduler in LOCAL:
        return

    require_extra("distributed")
    # heavy: distributed, dask, lazily
    from distributed import Client

    quiet = [logging.getLogger(n) for n in ("distributed", "distributed.client",
                                            "distributed.comm.core", "tornado")]
    saved = [lg.disabled for lg in quiet]
    for lg in quiet:
        lg.disabled = True
    try:
        Client(scheduler, timeout=timeout, set_as_default=False).close()
    except (OSError, TimeoutError) as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ParameterError(f"`{name}` {scheduler!r}: no dask scheduler answers there "
                             f"({reason})") from None
    finally:
        for lg, was in zip(quiet, saved, strict=True):
            lg.disabled = was


# ------------------------------------------------------------------ the workers' BLAS
@functools.lru_cache(maxsize=1)
def blas_core() -> str:
    """The OpenBLAS kernel family this process loaded (``"Haswell"``, ``"SkylakeX"``...),
    ``""`` for another BLAS (threadpoolctl's report; loads numpy)."""
    import numpy  # noqa: F401 - OpenBLAS is loaded with numpy

    for lib in threadpool_info():
        if lib.get("user_api") == "blas" and lib.get("internal_api") == "openblas":
            return str(lib.get("architecture") or "")
    return ""


def _worker_state() -> dict:
    """Run on a worker: its OpenBLAS kernels and whether it can run the Haswell ones."""
    # lazily: a t-only compare does not load it (first-call time)
    from multistat._blas import can_pin

    return {"core": blas_core(), "can_pin": can_pin()}


def check_task_blas(expected: str | None) -> None:
    """Called by each resampling task in a worker process: refuse to compute with other
    BLAS kernels than the client's (``expected``; None: no check)."""
    if expected is not None and blas_core() != expected:
        raise RuntimeError(f"multistat: this dask worker runs OpenBLAS's {blas_core()!r} "
                           f"kernels, the client {expected!r}; start the worker with "
                           f"OPENBLAS_CORETYPE={expected} in its environment")


def _pin_plugin():
    """A nanny plugin that sets ``OPENBLAS_CORETYPE`` in the nanny's own environment and
    restarts its worker process. (distributed's ``Environ`` sets it only inside the new
    process, after numpy, hence OpenBLAS, is already loaded there.)"""
    # heavy: distributed, dask, lazily
    from distributed.diagnostics.plugin import NannyPlugin

    # lazily: a t-only compare does not load it (first-call time)
    from multistat._blas import CORETYPE

    class PinOpenBLAS(NannyPlugin):
        restart = True

        def setup(self, nanny):
            os.environ["OPENBLAS_CORETYPE"] = CORETYPE
            nanny.env["OPENBLAS_CORETYPE"] = CORETYPE

    return PinOpenBLAS()


def match_workers_blas(client, *, timeout: float = 120.0) -> str:
    """Make every worker of ``client`` compute with this process's OpenBLAS kernels (see
    the module notes); return the kernel family they now share (``""``: not OpenBLAS,
    nothing checked). Raises :class:`ParameterError` when a worker cannot be switched."""
    mine = blas_core()
    if not mine:
        return mine
    states = client.run(_worker_state)
    wrong = {w: s for w, s in states.items() if s["core"] != mine}
    if not wrong:
        return mine
    # lazily: a t-only compare does not load it (first-call time)
    from multistat._blas import CORETYPE

    if mine != CORETYPE or not all(s["can_pin"] for s in wrong.values()):
        raise ParameterError(
            f"dask workers {sorted(wrong)[:3]} run OpenBLAS's "
            f"{sorted({s['core'] for s in wrong.values()})} kernels, this process "
            f"{mine!r}: their results would differ in the last bits; start the workers "
            f"with OPENBLAS_CORETYPE={mine} (or this process without it)")
    # restarts the workers' processes through their nannies with the variable set; it
    # stays registered, so workers that join later start with it too
    client.register_plugin(_pin_plugin(), name=PLUGIN_NAME)
    client.wait_for_workers(len(states), timeout=timeout)
    still = {w: s["core"] for w, s in client.run(_worker_state).items() if s["core"] != mine}
    if still:
        raise ParameterError(
            f"dask workers {sorted(still)[:3]} still run OpenBLAS's "
            f"{sorted(set(still.values()))} kernels after a restart with "
            f"OPENBLAS_CORETYPE={CORETYPE} (workers without a nanny cannot be restarted): "
            f"start them with OPENBLAS_CORETYPE={CORETYPE} in their environment")
    return mine
