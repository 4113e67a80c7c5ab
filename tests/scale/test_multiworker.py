"""Multi-process load generation: shares, clock offsets, merged runs against a real localhost server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specsweep.client.bench import BenchConfig, run_bench
from specsweep.client.multiworker import (
    ClockSample,
    best_sample,
    clock_sample,
    plan_shares,
    run_multiworker_async,
    shift_record,
)
from specsweep.client.runner import run_bench_async
from specsweep.errors import MissingDependency
from specsweep.measure.records import RequestRecord
from specsweep.workload.scenarios import Scenario

from .conftest import CHUNKS, GAP_MS

pytestmark = pytest.mark.slow


# ---- pure parts --------------------------------------------------------------------------------
@given(
    n=st.integers(1, 300),
    conc=st.one_of(st.none(), st.integers(1, 64)),
    workers=st.integers(1, 9),
    warmup=st.integers(0, 20),
)
def test_shares_cover_every_request_once(n: int, conc: int | None, workers: int, warmup: int) -> None:
    shares = plan_shares(n, conc, workers, warmup)
    k = len(shares)
    assert 1 <= k <= min(workers, n, conc or n)
    flat = [i for s in shares for i in s.indices]
    assert sorted(flat) == list(range(n))
    assert all(list(s.indices) == sorted(s.indices) and s.indices for s in shares)
    if conc is not None:
        assert sum(s.concurrency or 0 for s in shares) == conc
        assert max(s.concurrency or 0 for s in shares) - min(s.concurrency or 0 for s in shares) <= 1
    else:
        assert all(s.concurrency is None for s in shares)
    if warmup:
        assert all(s.warmup >= 1 for s in shares) and sum(s.warmup for s in shares) >= warmup


def test_shares_follow_concurrency_slots() -> None:
    # C=3 over 2 workers: slots 0,2 -> worker 0, slot 1 -> worker 1; request i sits in slot i % 3.
    a, b = plan_shares(9, 3, 2)
    assert (a.concurrency, b.concurrency) == (2, 1)
    assert a.indices == (0, 2, 3, 5, 6, 8) and b.indices == (1, 4, 7)
    # Open loop without a limit: round robin.
    assert [s.indices for s in plan_shares(5, None, 2)] == [(0, 2, 4), (1, 3)]


def test_clock_sample_and_least_rtt() -> None:
    # Driver sends at 1000, worker reads 5600 on its clock, reply back at 1200: offset = 5600 - 1100.
    assert clock_sample(1000, 5600, 1200) == ClockSample(offset_ns=4500, rtt_ns=200)
    samples = [ClockSample(10, 900), ClockSample(4, 80), ClockSample(7, 300)]
    assert best_sample(samples) == ClockSample(4, 80)


def test_shift_record_moves_every_timestamp_but_unset_ones() -> None:
    r = RequestRecord(index=0, is_warmup=False, worker=1, prompt_len=1, output_len=2, scheduled_ns=100,
                      send_ns=110, headers_ns=0, chunk_ns=[120, 130], chunk_tokens=[1, 1], end_ns=140)  # fmt: skip
    shift_record(r, 100)
    assert (r.scheduled_ns, r.send_ns, r.headers_ns, r.chunk_ns, r.end_ns) == (0, 10, 0, [20, 30], 40)
    assert r.ttft_ns == 10 and r.e2e_ns == 20  # durations do not change


def test_ray_workers_without_ray_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    from specsweep.client.multiworker import _ray
    from specsweep.executors.ray_executor import import_ray

    for fn in (_ray, import_ray):
        with pytest.raises(MissingDependency, match=r"pip install 'specsweep\[ray\]'"):
            fn()


# ---- against a real localhost server -----------------------------------------------------------
def _cfg(url: str, workers: int, **kw: object) -> BenchConfig:
    sc = Scenario(name="firehose", input_len=8, output_len=CHUNKS, range_ratio=1.0)
    base: dict[str, object] = dict(base_url=url, scenario=sc, backend="vllm", model="firehose", num_prompts=48,
                                   max_concurrency=8, warmup_requests=8, warmup_sleep_s=0.0,
                                   scrape_metrics=False, quiet=True, workers=workers)  # fmt: skip
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


@pytest.mark.timing  # TPOT, TTFT and clock round trips within milliseconds: runs alone
def test_two_workers_measure_what_one_does(firehose: str) -> None:
    one = asyncio.run(run_bench_async(_cfg(firehose, 1)))
    two = run_bench(_cfg(firehose, 2))  # run_bench dispatches on workers
    r1, r2 = one.result, two.result
    assert r2["workers"] == 2
    assert r1["completed"] == r2["completed"] == 48 and r2["failed"] == 0
    assert r1["send_stamps"] == r2["send_stamps"] == ("kernel" if sys.platform == "linux" else "call")
    assert r1["total_output_tokens"] == r2["total_output_tokens"] == 48 * CHUNKS
    measured = [r for r in two.records if not r.is_warmup]
    assert sorted(r.index for r in measured) == list(range(48))
    assert {r.worker for r in measured} == {0, 1}
    # TPOT is the server's chunk gap by construction; both must see it.
    for r in (r1, r2):
        assert r["median_tpot_ms"] == pytest.approx(GAP_MS, rel=0.15), r
    assert r2["median_tpot_ms"] == pytest.approx(r1["median_tpot_ms"], rel=0.1)
    assert r2["median_ttft_ms"] < GAP_MS * 3 and r1["median_ttft_ms"] < GAP_MS * 3
    # One result type and one self-check: the same keys, warnings and stamp bounds either way.
    assert set(r1) <= set(r2) and set(r2) - set(r1) == {"workers"}
    assert set(r1["self_check"]) <= set(r2["self_check"])
    for r in (r1, r2):
        assert isinstance(r["warnings"], list) and r["arrival_stamps"] in ("kernel", "read")
        if r["arrival_stamps"] == "kernel":
            assert r["stamp_error"] is not None and "ttft_p99_ms" in r["stamp_error"]
        assert r["invalid"] == bool(r["invalid_reason"])
    # Same host, one CLOCK_MONOTONIC: the measured offset is ~0, within its own error bound.
    for w in r2["self_check"]["per_worker"]:
        assert abs(w["clock_offset_ns"]) <= w["clock_rtt_ns"] / 2 + 50_000, w
        assert w["clock_rtt_ns"] < 20_000_000


@pytest.mark.timing  # the merged run's TPOT and duration: runs alone
def test_skewed_worker_clocks_are_removed(firehose: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers whose clocks read 7 s ahead and 3 s behind: offsets are measured and removed, so the
    merged run has the same timeline and metrics as unskewed clocks."""
    monkeypatch.setenv("SPECSWEEP_WORKER_CLOCK_SKEW_NS", f"{7 * 10**9},{-3 * 10**9}")
    out = asyncio.run(run_multiworker_async(_cfg(firehose, 2)))
    res = out.result
    per = {w["worker"]: w for w in res["self_check"]["per_worker"]}
    assert per[0]["clock_offset_ns"] == pytest.approx(7e9, abs=1e6)
    assert per[1]["clock_offset_ns"] == pytest.approx(-3e9, abs=1e6)
    assert res["completed"] == 48
    assert res["median_tpot_ms"] == pytest.approx(GAP_MS, rel=0.15)
    assert res["median_ttft_ms"] < GAP_MS * 3
    # Unshifted, the run would last > 10 s; merged on one clock it lasts about 6 rounds x 12 chunks.
    assert res["duration"] < 5.0, res["duration"]
    measured = [r for r in out.records if not r.is_warmup]
    sends = {w: [r.send_ns for r in measured if r.worker == w] for w in (0, 1)}
    assert abs(min(sends[0]) - min(sends[1])) < 50e6  # both started at one driver instant


def test_bench_cli_workers(firehose: str, tmp_path: Path, specsweep_cmd: list[str]) -> None:
    out = tmp_path / "o.jsonl"
    base = [*specsweep_cmd, "bench", "--backend", "vllm", "--base-url", firehose, "--model", "firehose",
            "--random-input-len", "8", "--random-output-len", str(CHUNKS), "--random-range-ratio", "1",
            "--num-prompts", "16", "--max-concurrency", "4", "--disable-spec-metrics", "--quiet"]  # fmt: skip
    r = subprocess.run([*base, "--workers", "2", "--output-file", str(out)], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode in (0, 5), r.stderr  # 5: the busy machine made the client self-check fail
    res = orjson.loads(out.read_bytes().splitlines()[-1])
    assert (res["workers"], res["completed"]) == (2, 16)
    bad = subprocess.run([*base, "--workers", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--workers must be > 0, got 0" in bad.stderr
