"""``make test`` ends cleanly (issue 24.8): no ``KeyboardInterrupt`` traceback after a
green run, and no signal a test sends reaches pytest's processes.

The cause found (tests/_xdist_worker_exit.py): pytest-xdist's transport, execnet, sends
a worker SIGINT when the worker is still running 5 s after the controller told it to
exit; the worker is then in ``pytest_unconfigure``, whose ``gc.collect()`` runs the
finalizers of everything the tests left in reference cycles (hypothesis's objects after
the property tests). The tests below run small pytest projects on one xdist worker: one
whose test leaves a 6 s finalizer in a reference cycle (without the suite's two worker
hooks: green, then a "KeyboardInterrupt" traceback; with them: quiet), one whose
``pytest_unconfigure`` takes 6 s (interrupted without the hooks, finished with them).
A child that signals its own process group reaches its parent unless it runs in a
session of its own, as every child a test signals does (``conftest.popen_own_session``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

_SLOW_FINALIZER = """
import gc
import time

class SlowFinalizer:
    def __del__(self):  # a finalizer the end-of-session gc.collect() runs
        t = time.monotonic()
        while time.monotonic() - t < 6:
            sum(range(1000))

def test_leaves_a_cycle():
    # no automatic collection from here on: the cycle is freed by the end-of-session
    # gc.collect() (an automatic one, triggered by allocation counts, could run it
    # earlier, inside the session, where no signal can land: seen in a fresh clone)
    gc.disable()
    obj = SlowFinalizer()
    obj.me = obj  # a cycle: only the garbage collector frees it
"""

_SLOW_UNCONFIGURE = """
import time

def pytest_unconfigure(config):  # a slow clean-up after the worker's results are out
    if not hasattr(config, "workerinput"):
        return  # (the controller loads this conftest.py too)
    t = time.monotonic()
    try:
        while time.monotonic() - t < 6:
            sum(range(1000))
    except KeyboardInterrupt:
        open("unconfigure.txt", "w").write("interrupted")
        raise
    open("unconfigure.txt", "w").write("finished")
"""

#: the suite's hook module as a plugin of the project (as tests/conftest.py imports it)
_HOOKS = """
import sys
sys.path.insert(0, {tests!r})

def pytest_configure(config):
    import _xdist_worker_exit
    config.pluginmanager.register(_xdist_worker_exit, "quiet-exit")
"""


def _env() -> dict:
    """This environment without pytest-xdist's variables (this test may run in a worker)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return {**env, "PYTHONDONTWRITEBYTECODE": "1"}


def _run_project(folder: Path, *, test: str, conftest: str = "", with_hooks: bool) -> str:
    """A project of one test module and a conftest.py run on one xdist worker (execnet's
    SIGINT comes 5 s after the worker's results, the controller's SIGKILL after 10 s: the
    slow parts take 6 s); returns its output."""
    folder.mkdir()
    hooks = _HOOKS.format(tests=str(TESTS)) if with_hooks else ""
    (folder / "conftest.py").write_text(hooks + conftest)
    (folder / "test_slow.py").write_text(test)
    (folder / "pytest.ini").write_text("[pytest]\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-n", "1", "--rootdir", str(folder), str(folder)],
                         cwd=folder, capture_output=True, text=True, timeout=180,
                         check=False, env=_env())
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "1 passed" in out, out
    return out


@pytest.mark.slow
def test_a_finalizer_at_the_end_of_a_worker_prints_no_keyboard_interrupt(tmp_path):
    # the symptom, without the hooks: a green run, then execnet's SIGINT lands in the
    # finalizer: "Exception ignored in ... Traceback ... KeyboardInterrupt" after the summary
    out = _run_project(tmp_path / "bare", test=_SLOW_FINALIZER, with_hooks=False)
    assert "KeyboardInterrupt" in out and "Traceback" in out, out
    # with the suite's hooks the finalizer runs inside the session: nothing is printed
    out = _run_project(tmp_path / "quiet", test=_SLOW_FINALIZER, with_hooks=True)
    assert "KeyboardInterrupt" not in out and "Traceback" not in out, out


@pytest.mark.slow
def test_a_slow_clean_up_at_the_end_of_a_worker_is_not_interrupted(tmp_path):
    # without the hooks execnet's SIGINT interrupts it (silently: nothing is printed);
    # with them the worker ignores SIGINT once its results are out
    for name, hooks, want in (("bare", False, "interrupted"), ("quiet", True, "finished")):
        folder = tmp_path / name
        _run_project(folder, test="def test_nothing():\n    pass\n",
                     conftest=_SLOW_UNCONFIGURE, with_hooks=hooks)
        assert (folder / "unconfigure.txt").read_text() == want, name


_PARENT = r"""
import os, signal, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
got = []
signal.signal(signal.SIGINT, lambda *a: got.append("SIGINT"))
child = [sys.executable, "-c", "import os, signal; os.kill(0, signal.SIGINT)"]
if sys.argv[2] == "own-session":
    from conftest import popen_own_session
    proc = popen_own_session(child)
else:
    proc = subprocess.Popen(child)
proc.wait()
time.sleep(0.5)  # a signal to this process is handled by now
print("received SIGINT" if got else "no signal", flush=True)
"""


@pytest.mark.parametrize("how", ["own-session", "plain-popen"])
def test_a_child_signalling_its_process_group_cannot_reach_its_parent(how):
    # the parent stands in for pytest, in a session of its own so that the plain-Popen
    # control (the child's SIGINT reaches its parent's group) touches nothing else
    run = subprocess.run([sys.executable, "-c", _PARENT, str(TESTS), how],
                         capture_output=True, text=True, timeout=120, check=False,
                         start_new_session=True)
    assert run.returncode == 0, run.stderr[-2000:]
    expected = "no signal" if how == "own-session" else "received SIGINT"
    assert run.stdout.strip() == expected, (run.stdout, run.stderr[-2000:])


def test_the_suite_registers_the_worker_exit_hooks():
    import _xdist_worker_exit
    import conftest

    assert conftest.pytest_sessionfinish is _xdist_worker_exit.pytest_sessionfinish
    assert conftest.pytest_unconfigure is _xdist_worker_exit.pytest_unconfigure
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN  # only at a worker's end
