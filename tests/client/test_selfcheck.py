"""The self-check: stamp bounds -> how far TTFT/ITL could be off -> one verdict for 1 or N workers."""

from __future__ import annotations

import asyncio

import pytest

from specsweep.client.bench_types import BenchConfig
from specsweep.client.result import ServerSide, WorkerRun, build_outcome
from specsweep.client.selfcheck import ClientLoad, judge, measuring, shared_stamp_fraction, stamp_damage
from specsweep.measure.records import RequestRecord
from specsweep.workload.scenarios import Scenario


def _rec(chunk_ns: list[int], error: str | None = None) -> RequestRecord:
    r = RequestRecord(
        index=0, is_warmup=False, worker=0, prompt_len=1, output_len=len(chunk_ns), scheduled_ns=0
    )
    r.chunk_ns = chunk_ns
    r.error_kind = error
    return r


MS = 1_000_000


def test_shared_stamp_fraction_counts_consecutive_equal_arrivals_of_ok_streams() -> None:
    recs = [
        _rec([0, 10 * MS, 10 * MS, 30 * MS]),
        _rec([0, 0, 9 * MS]),
        _rec([7, 7, 7], error="disconnect"),
        _rec([9]),
    ]
    # (10,10) and (0,0) of 3 + 2 pairs; the failed and the one-chunk stream do not count
    assert shared_stamp_fraction(recs) == 2 / 5
    assert shared_stamp_fraction([]) == 0.0


def test_merges_in_streams_faster_than_the_resolution_are_not_damage() -> None:
    fast = _rec([0, 100_000, 100_000, 300_000, 300_000])  # chunks 0.1 ms apart: merges cost < 0.1 ms
    assert shared_stamp_fraction([fast]) == 0.0
    assert shared_stamp_fraction([fast], min_gap_ns=10_000) == 2 / 4


def _ok(index: int, send: int, chunks: list[int]) -> RequestRecord:
    r = _rec(chunks)
    r.index, r.send_ns, r.chunk_tokens = index, send, [1] * len(chunks)
    return r


def _stream(index: int, ttft_ms: float = 100.0, gap_ms: float = 20.0, n: int = 6) -> RequestRecord:
    return _ok(index, 0, [int((ttft_ms + k * gap_ms) * MS) for k in range(n)])


def test_no_bounds_no_damage() -> None:
    d = stamp_damage([_stream(i) for i in range(10)], {})
    assert d["requests_affected"] == 0 and d["ttft_p99_ms"] == 0.0 and d["itl_p99_ms"] == 0.0


def test_first_chunks_that_may_be_late_move_the_ttft_bounds() -> None:
    recs = [_stream(i, ttft_ms=100.0 + i) for i in range(100)]
    # 5 of 100 first chunks read with the second one: each may be up to 20 ms early of its stamp
    bounds = {i: [(0, 20 * MS)] for i in (95, 96, 97, 98, 99)}
    d = stamp_damage(recs, bounds)
    assert d["requests_affected"] == 5
    assert d["ttft_mean_ms"] == pytest.approx(1.0)  # 5 * 20 ms / 100
    # the slowest first chunks are the uncertain ones: the p99 could be the 94th instead of the 99th
    assert d["ttft_p99_ms"] == pytest.approx(5.0, abs=0.1)
    assert d["ttft_p50_ms"] == 0.0
    assert {r["index"] for r in d["requests"]} == {95, 96, 97, 98, 99}
    assert all(r["ttft_bound_ms"] == 20.0 for r in d["requests"])
    # the gap after an uncertain chunk may be longer by its bound: ITL moves too (5 of 500 gaps)
    assert d["itl_mean_ms"] == pytest.approx(5 * 20 / 500)
    assert 0.0 < d["itl_p99_ms"] < 1.0


def test_a_late_last_chunk_moves_itl_not_ttft() -> None:
    recs = [_stream(i) for i in range(50)]
    d = stamp_damage(recs, {3: [(4, 20 * MS)]})
    assert d["ttft_mean_ms"] == 0.0 and d["ttft_p99_ms"] == 0.0
    assert d["requests"] == [{"index": 3, "ttft_bound_ms": 0.0, "max_bound_ms": 20.0}]
    assert d["itl_mean_ms"] > 0.0


def _cfg() -> BenchConfig:
    return BenchConfig(base_url="http://127.0.0.1:1", scenario=Scenario(name="t", input_len=8, output_len=6))


def _runs(recs: list[RequestRecord], bounds: dict[int, list[tuple[int, int]]], k: int,
          load: ClientLoad) -> list[WorkerRun]:  # fmt: skip
    return [
        WorkerRun(worker=w, records=[r for r in recs if r.index % k == w], load=load, kernel=True,
                  bounds={i: b for i, b in bounds.items() if i % k == w})
        for w in range(k)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "case",
    ["exact", "damaged", "merged_on_time", "merged_but_harmless", "busy_cpu", "late_schedule", "starved"],
)
def test_one_and_two_workers_give_the_same_verdict_on_the_same_stamps(case: str) -> None:
    recs = [_stream(i, ttft_ms=100.0 + i) for i in range(100)]
    bounds: dict[int, list[tuple[int, int]]] = {}
    load = ClientLoad(cpu_s=0.2, wall_s=1.0, loop_lag_ms=[0.1] * 100, sched_lag_ms=[0.0])
    if case in ("damaged", "merged_on_time"):
        bounds = {i: [(0, 20 * MS)] for i in range(90, 100)}
    if case == "damaged":  # the client was late (a busy host): merged reads then move stamps
        load = ClientLoad(cpu_s=0.2, wall_s=1.0, loop_lag_ms=[5.0] * 100, sched_lag_ms=[0.0])
    if case == "merged_but_harmless":  # many chunk pairs shared a read, bounds tiny
        for r in recs[:10]:
            r.chunk_ns[2] = r.chunk_ns[1]
        bounds = {i: [(1, 1000)] for i in range(10)}
    if case == "busy_cpu":
        load = ClientLoad(cpu_s=0.95, wall_s=1.0, loop_lag_ms=[0.1], sched_lag_ms=[0.0])
    if case == "late_schedule":
        load = ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[0.1], sched_lag_ms=[30.0] * 10)
    if case == "starved":  # the loop waited for a CPU: said; the stamp bounds carry the verdict
        load = ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[0.1] * 100, cpu_wait_ms=[0.0] * 98 + [40.0] * 2)
    one = build_outcome(_cfg(), "m", "tok", ServerSide(), _runs(recs, bounds, 1, load)).result
    two = build_outcome(_cfg(), "m", "tok", ServerSide(), _runs(recs, bounds, 2, load)).result
    assert one["invalid"] == two["invalid"] == (case in ("damaged", "busy_cpu", "late_schedule"))

    def same(ws: list[str]) -> list[str]:  # the starved warning names the worst worker when there are several
        return [w.split(" (")[0] if w.startswith("client starved") else w for w in ws]

    assert same(one["warnings"]) == same(two["warnings"])
    assert (one["warnings"] != []) == (case in ("merged_but_harmless", "merged_on_time", "starved"))
    if case == "merged_on_time":  # an on-time client: the server wrote them together; said, not ruled
        assert "most likely events the server wrote together" in one["warnings"][0]
    assert one["stamp_error"] == two["stamp_error"]
    if case == "starved":
        assert "client starved" in one["warnings"][0] and one["self_check"]["cpu_wait_max_ms"] == 40.0
    if case == "damaged":
        assert one["invalid_reason"] == two["invalid_reason"]
        assert "arrival stamps could be off" in one["invalid_reason"]
        assert "10 requests" in one["invalid_reason"]
    if one["invalid"]:  # the reason names the same cause; with workers it also says which one
        assert one["invalid_reason"].split(" (")[0] == two["invalid_reason"].split(" (")[0]
    assert two["workers"] == 2 and len(two["self_check"]["per_worker"]) == 2


def test_read_time_stamps_are_judged_by_event_loop_lag() -> None:
    recs = [_stream(i) for i in range(10)]
    for lag, invalid, warned in ((0.2, False, False), (4.0, False, True), (40.0, True, False)):
        load = ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[lag] * 10)
        v = judge([load], False, recs, {})
        assert bool(v.reasons) == invalid and bool(v.warnings) == warned, lag
        assert v.stamp_error is None


def test_measuring_turns_gc_off_and_back_on() -> None:
    import gc

    async def go() -> tuple[bool, ClientLoad]:
        async with measuring() as load:
            inside = gc.isenabled()
            await asyncio.sleep(0.02)
        return inside, load

    assert gc.isenabled()
    inside, load = asyncio.run(go())
    assert not inside and gc.isenabled()
    assert load.wall_s >= 0.02 and load.loop_lag_ms


def test_a_kernel_stamped_run_with_responses_stamped_at_read_time_is_invalid() -> None:
    recs = [_stream(i) for i in range(10)]
    ok = judge([ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[0.1])], True, recs, {})
    lost = judge(
        [ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[0.1], read_time_responses=2)], True, recs, {}
    )
    assert not ok.reasons and ok.check["read_time_responses"] == 0
    assert lost.reasons == [
        "2 responses were stamped when read, not by the kernel (their arrival record was lost)"
    ]
    no_kernel = judge(
        [ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[0.1], read_time_responses=2)], False, recs, {}
    )
    assert not no_kernel.reasons  # read-time stamps are the norm there, judged by loop lag
