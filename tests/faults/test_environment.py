"""Faults of the machine rather than the server: disk full, a port already taken.

Disk full: a small tmpfs as the results dir (root only; else skipped) through `specsweep run`, and in
process an fsync that raises ENOSPC from the Nth write on (records and summary paths alike).
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
from pathlib import Path

import pytest

from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir, execute
from specsweep.store.run_dir import RunDir

from .harness import check_invariants, experiment, resume, run, sim_server

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def _leftover_tmp(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]


@pytest.fixture
def small_tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_mid_grid_tmpfs(small_tmpfs: Path, tmp_path: Path) -> None:
    filler = small_tmpfs / "filler"
    filler.write_bytes(b"\0" * 150_000)  # ~50 KB left: enough for a few cells, not for eight
    exp = experiment(sim_server(), concurrency=(1, 2, 3, 4, 5, 6, 7, 8), num_prompts=8)
    exp["results_dir"] = str(small_tmpfs / "results")
    res = run(exp, small_tmpfs, timeout_s=120)
    assert res.rc == 1
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "No space left on device" in res.stderr and "--resume" in res.stderr
    assert _leftover_tmp(res.run_dir.path) == []
    rows = check_invariants(res, manifest_status=("running", "interrupted"))  # it may not fit either
    assert 0 < len(rows) < 8
    filler.unlink()  # the user frees space and resumes: the grid completes, nothing lost or redone
    again = resume(res)
    assert again.rc == 0 or "report" in again.stderr, again.stderr[-2000:]
    rows2 = check_invariants(again)
    assert len(rows2) == 8 and rows2[: len(rows)] == rows


@pytest.mark.parametrize(
    "fail_from", [2, pytest.param(4, marks=pytest.mark.slow), pytest.param(5, marks=pytest.mark.slow)]
)
def test_enospc_on_any_write(fail_from: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the Nth fsync on every write fails: what was stored before stays whole and consistent."""
    plan = plan_experiment(parse_experiment(experiment(sim_server(), concurrency=(1, 2, 3))))
    rd = create_run_dir(plan, tmp_path, None)
    real_fsync, calls = os.fsync, [0]

    def fsync(fd: int) -> None:
        calls[0] += 1
        if calls[0] >= fail_from:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left"):
        execute(plan, rd, reports=False)
    monkeypatch.undo()
    assert _leftover_tmp(rd.path) == []
    rd2 = RunDir.open(rd.path)
    for r in rd2.summary():
        assert len([x for x in rd2.read_records(r["cell_id"], r["repeat"]) if not x.is_warmup]) == 4
    assert set(rd2.finished()) <= {(c.cell_id, 0) for c in plan.all_cells()}


def test_port_taken_by_a_bare_socket(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = run(experiment(sim_server(port=port), timeouts={"ready_s": 10}), tmp_path)
    check_invariants(res)
    assert [r["status"] for r in res.rows] == ["failed", "failed"]
    assert f"port {port} on 127.0.0.1 is already in use" in res.rows[0]["error"]


def test_port_taken_by_another_live_server(tmp_path: Path) -> None:
    """Another server (someone else's) answers on the configured port: ours cannot bind and exits;
    no cell may be measured against the stranger and recorded as ours."""
    from specsweep.sim.serve import SubprocessServer

    with SubprocessServer("--profile", "toy", "--port", "0", "--served-model-name", "stranger") as other:
        res = run(experiment(sim_server(port=other.port), timeouts={"ready_s": 10}), tmp_path)
    check_invariants(res)
    for r in res.rows:
        assert r["status"] == "failed", "a cell was measured against another process's server"
        assert r.get("model") != "stranger"
        assert "already in use" in r["error"]


@pytest.mark.slow
def test_two_runs_at_once(tmp_path: Path) -> None:
    """Two runs at once on one box: each gets its own free port; both complete."""
    procs = []
    for i in range(2):
        d = tmp_path / f"r{i}"
        d.mkdir()
        procs.append(d)
    from .harness import finish, start

    started = [start(experiment(sim_server()), d) for d in procs]
    for (p, tag, results), _d in zip(started, procs, strict=True):
        res = finish(p, tag, results, 120, 0.0)
        check_invariants(res)
        assert res.rc == 0 and len(res.rows) == 2, [(r["status"], r.get("error")) for r in res.rows]
