"""Output locations checked before any work is done, and write failures turned into one clear error.

Every command that writes (``run --results-dir``, ``report -o`` / ``--plots-dir``, ``import -o``,
``plan -o``, ``check-lossless -o``, ``sim fit -o``, ``sim serve --truth``, ``bench --output-file``)
checks its targets up front with ``output_file`` / ``output_dir``: a file where a folder is needed
(or the reverse), a folder that cannot be written, or a parent that is a file gives a UsageError
(exit 2) naming the flag, the path and what is needed. A file that is written whole (atomically,
``store.atomic_write_bytes``) is never written through a symbolic link: a link there is refused. Writability is tested by creating and removing a probe file, so it also holds
for root (who passes permission bits but not a read-only mount). ``write_failed`` turns an OSError
met while writing (a disk filling up) into a SpecsweepError, so the command fails instead of exiting 0.
``safe_name`` is the file-name form of a label or cell id that every stage names its files with.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
from pathlib import Path

from specsweep.errors import SpecsweepError, UsageError

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def safe_name(s: str) -> str:
    """A file-name-safe form of a label/cell id: no path separators, no leading dots."""
    out = _UNSAFE.sub("_", s).strip("._") or "x"
    return out[:150]


def _existing_ancestor(p: Path) -> Path:
    cur = p.absolute()
    while not cur.exists() and cur != cur.parent:
        cur = cur.parent
    return cur


def _probe(folder: Path, flag: str, path: str | Path) -> None:
    """Create and remove a file in ``folder``: the only test of writability that holds for root."""
    try:
        fd, name = tempfile.mkstemp(prefix=".specsweep-probe-", dir=folder)
    except OSError as e:
        raise UsageError(f"{flag} {str(path)!r}: cannot write in {str(folder)!r} ({e.strerror})") from e
    os.close(fd)
    os.unlink(name)


def output_file(path: str | Path, flag: str, *, parent_must_exist: bool = False) -> Path:
    """A file the command will write whole: not a folder, not a symbolic link, writable (an existing
    file: opened for append), in a folder that exists or can be made; with ``parent_must_exist`` (a
    command that appends into the path as given, like ``bench --output-file``) the folder must exist
    already, and a link is followed as an append follows it."""
    p = Path(path)
    if p.is_symlink() and not parent_must_exist:
        raise UsageError(
            f"{flag} {str(path)!r} is a symbolic link (to {os.readlink(p)!r}); specsweep writes a new file "
            "there and never writes through a link: give the target's path, or another one"
        )
    if p.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is a folder; give a file path (e.g. {p / 'report.md'})")
    if p.exists() and not p.is_file():
        raise UsageError(f"{flag} {str(path)!r} is not a regular file; give a file path")
    parent = p.parent if str(p.parent) else Path(".")
    if parent_must_exist and not parent.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: folder {str(parent)!r} does not exist; create it first")
    anc = _existing_ancestor(parent)
    if not anc.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: {str(anc)!r} is a file, not a folder")
    if p.exists():
        try:
            with open(p, "ab"):
                pass
        except OSError as e:
            raise UsageError(f"{flag} {str(path)!r}: cannot write the file ({e.strerror})") from e
    else:
        _probe(anc, flag, path)
    return p


def output_dir(path: str | Path, flag: str, *, create: bool = True) -> Path:
    """A folder the command will write into: not a file, writable; made (with parents) if ``create``."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is a file; give a folder")
    anc = _existing_ancestor(p)
    if not anc.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: {str(anc)!r} is a file, not a folder")
    _probe(anc, flag, path)
    if create:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"{flag} {str(path)!r}: cannot create the folder ({e.strerror})") from e
    return p


def write_failed(e: OSError, path: str | Path, what: str) -> SpecsweepError:
    """The error to raise when writing ``what`` to ``path`` failed midway (disk full, quota, I/O)."""
    hint = " (the disk is full: free some space and run again)" if e.errno == errno.ENOSPC else ""
    return SpecsweepError(f"could not write {what} {str(path)!r}: {e.strerror or e}{hint}")
