"""Reading files that come from outside: regular files only, and a bounded number of bytes.

A FIFO blocks ``open()`` until a writer comes (forever, in a planted run dir), and a device such as
``/dev/zero`` never ends: ``open_regular`` opens without blocking and refuses anything but a
regular file, so ``report``, ``run --resume``, ``import`` and the file loaders never hang on one.
``read_bytes`` also stops after ``limit`` bytes (a 24 MB "experiment file" is refused after reading
``limit`` + 1 bytes, not parsed). Both fail with an ``OSError`` whose ``strerror`` says what is
wrong, so every caller's existing "cannot read FILE: ..." error says it too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import pyarrow as pa

Source = str | Path  # a file to read, as commands take it
# a run dir's manifest.json: what specsweep writes is well under a megabyte (plan, launches); one
# larger is not read whole (a planted sparse 1.5 GB manifest cost every ``run --results-dir`` 1.6 GB)
MAX_MANIFEST_BYTES = 64 * 2**20

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}  # fmt: skip


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: "a FIFO", "a socket", ..."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def open_regular(path: Source) -> BinaryIO:
    """``path`` opened for binary reading; an OSError unless it is a regular file (after symlinks)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO's open returns at once
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = kind_of(mode)
            raise OSError(errno.EINVAL, f"{kind}, not a regular file: only regular files are read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Source, limit: int | None = None) -> bytes:
    """The bytes of a regular file; with ``limit``, an OSError (EFBIG) for a file larger than that,
    after reading at most ``limit + 1`` bytes."""
    with open_regular(path) as f:
        data = f.read(-1 if limit is None else limit + 1)
    if limit is not None and len(data) > limit:
        raise OSError(
            errno.EFBIG, f"larger than {limit:,} bytes, the most read from such a file (bound on bytes read)"
        )
    return data


def read_parquet(path: Source) -> pa.Table:
    """A regular Parquet file's table, read from a copy of its bytes in memory that Arrow owns.

    Not from a Python file object: pyarrow's scan of one can release it on a pool thread after
    ``read_table`` has returned, and a thread that takes the GIL while the interpreter exits aborts
    the process ("terminate called without an active exception", exit 134), e.g. a command that
    reads records and then fails at once. A copy Arrow owns needs no GIL to free."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    sink.write(read_bytes(path))
    return pq.read_table(pa.BufferReader(sink.getvalue()))
