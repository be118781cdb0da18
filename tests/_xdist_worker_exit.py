"""How a pytest-xdist worker ends: quietly, whatever its last clean-up costs (issue 24.8).

``make test`` once printed a ``KeyboardInterrupt`` traceback from hypothesis after a green
run. No test signals pytest's processes (every signal a test sends goes to a child's own
pid, and those children run in sessions of their own: ``conftest.popen_own_session``).
The SIGINT comes from execnet, the transport of pytest-xdist: once the controller has every
worker's results it tells each worker to exit, and a worker whose execution is still
running 5 s later sends itself SIGINT (``execnet.gateway_base.WorkerGateway.
_terminate_execution``: "execution ongoing after 5 secs, trying interrupt_main"). What a
worker still runs then is ``pytest_unconfigure``, where pytest's unraisable-exception
plugin calls ``gc.collect()``: on a worker that ran the property tests that frees tens of
thousands of hypothesis objects (65,539 unreachable, 1.4 s on a loaded 2-core host after
six test files). After test_units.py and test_io_fuzz.py, 14,532 of the 23,590
unreachable objects are hypothesis's, and the only ones with finalizers are 15 generators
of ``hypothesis/internal/conjecture/datatree.py``: closing one runs hypothesis's code, and a
SIGINT landing there is printed as "Exception ignored in ... KeyboardInterrupt" with
hypothesis's frames, after the summary line; ``tests/test_xdist_worker_exit.py`` reproduces it with a slow finalizer.

Two hooks, imported by ``tests/conftest.py``, active only in xdist workers:

* ``pytest_sessionfinish`` collects the garbage while the controller still waits for the
  worker's results (xdist sends them after every ``pytest_sessionfinish`` implementation),
  so finalizers run inside the session, not in the 5 s window, then freezes what is left
  (``gc.freeze``: the later full collection does not traverse it again; in the full
  suite that collection took 0.7 s on a worker after the results were out);
* ``pytest_unconfigure`` (first of all) ignores SIGINT for the rest of the worker's life:
  its results are delivered, the controller (same process group) still gets a user's
  Ctrl-C, and execnet ends a worker that is still busy 10 s later with ``os._exit``.

Measured with ``-n 2`` on the six files above (load average ~4): a worker's life after
its results went out took 3.2 s before (gc 1.4 s, then pytest's clean-up), 0.3 ms with
the hooks; in the full suite (before ``gc.freeze``) 2.0 s of the 5 s on the last worker.
"""

from __future__ import annotations

import gc
import signal

import pytest


def _is_worker(config) -> bool:
    """An xdist worker (not the environment variable: a pytest run by a test inside a
    worker inherits it)."""
    return hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown (also a sessionfinish)
def pytest_sessionfinish(session):
    if _is_worker(session.config):
        gc.collect()
        gc.freeze()  # what survives is never traversed again: the end-of-session
        # gc.collect() of pytest_unconfigure has only what is created after this


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    if _is_worker(config):
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # pragma: no cover - not the main thread
            pass
