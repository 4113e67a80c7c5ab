"""Issue 27, defect 2: a planted run dir cannot make the reaper kill anything.

Before, a run dir whose manifest recorded another process's pid, start ticks and boot id (all
world-readable in /proc) made the next `specsweep run` into that results dir SIGTERM and SIGKILL
that process and its group. Now the reaper signals only processes that carry a recorded launch mark
in their own environment (or share the session of one), that belong to this user, and whose
launching specsweep is gone; and only from a manifest and journal owned by this user that no one
else may write. Another OS user is real where the tests run as root (a process of uid 65534, a
manifest chowned to it); elsewhere those cases skip, and a forged "who am I" covers the rule.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specsweep.servers import reap
from specsweep.store.run_dir import dumps

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]
NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second OS user")


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _start(procs: list[subprocess.Popen[bytes]], *, mark: str | None = None, owner: str | None = None,
           argv: list[str] = SLEEP, **kw: Any) -> subprocess.Popen[bytes]:  # fmt: skip
    env = dict(os.environ)
    env.pop(reap.OWNER, None)
    if mark:
        env[reap.MARK] = mark
    if owner:
        env[reap.OWNER] = owner
    p = subprocess.Popen(argv, env=env, **kw)
    procs.append(p)
    return p


def _run_dir(results: Path, launches: list[dict[str, Any]], *, name: str = "planted-20261204-000000") -> Path:
    d = results / name
    d.mkdir(parents=True)
    manifest = {
        "status": "running",
        "config": {"timeouts": {"stop_s": 1}},
        "servers": {"x": {"launches": launches}},
    }
    (d / "manifest.json").write_bytes(dumps(manifest, indent=True))
    return d


def _alive(*ps: subprocess.Popen[bytes]) -> bool:
    time.sleep(0.2)
    return all(p.poll() is None for p in ps)


def test_a_planted_manifest_naming_a_process_exactly_kills_nothing(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """The issue's attack: pid, group, start ticks, host and boot id of a live process (here the
    leader of a group with a member), in a run dir 'running' in the results dir."""
    leader = _start(procs, process_group=0)
    member = _start(procs, process_group=leader.pid)
    rec = {**reap.identity(leader.pid, os.urandom(16).hex()), "pid": leader.pid}
    assert rec["start_ticks"] and rec["pgid"] == leader.pid and rec["boot_id"]
    _run_dir(tmp_path, [rec])
    assert reap.reap_results_dir(tmp_path, grace_s=1) == []
    assert _alive(leader, member)


def test_a_marked_process_is_reaped_once_its_specsweep_is_gone(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """The rule that remains: the launch mark in the process's own environment. With a live owner
    (a run dir copied while its run goes on) nothing is touched; once the owner is gone, it is."""
    lid = os.urandom(16).hex()
    live = _start(procs, mark=lid, owner=reap.owner_mark(), start_new_session=True)  # we are its specsweep
    orphan = _start(procs, mark=lid, owner="1:0", start_new_session=True)  # pid 1 never started at tick 0
    _run_dir(tmp_path, [reap.launch_record(lid)])
    assert reap.reap_results_dir(tmp_path, grace_s=1) == [orphan.pid]
    assert orphan.wait(5) == -signal.SIGTERM
    assert _alive(live)


def test_the_session_of_a_marked_leader_is_reaped_with_it(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """A worker that dropped the server's environment (env -i) is found by the leader's session; a
    marked process in a session it does not lead takes nobody else there with it."""
    lid = os.urandom(16).hex()
    script = "import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], env={}); time.sleep(60)"
    env = {k: v for k, v in os.environ.items() if k != reap.OWNER}
    leader = subprocess.Popen(
        [sys.executable, "-c", script], env={**env, reap.MARK: lid}, start_new_session=True
    )
    procs.append(leader)
    mate = _start(procs)  # in this test's session, unmarked
    marked_here = _start(procs, mark=lid)  # marked, in this test's session (which it does not lead)
    deadline = time.monotonic() + 10
    while not ((kids := _children(leader.pid)) and _exec_done(kids[0])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kids, "the leader's worker never started"
    assert b"SPECSWEEP_LAUNCH" not in Path(f"/proc/{kids[0]}/environ").read_bytes()
    got = reap.reap([{**reap.launch_record(lid), "pid": leader.pid}], grace_s=2)
    assert sorted(got) == sorted([leader.pid, kids[0], marked_here.pid])
    assert _alive(mate)


def _exec_done(pid: int) -> bool:
    """Whether a forked child runs its own program yet (before exec it still has our environment)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"time.sleep(60)" in cmd and b"subprocess" not in cmd  # the worker's, not the leader's


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_a_world_writable_or_linked_manifest_is_not_trusted(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    lid = os.urandom(16).hex()
    orphan = _start(procs, mark=lid, start_new_session=True)
    d = _run_dir(tmp_path / "a", [reap.launch_record(lid)])
    (d / "manifest.json").chmod(0o666)
    assert reap.untrusted(d / "manifest.json") == "any user may write it"
    assert reap.reap_results_dir(tmp_path / "a", grace_s=1) == []
    real = _run_dir(tmp_path / "elsewhere", [reap.launch_record(lid)])
    linked = tmp_path / "b" / "linked-20261204-000000"
    linked.mkdir(parents=True)
    (linked / "manifest.json").symlink_to(real / "manifest.json")
    assert reap.untrusted(linked / "manifest.json") == "it is not a regular file"
    assert reap.reap_run_dir(linked, grace_s=1) == []
    assert _alive(orphan)


def test_a_forged_other_user_is_never_signalled(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no second OS user is at hand: the reaper is made to believe it is someone else. Our
    own marked orphan is then another user's process, and our manifest another user's file."""
    lid = os.urandom(16).hex()
    orphan = _start(procs, mark=lid, start_new_session=True)
    _run_dir(tmp_path, [reap.launch_record(lid)])
    monkeypatch.setattr(reap, "_my_uid", lambda: os.geteuid() + 4242)
    assert reap.find([reap.launch_record(lid)]) == {}
    assert "not to this user" in (reap.untrusted(next(tmp_path.glob("*/manifest.json"))) or "")
    assert reap.reap_results_dir(tmp_path, grace_s=1) == []
    assert _alive(orphan)
    monkeypatch.undo()
    assert reap.reap_results_dir(tmp_path, grace_s=1) == [orphan.pid]  # as itself, it is ours


@ROOT_ONLY
def test_another_users_marked_process_is_never_signalled(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """Root can signal anyone; the reaper still signals only its own user's processes."""
    lid = os.urandom(16).hex()
    # /bin/sleep: uid 65534 may not run this test's Python (under /root)
    theirs = _start(procs, mark=lid, argv=["sleep", "60"], start_new_session=True, user=NOBODY, group=NOBODY)
    _run_dir(tmp_path, [reap.launch_record(lid)])
    assert reap.reap_results_dir(tmp_path, grace_s=1) == []
    assert _alive(theirs)


@ROOT_ONLY
def test_a_manifest_of_another_user_is_not_trusted(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    lid = os.urandom(16).hex()
    orphan = _start(procs, mark=lid, start_new_session=True)
    d = _run_dir(tmp_path, [reap.launch_record(lid)])
    os.chown(d / "manifest.json", NOBODY, NOBODY)
    assert reap.reap_results_dir(tmp_path, grace_s=1) == []
    assert _alive(orphan)
    assert f"belongs to uid {NOBODY}" in caplog.text


def test_a_planted_lock_fifo_or_link_neither_hangs_nor_is_followed(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """A run dir's .lock that is a FIFO (opening it to write would wait for a reader forever) or a
    link (opening it would create or touch its target): the reaper skips the dir, and a --resume of
    it refuses with one line."""
    from specsweep.errors import UsageError
    from specsweep.orchestrate.run import run_dir_lock
    from specsweep.store.run_dir import RunDir

    lid = os.urandom(16).hex()
    orphan = _start(procs, mark=lid, start_new_session=True)
    fifo = _run_dir(tmp_path, [reap.launch_record(lid)], name="fifo-20261204-000000")
    os.mkfifo(fifo / ".lock")
    linked = _run_dir(tmp_path, [reap.launch_record(lid)], name="link-20261204-000000")
    target = tmp_path / "target-must-not-appear"
    (linked / ".lock").symlink_to(target)
    assert reap.reap_run_dir(fifo, grace_s=1) == [] and reap.reap_run_dir(linked, grace_s=1) == []
    assert not target.exists() and _alive(orphan)
    for d in (fifo, linked):
        with pytest.raises(UsageError, match="lock file"), run_dir_lock(RunDir(d)):
            pass
    assert not target.exists()
