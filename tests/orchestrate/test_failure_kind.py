"""Every way a cell fails in orchestrate.run_config gives it a machine-readable failure_kind."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from specsweep.client.bench import BenchConfig, BenchOutcome
from specsweep.measure.records import RequestRecord
from specsweep.orchestrate import FAILURE_KINDS, create_run_dir, execute

from .helpers import fake_argv
from .test_grid import Events, make_plan, no_children_left

pytestmark = pytest.mark.slow


def test_failure_kinds_of_a_grid(tmp_path: Path) -> None:
    plan = make_plan(
        servers=[
            {"name": "A", "kind": "command", "argv": fake_argv()},
            {"name": "B", "kind": "command", "argv": fake_argv("--fail-start")},
            {"name": "C", "kind": "command", "argv": fake_argv("--startup-delay", "30")},
        ],
        workloads=[{"scenarios": ["chat_short"], "concurrency": [1, 2, 3, 4, 5, 6, 7], "num_prompts": 2}],
        timeouts={"ready_s": 4, "stop_s": 3, "cell_s": 1.5},
        max_restarts=1,
    )
    ev = Events()

    async def bench(cfg: BenchConfig) -> BenchOutcome:
        c = cfg.max_concurrency
        if c == 2:
            raise RuntimeError("tokenizer 'nope' not found")
        if c == 3:
            return BenchOutcome({"completed": 0, "failed": 2, "errors_by_kind": {"connect": 2}}, [])
        if c in (4, 6):  # the server dies under the benchmark (twice: max_restarts 1 is then spent)
            os.kill(ev.pids()[-1], signal.SIGKILL)
            await asyncio.sleep(30)
        if c == 5:
            await asyncio.sleep(30)  # past timeouts.cell_s
        rec = RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=3, output_len=2, scheduled_ns=1)
        return BenchOutcome({"completed": cfg.num_prompts, "total_throughput": 10.0}, [rec])

    rd = create_run_dir(plan, tmp_path, None)
    out = execute(plan, rd, bench_fn=bench, observer=ev)
    kinds = {(r["server"], r["max_concurrency"]): r["failure_kind"] for r in out.rows}
    assert [kinds[("A", c)] for c in range(1, 8)] == [
        None,
        "bench_error",
        "all_requests_failed",
        "server_died",
        "cell_timeout",
        "server_died",
        "restarts_exhausted",
    ]
    assert {kinds[("B", c)] for c in range(1, 8)} == {"server_start"}
    assert {kinds[("C", c)] for c in range(1, 8)} == {"readiness_timeout"}
    for r in out.rows:
        assert (r["status"] == "failed") == (r["failure_kind"] is not None)
        assert r["failure_kind"] is None or r["failure_kind"] in FAILURE_KINDS
    no_children_left()

    # the report names the failure kinds where it lists the failures
    from specsweep.report import build_view, render

    view = build_view([rd.path], "sweep")
    md = render(view, "md", "en")
    assert "server_died: server exited with code -9 during the cell" in md
    assert "readiness_timeout: server C not ready after 4 s" in md
    failed = [c for c in view.cells if c.status == "failed"]
    assert len(failed) == 20 and all(c.error and c.error.split(":", 1)[0] in FAILURE_KINDS for c in failed)
    assert Counter(r["status"] for r in out.rows) == {"ok": 1, "failed": 20}
