"""Issue 20, items 5 and 6: nothing of a killed run is left running once the next run starts, and a
Ctrl-C that lands while a server is being forked still stops the run.

Real processes only: `specsweep run` killed with SIGKILL while its server (which ignores SIGTERM)
and that server's grandchild (which ignores it too) run; a Python fork handler that sends SIGINT in
the middle of ``Popen``.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specsweep.servers import reap
from specsweep.store.run_dir import RunDir

from ..faults.harness import Result as HarnessResult
from ..faults.harness import (
    assert_no_process_left,
    experiment,
    kill_tagged,
    resume,
    staged_server,
    start,
    tagged_pids,
)

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def _showing(p: subprocess.Popen[bytes], mark: str) -> None:
    """Wait until ``p``'s environment shows ``mark``: Popen returns when the child's exec has begun,
    and until the kernel has set up the new program, /proc/PID/environ reads empty (the reaper
    would rightly not recognise it; about half of the runs of a test that reaps at once failed)."""
    needle = f"{reap.MARK}={mark}".encode()
    deadline = time.monotonic() + 10
    while needle not in Path(f"/proc/{p.pid}/environ").read_bytes().split(b"\0"):
        assert time.monotonic() < deadline, f"pid {p.pid} never showed {needle!r}"
        time.sleep(0.01)


def _wait_for_launch(results: Path, timeout_s: float = 60.0) -> RunDir:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for d in results.glob("*/manifest.json"):
            rd = RunDir(d.parent)
            try:
                servers = rd.manifest.get("servers") or {}
            except Exception:
                continue
            if any(s.get("launches") and s.get("model_id") for s in servers.values()):
                return rd
        time.sleep(0.1)
    raise AssertionError("the server never got ready")


def test_kill_9_leftovers_are_reaped_on_resume(tmp_path: Path) -> None:
    # a server that ignores SIGTERM (the kernel's parent-death signal) and a grandchild that does too
    srv = staged_server("--trap-sigterm", "--child", name="stubborn")
    exp = experiment(srv, concurrency=(1,), num_prompts=4, timeouts={"stop_s": 1})
    exp["client"]["warmup_sleep_s"] = 5  # the cell is still running when specsweep is killed
    proc, tag, results = start(exp, tmp_path)
    try:
        rd = _wait_for_launch(results)
        os.killpg(proc.pid, signal.SIGKILL)  # specsweep's own group: the servers have their own
        proc.wait(10)
        time.sleep(0.5)
        left = tagged_pids(tag)
        assert len(left) >= 2, "the leader and its grandchild outlive a SIGKILLed specsweep"
        launch = rd.manifest["servers"]["stubborn"]["launches"][0]
        assert launch["launch_id"] and launch["start_ticks"] and launch["boot_id"]
        res = resume(HarnessResult(0, "", 0.0, rd, tag), timeout_s=120)
        assert "stopped" in res.stderr and "a killed run left behind" in res.stderr, res.stderr[-2000:]
        assert_no_process_left(tag)  # the old launch's leader and grandchild, and the resume's own
        assert res.rc == 0, res.stderr[-2000:]
    finally:
        kill_tagged(tag)


def test_kill_9_before_the_first_server_is_ready_leaves_no_children(tmp_path: Path) -> None:
    """Issue 27, defect 3: `specsweep run` killed with SIGKILL 1 s into its first server's launch (a
    launcher `sh -c 'child & exec server'`, not ready for 30 s): the manifest's `servers` is still
    empty, so before, nothing on disk named the launch and `--resume` left the child running. Now
    the launch is journaled (fsynced) before the process starts, and `--resume` stops the child."""
    staged = str(Path(__file__).parents[1] / "faults" / "staged_sim.py")
    server = f"exec {shlex.quote(sys.executable)} {shlex.quote(staged)} --port {{port}} --host {{host}}"
    flag = shlex.quote(str(tmp_path / "launched-once"))
    # the first launch is not ready for 30 s (it is killed long before); the resumed one is at once
    script = f"sleep 600 & if [ -e {flag} ]; then {server}; else touch {flag}; {server} --faults slow_start_s=30; fi"
    srv = {"name": "launcher", "kind": "command", "argv": ["sh", "-c", script]}
    exp = experiment(srv, concurrency=(1,), num_prompts=2, timeouts={"stop_s": 1}, report={"enabled": False})
    proc, tag, results = start(exp, tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not _sleeping_child(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sleeping_child(tag), "the launcher's child never started"
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGKILL)  # specsweep's own group: the server has its own session
        proc.wait(10)
        rd = RunDir(next(results.iterdir()))
        assert rd.manifest["servers"] == {}, "the kill was meant to land before the server was ready"
        journal = [json_loads(x) for x in (rd.path / reap.JOURNAL).read_bytes().splitlines()]
        assert journal and journal[0]["label"] == "launcher" and journal[0]["launch_id"]
        time.sleep(0.5)  # the leader got the kernel's SIGTERM (parent death) and exits; the child not
        child = _sleeping_child(tag)
        assert child, "the launcher's child should outlive a SIGKILLed specsweep"
        res = resume(HarnessResult(0, "", 0.0, rd, tag), timeout_s=120)
        assert "a killed run left behind" in res.stderr, res.stderr[-2000:]
        assert_no_process_left(tag)
        assert res.rc == 0, res.stderr[-2000:]
    finally:
        kill_tagged(tag)


def _sleeping_child(tag: str) -> list[int]:
    out = []
    for pid in tagged_pids(tag):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00600\x00":
                out.append(pid)
        except OSError:
            pass
    return out


def json_loads(b: bytes) -> dict[str, object]:
    import orjson

    d = orjson.loads(b)
    assert isinstance(d, dict)
    return d


def test_reap_never_signals_a_process_that_is_not_ours(tmp_path: Path) -> None:
    """A recorded pid, group and start time are not proof (all three are world-readable in /proc):
    a process without the launch mark in its own environment is never signalled, even as recorded."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        fake = {**reap.identity(stranger.pid, "0" * 32), "pid": stranger.pid}  # exactly as it is
        assert reap.reap([fake], grace_s=0.5) == []
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_a_marked_leader_in_a_shared_group_is_stopped_alone(tmp_path: Path) -> None:
    """A marked process that does not lead its process group (it shares the test runner's, as a CI
    job's processes do): it is stopped, its group mates, the runner among them, are not. (Before
    ec96713 the whole group got SIGTERM and CI died with exit 143.)"""
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    lid = "1" * 32
    shell = subprocess.Popen(sleep, process_group=0)  # leads the group that stands for the CI runner's
    mate = subprocess.Popen(sleep, process_group=shell.pid)
    leader = subprocess.Popen(sleep, process_group=shell.pid, env={**os.environ, reap.MARK: lid})
    try:
        _showing(leader, lid)
        rec = {**reap.identity(leader.pid, lid), "pid": leader.pid}
        assert rec["pgid"] == shell.pid != leader.pid
        assert reap.reap([rec], grace_s=2) == [leader.pid]
        assert leader.wait(5) == -signal.SIGTERM
        assert shell.poll() is None and mate.poll() is None
    finally:
        for p in (shell, mate, leader):
            p.kill()
            p.wait()


SPAWN_SCRIPT = r"""
import os, signal, sys
from pathlib import Path
from specsweep.experiment.config import ServerConfig, ServerSpec
from specsweep.errors import ServerError
from specsweep.servers.process import ManagedServer

armed = [True]
def hook():
    if armed[0]:
        armed[0] = False
        os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C while Popen forks
os.register_at_fork(after_in_parent=hook)
spec = ServerSpec(name="s", kind="command", argv=[sys.executable, "-c", "import time; time.sleep(60)"])
server = ManagedServer(ServerConfig("s", spec, {}, {}), Path(sys.argv[1]), ready_timeout_s=3, stop_s=1)
try:
    server.start()
    print("RESULT started")
except KeyboardInterrupt:
    pid = server.proc.pid if server.proc else None
    server.stop()
    alive = pid is not None and Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    print(f"RESULT interrupted pid={pid} alive={alive}")
except ServerError as e:
    print("RESULT swallowed", str(e).splitlines()[0])
"""


def test_ctrl_c_during_the_fork_stops_the_launch(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-c", SPAWN_SCRIPT, str(tmp_path / "s.log")], capture_output=True,
                       text=True, timeout=60, check=False)  # fmt: skip
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT")), p.stdout + p.stderr)
    assert line.startswith("RESULT interrupted pid=") and line.endswith("alive=False"), line
    assert "Exception ignored" not in p.stderr, p.stderr


def test_next_run_reaps_abandoned_run_dirs_only(tmp_path: Path) -> None:
    """`specsweep run` into a results dir stops what a killed run there left (found by its launch
    mark), unless a live specsweep holds that run dir."""
    import fcntl

    launch_id = os.urandom(16).hex()
    env = {**os.environ, reap.MARK: launch_id}
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        _showing(orphan, launch_id)
        rd = tmp_path / "exp-20261203-000000"
        rd.mkdir()
        launch = {"pid": 1, "start_ticks": 0, **reap.identity(orphan.pid, launch_id)}  # leader long gone
        manifest = {"status": "running", "servers": {"x": {"launches": [launch]}}}
        (rd / "manifest.json").write_text(json_dumps(manifest))
        with (rd / ".lock").open("a+") as held:  # a live run owns it: hands off
            fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            assert reap.reap_results_dir(tmp_path, grace_s=1) == []
        assert orphan.poll() is None
        assert reap.reap_results_dir(tmp_path, grace_s=1) == [orphan.pid]
        assert orphan.wait(5) == -signal.SIGTERM
    finally:
        orphan.kill()
        orphan.wait()


def json_dumps(obj: object) -> str:
    from specsweep.store.run_dir import dumps

    return dumps(obj, indent=True).decode()
