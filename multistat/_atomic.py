"""Atomic file writing: a reader (or a killed writer) never sees a partial file.

Every output multistat writes goes through here. The content is written to a temporary
file in the *same directory* as the target (so the final rename stays on one file
system), flushed and fsync'ed, then moved into place with :func:`os.replace`, which is
atomic on POSIX and Windows. If anything fails, or the process is killed before the
rename, the target keeps its old content (or does not exist) and the temporary file is
removed: on an exception (Ctrl-C's ``KeyboardInterrupt`` included) by the ``with`` block,
on SIGTERM by a handler installed here while a temporary file exists (it removes the
temporary files, then lets SIGTERM end the process as it would have). Only SIGKILL
(which no process can catch) leaves it behind, as a hidden ``.NAME.*.tmp`` file, never
under the target's name.

Use::

    with atomic_path("results.parquet") as tmp:   # any writer that takes a path
        table.to_parquet(tmp)

    write_text("summary.md", text)
    write_bytes("figure.png", data)

    with atomic_open("table.csv", "w") as fh:      # a file object
        frame.to_csv(fh)
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_open", "atomic_path", "fsync_file", "write_bytes", "write_text"]


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a closed file's data to disk (best effort where the OS refuses)."""
    fd = os.open(os.fspath(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync
        pass
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (POSIX; a no-op where directories can't be opened)."""
    try:
        fd = os.open(os.fspath(directory), os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _temp_name(target: Path) -> Path:
    """A fresh, unused name beside ``target`` (hidden, same suffix so writers that look
    at the extension, e.g. matplotlib or xarray, choose the right format)."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}",
                                dir=os.fspath(target.parent))
    os.close(fd)
    return Path(name)


#: temporary files of the writes under way (removed by the SIGTERM handler)
_LIVE: set[str] = set()


def _on_sigterm(signum, frame) -> None:  # pragma: no cover - runs in a killed subprocess
    """Remove the temporary files of the writes under way, then end the process the
    way SIGTERM does (default action: the parent sees "killed by SIGTERM")."""
    for name in list(_LIVE):
        with contextlib.suppress(OSError):
            os.unlink(name)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _watch_sigterm() -> None:
    """Install :func:`_on_sigterm` for SIGTERM if nothing else handles it (a handler the
    application set is kept; signal handlers can be set in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(ValueError, OSError):
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, *, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on normal exit move it into place.

    The writer inside the ``with`` block writes the whole file to the yielded path (it may
    replace or recreate it). On exit the file is fsync'ed and renamed over ``target``; on
    an exception it is removed and ``target`` is untouched. The parent directory must
    exist. ``mode`` sets the permission bits (default: as a newly created file would get
    under the current umask, or the old file's bits when ``target`` exists).
    """
    target = Path(target)
    _watch_sigterm()
    tmp = _temp_name(target)
    _LIVE.add(os.fspath(tmp))
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"the writer did not create {tmp}")
        fsync_file(tmp)
        if mode is None:
            try:
                mode = target.stat().st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    finally:
        _LIVE.discard(os.fspath(tmp))
    _fsync_dir(target.parent if str(target.parent) else Path("."))


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike, mode: str = "w", **kwargs):
    """Open a temporary file beside ``target`` for writing (``"w"``/``"wb"``); on normal
    exit flush, fsync and move it into place. Extra keyword arguments go to :func:`open`
    (``encoding`` defaults to UTF-8 in text mode, ``newline`` to ``""`` is not forced)."""
    if mode not in ("w", "wb", "wt", "x", "xb"):
        raise ValueError(f"atomic_open writes whole files; mode must be 'w' or 'wb', got {mode!r}")
    mode = mode.replace("x", "w")
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    with atomic_path(target) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())


def write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``target`` atomically; return the target path."""
    with atomic_open(target, "wb") as fh:
        fh.write(data)
    return Path(target)


def write_text(target: str | os.PathLike, text: str, *, encoding: str = "utf-8",
               newline: str | None = None) -> Path:
    """Write ``text`` to ``target`` atomically; return the target path."""
    with atomic_open(target, "w", encoding=encoding, newline=newline) as fh:
        fh.write(text)
    return Path(target)
