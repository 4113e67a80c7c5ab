"""execute() keeps no finished cell in memory: rows live in summary.jsonl and are read back from it."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from specsweep.client.bench import BenchConfig, BenchOutcome
from specsweep.measure.records import RequestRecord
from specsweep.orchestrate import create_run_dir, execute

from .helpers import fake_argv
from .test_grid import make_plan

pytestmark = pytest.mark.slow


class Blob(dict):  # type: ignore[type-arg]
    """A result value that can be watched with a weakref (orjson writes it as a plain object)."""


class Watched:
    """A stand-in benchmark whose every result carries a Blob; the blobs are watched, never held."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref[Blob]] = []

    async def __call__(self, cfg: BenchConfig) -> BenchOutcome:
        await asyncio.sleep(0)
        blob = Blob(pad="x" * 1000, n=len(self.refs))
        self.refs.append(weakref.ref(blob))
        rec = RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=3, output_len=2, scheduled_ns=1)
        return BenchOutcome(result={"completed": cfg.num_prompts, "blob": blob}, records=[rec])

    def alive(self) -> int:
        gc.collect()
        return sum(r() is not None for r in self.refs)


def test_finished_cells_are_not_kept_in_memory(tmp_path: Path) -> None:
    plan = make_plan(
        servers=[{"name": "A", "kind": "command", "argv": fake_argv()}],
        workloads=[{"scenarios": ["chat_short"], "concurrency": [1, 2, 3, 4, 5, 6], "num_prompts": 2}],
        repeats=2,
    )
    bench = Watched()
    seen: list[int] = []

    def observer(event: str, data: dict[str, Any]) -> None:
        if event == "cell_done":
            seen.append(bench.alive())  # the row being announced holds its own blob, no other

    rd = create_run_dir(plan, tmp_path, None)
    out = execute(plan, rd, bench_fn=bench, observer=observer)
    assert len(bench.refs) == 12
    assert max(seen) <= 1, f"finished rows held while the grid ran: {seen}"
    assert bench.alive() == 0, "the outcome holds the rows"
    # ... and the outcome still has them, read back from the run dir
    assert out.counts == {"ok": 12}
    assert [r["blob"]["n"] for r in out.rows] == list(range(12))
    assert all(r["records"].startswith("records/") for r in out.rows)
