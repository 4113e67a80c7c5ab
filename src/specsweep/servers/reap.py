"""Reaping what a killed specsweep left running, from the launches its manifest recorded.

``kill -9`` of specsweep leaves no time for a teardown. The kernel sends the server itself SIGTERM
(``PR_SET_PDEATHSIG``), but not what the server started (tensor-parallel workers, a launcher's
children), and a server that ignores SIGTERM survives it. Each launch is recorded in the manifest
with an identity (``launch_id``, also put in the server's environment as ``SPECSWEEP_LAUNCH``, the
leader's pid and process group, its start time in clock ticks since boot, the host and boot id).
The next ``specsweep run --resume`` of that run dir, and the next ``specsweep run`` into the same
results dir, find those processes and stop them: SIGTERM, a grace period, then SIGKILL.

A process is only signalled when it is provably one of ours: it carries a recorded
``SPECSWEEP_LAUNCH`` value in its environment, or it is a recorded leader alive with the recorded
start time on this host and boot (then its process group too, if it leads that group as recorded: a
group id is not reused while the group exists; a leader that shares someone else's group is stopped
alone). Its start time is checked again right before each signal, so a pid reused in between
is never hit. Run dirs locked by a live specsweep are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)

MARK = "SPECSWEEP_LAUNCH"


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, start time in ticks) of a live process, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if fields[0] == b"Z":  # a zombie holds nothing; its parent reaps it
        return None
    return int(fields[2]), int(fields[19])


def identity(pid: int, launch_id: str) -> dict[str, Any]:
    """What the manifest records of a launch, to recognise its processes later."""
    st = _stat(pid)
    return {"launch_id": launch_id, "host": socket.gethostname(), "boot_id": boot_id(),
            "pgid": st[0] if st else pid, "start_ticks": st[1] if st else None}  # fmt: skip


def _environ_has(pid: int, marks: set[bytes]) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # another user's process, or gone
        return False
    return any(e in marks for e in env.split(b"\0"))


def find(launches: Iterable[dict[str, Any]]) -> dict[int, int]:
    """pid -> start ticks of every live process of these launches (see the module docstring)."""
    here, boot = socket.gethostname(), boot_id()
    mine = [x for x in launches if x.get("launch_id") and x.get("host") == here and x.get("boot_id") == boot]
    if not mine:
        return {}
    marks = {f"{MARK}={x['launch_id']}".encode() for x in mine}
    groups: set[int] = set()
    leaders: set[int] = set()
    own_group = os.getpgrp()
    for x in mine:  # a recorded leader still alive as itself is ours
        pid = int(x.get("pid") or 0)
        st = _stat(pid) if pid > 0 else None
        if not (st and x.get("start_ticks") is not None and st[1] == x["start_ticks"]):
            continue
        leaders.add(pid)
        # and so is its group, but only a group it leads, as recorded: a process that shares its
        # group with others (a shell's, a CI runner's, ours) takes nobody else down with it
        if st[0] == pid and x.get("pgid") in (None, pid) and st[0] != own_group:
            groups.add(st[0])
    found: dict[int, int] = {}
    skip = {os.getpid(), os.getppid()}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        pid = int(entry)
        st = _stat(pid)
        if st and (pid in leaders or st[0] in groups or _environ_has(pid, marks)):
            found[pid] = st[1]
    return found


def _signal(procs: dict[int, int], sig: int) -> None:
    for pid, ticks in procs.items():
        st = _stat(pid)
        if st and st[1] == ticks:  # still the same process: never a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def reap(launches: Iterable[dict[str, Any]], grace_s: float = 10.0) -> list[int]:
    """Stop every live process of ``launches``: SIGTERM, up to ``grace_s``, then SIGKILL. Returns
    the pids that were signalled."""
    procs = find(list(launches))
    if not procs:
        return []
    _signal(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    alive = procs
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = {p: t for p, t in alive.items() if (_stat(p) or (0, -1))[1] == t}
    _signal(alive, signal.SIGKILL)
    return sorted(procs)


def launches_of(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for srv in (manifest.get("servers") or {}).values():
        if isinstance(srv, dict):
            out += [x for x in srv.get("launches") or [] if isinstance(x, dict)]
    return out


def reap_run_dir(path: str | Path, grace_s: float = 10.0) -> list[int]:
    """Reap an abandoned run dir's leftovers: only if no live specsweep holds its lock."""
    p = Path(path)
    lock = p / ".lock"
    if not (p / "manifest.json").is_file():
        return []
    try:
        f = lock.open("a+")
    except OSError:
        return []
    with f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return []  # a live run owns it (and its servers)
        try:
            manifest = orjson.loads((p / "manifest.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return []
        if not isinstance(manifest, dict):
            return []
        timeouts = (manifest.get("config") or {}).get("timeouts") or {}
        stop_s = timeouts.get("stop_s") if isinstance(timeouts.get("stop_s"), (int, float)) else None
        pids = reap(launches_of(manifest), min(grace_s, stop_s) if stop_s else grace_s)
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
            if m.is_file() and b'"status": "running"' in m.read_bytes():
                pids += reap_run_dir(d, grace_s)
    return pids
