"""Reaping what a killed specsweep left running, from the launches its run dir recorded.

``kill -9`` of specsweep leaves no time for a teardown. The kernel sends the server itself SIGTERM
(``PR_SET_PDEATHSIG``), but not what the server started (tensor-parallel workers, a launcher's
children), and a server that ignores SIGTERM survives it. So each launch gets an identity before it
starts: a random ``launch_id``, put in the server's environment as ``SPECSWEEP_LAUNCH`` (everything
the server starts inherits it), beside ``SPECSWEEP_OWNER`` (the launching specsweep's pid and start
time). The launch is journaled in RUN_DIR/launches.jsonl, fsynced, before the process is started,
and recorded again in the manifest once it is up. The next ``specsweep run --resume`` of that run
dir, and the next ``specsweep run`` into the same results dir, stop those processes: SIGTERM, a
grace period, then SIGKILL.

A run dir is only trusted when its manifest and journal are regular files owned by this user that
no one else may write (a run dir planted in a shared folder names processes of its author's
choosing), and only when no live specsweep holds its lock. From it, a process is signalled only when
it provably came from this tool, whatever pid, start time or group the files name:

- it belongs to this user (the owner of /proc/PID; root is no exception: never another user's);
- its own environment (/proc/PID/environ, which only its user and root can read) carries
  ``SPECSWEEP_LAUNCH`` with a recorded launch id; or it is in the session of such a process (a
  server starts in a session of its own, and only its descendants can be in it);
- the specsweep that launched it is gone (``SPECSWEEP_OWNER`` does not name a live process with that
  start time): a live specsweep stops its own servers, even when a copy of its run dir is reaped;
- the launch was recorded on this host, since its last boot.

Its start time is checked again right before each signal, so a pid reused in between is never hit.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from specsweep.servers.spawn import held_stop_signals
from specsweep.store import inputs
from specsweep.store.inputs import MAX_MANIFEST_BYTES

log = logging.getLogger(__name__)

MARK = "SPECSWEEP_LAUNCH"
OWNER = "SPECSWEEP_OWNER"
JOURNAL = "launches.jsonl"  # in the run dir (store.LAUNCHES): one line per launch, before it starts
MAX_JOURNAL_BYTES = 64 * 2**20


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(process group, session, start time in ticks) of a live process; None if gone or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if fields[0] == b"Z":  # a zombie holds nothing; its parent reaps it
        return None
    return int(fields[2]), int(fields[3]), int(fields[19])


def _uid(pid: int) -> int | None:
    """The user a process runs as (its effective uid: the owner of /proc/PID)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _my_uid() -> int:
    return os.geteuid()


def owner_mark() -> str:
    """``SPECSWEEP_OWNER`` for the servers this process launches: ``PID:START_TICKS``."""
    st = _stat(os.getpid())
    return f"{os.getpid()}:{st[2] if st else 0}"


def identity(pid: int, launch_id: str) -> dict[str, Any]:
    """What the manifest records of a launch (its pid, group and start time are facts for the
    reader; the reaper goes by ``launch_id`` alone)."""
    st = _stat(pid)
    return {**launch_record(launch_id), "pgid": st[0] if st else pid, "start_ticks": st[2] if st else None}


def launch_record(launch_id: str) -> dict[str, Any]:
    """A launch's identity before its process exists (the journal's line)."""
    return {"launch_id": launch_id, "host": socket.gethostname(), "boot_id": boot_id(),
            "owner": owner_mark()}  # fmt: skip


def _environ(pid: int) -> dict[bytes, bytes]:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # another user's process, or gone
        return {}
    out = {}
    for item in env.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep and k in (MARK.encode(), OWNER.encode()):
            out[k] = v
    return out


def _owner_alive(mark: bytes | None) -> bool:
    """Whether ``SPECSWEEP_OWNER`` names a process that is still alive as itself."""
    try:
        pid, ticks = (int(x) for x in (mark or b"").split(b":"))
    except ValueError:
        return False
    st = _stat(pid)
    return st is not None and st[2] == ticks


def find(launches: Iterable[dict[str, Any]]) -> dict[int, int]:
    """pid -> start ticks of every live process of these launches (see the module docstring)."""
    here, boot = socket.gethostname(), boot_id()
    leaders: dict[bytes, set[int]] = {}  # launch id -> its recorded leader pids (= their sessions)
    for x in launches:
        lid = x.get("launch_id")
        if isinstance(lid, str) and lid and x.get("host") == here and x.get("boot_id") == boot:
            pids = leaders.setdefault(lid.encode(), set())
            if isinstance(x.get("pid"), int) and not isinstance(x["pid"], bool):
                pids.add(x["pid"])
    if not leaders:
        return {}
    me, skip = _my_uid(), {1, os.getpid(), os.getppid()}
    procs: dict[int, tuple[int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in skip and _uid(int(entry)) == me:
            st = _stat(int(entry))
            if st is not None:
                procs[int(entry)] = st
    found: dict[int, int] = {}
    sessions: set[int] = set()
    for pid, (_pgid, sid, ticks) in procs.items():
        env = _environ(pid)
        lid = env.get(MARK.encode())
        if lid in leaders and not _owner_alive(env.get(OWNER.encode())):
            found[pid] = ticks
            # the session of a launch's leader: everything the server started, whatever its
            # environment (only the leader's descendants can be in it)
            if sid in leaders[lid] or sid == pid:
                sessions.add(sid)
    sessions -= {0, 1, os.getsid(0)}
    for pid, (_pgid, sid, ticks) in procs.items():
        if sid in sessions:
            found[pid] = ticks
    return found


def _signal(procs: dict[int, int], sig: int) -> None:
    me = _my_uid()
    for pid, ticks in procs.items():
        st = _stat(pid)
        if st and st[2] == ticks and _uid(pid) == me:  # still the same process: never a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def reap(launches: Iterable[dict[str, Any]], grace_s: float = 10.0) -> list[int]:
    """Stop every live process of ``launches``: SIGTERM, up to ``grace_s``, then SIGKILL. Returns
    the pids that were signalled."""
    procs = find(list(launches))
    if not procs:
        return []
    with held_stop_signals():  # a Ctrl-C meanwhile waits: SIGTERM alone may leave them running
        _signal(procs, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        alive = procs
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = {p: t for p, t in alive.items() if (_stat(p) or (0, 0, -1))[2] == t}
        _signal(alive, signal.SIGKILL)
    return sorted(procs)


def launches_of(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for srv in (manifest.get("servers") or {}).values():
        if isinstance(srv, dict):
            out += [x for x in srv.get("launches") or [] if isinstance(x, dict)]
    return out


def untrusted(path: Path) -> str | None:
    """Why a run dir's file may not be acted on (None: it may): it must be a regular file (not a
    link, FIFO or device), owned by this user, that no other user may write."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot read it ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_uid != _my_uid():
        return f"it belongs to uid {st.st_uid}, not to this user (uid {_my_uid()})"
    if st.st_mode & stat.S_IWOTH:
        return "any user may write it"
    return None


def _read_trusted(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of a trusted file (``untrusted``, checked on the open descriptor), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _my_uid() or st.st_mode & stat.S_IWOTH:
            return None
        return f.read() if limit is None else f.read(limit)


def journaled(run_dir: Path) -> list[dict[str, Any]]:
    """The launches in ``run_dir``'s journal (none when it is missing or not trusted)."""
    data = _read_trusted(run_dir / JOURNAL, MAX_JOURNAL_BYTES)
    out = []
    for line in (data or b"").splitlines():
        with contextlib.suppress(orjson.JSONDecodeError):
            x = orjson.loads(line)
            if isinstance(x, dict):
                out.append(x)
    return out


def reap_run_dir(path: str | Path, grace_s: float = 10.0) -> list[int]:
    """Reap an abandoned run dir's leftovers: only a trusted one that no live specsweep holds."""
    p = Path(path)
    why = untrusted(p / "manifest.json")
    if why is not None:
        if (p / "manifest.json").exists():
            log.warning("%s: not stopping what it names: manifest.json: %s", p, why)
        return []
    try:
        fd = os.open(
            p / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666
        )
    except OSError:
        return []
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device planted as the lock
        os.close(fd)
        return []
    with os.fdopen(fd, "r+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return []  # a live run owns it (and its servers)
        data = _read_trusted(p / "manifest.json", MAX_MANIFEST_BYTES + 1) or b"null"
        if len(data) > MAX_MANIFEST_BYTES:  # never a manifest specsweep wrote: not read whole
            log.warning(
                "%s: not stopping what it names: manifest.json is over %s bytes", p, f"{MAX_MANIFEST_BYTES:,}"
            )
            return []
        try:
            manifest = orjson.loads(data)
        except orjson.JSONDecodeError:
            manifest = None
        if not isinstance(manifest, dict):
            return []
        timeouts = (manifest.get("config") or {}).get("timeouts") or {}
        stop_s = timeouts.get("stop_s") if isinstance(timeouts.get("stop_s"), (int, float)) else None
        launches = launches_of(manifest) + journaled(p)
        pids = reap(launches, min(grace_s, stop_s) if stop_s else grace_s)
    if pids:
        log.warning("%s: stopped %d process(es) a killed run left behind: pids %s", p, len(pids), pids)
    return pids


def reap_results_dir(results_dir: str | Path, grace_s: float = 10.0) -> list[int]:
    """``reap_run_dir`` for every run dir in ``results_dir`` whose manifest says it is running."""
    base = Path(results_dir)
    if not base.is_dir():
        return []
    pids: list[int] = []
    for d in sorted(base.iterdir()):
        m = d / "manifest.json"
        with contextlib.suppress(OSError):
            if m.is_file() and _says_running(m):
                pids += reap_run_dir(d, grace_s)
    return pids


def _says_running(manifest: Path) -> bool:
    """Whether a sibling's manifest says it is running, read in 1 MiB pieces and at most
    ``MAX_MANIFEST_BYTES`` (a planted 1.5 GB manifest made every ``run --results-dir`` take 1.6 GB)."""
    needle = b'"status": "running"'
    with inputs.open_regular(manifest) as f:
        tail, read = b"", 0
        while read < MAX_MANIFEST_BYTES and (piece := f.read(1 << 20)):
            read += len(piece)
            if needle in tail + piece:
                return True
            tail = piece[-len(needle) :]
    return False
