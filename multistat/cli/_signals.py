"""SIGTERM ends every process of a command-line run.

A run with ``--scheduler processes`` has worker processes (dask's process pool) and the
multiprocessing resource tracker. Killed by SIGTERM's default action, the command would
leave them running, re-parented to PID 1 and holding the caller's stdout/stderr pipes, so
a shell pipe, ``subprocess.communicate`` or DVC waiting for end-of-file would hang.

:func:`terminate_on_sigterm` turns SIGTERM into the same unwinding as Ctrl-C (a
:class:`Terminated` exception, a ``KeyboardInterrupt``: temporary files are removed by
:mod:`multistat._atomic`, pools are shut down), after stopping the worker processes first
so that no pool waits for a running task. :func:`end_run` then stops whatever child is
left, the resource tracker included, and ends the process by SIGTERM as the default
action would (the caller sees "killed by SIGTERM").
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading

__all__ = ["Terminated", "end_run", "restore", "terminate_on_sigterm", "terminated"]


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the run receives SIGTERM."""


_STATE = {"terminated": False}


def terminated() -> bool:
    """Whether this run has received SIGTERM."""
    return _STATE["terminated"]


def _stop_children(timeout: float = 5.0) -> None:
    """Terminate (then kill) the multiprocessing children of this process (the worker
    processes of a pool); each step best effort."""
    # lazily: only a SIGTERM needs it (`multistat --help` stays fast)
    import multiprocessing

    children = multiprocessing.active_children()
    for child in children:
        with contextlib.suppress(Exception):
            child.terminate()
    for child in children:
        with contextlib.suppress(Exception):
            child.join(timeout)
            if child.is_alive():
                child.kill()
                child.join(1.0)


def _stop_resource_tracker() -> None:
    """Stop the multiprocessing resource tracker this process started (it holds the
    caller's pipes). The pool's semaphores are released first (their finalizers run on
    garbage collection), so the tracker finds nothing leaked and exits quietly at the
    end-of-file on its pipe."""
    try:
        # lazily: only a SIGTERM needs it (`multistat --help` stays fast)
        from multiprocessing import resource_tracker

        tracker = resource_tracker._resource_tracker
    except (ImportError, AttributeError):  # pragma: no cover - another Python
        return
    pid = getattr(tracker, "_pid", None)
    if pid is None:
        return
    gc.collect()
    with contextlib.suppress(Exception):
        tracker._stop()  # type: ignore[attr-defined]  # closes its pipe, reaps it
    if getattr(tracker, "_pid", None) == pid:  # not stopped, not reaped: end it
        with contextlib.suppress(OSError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _on_sigterm(signum, frame) -> None:
    if _STATE["terminated"]:  # a second SIGTERM while unwinding: already on the way out
        return
    _STATE["terminated"] = True
    _stop_children()
    raise Terminated()


def terminate_on_sigterm():
    """Install the run's SIGTERM handler (main thread only; a handler the embedding
    application set is kept, :mod:`multistat._atomic`'s is replaced: the unwinding
    removes the temporary files too). Returns the handler to restore afterwards
    (:func:`restore`), or None when nothing was installed."""
    if threading.current_thread() is not threading.main_thread():
        return None
    _STATE["terminated"] = False
    with contextlib.suppress(ValueError, OSError):
        old = signal.getsignal(signal.SIGTERM)
        if old in (signal.SIG_DFL, None) or getattr(old, "__module__", "") == (
                "multistat._atomic"):
            signal.signal(signal.SIGTERM, _on_sigterm)
            return old if old is not None else signal.SIG_DFL
    return None


def restore(previous) -> None:
    """Put back the SIGTERM handler :func:`terminate_on_sigterm` replaced."""
    if previous is not None and threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGTERM, previous)


def end_run() -> None:
    """After SIGTERM unwound the run: stop every child left, then end this process by
    SIGTERM's default action. Returns (doing nothing) when no SIGTERM arrived."""
    if not _STATE["terminated"]:
        return
    _stop_children()
    _stop_resource_tracker()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
