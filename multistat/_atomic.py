"""Atomic file writing: a reader (or a killed writer) never sees a partial file.

Every output multistat writes goes through here. The content is written to a temporary
file in the *same directory* as the target (so the final rename stays on one file
system), flushed and fsync'ed, then moved into place with :func:`os.replace`, which is
atomic on POSIX and Windows. If anything fails, or the process is killed before the
rename, the target keeps its old content (or does not exist) and the temporary file is
removed (after a kill it stays behind as a hidden ``.NAME.*.tmp`` file, never under the
target's name).

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
import tempfile
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
    tmp = _temp_name(target)
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
