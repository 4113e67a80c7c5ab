"""Run directories: the durable result format.

    RUN_DIR/
      manifest.json     schema_version, tool version, git SHA, host, python, resolved config,
                        servers (argv, versions), start/end times, plan (every cell with a cell_id)
      summary.jsonl     one line per finished cell (bench keys + cell fields + status)
      records/<cell_id>.r<repeat>.parquet   per-request raw records (RequestRecord columns)
      logs/<label>-<hash>.log server logs (one file per label: a readable name + 8 hex of the label)
      launches.jsonl    each server launch's identity, fsynced before it starts (servers.reap)
      report.md, report.html

Nothing secret is written: the manifest, every summary line and the records' error and output texts
go through ``redact.scrub_obj`` (every known secret value, credential and URL password replaced).

Durability: records are written before the summary line that points at them; every other file is
written to a temporary name, fsynced and renamed, so a crash leaves either the old or the new file.
summary.jsonl is append-only: one line a finished cell, one write, fsynced. A crash mid-append can
tear only the last line; it is cut off before the next append (and at the start of a resume), and a
line that does not parse is skipped on read, so earlier lines are never lost.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from specsweep import SCHEMA_VERSION
from specsweep.errors import DataError
from specsweep.measure.records import RequestRecord
from specsweep.store import inputs, redact
from specsweep.store.paths import safe_name

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SUMMARY = "summary.jsonl"
LAUNCHES = "launches.jsonl"  # servers.reap.JOURNAL: each launch, before its process starts
RECORDS = "records"
LOGS = "logs"


def log_file_name(label: str) -> str:
    """``<safe label>-<8 hex of the label>.log``: labels that differ only in characters
    ``safe_name`` drops (``X:1``, ``X/1``, two all-CJK labels) get files of their own."""
    digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe_name(redact.scrub_text(label))[:100]}-{digest}.log"


def _kind(p: Path) -> str | None:
    """What ``p`` is (after links): "a regular file", "a folder", "a FIFO", ...; None if absent."""
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:  # a dangling or looping link
        return f"unreadable ({e.strerror or e})"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a folder" if stat.S_ISDIR(mode) else inputs.kind_of(mode)


def _umask_mode() -> int:
    """The mode a plain open() would give a new file (mkstemp makes 0600; results are for sharing)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _umask_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def dumps(obj: Any, *, indent: bool = False) -> bytes:
    opt = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    if indent:
        opt |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, option=opt)


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    # ---- creation / opening -------------------------------------------------------------------
    @classmethod
    def create(cls, results_dir: str | Path, name: str, manifest: dict[str, Any], stamp: str) -> RunDir:
        base = Path(results_dir)
        path = base / f"{safe_name(name)}-{stamp}"
        n = 1
        while path.exists():
            n += 1
            path = base / f"{safe_name(name)}-{stamp}-{n}"
        path.mkdir(parents=True)
        rd = cls(path)
        rd.write_manifest({"schema_version": SCHEMA_VERSION, **manifest})
        return rd

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        p = Path(path)
        if not (p / MANIFEST).is_file():
            raise DataError(f"not a run directory (no {MANIFEST})", file=str(p))
        return cls(p)

    def check_files(self) -> None:
        """Before a resume appends to it: every file specsweep keeps here (manifest, summary,
        launches, records/*, logs/*) is a regular file, and records/ and logs/ are folders. A FIFO
        (``logs/X.log``, ``launches.jsonl``) would block the resume forever or fail the remaining
        cells one by one: a DataError naming each, up front, instead."""
        bad = []
        for name, want_dir in (
            (MANIFEST, False),
            (SUMMARY, False),
            (LAUNCHES, False),
            (RECORDS, True),
            (LOGS, True),
        ):
            p = self.path / name
            kind = _kind(p)
            if kind is None:
                continue
            if want_dir and kind == "a folder":
                bad += [
                    f"{name}/{c.name} is {k}"
                    for c in sorted(p.iterdir())
                    if (k := _kind(c)) != "a regular file"
                ]
            elif kind != ("a folder" if want_dir else "a regular file"):
                bad.append(f"{name} is {kind}")
        if bad:
            raise DataError(
                f"cannot resume: {'; '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} (a run dir holds "
                "regular files only, and records/ and logs/ are folders); remove or replace them",
                file=str(self.path),
            )

    # ---- manifest -----------------------------------------------------------------------------
    @property
    def manifest(self) -> dict[str, Any]:
        try:
            data = orjson.loads(inputs.read_bytes(self.path / MANIFEST, inputs.MAX_MANIFEST_BYTES))
        except (OSError, orjson.JSONDecodeError) as e:
            raise DataError(f"cannot read manifest: {e}", file=str(self.path / MANIFEST)) from e
        if not isinstance(data, dict):
            raise DataError("manifest is not a JSON object", file=str(self.path / MANIFEST))
        return data

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        clean = redact.scrub_obj(manifest)
        if "experiment_file" in manifest:  # a path, needed as it is by --resume
            clean["experiment_file"] = manifest["experiment_file"]
        atomic_write_bytes(self.path / MANIFEST, dumps(clean, indent=True))

    def update_manifest(self, **fields: Any) -> None:
        m = self.manifest
        m.update(fields)
        self.write_manifest(m)

    # ---- summary ------------------------------------------------------------------------------
    def summary(self, since: int = 0) -> list[dict[str, Any]]:
        """Every summary line (or those appended after byte offset ``since``, a ``summary_size()``)."""
        return list(self.iter_summary(since))

    def iter_summary(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """The summary lines one at a time (flat memory however many cells the run has)."""
        return iter_jsonl(self.path / SUMMARY, strict=False, offset=since)

    def append_summary(self, row: dict[str, Any]) -> None:
        """Add one finished cell as one line, appended (O(1) per cell, whatever the grid's size).

        The line goes out in one ``write`` on an ``O_APPEND`` descriptor and is fsynced before this
        returns. A crash can at worst tear that last line; the next append (and ``repair_summary``)
        cuts such a fragment off first, so a torn line never swallows the line after it."""
        append_line(self.path / SUMMARY, dumps(redact.scrub_obj(row)) + b"\n")

    def journal_launch(self, record: dict[str, Any]) -> None:
        """One server launch into LAUNCHES, durably, before its process starts (servers.reap)."""
        append_line(self.path / LAUNCHES, dumps(redact.scrub_obj(record)) + b"\n")

    def repair_summary(self) -> None:
        """Cut off a torn last line (a crash mid-append); every complete line stays."""
        p = self.path / SUMMARY
        if not p.exists():
            return
        fd = _open_append(p, create=False)
        try:
            if _repair_tail(fd, p):
                os.fsync(fd)
        finally:
            os.close(fd)

    def summary_size(self) -> int:
        """Bytes in summary.jsonl now: ``summary(since=...)`` reads only the lines after it."""
        p = self.path / SUMMARY
        return p.stat().st_size if p.exists() else 0

    def finished(self) -> set[tuple[str, int]]:
        """(cell_id, repeat) pairs that have a summary line with status ok or invalid. A line whose
        repeat is not an integer >= 0 (a corrupt line) finishes nothing: its cell runs again."""
        return {
            (str(r.get("cell_id")), rep)
            for r in self.summary()
            if r.get("status") in ("ok", "invalid")
            and isinstance(rep := r.get("repeat", 0), int)
            and not isinstance(rep, bool)
            and rep >= 0
        }

    # ---- records ------------------------------------------------------------------------------
    def records_path(self, cell_id: str, repeat: int = 0) -> Path:
        # scrubbed like the summary's cell_id, so a reader with only the stored id finds the file
        return self.path / RECORDS / f"{safe_name(redact.scrub_text(cell_id))}.r{repeat}.parquet"

    def write_records(self, cell_id: str, repeat: int, records: Iterable[RequestRecord]) -> Path:
        path = self.records_path(cell_id, repeat)
        write_records_parquet(path, records)
        return path

    def read_records(self, cell_id: str, repeat: int = 0) -> list[RequestRecord]:
        return read_records_parquet(self.records_path(cell_id, repeat))

    @property
    def logs_dir(self) -> Path:
        d = self.path / LOGS
        d.mkdir(exist_ok=True)
        return d


def iter_jsonl(path: Path, *, strict: bool = True, offset: int = 0) -> Iterator[dict[str, Any]]:
    """JSON objects, one a line, from byte ``offset`` on (line numbers in errors count from there)."""
    if not path.exists():
        return
    try:
        f = inputs.open_regular(path)  # a FIFO planted as summary.jsonl must not hang the reader
    except OSError as e:
        raise DataError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    with f:
        f.seek(offset)
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                if strict:
                    raise DataError(f"not valid JSON: {e}", file=str(path), line=lineno) from e
                continue
            if isinstance(obj, dict):
                yield obj
            elif strict:
                raise DataError("expected a JSON object", file=str(path), line=lineno)


def find_run_dirs(paths: Iterable[str | Path]) -> list[RunDir]:
    """Run dirs named directly, or found below the given folders (a results dir of several runs)."""
    out: list[RunDir] = []
    for p in paths:
        p = Path(p)
        if (p / MANIFEST).is_file():
            out.append(RunDir(p))
            continue
        if not p.is_dir():
            raise DataError("no such run directory or results folder", file=str(p))
        found = sorted(m.parent for m in p.rglob(MANIFEST))
        if not found:
            raise DataError(f"no run directories (folders with {MANIFEST}) below it", file=str(p))
        out.extend(RunDir(f) for f in found)
    return out


def append_line(path: Path, line: bytes) -> None:
    """Append ``line`` durably: one ``write`` on an ``O_APPEND`` descriptor, fsynced (the folder too
    when the file is new); a torn last line (a crash mid-append) is cut off first."""
    fd = _open_append(path, create=True)
    try:
        created = os.fstat(fd).st_size == 0
        _repair_tail(fd, path)
        _write_all(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)


def _open_append(p: Path, *, create: bool) -> int:
    """An ``O_APPEND`` descriptor on a regular file; a DataError for anything else (a FIFO planted as
    summary.jsonl would block the open until a reader came, so it is opened without blocking)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        fd = os.open(p, flags, 0o666)
    except OSError as e:
        if e.errno != errno.ENXIO:  # ENXIO: a FIFO that no process reads
            raise
        raise DataError("cannot write: a FIFO, not a regular file", file=str(p)) from e
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DataError("cannot write: not a regular file", file=str(p))
    os.set_blocking(fd, True)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _repair_tail(fd: int, path: Path) -> bool:
    """If the file does not end in a newline, its last line was torn by a crash during an append:
    cut it off (or, if it is a whole JSON object that only lacks its newline, end it). O(1) for an
    intact file: one byte is read. True if something was changed."""
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    with path.open("rb") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return False
        start = size
        while start > 0:  # back to the previous newline, a block at a time
            lo = max(0, start - 65536)
            f.seek(lo)
            block = f.read(start - lo)
            i = block.rfind(b"\n")
            if i >= 0:
                start = lo + i + 1
                break
            start = lo
        f.seek(start)
        tail = f.read(size - start)
    try:
        whole = isinstance(orjson.loads(tail), dict)
    except orjson.JSONDecodeError:
        whole = False
    if whole:
        _write_all(fd, b"\n")
    else:
        log.warning("%s: dropped a torn last line (%d bytes) left by an interrupted write", path, len(tail))
        os.ftruncate(fd, start)
    return True


# ---- Parquet ---------------------------------------------------------------------------------
def _schema() -> Any:
    import pyarrow as pa

    i64, lst = pa.int64(), pa.list_(pa.int64())
    return pa.schema(
        [
            ("index", i64), ("is_warmup", pa.bool_()), ("worker", i64), ("prompt_len", i64),
            ("output_len", i64), ("scheduled_ns", i64), ("send_ns", i64), ("headers_ns", i64),
            ("chunk_ns", lst), ("chunk_tokens", lst), ("end_ns", i64),
            ("prompt_tokens_server", i64), ("output_tokens", i64), ("output_tokens_source", pa.string()),
            ("finish_reason", pa.string()), ("spec_verify_ct", i64), ("http_status", i64),
            ("error_kind", pa.string()), ("error", pa.string()), ("output_text", pa.string()),
            ("category", pa.string()), ("draft_tokens", i64), ("draft_accepted", i64), ("chunk_bound_ns", lst),
        ]
    )  # fmt: skip


def write_records_parquet(path: Path, records: Iterable[RequestRecord]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    rows = [r.to_dict() for r in records]
    for row in rows:  # server text (an error body echoing the bearer token) is scrubbed
        for k in ("error", "output_text"):
            if row.get(k):
                row[k] = redact.scrub_text(row[k])
    cols = {f.name: [row.get(f.name) for row in rows] for f in schema}
    table = pa.Table.from_pydict(cols, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.chmod(tmp, _umask_mode())
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def read_records_parquet(path: Path) -> list[RequestRecord]:
    try:
        table = inputs.read_parquet(path)
    except (OSError, Exception) as e:  # pyarrow raises ArrowInvalid (an Exception) for bad files
        raise DataError(f"cannot read records: {e}", file=str(path)) from e
    return [RequestRecord.from_dict(d) for d in table.to_pylist()]
