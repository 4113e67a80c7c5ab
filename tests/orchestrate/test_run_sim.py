"""`specsweep run` end to end on the simulated engine (toy profile, time-scaled): the real benchmark,
real server processes, a server killed mid-cell, and SIGINT/SIGTERM then --resume."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir, execute
from specsweep.store.run_dir import RunDir

from .helpers import pid_alive

pytestmark = pytest.mark.slow  # real sim servers and benchmarks: seconds each, still run in CI

CMD = [sys.executable, "-m", "specsweep"]


def experiment(marker: str, *, time_scale: float, output_len: int = 24, **over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "simgrid",
        "scenarios": {"tiny": {"input_len": 48, "output_len": output_len}},
        "servers": [
            {
                "name": "toy",
                "kind": "sim",
                "profile": "toy",
                "time_scale": time_scale,
                "method": "dspark",
                "grid": {"seed": [1, 2]},
                "args": ["--served-model-name", marker],
            }
        ],
        "workloads": [{"scenarios": ["tiny"], "concurrency": [1, 4], "num_prompts": 6}],
        "client": {"warmup_requests": 1, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 60, "stop_s": 10},
        "report": {"enabled": False},  # seconds each; one test below writes report.md
    }
    d.update(over)
    return d


def marked_pids(marker: str) -> list[int]:
    """Live processes whose command line carries ``marker`` (servers are in their own sessions,
    so an orphan would not show up among our descendants)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if marker.encode() in cmd and pid_alive(int(d)):
            out.append(int(d))
    return out


@pytest.mark.timing  # time scale 1: a sim starved by other tests bursts its chunks (TPOT 0)
def test_small_grid_with_real_bench(tmp_path: Path) -> None:
    marker = f"m-{uuid.uuid4().hex[:8]}"
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(experiment(marker, time_scale=1.0, report={"formats": ["md"]})))
    r = subprocess.run(
        [*CMD, "run", str(f), "--results-dir", str(tmp_path / "res"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    (run,) = (tmp_path / "res").iterdir()
    assert run.name.startswith("simgrid-")
    rd = RunDir.open(run)
    rows = rd.summary()
    # "invalid" = the client's self-check saw event-loop lag (CPU noise on a shared machine):
    # still a finished cell with its data
    assert [(x["label"], x["max_concurrency"], x["status"] != "failed") for x in rows] == [
        ("toy(seed=1)", 1, True),
        ("toy(seed=1)", 4, True),
        ("toy(seed=2)", 1, True),
        ("toy(seed=2)", 4, True),
    ], [(x["status"], x.get("error")) for x in rows]
    for x in rows:
        assert x["completed"] == 6 and x["total_output_tokens"] > 0 and x["mean_tpot_ms"] > 0, x
        recs = rd.read_records(x["cell_id"], 0)
        assert sum(not q.is_warmup for q in recs) == 6
    m = rd.manifest
    srv = m["servers"]["toy(seed=1)"]
    assert srv["model_id"] == marker and srv["version"]
    assert srv["argv"][srv["argv"].index("--seed") + 1] == "1"
    assert re.search(r"\[1/4\] toy\(seed=1\) tiny c=1 r0: (ok|invalid)", r.stderr), r.stderr
    assert (run / "report.md").read_text().startswith("# "), r.stderr
    assert marked_pids(marker) == [], "a server survived the run"


def test_killed_sim_server_mid_cell(tmp_path: Path) -> None:
    marker = f"m-{uuid.uuid4().hex[:8]}"
    # toy steps are ~1.4 ms of engine time; at time_scale 0.02 a 6-prompt cell lasts seconds
    d = experiment(marker, time_scale=0.02)
    d["servers"][0]["grid"] = {}
    d["workloads"] = [{"scenarios": ["tiny"], "concurrency": [1, 2, 4], "num_prompts": 6}]
    plan = plan_experiment(parse_experiment(d))
    rd = create_run_dir(plan, tmp_path, None)
    pids: list[int] = []

    def observer(event: str, data: dict[str, Any]) -> None:
        if event == "server_ready":
            pids.append(data["pid"])
        if event == "cell_start" and data["index"] == 1:  # the second cell: kill it 0.5 s in
            threading.Timer(0.5, os.kill, (pids[-1], signal.SIGKILL)).start()

    out = execute(plan, rd, observer=observer)
    rows = rd.summary()
    assert [x["status"] == "failed" for x in rows] == [False, True, False]
    assert out.counts.get("failed") == 1
    assert "exited with code -9 during the cell" in rows[1]["error"]
    assert "specsweep-sim listening" in rows[1]["log_tail"]
    assert rows[2]["completed"] == 6  # the restarted server did the rest
    assert len(pids) == 2 and len(rd.manifest["servers"]["toy"]["launches"]) == 2
    assert marked_pids(marker) == []


def wait_rows(path: Path, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_bytes().splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {n} rows in {timeout} s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_then_resume(tmp_path: Path, sig: signal.Signals) -> None:
    marker = f"m-{uuid.uuid4().hex[:8]}"
    d = experiment(marker, time_scale=0.05, repeats=2)
    d["servers"][0]["grid"] = {}  # one server: the test is about cells, not launches
    d["workloads"][0]["concurrency"] = [1, 2, 4]
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(d))
    res = tmp_path / "res"
    p = subprocess.Popen(
        [*CMD, "run", str(f), "--results-dir", str(res), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (res.exists() and any(res.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        (run,) = res.iterdir()
        wait_rows(run / "summary.jsonl", 2, timeout=120)
        time.sleep(0.1)  # inside the next cell (round 0's c=4, about 0.35 s: interleaved rounds)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "specsweep run --resume" in err
    assert marked_pids(marker) == [], "a server survived the interrupt"
    rd = RunDir.open(run)
    assert rd.manifest["status"] == "interrupted"
    before = rd.summary()
    assert 2 <= len(before) < 6 and all(x["status"] != "failed" for x in before)
    if sig == signal.SIGTERM:
        return  # resuming works the same after either signal: done once, below, for SIGINT

    dry = subprocess.run(
        [*CMD, "run", "--resume", str(run), "--dry-run"], capture_output=True, text=True, timeout=60
    )
    # each cell's line counts its stored runs (interleaved rounds: round 0's cells come first)
    assert dry.returncode == 0, dry.stderr
    stored = Counter(x["cell_id"] for x in before)
    for row in rd.manifest["plan"]:
        line = next(x for x in dry.stdout.splitlines() if f"{row['cell_id']}: " in x)
        assert line.endswith(f"[{stored[row['cell_id']]}/2 done]"), (line, stored)
    r = subprocess.run(
        [*CMD, "run", "--resume", str(run), "--quiet"], capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 0, r.stderr
    after = rd.summary()
    assert after[: len(before)] == before  # nothing finished was redone or rewritten
    keys = Counter((x["cell_id"], x["repeat"]) for x in after)
    assert len(keys) == 6 and set(keys.values()) == {1}
    assert rd.manifest["status"] == "finished"
    assert marked_pids(marker) == []


def test_dry_run_prints_plan(tmp_path: Path) -> None:
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(experiment("m", time_scale=2.0)))
    r = subprocess.run([*CMD, "run", str(f), "--dry-run"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "2 configuration(s), 4 cell(s) x 1 repeat(s) = 4 benchmark run(s)" in out
    assert "[toy(seed=1)] kind=sim method=dspark params={'seed': 1}" in out
    assert "-m specsweep sim serve --profile toy --host 127.0.0.1 --port '<port>' --time-scale 2.0" in out
    assert "--seed 2 --served-model-name m" in out
    assert "toy_seed=1.tiny.c4-" in out and "tiny concurrency=4 num_prompts=6" in out
    assert "estimated duration: about" in out
    assert not (tmp_path / "results").exists()  # a dry run writes nothing


def test_cli_usage_errors(tmp_path: Path) -> None:
    r = subprocess.run([*CMD, "run"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "give an experiment file, or --resume RUN_DIR" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("servers: []\nworkloads: []\n")
    r = subprocess.run([*CMD, "run", str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and f"{bad}: at 'servers'" in r.stderr
    r = subprocess.run([*CMD, "run", "--resume", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a run directory" in r.stderr


def test_sigkill_of_the_runner_takes_its_server_down(tmp_path: Path) -> None:
    """No teardown runs after SIGKILL: the server must still not outlive specsweep (PDEATHSIG)."""
    marker = f"m-{uuid.uuid4().hex[:8]}"
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(experiment(marker, time_scale=0.02)))
    p = subprocess.Popen(
        [*CMD, "run", str(f), "--results-dir", str(tmp_path / "res"), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not marked_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked_pids(marker), "the server never started"
        time.sleep(0.5)
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 15
    while marked_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked_pids(marker) == []
