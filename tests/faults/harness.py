"""Fault-test harness: build sim experiments, run `specsweep run` as a user would, check invariants.

Every process a run starts carries ``SPECSWEEP_FAULT_TAG=<uuid>`` in its environment (servers
inherit specsweep's environment), so "no process left" is checked by scanning /proc for the tag:
that finds servers that escaped their process group or were re-parented to init too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from specsweep.measure.records import ERROR_KINDS
from specsweep.store.run_dir import RunDir

STAGED = str(Path(__file__).with_name("staged_sim.py"))
TAG_VAR = "SPECSWEEP_FAULT_TAG"
TINY = {"tiny": {"input_len": 16, "output_len": 24, "range_ratio": 1.0}}


def sim_server(faults: str = "", *, name: str = "sim", **over: Any) -> dict[str, Any]:
    """The real `sim` launcher with the sim's own --faults."""
    params: dict[str, Any] = {"seed": 1}
    if faults:
        params["faults"] = faults
    return {"name": name, "kind": "sim", "profile": "toy", "time_scale": 20, "params": params, **over}


def staged_server(*extra: str, name: str = "staged", **over: Any) -> dict[str, Any]:
    """tests/faults/staged_sim.py as a `command` server (faults aimed at one stage)."""
    argv = [sys.executable, STAGED, "--port", "{port}", "--host", "{host}", *extra]
    return {"name": name, "kind": "command", "argv": argv, **over}


def experiment(
    *servers: dict[str, Any],
    concurrency: tuple[int, ...] = (1, 2),
    num_prompts: int = 4,
    repeats: int = 1,
    client: dict[str, Any] | None = None,
    timeouts: dict[str, Any] | None = None,
    **over: Any,
) -> dict[str, Any]:
    return {
        "name": "faults",
        "scenarios": TINY,
        "servers": list(servers),
        "workloads": [{"scenarios": ["tiny"], "concurrency": list(concurrency), "num_prompts": num_prompts}],
        "client": {"warmup_requests": 1, "warmup_sleep_s": 0, "request_timeout_s": 20, **(client or {})},
        "timeouts": {"ready_s": 20, "stop_s": 3, "cell_s": 30, **(timeouts or {})},
        "repeats": repeats,
        **over,
    }


@dataclass
class Result:
    rc: int
    stderr: str
    elapsed_s: float
    run_dir: RunDir
    tag: str

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.run_dir.summary()

    def by_status(self) -> Counter[str]:
        return Counter(r["status"] for r in self.rows)


def start(
    exp: dict[str, Any], tmp: Path, *args: str, nohup: bool = False
) -> tuple[subprocess.Popen[str], str, Path]:
    """Start `specsweep run` in its own session (a terminal's Ctrl-C reaches the foreground group), as
    a terminal's foreground job: SIGINT and SIGHUP at their defaults whatever pytest runs under (a CI
    job may ignore SIGINT; a suite started with ``nohup`` ignores SIGHUP, which its children inherit).
    ``nohup``: SIGHUP ignored, as ``nohup specsweep run ...`` starts it."""
    tag = uuid.uuid4().hex
    path = tmp / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    results = tmp / "results"
    env = {**os.environ, TAG_VAR: tag}
    cmd = [
        sys.executable,
        "-m",
        "specsweep",
        "run",
        str(path),
        "--results-dir",
        str(results),
        "--quiet",
        *args,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        preexec_fn=functools.partial(_job_signals, signal.SIG_IGN if nohup else signal.SIG_DFL),
    )  # fmt: skip
    return proc, tag, results


def _job_signals(hup: signal.Handlers) -> None:
    """In the child: SIGINT at its default (a terminal's job), SIGHUP as given (SIG_IGN: nohup)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, hup)


def finish(proc: subprocess.Popen[str], tag: str, results: Path, timeout_s: float, t0: float) -> Result:
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        kill_tagged(tag)
        raise AssertionError(f"specsweep run did not end by itself within {timeout_s} s") from None
    runs = sorted(results.iterdir()) if results.exists() else []
    assert len(runs) == 1, f"expected one run dir in {results}, got {runs}; stderr:\n{err}"
    return Result(proc.returncode, err, time.monotonic() - t0, RunDir.open(runs[0]), tag)


def run(exp: dict[str, Any], tmp: Path, *, timeout_s: float = 120.0) -> Result:
    t0 = time.monotonic()
    proc, tag, results = start(exp, tmp)
    return finish(proc, tag, results, timeout_s, t0)


def resume(res: Result, *, timeout_s: float = 120.0) -> Result:
    tag = uuid.uuid4().hex
    env = {**os.environ, TAG_VAR: tag}
    cmd = [sys.executable, "-m", "specsweep", "run", "--resume", str(res.run_dir.path), "--quiet"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    return Result(p.returncode, p.stderr, time.monotonic() - t0, res.run_dir, tag)


# ---- processes ---------------------------------------------------------------------------------
def tagged_pids(tag: str) -> list[int]:
    """Live processes whose environment carries the run's tag (zombies count as gone)."""
    needle = f"{TAG_VAR}={tag}".encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in env.split(b"\0"):
            out.append(int(d))
    return out


def kill_tagged(tag: str) -> None:
    for pid in tagged_pids(tag):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def assert_no_process_left(tag: str, grace_s: float = 2.0) -> None:
    deadline = time.monotonic() + grace_s
    while (left := tagged_pids(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        cmds = []
        for pid in left:
            try:
                cmds.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
            except OSError:
                cmds.append("?")
        kill_tagged(tag)
        raise AssertionError(f"processes left behind: {list(zip(left, cmds, strict=True))}")


# ---- invariants --------------------------------------------------------------------------------
def check_invariants(
    res: Result, *, warmup: int = 1, manifest_status: tuple[str, ...] = ("finished", "interrupted")
) -> list[dict[str, Any]]:
    """What holds after any fault: no process left, the run dir reloads, each finished cell's
    records reload and agree with its summary, each failed cell says why."""
    assert_no_process_left(res.tag)
    m = res.run_dir.manifest
    assert m["status"] in manifest_status, m["status"]
    rows = res.rows
    keys = [(r["cell_id"], r["repeat"]) for r in rows]
    assert len(keys) == len(set(keys)), f"a cell was stored twice: {keys}"
    plan = {p["cell_id"]: p for p in m["plan"]}
    for r in rows:
        assert r["cell_id"] in plan
        assert r["status"] in ("ok", "invalid", "failed"), r["status"]
        if r["status"] == "failed":
            assert isinstance(r.get("error"), str) and r["error"].strip(), r
            continue
        recs = res.run_dir.read_records(r["cell_id"], r["repeat"])
        measured = [x for x in recs if not x.is_warmup]
        assert len(measured) == plan[r["cell_id"]]["num_prompts"] == r["total"]
        assert len(recs) - len(measured) == warmup
        kinds = Counter(x.error_kind for x in measured if x.error_kind)
        assert set(kinds) <= set(ERROR_KINDS)
        assert dict(kinds) == dict(r["errors_by_kind"]), (kinds, r["errors_by_kind"])
        assert r["failed"] == sum(kinds.values()) and r["completed"] == r["total"] - r["failed"]
        for x in measured:
            if x.error_kind:
                assert x.error, "a failed request must carry its evidence"
    return rows


def record_errors(res: Result, row: dict[str, Any], *, warmup: bool | None = None) -> Counter[str]:
    recs = res.run_dir.read_records(row["cell_id"], row["repeat"])
    return Counter(x.error_kind for x in recs if x.error_kind and (warmup is None or x.is_warmup == warmup))
