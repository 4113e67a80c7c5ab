"""Ctrl-C (SIGINT to the foreground process group) and SIGTERM at random moments of `specsweep run`.

Whenever the signal lands, the process ends by itself (exit 130 once the run has begun), no server is
left, the finished cells reload, the manifest says 'interrupted', and `--resume` then finishes
exactly the missing cells: every planned cell once, none redone.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from pathlib import Path

import pytest

from .harness import (
    assert_no_process_left,
    check_invariants,
    experiment,
    finish,
    resume,
    sim_server,
    staged_server,
    start,
    tagged_pids,
)

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

# Every measured request stalls 0.4 s: cells take ~2 s, ~1 s and ~0.5 s (concurrency 1, 2, 4).
SLOW = "stall_after_tokens=2,stall_s=0.4"
# Seconds after the run dir appears (launch, readiness, cells, teardown, the second server, the end);
# seeded, so each id names its moment; -1: 0.3 s after the process started, before any run dir.
MOMENTS = [-1.0] + [round(random.Random(f"moment{i}").uniform(0.0, 7.0), 2) for i in range(4)]


def grid() -> dict:
    return experiment(
        staged_server("--faults", SLOW, "--fault-requests", "2:", name="a"),
        sim_server(name="b"),
        concurrency=(1, 2, 4),
    )


def send(proc_pid: int, sig: signal.Signals) -> None:
    if sig == signal.SIGINT:
        os.killpg(proc_pid, sig)  # what a terminal does on Ctrl-C
    else:
        os.kill(proc_pid, sig)  # kill PID, a batch scheduler's preemption


PARAMS = [
    pytest.param(m, id=f"at{m}s" if m >= 0 else "before_run_dir", marks=[pytest.mark.slow] if i > 1 else [])
    for i, m in enumerate(MOMENTS)
]


@pytest.mark.parametrize("at_s", PARAMS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_at_random_moment(sig: signal.Signals, at_s: float, tmp_path: Path) -> None:
    exp = grid()
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp_path)
    if at_s < 0:
        time.sleep(0.3)
    else:
        _wait_run_dir(results)
        time.sleep(at_s)
    if proc.poll() is None:
        send(proc.pid, sig)
    if not results.exists() or not any(results.iterdir()):
        # landed before the run dir existed: nothing to keep, but nothing may be left running
        proc.communicate(timeout=30)
        assert_no_process_left(tag)
        return
    res = finish(proc, tag, results, 60, t0)
    check_invariants(res)
    planned = {p["cell_id"] for p in res.run_dir.manifest["plan"]}
    done = {r["cell_id"] for r in res.rows if r["status"] in ("ok", "invalid")}
    if res.run_dir.manifest["status"] == "interrupted":
        assert res.rc == 130
        assert "--resume" in res.stderr
        assert all(r["status"] != "failed" for r in res.rows), "an interrupt is not a cell failure"
        again = resume(res)
        assert again.rc == 0, again.stderr
        check_invariants(again)
        rows = again.rows
        assert sorted(r["cell_id"] for r in rows) == sorted(planned), "each planned cell exactly once"
        before = {r["cell_id"]: r["started_at"] for r in res.rows}
        assert all(r["started_at"] == before[r["cell_id"]] for r in rows if r["cell_id"] in before)
        assert again.run_dir.manifest["status"] == "finished"
    else:  # the grid had finished: the signal met the report phase (or came after the end)
        assert done == planned
        # SIGTERM there is a Ctrl-C too (exit 130); an interrupted report phase leaves no report
        assert res.rc in (0, 130), res.stderr
        assert not [p for p in res.run_dir.path.iterdir() if p.name.endswith(".tmp")]
        if res.rc == 130:  # every report or none (an interrupted report phase removes them)
            reports = [p for p in res.run_dir.path.iterdir() if p.name.startswith("report.")]
            assert len(reports) in (0, len(res.run_dir.manifest["config"]["report"]["formats"])), reports


def test_second_ctrl_c_during_teardown_still_ends(tmp_path: Path) -> None:
    """An impatient user presses Ctrl-C twice: the second lands while a stubborn server
    (ignores SIGTERM) is being stopped; the run still ends, kills it, keeps what finished."""
    exp = experiment(staged_server("--trap-sigterm", "--child"), concurrency=(1, 2), timeouts={"stop_s": 2})
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp_path)
    _wait_rows(results, 1)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    res = finish(proc, tag, results, 60, t0)
    check_invariants(res)
    assert res.rc == 130


@pytest.mark.parametrize("presses", [2, 0], ids=["twice", "until_it_exits"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signals_50ms_apart_during_server_start_stop_everything(
    sig: signal.Signals, presses: int, tmp_path: Path
) -> None:
    """Issue 27, defect 4: Ctrl-C (or SIGTERM) twice 50 ms apart, or every 50 ms until specsweep
    exits, while the server is still starting (it is not ready for 30 s). The second must not cut
    the teardown short: the leader and its grandchild, both ignoring SIGTERM, are gone when
    specsweep exits, and it exits 130, not by a signal. Before, two presses exited in 0.77 s and
    left both running until the next --resume; more presses killed specsweep itself (-2, -15)."""
    srv = staged_server("--trap-sigterm", "--child", "--faults", "slow_start_s=30")
    exp = experiment(srv, concurrency=(1,), timeouts={"stop_s": 1, "ready_s": 60})
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp_path)
    _wait_tagged(tag, "time.sleep(600)")  # the grandchild: the launch is well under way, not ready
    sent = 0
    while proc.poll() is None and (sent < presses or not presses) and time.monotonic() - t0 < 60:
        send(proc.pid, sig)
        sent += 1
        time.sleep(0.05)
    res = finish(proc, tag, results, 60, t0)
    assert res.rc == 130, (sent, res.rc, res.stderr[-2000:])
    assert_no_process_left(tag, grace_s=0.0)  # at exit, not eventually
    assert res.run_dir.manifest["status"] == "interrupted"
    assert "Traceback" not in res.stderr, res.stderr[-2000:]


def _wait_tagged(tag: str, needle: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in tagged_pids(tag):
            with contextlib.suppress(OSError):
                if needle.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return
        time.sleep(0.05)
    raise AssertionError(f"no process with {needle!r} within {timeout_s} s")


def test_ctrl_c_during_teardown_between_configs_is_not_lost(tmp_path: Path) -> None:
    """Ctrl-C while the first configuration's server is being stopped must stop the run, not be
    swallowed by the teardown (the second configuration must not start)."""
    exp = experiment(
        staged_server("--trap-sigterm", name="a"),
        sim_server(name="b"),
        concurrency=(1,),
        timeouts={"stop_s": 3},
    )
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp_path)
    _wait_rows(results, 1)  # config a's only cell is stored: its server is being stopped (3 s)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    res = finish(proc, tag, results, 60, t0)
    check_invariants(res)
    assert [r["server"] for r in res.rows] == ["a"], "the run went on after Ctrl-C"
    assert res.rc == 130


def _wait_run_dir(results: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(results.glob("*/manifest.json")):
        assert time.monotonic() < deadline, "no run dir"
        time.sleep(0.02)


def _wait_rows(results: Path, n: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for s in results.glob("*/summary.jsonl"):
            if len(s.read_bytes().splitlines()) >= n:
                return
        time.sleep(0.05)
    raise AssertionError(f"no {n} finished cell(s) within {timeout_s} s")
