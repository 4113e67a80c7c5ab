"""Issue 38, defects 3 and 13: SIGHUP (a closed terminal or SSH session) stops a run the way
SIGTERM does, and a Ctrl-C in the first half second (while the sub-commands are imported) exits
130 without a traceback. Real processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from .harness import (
    assert_no_process_left,
    check_invariants,
    experiment,
    finish,
    sim_server,
    staged_server,
    start,
)
from .test_signals import _wait_rows

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def test_sighup_stops_the_servers_and_records_the_stop(tmp_path: Path) -> None:
    """Before: the servers kept running, the manifest stayed "running" and the exit was 129 (death
    by SIGHUP). Now: stopped, recorded as interrupted, exit 130, and ``--resume`` is offered."""
    exp = experiment(
        staged_server("--faults", "stall_after_tokens=2,stall_s=0.4", name="a"), sim_server(name="b"),
        concurrency=(1, 2),
    )  # fmt: skip
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp_path)
    _wait_rows(results, 1)
    os.kill(proc.pid, signal.SIGHUP)
    res = finish(proc, tag, results, 60, t0)
    assert res.rc == 130, (res.rc, res.stderr[-2000:])
    check_invariants(res)
    assert_no_process_left(tag, grace_s=0.0)
    assert res.run_dir.manifest["status"] == "interrupted"
    assert "--resume" in res.stderr
    assert "Traceback" not in res.stderr


def test_under_nohup_sighup_stays_ignored(tmp_path: Path) -> None:
    """`nohup specsweep run ...` asks for the run to outlive its terminal: the SIGHUP it ignores is
    not turned into a stop (the run finishes, exit 0). A suite started under nohup passes that on to
    every child, which made the test above fail (rc 0) before its children were started as a
    terminal's jobs."""
    exp = experiment(
        staged_server("--faults", "stall_after_tokens=2,stall_s=0.4", name="a"), sim_server(name="b"),
        concurrency=(1, 2),
    )  # fmt: skip
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp_path, nohup=True)
    _wait_rows(results, 1)
    os.kill(proc.pid, signal.SIGHUP)
    res = finish(proc, tag, results, 60, t0)
    assert res.rc == 0, (res.rc, res.stderr[-2000:])
    check_invariants(res)
    assert res.run_dir.manifest["status"] != "interrupted"
    assert_no_process_left(tag, grace_s=0.0)


@pytest.mark.parametrize("after_s", [0.15, 0.3, 0.45])
def test_ctrl_c_while_the_commands_are_imported_exits_130(after_s: float, tmp_path: Path) -> None:
    """Before: a KeyboardInterrupt traceback and death by SIGINT (rc -2)."""
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(experiment(sim_server(), concurrency=(1,))))
    cmd = [
        sys.executable,
        "-m",
        "specsweep",
        "run",
        str(path),
        "--results-dir",
        str(tmp_path / "r"),
        "--quiet",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(after_s)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
