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
        if isinstance(e, OSError) and e.errno is not None and e.errno in NO_ROOM:
            why = {errno.EFBIG: "the file size limit (ulimit -f) was reached"}.get(
                e.errno, os.strerror(e.errno).lower())
            err = OSError(f"could not write {os.fspath(target)}: {why}; nothing was "
                          f"written there (an existing file is kept as it was)")
            err.errno = e.errno
            return err
    return exc
