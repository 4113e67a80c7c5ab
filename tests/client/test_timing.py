"""The client against a real localhost server that streams a known schedule."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace

import pytest

from specsweep.bench import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.metrics import per_token_itl_ms
from specsweep.workload.scenarios import Scenario

from .scripted_server import ProcessServer, Script

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
