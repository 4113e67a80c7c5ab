"""sim predict: closed/open-loop client model, metrics, the linear trace shortcut, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specsweep.cli import main
from specsweep.sim.predict import (
    conditioned_lengths,
    predict_cell,
    predict_repeated,
    simulate,
    trace_design,
    trace_metrics,
)
from specsweep.sim.profile import load_profile
from specsweep.workload.lengths import sample_lengths
from specsweep.workload.scenarios import get_scenario

SGLANG_KEYS = (
    "duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput",
    "input_throughput", "output_throughput", "total_throughput", "concurrency",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
    "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_e2e_latency_ms", "median_e2e_latency_ms",
    "p99_e2e_latency_ms",
)  # fmt: skip


@pytest.mark.parametrize("conc", [1, 4, 16])
def test_closed_loop_cell(conc: int) -> None:
    prof = load_profile("toy")
    row = predict_cell(prof, get_scenario("chat_short"), conc, num_prompts=48)
    for key in SGLANG_KEYS:
        assert key in row, key
    assert row["completed"] == 48 and row["max_concurrency"] == conc
    ins, outs = sample_lengths(get_scenario("chat_short"), 48, 0)
    assert row["total_input_tokens"] == sum(ins) and row["total_output_tokens"] == sum(outs)
    # closed loop: Little's law, in-flight never above the limit
    assert row["concurrency"] <= conc + 1e-9
    assert row["concurrency"] > 0.5 * conc
    assert row["mean_ttft_ms"] <= row["mean_e2e_latency_ms"]
    assert row["accept_length"] == pytest.approx(1 + sum(prof.survival), rel=0.1)


def test_toy_is_fast_and_outputs_one_line_per_concurrency(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["sim", "predict", "--profile", "toy", "--scenario", "chat_short", "--concurrency", "1,4",
               "--num-prompts", "16", "--json"])  # fmt: skip
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = [json.loads(x) for x in lines]
    assert [r["max_concurrency"] for r in rows] == [1, 4]
    assert all(r["profile"] == "toy" and r["completed"] == 16 for r in rows)


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "predict", "--profile", "toy", "--scenario", "chat_short", "--concurrency", "2",
                 "--num-prompts", "8"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "toy" in out and "chat_short" in out


def test_bad_inputs_name_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "predict", "--profile", "nope", "--scenario", "chat_short"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and "toy" in err and "v4flash-dspark-st3" in err
    assert main(["sim", "predict", "--profile", "toy", "--scenario", "chat_short", "--concurrency", "0"]) == 2
    assert "--concurrency" in capsys.readouterr().err
    assert main(["sim", "predict", "--profile", "toy", "--scenario", "nope"]) == 2
    assert "chat_short" in capsys.readouterr().err


def test_repeats_average_seeded_runs_and_report_their_spread(capsys: pytest.CaptureFixture[str]) -> None:
    prof, sc = load_profile("toy"), get_scenario("chat_short")
    singles = [predict_cell(prof, sc, 4, num_prompts=12, seed=s) for s in (3, 4, 5)]
    row = predict_repeated(prof, sc, 4, repeats=3, num_prompts=12, seed=3)
    assert row["repeats"] == 3 and row["seed"] == 3 and row["num_prompts"] == 12
    for m in ("total_throughput", "mean_tpot_ms", "p99_ttft_ms", "accept_length"):
        vals = [r[m] for r in singles]
        assert len(set(vals)) > 1, m  # the seeds really differ, so the mean is not one of them
        assert row[m] == pytest.approx(float(np.mean(vals))), m
    tput = [r["total_throughput"] for r in singles]
    assert row["spread"]["total_throughput"] == pytest.approx(
        {"sd": float(np.std(tput, ddof=1)), "min": min(tput), "max": max(tput)}
    )
    per_pos = np.mean([r["spec_accept_per_pos"] for r in singles], axis=0)
    assert row["spec_accept_per_pos"] == pytest.approx(per_pos.tolist())
    assert predict_repeated(prof, sc, 4, repeats=1, num_prompts=12, seed=3) == singles[0]
    # the CLI: JSON keeps the sglang keys, the table shows the spread; a bad count is one clear error
    assert main(["sim", "predict", "--profile", "toy", "--scenario", "chat_short", "--concurrency", "4",
                 "--num-prompts", "12", "--seed", "3", "--repeats", "3", "--json"]) == 0  # fmt: skip
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert json.loads(line)["total_throughput"] == pytest.approx(row["total_throughput"])
    assert main(["sim", "predict", "--profile", "toy", "--scenario", "chat_short", "--concurrency", "4",
                 "--num-prompts", "12", "--repeats", "3"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "means of 3 runs" in out and "+-" in out
    assert main(["sim", "predict", "--profile", "toy", "--scenario", "chat_short", "--repeats", "0"]) == 2
    assert "--repeats 0" in capsys.readouterr().err


def test_deterministic_and_seed_dependent() -> None:
    prof, sc = load_profile("toy"), get_scenario("chat_short")
    a = predict_cell(prof, sc, 4, num_prompts=24, seed=1)
    b = predict_cell(prof, sc, 4, num_prompts=24, seed=1)
    c = predict_cell(prof, sc, 4, num_prompts=24, seed=2)
    assert a == b
    assert a["total_throughput"] != c["total_throughput"]


def test_linear_trace_equals_the_simulation() -> None:
    """What sim fit uses (metrics linear in the cost vector) is exactly what predict reports."""
    prof, sc = load_profile("toy"), get_scenario("rag_medium")
    prof = prof.model_copy(update={"kv_tokens": 10**6, "admit_delay_steps": 2})
    res = simulate(prof, sc, 6, num_prompts=30, keep_trace=True)
    assert res.trace is not None
    theta = np.asarray(prof.cost_vector())
    lin = trace_metrics(res.trace, theta)
    row = predict_cell(prof, sc, 6, num_prompts=30)
    for key in ("total_throughput", "mean_ttft_ms", "mean_tpot_ms"):
        assert lin[key] == pytest.approx(row[key], rel=1e-6)
    d, a, b, tokens = trace_design(res.trace)
    assert tokens / (d @ theta) * 1000 == pytest.approx(row["total_throughput"], rel=1e-6)
    assert a @ theta == pytest.approx(row["mean_ttft_ms"], rel=1e-6)
    assert b @ theta == pytest.approx(row["mean_tpot_ms"], rel=1e-6)


def test_open_loop_uses_the_schedule() -> None:
    prof, sc = load_profile("toy"), get_scenario("chat_short")
    slow = predict_cell(prof, sc, 64, num_prompts=40, request_rate=5.0)
    # 40 requests at 5 req/s take about 8 s; the engine is far from saturated
    assert slow["duration"] == pytest.approx(8.0, rel=0.35)
    assert slow["request_throughput"] == pytest.approx(5.0, rel=0.35)
    res = simulate(prof, sc, 64, num_prompts=40, request_rate=5.0)
    sched = [r.scheduled_ns for r in res.records]
    assert sched == sorted(sched) and len(set(sched)) == 40


def test_conditioned_lengths_hit_the_mean_within_bounds() -> None:
    sc = get_scenario("chat_short")
    ins, outs = conditioned_lengths(sc, 32, 0, mean_in=300.0, mean_out=100.0)
    assert np.mean(ins) == pytest.approx(300.0, abs=1.0) and np.mean(outs) == pytest.approx(100.0, abs=1.0)
    assert min(ins) >= 1 and max(ins) <= 512 and max(outs) <= 256
    assert conditioned_lengths(sc, 32, 0) == sample_lengths(sc, 32, 0)


def test_open_loop_simulates_the_schedule_bench_sends() -> None:
    """predict's open-loop arrivals are the client's: same rate, burstiness and seed, same offsets."""
    from specsweep.client.bench_types import BenchConfig
    from specsweep.client.runner import request_plan
    from specsweep.workload.tokenizer import BuiltinTokenizer

    prof, sc = load_profile("toy"), get_scenario("chat_short")
    for seed, rate, burst in ((3, 5.0, 1.0), (4, 20.0, 0.5)):
        cfg = BenchConfig(base_url="http://127.0.0.1:9", scenario=sc, num_prompts=40, max_concurrency=64,
                          request_rate=rate, burstiness=burst, seed=seed)  # fmt: skip
        _, offsets = request_plan(cfg, BuiltinTokenizer())
        assert offsets is not None
        res = simulate(prof, sc, 64, num_prompts=40, seed=seed, request_rate=rate, burstiness=burst)
        assert [r.scheduled_ns for r in res.records] == [round(o * 1e9) for o in offsets]


@pytest.mark.parametrize("scenario", ["chat_short", "rag_medium"])
def test_a_run_of_a_pool_predicts_the_first_requests_the_client_sends(scenario: str) -> None:
    """``pool``: the simulator's short run is the client's (the cell's first requests' lengths), not
    n other requests of the same seed."""
    prof, sc = load_profile("toy"), get_scenario(scenario)
    full = simulate(prof, sc, 4, num_prompts=24, seed=3)
    short = simulate(prof, sc, 4, num_prompts=8, seed=3, pool=24)
    plain = simulate(prof, sc, 4, num_prompts=8, seed=3)

    def reqs(res: object) -> list[tuple[int, int]]:
        return [(r.prompt_len, r.output_len) for r in res.records]  # type: ignore[attr-defined]

    assert reqs(short) == reqs(full)[:8] != reqs(plain)
    row = predict_cell(prof, sc, 4, num_prompts=8, seed=3, pool=24)
    assert row["num_prompts"] == 8 and row["total_input_tokens"] == sum(p for p, _ in reqs(full)[:8])
