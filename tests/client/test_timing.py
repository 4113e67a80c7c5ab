"""The client against a real localhost server that streams a known schedule."""

from __future__ import annotations

import asyncio
import itertools
import time
from types import SimpleNamespace

import pytest

from specsweep.client import kstamp
from specsweep.client.bench import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.measure.metrics import per_token_itl_ms
from specsweep.workload.scenarios import Scenario

from .scripted_server import ProcessServer, Script
from .stamped import stamped_pair

pytestmark = pytest.mark.timing  # client stamps against the server's write times: runs alone

SC = Scenario(name="t", input_len=16, output_len=11, range_ratio=1.0)
TOL_MS = 1.0


def _run(backend: str, script: Script, n: int = 4, conc: int = 2):  # type: ignore[no-untyped-def]
    with ProcessServer(script) as ps:
        cfg = BenchConfig(base_url=ps.url, scenario=SC, backend=backend, num_prompts=n, max_concurrency=conc,
                          scrape_metrics=False, quiet=True)  # fmt: skip
        out = asyncio.run(run_bench_async(cfg))
        writes, recv = ps.fetch()
    return out, SimpleNamespace(writes=writes, recv=recv)


def srv_recv_of(srv: object, writes: list[int]) -> int:
    recv = getattr(srv, "recv")  # noqa: B009
    return max(t for t in recv if t <= writes[0])


@pytest.mark.parametrize("backend", ["sglang", "vllm", "openai", "openai-chat", "sglang-oai"])
def test_measured_timing_matches_schedule(backend: str) -> None:
    # Precision is a property of the client on a host that schedules it: on a shared 2-core machine
    # another process can preempt it for milliseconds. One attempt out of three must meet the bound.
    errors: list[AssertionError] = []
    for _ in range(3):
        try:
            _check_timing(backend)
            return
        except AssertionError as e:
            errors.append(e)
    raise errors[-1]


def _check_timing(backend: str) -> None:
    script = Script()
    out, srv = _run(backend, script)
    recs = [r for r in out.records if not r.is_warmup]
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert len(srv.writes) == len(recs) == 4
    # The machine is shared and has 2 cores: a rare preemption can delay one read by several ms.
    # Timing must hold for the typical chunk (median within 1 ms) and never be wildly off.
    all_lat: list[float] = []
    gap_err: list[float] = []
    # pair records with server writes by send order
    recs.sort(key=lambda r: r.send_ns)
    for rec, writes in zip(recs, sorted(srv.writes, key=lambda w: w[0]), strict=True):
        assert len(rec.chunk_ns) == len(writes)
        # client arrival minus server write time: small and positive (same clock: one machine)
        lat = [(c - w) / 1e6 for c, w in zip(rec.chunk_ns, writes, strict=True)]
        all_lat.extend(lat)
        # measured gaps equal the server's actual write gaps within 1 ms (ground truth, same clock)
        gaps = [(b - a) / 1e6 for a, b in zip(rec.chunk_ns, rec.chunk_ns[1:], strict=False)]
        true_gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(writes)]
        gap_err.extend(abs(g - want) for g, want in zip(gaps, true_gaps, strict=True))
        # and follow the script (server sleep jitter allowed)
        for g, want in zip(gaps, script.gaps_s, strict=True):
            assert abs(g - want * 1000) < 10.0, (g, want)
        assert rec.send_ns <= srv_recv_of(srv, writes)
        assert rec.output_tokens == sum(script.tokens)
        if backend != "openai-chat" and backend != "openai":
            assert rec.chunk_tokens == script.tokens
        # per-token ITL: each chunk of n tokens gives n entries of gap/n
        itl = per_token_itl_ms(rec)
        assert len(itl) == sum(script.tokens[1:]) or backend in ("openai", "openai-chat")
    all_lat.sort()
    gap_err.sort()
    assert all_lat[0] >= 0.0  # never before the server wrote it (one clock)
    assert all_lat[len(all_lat) // 2] < TOL_MS, all_lat
    assert gap_err[len(gap_err) // 2] < TOL_MS, gap_err
    assert all_lat[-1] < 50.0 and gap_err[-1] < 50.0
    res = out.result
    assert res["completed"] == 4 and res["failed"] == 0
    assert res["total_output_tokens"] == 4 * sum(script.tokens)
    # TPOT and ITL against the server's truth
    true_tpot = [(w[-1] - w[0]) / 1e6 / (sum(script.tokens) - 1) for w in srv.writes]
    assert abs(res["median_tpot_ms"] - sorted(true_tpot)[len(true_tpot) // 2]) < TOL_MS + 0.5
    if backend in ("sglang", "vllm", "sglang-oai"):
        want_itl = sum((w[-1] - w[0]) / 1e6 for w in srv.writes) / len(srv.writes) / sum(script.tokens[1:])
        assert abs(res["mean_itl_ms"] - want_itl) < TOL_MS
        assert res["mean_tokens_per_chunk"] == pytest.approx(sum(script.tokens[1:]) / len(script.gaps_s))


async def _bench_with_stuck_loop(url: str, every_s: float, stuck_s: float):  # type: ignore[no-untyped-def]
    """One benchmark (4 requests, one at a time) while the client's own event loop is blocked for
    ``stuck_s`` after every ``every_s`` of sleep: nothing is read meanwhile."""
    done = asyncio.Event()

    async def hog() -> None:
        while not done.is_set():
            await asyncio.sleep(every_s)
            time.sleep(stuck_s)

    cfg = BenchConfig(base_url=url, scenario=SC, backend="vllm", num_prompts=4, max_concurrency=1,
                      scrape_metrics=False, quiet=True)  # fmt: skip
    h = asyncio.ensure_future(hog())
    try:
        return await run_bench_async(cfg)
    finally:
        done.set()
        await h


@pytest.mark.skipif(kstamp.SO_TIMESTAMPNS is None, reason="kernel receive stamps are Linux-only")
def test_busy_client_still_stamps_kernel_arrival_times() -> None:
    """A client whose event loop is stuck for 10 ms out of every 12 (as under hundreds of ready
    streams) would stamp most chunks several ms late at read time; with the kernel's receive stamps
    they stay within a millisecond of the server's write. (Chunks closer together than a stall would
    share the newest one's stamp: the kernel stamps a read, not each write; docs/metrics.md.)"""
    script = Script(ttft_s=0.03, gaps_s=[0.016, 0.021, 0.017, 0.025], tokens=[1, 2, 3, 1, 2])

    with ProcessServer(script) as ps:
        out = asyncio.run(_bench_with_stuck_loop(ps.url, every_s=0.002, stuck_s=0.01))
        writes, recv = ps.fetch()
    assert out.result["arrival_stamps"] == "kernel"
    assert out.result["send_stamps"] == "kernel"  # each request's send: the kernel's transmit stamp
    recs = sorted((r for r in out.records if not r.is_warmup), key=lambda r: r.send_ns)
    lat = []
    for rec, w in zip(recs, sorted(writes, key=lambda w: w[0]), strict=True):  # one at a time: in order
        assert len(rec.chunk_ns) == len(w)
        assert rec.send_ns <= srv_recv_of(SimpleNamespace(recv=recv), w)
        lat += [(c - t) / 1e6 for c, t in zip(rec.chunk_ns, w, strict=True)]
    lat.sort()
    assert lat[0] >= 0.0, lat  # never before the write
    assert lat[len(lat) // 2] < TOL_MS, lat
    assert lat[int(0.9 * len(lat))] < 3.0, lat  # rare preemption of the server between stamp and write


def test_stamped_socket_reports_kernel_arrival_of_newest_bytes() -> None:
    """Two sends 30 ms apart, read once 30 ms later: the read's stamp is the second arrival, not the
    read time; sends are stamped as they are handed over."""
    srv, c, s = stamped_pair()
    with c, s, srv:
        t0 = time.monotonic_ns()
        c.send(b"hi")
        assert t0 <= c.tx_ns <= time.monotonic_ns()
        s.send(b"a")
        time.sleep(0.03)
        t_second = time.monotonic_ns()
        s.send(b"b")
        time.sleep(0.03)
        t_read = time.monotonic_ns()
        assert c.recv(100) == b"ab"
        if kstamp.SO_TIMESTAMPNS is None:
            assert c.rx_ns >= t_read
            return
        assert c.kernel
        assert t_second - 1_000_000 <= c.rx_ns < t_read - 20_000_000


@pytest.mark.skipif(kstamp.SO_TIMESTAMPNS is None, reason="kernel receive stamps are Linux-only")
def test_chunks_read_together_carry_a_bound_that_holds_the_truth() -> None:
    """A client stuck for 30 ms at a time reads chunks written 8-12 ms apart together: they share
    the newest stamp (the kernel merges queued segments). Each such chunk must carry a bound, the
    server's write must lie within [stamp - bound, stamp], and the run is invalid with the reason."""
    script = Script(ttft_s=0.02, gaps_s=[0.008, 0.012, 0.009, 0.011], tokens=[1, 1, 1, 1, 1])

    with ProcessServer(script) as ps:
        out = asyncio.run(_bench_with_stuck_loop(ps.url, every_s=0.001, stuck_s=0.03))
        writes, _ = ps.fetch()
    recs = sorted((r for r in out.records if not r.is_warmup), key=lambda r: r.send_ns)
    bounded = 0
    for rec, w in zip(recs, sorted(writes, key=lambda w: w[0]), strict=True):
        b = dict(out.stamp_bounds.get(rec.index, []))
        assert (rec.chunk_bound_ns or [0] * len(rec.chunk_ns)) == [
            b.get(j, 0) for j in range(len(rec.chunk_ns))
        ]
        for j, (c, t) in enumerate(zip(rec.chunk_ns, w, strict=True)):
            assert c >= t, (j, c, t)  # a kernel stamp is never before the write
            assert c - b.get(j, 0) <= t + 2_000_000, (j, (c - t) / 1e6, b.get(j, 0) / 1e6)
            bounded += j in b
    assert bounded >= 4  # the stuck client did merge reads
    res = out.result
    assert res["invalid"] and "arrival stamps could be off" in res["invalid_reason"]
    assert res["stamp_error"]["requests_affected"] >= 1 and res["stamp_error"]["requests"]


def test_stamped_socket_bounds_older_bytes_of_a_merged_read() -> None:
    """Bytes read together arrived no earlier than the last read that drained the socket began."""
    srv, c, s = stamped_pair()
    with c, s, srv:
        s.send(b"a")
        time.sleep(0.01)
        before_drain = time.monotonic_ns()
        assert c.recv(100) == b"a"  # drains the socket
        time.sleep(0.01)
        t_b = time.monotonic_ns()
        s.send(b"b")
        time.sleep(0.02)
        s.send(b"c")
        time.sleep(0.01)
        assert c.recv(100) == b"bc"
        assert before_drain <= c.rx_floor_ns <= t_b  # "b" arrived in [floor, rx_ns]
        assert c.rx_ns >= t_b
