"""Streams follow the engine's schedule on the wall clock (time-scaled); ground truth and /metrics agree."""

from __future__ import annotations

import asyncio
import itertools
import statistics
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from specsweep.sim.engine import Engine
from specsweep.sim.server import start_server
from specsweep.sim.textgen import lossless_text

from .simhttp import SSE, make_profile, run, sse

pytestmark = pytest.mark.timing  # streams on the wall clock, late by milliseconds at most: runs alone


def _engine_schedule(profile: Any, seed: int, prompt_tokens: int, max_tokens: int) -> list[tuple[float, int]]:
    """(virtual end time, tokens) of each emission of one request alone in a fresh engine."""
    eng = Engine(profile, seed=seed)
    eng.add("r", prompt_tokens, max_tokens)
    out = []
    while not eng.idle:
        step = eng.step()
        assert step is not None
        out += [(step.end, e.n_tokens) for e in step.emissions]
    return out


@pytest.mark.parametrize("time_scale", [1.0, 4.0])
def test_chunks_arrive_on_the_engine_schedule(time_scale: float, tmp_path: Path) -> None:
    prof = make_profile(t0_ms=20.0)  # every step is 20 virtual ms
    truth = tmp_path / "truth.jsonl"
    body = {"text": "a b c d", "sampling_params": {"max_new_tokens": 24, "ignore_eos": True}, "stream": True}

    async def go() -> SSE:
        server = await start_server(prof, seed=5, time_scale=time_scale, truth=str(truth))
        async with server as h, aiohttp.ClientSession() as s:
            return await sse(s, h.url + "/generate", body)

    out = run(go())
    expected = _engine_schedule(prof, 5, 4, 24)
    objs = out.json()
    counts = [o["meta_info"]["completion_tokens"] for o in objs]
    # tokens per chunk are the engine's emissions, one chunk per step
    assert [b - a for a, b in zip([0, *counts], counts, strict=False)] == [n for _, n in expected]
    rec = orjson.loads(truth.read_text().splitlines()[0])
    assert rec["endpoint"] == "/generate" and rec["completion_tokens"] == 24 and rec["prompt_tokens"] == 4
    chunks = rec["chunks"]
    assert [c["tokens"] for c in chunks] == [n for _, n in expected]
    # the truth file's write times: on schedule, and just before the client saw each chunk
    late_ms = [(c["mono_ns"] - c["sched_mono_ns"]) / 1e6 for c in chunks]
    assert min(late_ms) >= 0 and statistics.median(late_ms) < 15.0, late_ms
    lag_ms = [(t - c["mono_ns"]) / 1e6 for t, c in zip(out.times_ns, chunks, strict=False)]
    assert min(lag_ms) >= 0 and statistics.median(lag_ms) < 15.0, lag_ms
    # the schedule: one step (scaled) between chunks, the first one a step after the request arrived
    step_ms = 20.0 / time_scale
    sched_gaps = [(b["sched_mono_ns"] - a["sched_mono_ns"]) / 1e6 for a, b in itertools.pairwise(chunks)]
    assert sched_gaps == pytest.approx([step_ms] * len(sched_gaps), abs=1e-3)
    first_ms = (chunks[0]["sched_mono_ns"] - rec["arrival_mono_ns"]) / 1e6
    assert step_ms <= first_ms < step_ms + 30
    # the client sees each chunk no earlier than scheduled, and typically within a few ms of it
    # (a busy 2-core machine delays single chunks: medians, not maxima)
    seen_late_ms = [(t - c["sched_mono_ns"]) / 1e6 for t, c in zip(out.times_ns, chunks, strict=False)]
    assert min(seen_late_ms) >= 0 and statistics.median(seen_late_ms) < 15.0, seen_late_ms
    ttft_ms = (out.times_ns[0] - out.sent_ns) / 1e6
    assert ttft_ms >= step_ms
    assert (
        abs(chunks[0]["epoch_ns"] - chunks[0]["mono_ns"] - (rec["arrival_epoch_ns"] - rec["arrival_mono_ns"]))
        < 5e6
    )


def test_truth_and_metrics_agree_with_the_streams(tmp_path: Path) -> None:
    """Concurrent streams: /metrics and /server_info counters equal what the chunks carried."""
    prof = make_profile(t0_ms=2.0, max_batch=4)  # 8 requests, 4 at a time: some wait
    truth = tmp_path / "truth.jsonl"

    async def go() -> tuple[list[SSE], str, dict[str, Any]]:
        async with await start_server(prof, seed=3, truth=str(truth)) as h, aiohttp.ClientSession() as s:
            bodies = [
                {"text": f"prompt number {i}", "sampling_params": {"max_new_tokens": 20 + i, "ignore_eos": True}, "stream": True}
                for i in range(8)
            ]  # fmt: skip
            outs = await asyncio.gather(*(sse(s, h.url + "/generate", b) for b in bodies))
            async with s.get(h.url + "/metrics") as r:
                metrics = await r.text()
            async with s.get(h.url + "/server_info") as r:
                info = await r.json()
        return list(outs), metrics, info

    outs, metrics, info = run(go())
    m = {}
    for line in metrics.splitlines():
        if line and not line.startswith("#") and "_created" not in line:
            name, value = line.rsplit(" ", 1)
            m[name.split("{")[0] + ("" if "position" not in name else name[name.index("position") :])] = (
                float(value)
            )
    finals = [o.json()[-1]["meta_info"] for o in outs]
    assert (
        m["vllm:generation_tokens_total"] == sum(f["completion_tokens"] for f in finals) == sum(range(20, 28))
    )
    assert m["vllm:prompt_tokens_total"] == sum(f["prompt_tokens"] for f in finals) == 8 * 3
    assert m["vllm:spec_decode_num_drafts_total"] == sum(f["spec_verify_ct"] for f in finals)
    assert m["vllm:spec_decode_num_draft_tokens_total"] == 3 * m["vllm:spec_decode_num_drafts_total"]
    per_pos = [m[f'vllm:spec_decode_num_accepted_tokens_per_pos_totalposition="{i}"}}'] for i in range(3)]
    assert sum(per_pos) == m["vllm:spec_decode_num_accepted_tokens_total"]
    assert per_pos[0] >= per_pos[1] >= per_pos[2]
    assert m["vllm:request_success_total"] == 8
    assert m["vllm:num_requests_running"] == 0 == m["vllm:num_requests_waiting"]
    acc = info["internal_states"][0]["avg_spec_accept_length"]
    assert acc == pytest.approx(
        1 + m["vllm:spec_decode_num_accepted_tokens_total"] / m["vllm:spec_decode_num_drafts_total"]
    )
    # decode tokens never exceed what drafts + bonus tokens allow
    decode_tokens = m["vllm:generation_tokens_total"] - 8
    assert (
        decode_tokens
        <= m["vllm:spec_decode_num_drafts_total"] + m["vllm:spec_decode_num_accepted_tokens_total"]
    )
    recs = [orjson.loads(x) for x in truth.read_text().splitlines()]
    assert len(recs) == 8
    by_tokens = sorted(sum(c["tokens"] for c in r["chunks"]) for r in recs)
    assert by_tokens == list(range(20, 28))
    for o in outs:  # one chunk per emission, each with the tokens the truth file says
        assert len(o.json()) == o.json()[-1]["meta_info"]["spec_verify_ct"] + 1


def test_absolute_schedule_does_not_drift(tmp_path: Path) -> None:
    """Over many steps the stream's end lands where the engine says (no accumulated lateness)."""
    prof = make_profile(t0_ms=2.0, k=0, survival=[])
    body = {"prompt": "x", "max_tokens": 150, "ignore_eos": True, "stream": True}
    truth = tmp_path / "t.jsonl"

    async def go() -> SSE:
        async with await start_server(prof, truth=str(truth)) as h, aiohttp.ClientSession() as s:
            return await sse(s, h.url + "/v1/completions", body)

    out = run(go())
    chunks = orjson.loads(truth.read_text())["chunks"]
    assert len(chunks) == 150 == len(out.payloads) - 1
    sched_span_ms = (chunks[-1]["sched_mono_ns"] - chunks[0]["sched_mono_ns"]) / 1e6
    assert sched_span_ms == pytest.approx(149 * 2.0, abs=1e-3)
    last_late_ms = (out.times_ns[-2] - chunks[-1]["sched_mono_ns"]) / 1e6  # client saw the last token
    assert 0 <= last_late_ms < 30.0  # no drift: ~0.1 ms on an idle machine, a few ms on a busy one


def test_client_disconnect_aborts_the_request_in_the_engine() -> None:
    prof = make_profile(t0_ms=5.0)
    body = {"prompt": "x", "max_tokens": 400, "ignore_eos": True, "stream": True}

    async def go() -> tuple[int, int, int]:
        async with await start_server(prof) as h:
            async with aiohttp.ClientSession() as s, s.post(h.url + "/v1/completions", json=body) as r:
                seen = 0
                async for line in r.content:
                    seen += line.startswith(b"data: ")
                    if seen == 3:
                        break  # leaving the block drops the connection mid-stream
            for _ in range(100):  # the server notices at its next write
                await asyncio.sleep(0.01)
                c = h.server.engine.counters
                if c.requests_aborted:
                    break
            return c.requests_aborted, c.requests_running, c.requests_finished

    aborted, running, finished = run(go())
    assert (aborted, running, finished) == (1, 0, 0)


@pytest.mark.parametrize("writer_threads", [0, 3])
def test_many_streams_arrive_intact(writer_threads: int, tmp_path: Path) -> None:
    """40 concurrent streams, written inline or by writer threads: every byte in order, truth complete."""
    prof = make_profile(t0_ms=3.0, max_batch=64)
    truth = tmp_path / "t.jsonl"

    async def go() -> list[SSE]:
        server = await start_server(prof, truth=str(truth), writer_threads=writer_threads)
        async with server as h, aiohttp.ClientSession() as s:
            bodies = [
                {"prompt": f"stream {i}", "max_tokens": 30 + i, "temperature": 0, "ignore_eos": True, "stream": True}
                for i in range(40)
            ]  # fmt: skip
            return list(await asyncio.gather(*(sse(s, h.url + "/v1/completions", b) for b in bodies)))

    outs = run(go())
    for i, out in enumerate(outs):
        assert out.payloads[-1] == b"[DONE]"
        text = "".join(o["choices"][0]["text"] for o in out.json())
        assert text == lossless_text(f"stream {i}", 30 + i)
    recs = [orjson.loads(x) for x in truth.read_text().splitlines()]
    assert sorted(sum(c["tokens"] for c in r["chunks"]) for r in recs) == list(range(30, 70))
    assert all(c["mono_ns"] >= c["sched_mono_ns"] for r in recs for c in r["chunks"])
