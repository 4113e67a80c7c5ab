"""Grids through the library with a stand-in benchmark (real local server processes)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from specsweep.client.bench import BenchConfig, BenchOutcome
from specsweep.errors import UsageError
from specsweep.experiment.config import Plan, plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.measure.records import RequestRecord
from specsweep.orchestrate import create_run_dir, execute, load_run_plan, run_dir_lock
from specsweep.store.run_dir import RunDir, log_file_name

from .helpers import FAKE, descendants, fake_argv, pid_alive

pytestmark = pytest.mark.slow


def make_plan(*, repeats: int = 1, fail_second: bool = False, **over: Any) -> Plan:
    second = fake_argv("--fail-start") if fail_second else fake_argv()
    data: dict[str, Any] = {
        "name": "grid",
        "servers": [
            {
                "name": "A",
                "kind": "command",
                "method": "dspark",
                "argv": [*fake_argv(), "--tag", "{st}"],
                "grid": {"st": [3, 5]},
            },
            {"name": "B", "kind": "command", "method": "eagle", "argv": second},
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 2], "num_prompts": 4}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "repeats": repeats,
        "timeouts": {"ready_s": 20, "stop_s": 5},
        "report": {"enabled": False},  # reports are the report library's tests (and take seconds)
    }
    data.update(over)
    return plan_experiment(parse_experiment(data))


class StandIn:
    """A benchmark stand-in: sleeps, returns one record; hooks can kill or interrupt."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.calls: list[BenchConfig] = []
        self.before: Any = None  # callable(call_index) run at the start of a call

    async def __call__(self, cfg: BenchConfig) -> BenchOutcome:
        self.calls.append(cfg)
        if self.before:
            self.before(len(self.calls))
        await asyncio.sleep(self.delay)
        rec = RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=3, output_len=2, scheduled_ns=1)
        result = {"completed": cfg.num_prompts, "total_throughput": 123.0, "concurrency": 0.97}
        return BenchOutcome(result=result, records=[rec])


class Events:
    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        self.log.append((event, data))

    def pids(self) -> list[int]:
        return [d["pid"] for e, d in self.log if e == "server_ready"]


def no_children_left() -> None:
    """No fake server of ours survives (other tests' session fixtures may hold other children)."""
    left = []
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if FAKE.encode() in f.read():
                    left.append(pid)
        except OSError:
            continue
    assert left == [], "a server process survived"


def test_grid_writes_every_cell(tmp_path: Path) -> None:
    plan = make_plan(repeats=2)
    rd = create_run_dir(plan, tmp_path, None)
    bench, ev = StandIn(), Events()
    out = execute(plan, rd, bench_fn=bench, observer=ev)
    assert out.counts == {"ok": 12}
    rows = rd.summary()
    assert len(rows) == 12
    assert Counter((r["cell_id"], r["repeat"]) for r in rows) == {
        (c.cell_id, r): 1 for c in plan.all_cells() for r in range(2)
    }
    r0 = rows[0]
    assert r0["label"] == "A(st=3)" and r0["method"] == "dspark" and r0["params"] == {"st": 3}
    assert r0["server"] == "A" and r0["scenario"] == "chat_short" and r0["max_concurrency"] == 1
    assert r0["concurrency"] == 0.97  # the bench's own key stays as it is
    assert r0["status"] == "ok" and r0["error"] is None and r0["server_version"] == "fake-1.2.3"
    assert rd.read_records(r0["cell_id"], 0)[0].prompt_len == 3
    # interleaved rounds: each config launched once per round, the order alternating; bench
    # configs carry the cell
    assert len(ev.pids()) == 6
    starts = [d["label"] for e, d in ev.log if e == "server_start"]
    assert starts == ["A(st=3)", "A(st=5)", "B", "B", "A(st=5)", "A(st=3)"]
    assert [r["round"] for r in rows] == [r["repeat"] for r in rows] == [0] * 6 + [1] * 6
    assert [r["seq"] for r in rows] == list(range(12))
    assert bench.calls[0].max_concurrency == 1 and bench.calls[0].num_prompts == 4
    assert bench.calls[0].backend == "openai" and bench.calls[0].model == "fake-model"
    m = rd.manifest
    assert m["status"] == "finished" and m["ended_at"] and m["schema_version"] == 1
    assert [p["cell_id"] for p in m["plan"]] == [c.cell_id for c in plan.all_cells()]
    assert m["config"]["servers"][0]["grid"] == {"st": [3, 5]}
    srv = m["servers"]["A(st=5)"]
    assert srv["version"] == "fake-1.2.3" and srv["argv"][-2:] == ["--tag", "5"] and len(srv["launches"]) == 2
    assert {p.name for p in (rd.path / "logs").iterdir()} == {
        log_file_name(x) for x in ("A(st=3)", "A(st=5)", "B")
    }
    no_children_left()


def test_server_killed_mid_cell_fails_that_cell_and_restarts(tmp_path: Path) -> None:
    plan = make_plan()
    rd = create_run_dir(plan, tmp_path, None)
    bench, ev = StandIn(), Events()

    def kill_on_second(n: int) -> None:
        if n == 2:  # A(st=3), concurrency 2: the server dies under the benchmark
            os.kill(ev.pids()[-1], signal.SIGKILL)
            bench.delay = 30.0  # the watcher must notice; the stand-in alone would hang

    def restore(n: int) -> None:
        kill_on_second(n)
        if n == 3:
            bench.delay = 0.05

    bench.before = restore
    out = execute(plan, rd, bench_fn=bench, observer=ev)
    rows = rd.summary()
    assert out.counts == {"ok": 5, "failed": 1}
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["label"] == "A(st=3)" and failed[0]["max_concurrency"] == 2
    assert "server exited with code -9 during the cell" in failed[0]["error"]
    assert "fakeserver listening" in failed[0]["log_tail"]
    # it died on its config's last cell: nothing to restart it for
    assert len(rd.manifest["servers"]["A(st=3)"]["launches"]) == 1
    assert not [e for e, _ in ev.log if e == "server_died"]
    no_children_left()


def test_restart_for_remaining_cells(tmp_path: Path) -> None:
    plan = make_plan(workloads=[{"scenarios": ["chat_short"], "concurrency": [1, 2, 3], "num_prompts": 3}])
    rd = create_run_dir(plan, tmp_path, None)
    bench, ev = StandIn(), Events()

    def before(n: int) -> None:
        if n == 1:
            os.kill(ev.pids()[-1], signal.SIGKILL)
            bench.delay = 30.0
        elif n == 2:
            bench.delay = 0.05

    bench.before = before
    execute(plan, rd, bench_fn=bench, observer=ev)
    rows = [r for r in rd.summary() if r["label"] == "A(st=3)"]
    assert [r["status"] for r in rows] == ["failed", "ok", "ok"]
    assert ("server_died", {"label": "A(st=3)", "returncode": -9}) in ev.log
    launches = rd.manifest["servers"]["A(st=3)"]["launches"]
    assert len(launches) == 2 and launches[0]["returncode"] == -9
    log = (rd.path / "logs" / log_file_name("A(st=3)")).read_text()
    assert "launch 2 of A(st=3)" in log
    no_children_left()


def test_launch_failure_fails_its_cells_and_grid_goes_on(tmp_path: Path) -> None:
    plan = make_plan(fail_second=True)
    rd = create_run_dir(plan, tmp_path, None)
    out = execute(plan, rd, bench_fn=StandIn(), observer=Events())
    assert out.counts == {"ok": 4, "failed": 2}
    for r in rd.summary():
        if r["label"] == "B":
            assert r["status"] == "failed" and "exited with code 3 before it was ready" in r["error"]
            assert "cannot load model weights" in r["log_tail"]
    no_children_left()


def test_invalid_and_bench_error_are_rows(tmp_path: Path) -> None:
    plan = make_plan(
        servers=[{"name": "A", "kind": "command", "argv": fake_argv()}],
        workloads=[{"scenarios": ["chat_short"], "concurrency": [1, 2, 3, 4], "num_prompts": 4}],
    )
    rd = create_run_dir(plan, tmp_path, None)

    async def bench(cfg: BenchConfig) -> BenchOutcome:
        if cfg.max_concurrency == 1:
            return BenchOutcome(
                result={"completed": 4}, records=[], invalid_reason="client was the bottleneck"
            )
        if cfg.max_concurrency == 2:
            raise RuntimeError("all requests failed: connect")
        if cfg.max_concurrency == 3:
            raise TimeoutError()
        return BenchOutcome(
            result={"completed": 0, "failed": 4, "errors_by_kind": {"http_status": 4}}, records=[]
        )

    execute(plan, rd, bench_fn=bench)
    a, b, c, d = rd.summary()
    assert a["status"] == "invalid" and a["invalid_reason"] == "client was the bottleneck"
    assert b["status"] == "failed" and b["error"] == "all requests failed: connect"
    assert c["status"] == "failed" and c["error"] == "TimeoutError"  # never an empty error
    # the server lives, but nothing was measured: a failed cell (resume retries it)
    assert d["status"] == "failed" and d["error"] == "every request failed: {'http_status': 4}"
    assert d["failed"] == 4


def test_cell_timeout(tmp_path: Path) -> None:
    plan = make_plan(
        servers=[{"name": "A", "kind": "command", "argv": fake_argv()}],
        timeouts={"ready_s": 20, "stop_s": 5, "cell_s": 0.5},
    )
    rd = create_run_dir(plan, tmp_path, None)
    execute(plan, rd, bench_fn=StandIn(delay=30))
    rows = rd.summary()
    assert [r["status"] for r in rows] == ["failed", "failed"]
    assert "timeouts.cell_s = 0.5 s" in rows[0]["error"]


def test_interrupt_then_resume_redoes_only_missing(tmp_path: Path) -> None:
    plan = make_plan(repeats=2)
    rd = create_run_dir(plan, tmp_path, None)
    bench, ev = StandIn(), Events()

    def interrupt(n: int) -> None:
        if n == 5:  # Ctrl-C during the fifth benchmark, delivered as the real signal
            signal.raise_signal(signal.SIGINT)

    bench.before = interrupt
    with pytest.raises(KeyboardInterrupt):
        execute(plan, rd, bench_fn=bench, observer=ev)
    assert all(not pid_alive(p) for p in ev.pids())
    no_children_left()
    assert rd.manifest["status"] == "interrupted"
    assert len(rd.summary()) == 4
    # resume: from the manifest alone
    rd2 = RunDir.open(rd.path)
    plan2 = load_run_plan(rd2)
    bench2 = StandIn()
    execute(plan2, rd2, bench_fn=bench2)
    assert len(bench2.calls) == 12 - 4
    keys = Counter((r["cell_id"], r["repeat"]) for r in rd2.summary())
    assert set(keys.values()) == {1} and len(keys) == 12
    inv = rd2.manifest["invocations"]
    assert [i["status"] for i in inv] == ["interrupted", "finished"] and inv[1]["resumed"]
    # nothing left: resuming again starts no server
    ev3 = Events()
    execute(plan2, rd2, bench_fn=StandIn(), observer=ev3)
    assert ev3.pids() == []
    no_children_left()


def test_one_runner_per_run_dir(tmp_path: Path) -> None:
    plan = make_plan(servers=[{"name": "A", "kind": "command", "argv": fake_argv()}])
    rd = create_run_dir(plan, tmp_path, None)
    with (
        run_dir_lock(rd),
        pytest.raises(UsageError, match=rf"in use by another specsweep run \(pid {os.getpid()}\)"),
    ):
        execute(plan, rd, bench_fn=StandIn())
    assert rd.summary() == []
    execute(plan, rd, bench_fn=StandIn())  # the lock went with its holder
    assert len(rd.summary()) == 2
