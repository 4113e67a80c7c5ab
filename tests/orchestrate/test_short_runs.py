"""A shorter run of a cell (the racing design's) measures the cell's own first prompts: the same
requests, at the same positions, as a full run of the cell sends first."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from specsweep.client.bench import BenchConfig
from specsweep.client.runner import request_plan
from specsweep.executors.job import ConfigJob, RunDirSink, run_config
from specsweep.orchestrate import create_run_dir
from specsweep.workload.tokenizer import BuiltinTokenizer
from tests.orchestrate.test_grid import StandIn, make_plan, no_children_left

pytestmark = pytest.mark.slow


def test_a_shorter_run_sends_the_first_prompts_of_its_cell(tmp_path: Path) -> None:
    plan = make_plan(workloads=[{"scenarios": ["chat_short"], "concurrency": [2], "num_prompts": 16}])
    rd = create_run_dir(plan, tmp_path, None)
    cfg = plan.configs[0]
    cell = plan.cells[cfg.label][0]
    short = dataclasses.replace(cell, num_prompts=6)
    bench = StandIn()
    job = ConfigJob(cfg, plan, rd.path, runs=((short, 0), (cell, 1)), round=0)
    assert run_config(job, RunDirSink(rd), bench_fn=bench) == 2
    no_children_left()
    a, b = bench.calls
    assert (a.num_prompts, a.prompt_pool) == (6, 16)  # the short run: 6 of the cell's 16
    assert (b.num_prompts, b.prompt_pool) == (16, 16)
    assert [r.get("length") for r in rd.summary()] == [0.375, None]
    tok = BuiltinTokenizer()
    sent_short, _ = request_plan(a, tok)
    sent_full, _ = request_plan(b, tok)
    assert [(s.index, s.prompt, s.output_len) for s in sent_short] == [
        (s.index, s.prompt, s.output_len) for s in sent_full[:6]
    ]
    # without the pool, 6 requests of the same seed are other requests (their output lengths are drawn
    # after all the input lengths): what a short run measured before
    alone, _ = request_plan(dataclasses.replace(a, prompt_pool=None), tok)
    assert [s.output_len for s in alone] != [s.output_len for s in sent_full[:6]]


def test_a_pool_no_larger_than_the_run_changes_nothing() -> None:
    cfg = BenchConfig(
        base_url="http://127.0.0.1:1", scenario=make_plan().scenarios["chat_short"], num_prompts=5
    )
    tok = BuiltinTokenizer()
    plain, _ = request_plan(cfg, tok)
    for pool in (3, 5):
        same, _ = request_plan(dataclasses.replace(cfg, prompt_pool=pool), tok)
        assert [(s.prompt, s.output_len) for s in same] == [(s.prompt, s.output_len) for s in plain]
