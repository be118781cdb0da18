"""What a failed NetCDF/HDF5 write leaves behind, cleaned up into one clear error.

When a write fails part-way (disk full, ``ulimit -f``, quota, Ctrl-C), h5py's close of the
file fails too, h5netcdf's ``File`` stays marked open, and its ``__del__`` later closes it
again on the half-closed HDF5 file: a segmentation fault when the traceback is freed
(h5netcdf 1.x, h5py 3.x). :func:`netcdf_write_failed` marks those files closed (nothing
of them is worth keeping: :mod:`multistat._atomic` removes the temporary file) and
says what went wrong in one line.
"""

from __future__ import annotations

import errno
import gc
import io
import os

#: errno values that mean "no room for this file"
NO_ROOM = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _forget_open_files(tmp) -> int:
    """Mark the h5netcdf files still open on ``tmp`` as closed (their ``__del__`` would
    crash on the half-closed HDF5 file); return how many."""
    try:
        # heavy: h5py, h5netcdf, lazily
        import h5netcdf
    except ImportError:  # pragma: no cover - h5netcdf is a dependency
        return 0
    name = os.path.abspath(os.fspath(tmp))
    n = 0
    for obj in gc.get_objects():
        if (isinstance(obj, h5netcdf.File) and not getattr(obj, "_closed", True)
                and os.path.abspath(str(getattr(obj, "_filename", ""))) == name):
            obj._closed = True
            n += 1
    return n


def netcdf_write_failed(exc: BaseException, tmp, target) -> BaseException:
    """The exception to raise for a failed write of ``target`` (through ``tmp``):

    - Ctrl-C anywhere in the chain -> ``KeyboardInterrupt`` (the command line says
      "aborted", as for any other interruption);
    - no room (``ENOSPC``, ``EFBIG`` from ``ulimit -f``, ``EDQUOT``) -> an ``OSError``
      with that errno and one line naming the file, saying the old file is kept;
    - anything else -> ``exc`` itself.

    Always marks the half-written h5netcdf files closed first (see the module notes).
    """
    _forget_open_files(tmp)
    chain = list(_chain(exc))
    if any(isinstance(e, KeyboardInterrupt) for e in chain):
        return KeyboardInterrupt()
    for e in chain:
        if getattr(e, "checked_room", False):  # check_room's own message, sizes given
            return e
        if isinstance(e, OSError) and e.errno is not None and e.errno in NO_ROOM:
            why = {errno.EFBIG: "the file size limit (ulimit -f) was reached"}.get(
                e.errno, os.strerror(e.errno).lower())
            err = OSError(f"could not write {os.fspath(target)}: {why}; nothing was "
                          f"written there (an existing file is kept as it was)")
            err.errno = e.errno
            return err
    return exc


def _free_bytes(folder) -> int | None:
    """Bytes an unprivileged writer may still use in ``folder`` (None where unknown)."""
    try:
        st = os.statvfs(os.fspath(folder))
    except (OSError, AttributeError):  # pragma: no cover - Windows, odd file systems
        return None
    return st.f_bavail * st.f_frsize


def _file_size_limit() -> int | None:
    """The soft ``ulimit -f`` in bytes (None: unlimited or unknown)."""
    try:
        # lazily: POSIX only (Windows has no resource module)
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _no_room(target, errnum: int, why: str) -> OSError:
    err = OSError(f"could not write {os.fspath(target)}: {why}; nothing was written there "
                  f"(an existing file is kept as it was)")
    err.errno = errnum
    err.checked_room = True  # type: ignore[attr-defined]  # netcdf_write_failed reads it
    return err


def check_room(target, size: int) -> None:
    """Refuse, before any byte is written, a file of ``size`` bytes that cannot fit:
    larger than ``ulimit -f`` (``EFBIG``) or than the free space of ``target``'s folder
    (``ENOSPC``; the message gives both sizes)."""
    limit = _file_size_limit()
    if limit is not None and size > limit:
        raise _no_room(target, errno.EFBIG, "the file size limit (ulimit -f) was reached")
    free = _free_bytes(os.path.dirname(os.path.abspath(os.fspath(target))))
    if free is not None and size > free:
        raise _no_room(target, errno.ENOSPC,
                       f"no space left on device ({size:,} bytes needed, {free:,} free)")


def write_netcdf(tree, tmp, target, *, memory_limit: int) -> None:
    """Write the DataTree ``tree`` to ``tmp`` (the temporary file of ``target``) so that
    a full disk cannot crash the process.

    HDF5 fails badly when its own file driver meets an I/O error late (while flushing or
    closing: a segmentation fault). So the file is encoded in memory first, where no
    write can fail, then checked against the free space and ``ulimit -f`` and written
    with plain file writes, whose failure is an ``OSError`` like any other. A study whose
    encoded size (estimated from its data) exceeds ``memory_limit`` is written straight
    to ``tmp`` after the same check on the estimate.
    """
    estimate = int(tree.nbytes * 1.05) + (1 << 16)
    if estimate > memory_limit:
        check_room(target, estimate)
        tree.to_netcdf(tmp, engine="h5netcdf")
        return
    buffer = io.BytesIO()
    tree.to_netcdf(buffer, engine="h5netcdf")
    data = buffer.getbuffer()
    try:
        check_room(target, data.nbytes)
        with open(tmp, "wb") as fh:
            step = 1 << 22
            for start in range(0, data.nbytes, step):
                fh.write(data[start:start + step])
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        data.release()
