"""Metrics against hand-computed fixtures and hypothesis invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.errors import UsageError
from specsweep.measure.metrics import compute_metrics, parse_goodput, per_token_itl_ms
from specsweep.measure.records import RequestRecord

MS = 1_000_000


def rec(i: int, send_ms: float, chunks: list[tuple[float, int]], *, prompt: int = 10, warm: bool = False,
        err: str | None = None, sched_ms: float | None = None) -> RequestRecord:  # fmt: skip
    r = RequestRecord(index=i, is_warmup=warm, worker=0, prompt_len=prompt, output_len=100,
                      scheduled_ns=int((send_ms if sched_ms is None else sched_ms) * MS))  # fmt: skip
    base = 1000.0  # monotonic clocks never read 0; send_ns == 0 means "never sent"
    r.scheduled_ns += int(base * MS)
    r.send_ns = int((send_ms + base) * MS)
    r.chunk_ns = [int((t + base) * MS) for t, _ in chunks]
    r.chunk_tokens = [n for _, n in chunks]
    r.output_tokens = sum(r.chunk_tokens)
    r.end_ns = r.chunk_ns[-1] if chunks else r.send_ns + 5 * MS
    r.error_kind = err
    return r


def test_hand_computed_two_requests() -> None:
    # A: send 0, chunks at 100 (1 tok), 130 (3 tok), 150 (1 tok) -> ttft 100, e2e 150, out 5
    #    tpot = 50/4 = 12.5; per-token itl: 10,10,10 (gap 30 / 3), 20 -> [10,10,10,20]
    # B: send 50, chunks at 250 (2 tok), 290 (2 tok) -> ttft 200, e2e 240, out 4
    #    tpot = 40/3; itl: 20,20
    a = rec(0, 0, [(100, 1), (130, 3), (150, 1)])
    b = rec(1, 50, [(250, 2), (290, 2)], sched_ms=0)
    m = compute_metrics([a, b, rec(9, 0, [(5, 1)], warm=True)])
    assert m["completed"] == 2 and m["failed"] == 0
    assert m["duration"] == pytest.approx(0.290)
    assert m["total_output_tokens"] == 9 and m["total_input_tokens"] == 20
    assert m["request_throughput"] == pytest.approx(2 / 0.290)
    assert m["output_throughput"] == pytest.approx(9 / 0.290)
    assert m["total_throughput"] == pytest.approx(29 / 0.290)
    assert m["mean_ttft_ms"] == pytest.approx(150)
    assert m["median_ttft_ms"] == pytest.approx(150)
    assert m["std_ttft_ms"] == pytest.approx(50)  # population std
    assert m["p99_ttft_ms"] == pytest.approx(100 + 0.99 * 100)
    assert m["mean_e2e_latency_ms"] == pytest.approx(195)
    assert m["mean_e2el_ms"] == m["mean_e2e_latency_ms"]
    assert m["mean_tpot_ms"] == pytest.approx((12.5 + 40 / 3) / 2)
    assert m["mean_itl_ms"] == pytest.approx(np.mean([10, 10, 10, 20, 20, 20]))
    assert m["max_itl_ms"] == pytest.approx(20)
    assert m["mean_chunk_latency_ms"] == pytest.approx(np.mean([30, 20, 40]))
    assert m["concurrency"] == pytest.approx((0.150 + 0.240) / 0.290)
    assert m["mean_queue_ms"] == pytest.approx(25)  # B waited 50 ms for a slot
    assert m["mean_tokens_per_chunk"] == pytest.approx((3 + 1 + 2) / 3)
    assert m["tokens_per_chunk_hist"] == {"1": 1, "2": 1, "3": 1}
    assert m["itl_mode"] == "per_token"


def test_failures_are_counted_by_kind_and_excluded() -> None:
    ok = rec(0, 0, [(10, 1), (20, 1)])
    bad = rec(1, 0, [(5, 1)], err="disconnect")
    bad2 = rec(2, 0, [], err="http_status")
    m = compute_metrics([ok, bad, bad2])
    assert m["completed"] == 1 and m["failed"] == 2
    assert m["errors_by_kind"] == {"disconnect": 1, "http_status": 1}
    assert m["mean_ttft_ms"] == pytest.approx(10)


def test_goodput() -> None:
    a = rec(0, 0, [(100, 1), (200, 1)])  # ttft 100, tpot 100
    b = rec(1, 0, [(10, 1), (20, 1)])  # ttft 10, tpot 10
    m = compute_metrics([a, b], goodput={"ttft": 50})
    assert m["request_goodput"] == pytest.approx(1 / 0.2)
    assert parse_goodput(["ttft:50 tpot:10", "e2el:900"]) == {"ttft": 50, "tpot": 10, "e2el": 900}
    with pytest.raises(UsageError, match="KEY one of"):
        parse_goodput(["itl:5"])
    with pytest.raises(UsageError, match="not a number"):
        parse_goodput(["ttft:fast"])


def test_per_token_itl_splits_chunks() -> None:
    r = rec(0, 0, [(10, 2), (40, 3), (41, 1)])
    assert per_token_itl_ms(r) == pytest.approx([10, 10, 10, 1])


chunk = st.tuples(st.floats(0.01, 500), st.integers(1, 8))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1000), st.lists(chunk, min_size=1, max_size=12)), min_size=1, max_size=12)
)
def test_invariants(reqs: list[tuple[float, list[tuple[float, int]]]]) -> None:
    records = []
    for i, (send, gaps) in enumerate(reqs):
        t, chunks = send, []
        for g, n in gaps:
            t += g
            chunks.append((t, n))
        records.append(rec(i, send, chunks))
    m = compute_metrics(records)
    for k in ("ttft", "tpot", "itl", "e2e_latency"):
        assert m[f"median_{k}_ms"] <= m[f"p90_{k}_ms"] + 1e-9 <= m[f"p99_{k}_ms"] + 2e-9
    assert m["mean_ttft_ms"] <= m["mean_e2e_latency_ms"] + 1e-9
    assert m["total_output_tokens"] == sum(n for _, g in reqs for _, n in g)
    # order of records does not matter
    m2 = compute_metrics(list(reversed(records)))
    for k in ("mean_itl_ms", "p99_e2e_latency_ms", "total_throughput", "mean_tpot_ms"):
        assert m2[k] == pytest.approx(m[k])
    # ITL entries sum to the decode time of every request
    total_decode = sum((r.chunk_ns[-1] - r.chunk_ns[0]) / MS for r in records)
    n_itl = sum(sum(r.chunk_tokens[1:]) for r in records)
    if n_itl:
        assert m["mean_itl_ms"] * n_itl == pytest.approx(total_decode, rel=1e-6, abs=1e-6)
