"""Waves and the share of a run at its target concurrency (specsweep.measure.steady), from raw records."""

from __future__ import annotations

import pytest

from specsweep.measure.records import RequestRecord
from specsweep.measure.steady import is_steady, steady_state, target_intervals, waves
from specsweep.sim.predict import predict_cell
from specsweep.sim.profile import load_profile
from specsweep.workload.scenarios import get_scenario

MS = 1_000_000


def rec(i: int, send_ms: float, end_ms: float, tokens: int = 10, prompt: int = 100) -> RequestRecord:
    send, end = int(send_ms * MS), int(end_ms * MS)
    step = (end - send) // tokens
    chunks = [send + step * (j + 1) for j in range(tokens)]
    chunks[-1] = end
    return RequestRecord(
        index=i, is_warmup=False, worker=0, prompt_len=prompt, output_len=tokens, scheduled_ns=send,
        send_ns=send, chunk_ns=chunks, chunk_tokens=[1] * tokens, end_ns=end, output_tokens=tokens,
    )  # fmt: skip


def test_waves_is_prompts_over_concurrency() -> None:
    assert waves(96, 96) == 1.0
    assert waves(768, 96) == 8.0
    assert waves(8, 1) == 8.0
    assert waves(100, None) is None


def test_share_at_target_counts_only_time_with_every_slot_busy() -> None:
    # c=2: two requests 0-100 and 0-40; the freed slot is refilled at 40 (40-100): two in flight
    # for the whole 0-100 span; then one more 100-150 alone (drain): 100 ms of 150 at target
    rs = [rec(0, 0, 100), rec(1, 0, 40), rec(2, 40, 150)]
    assert target_intervals(rs, 2) == [(0, 40 * MS), (40 * MS, 100 * MS)]
    out = steady_state(rs, 2)
    assert out["at_target_share"] == pytest.approx(100 / 150)
    assert out["steady_window_s"] == pytest.approx(0.1)


def test_one_wave_has_almost_no_time_at_target() -> None:
    # one wave of 4 with spread lengths: four in flight only until the first finishes
    rs = [rec(i, 0, 100 * (i + 1)) for i in range(4)]
    out = steady_state(rs, 4)
    assert out["at_target_share"] == pytest.approx(0.25)
    assert out["steady_requests"] == 0  # nothing was sent after the first wave
    assert out["steady_mean_ttft_ms"] is None


def test_never_at_target_has_no_window() -> None:
    out = steady_state([rec(0, 0, 100)], 4)
    assert out["at_target_share"] == 0.0
    assert out["steady_total_throughput"] is None


def test_window_throughput_counts_tokens_that_arrived_in_it() -> None:
    # c=1 back to back: all of it is at target; 30 tokens over 0.3 s; prompts at the run's ratio
    rs = [rec(0, 0, 100), rec(1, 100, 200), rec(2, 200, 300)]
    out = steady_state(rs, 1)
    assert out["at_target_share"] == pytest.approx(1.0)
    assert out["steady_output_throughput"] == pytest.approx(30 / 0.3, rel=0.05)
    assert out["steady_total_throughput"] == pytest.approx(30 * (1 + 300 / 30) / 0.3, rel=0.05)
    assert out["steady_requests"] == 2  # the ones sent after the first


def test_warmup_is_left_out() -> None:
    warm = rec(9, -500, -400)
    warm.is_warmup = True
    rs = [warm, rec(0, 0, 100)]
    assert steady_state(rs, 1)["at_target_share"] == pytest.approx(1.0)


def test_is_steady_needs_waves_and_share() -> None:
    assert is_steady(1.0, 0.2) is False
    assert is_steady(3.0, 0.8) is True
    assert is_steady(8.0, 0.4) is False
    assert is_steady(None, None) is None


def test_sim_predict_row_records_waves_and_steady_figures() -> None:
    prof, sc = load_profile("v4flash-dspark-st3"), get_scenario("stress_standard")
    burst = predict_cell(prof, sc, 96, num_prompts=96)
    steady = predict_cell(prof, sc, 96, num_prompts=288)
    assert burst["waves"] == 1.0 and steady["waves"] == 3.0
    assert burst["at_target_share"] < 0.3 < 0.7 < steady["at_target_share"]
    ref = predict_cell(prof, sc, 96)  # the reference's 768 prompts
    # the steady window at three waves is within 15% of the full span at eight; one wave is not
    assert steady["steady_total_throughput"] == pytest.approx(ref["total_throughput"], rel=0.15)
    assert steady["steady_mean_tpot_ms"] == pytest.approx(ref["mean_tpot_ms"], rel=0.15)
    assert burst["total_throughput"] > 1.5 * ref["total_throughput"]
