"""Fault injection: the --faults syntax, and each fault's behaviour against a real localhost server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.errors import UsageError
from specsweep.sim.faults import ERROR_STATUSES, FAULT_KEYS, FaultDrawer, Faults, parse_faults
from specsweep.sim.server import start_server
from specsweep.sim.textgen import WordStream, lossless_text, natural_length, prompt_key

from .simhttp import SSE, make_profile, run, sse

FAST = make_profile(t0_ms=1.0)


# ---- syntax ------------------------------------------------------------------------------------
def test_spec_syntax_commas_and_semicolons() -> None:
    f = parse_faults(
        "error_rate=0.1,error_status=503; stall_after_tokens=5,stall_s=30;disconnect_rate=0.05;"
        "malformed_rate=0.02;crash_after=100;slow_start_s=5;diverge=0.2"
    )
    assert f == Faults(
        error_rate=0.1, error_status=503, stall_rate=1.0, stall_after_tokens=5, stall_s=30.0,
        disconnect_rate=0.05, malformed_rate=0.02, crash_after=100, slow_start_s=5.0, diverge=0.2,
    )  # fmt: skip
    assert parse_faults("") == parse_faults(None) == Faults()
    assert not Faults().active and f.active


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        ("eror_rate=0.1", ["eror_rate", "error_rate", "slow_start_s"]),  # names the key and the accepted ones
        ("error_rate=1.5", ["error_rate", "[0, 1]"]),
        ("error_rate=lots", ["error_rate", "number"]),
        ("error_status=404", ["error_status", "429", "500", "503"]),
        ("crash_after=1.5", ["crash_after", "integer"]),
        ("stall_after_tokens=0", ["stall_after_tokens", ">= 1"]),
        ("slow_start_s=-1", ["slow_start_s", ">= 0"]),
        ("error_rate", ["error_rate", "value"]),
        ("error_rate=0.1,error_rate=0.2", ["twice"]),
        ("stall_rate=0.5", ["stall_after_tokens"]),
    ],
)
def test_bad_specs_name_the_problem(spec: str, needles: list[str]) -> None:
    with pytest.raises(UsageError) as e:
        parse_faults(spec)
    for n in needles:
        assert n in str(e.value)


_faults = st.builds(
    Faults,
    error_rate=st.sampled_from([0.0, 0.25, 1.0]),
    error_status=st.sampled_from(ERROR_STATUSES),
    disconnect_rate=st.floats(0, 1),
    disconnect_after_tokens=st.integers(1, 50),
    malformed_rate=st.floats(0, 1),
    crash_after=st.none() | st.integers(0, 1000),
    slow_start_s=st.floats(0, 100),
    diverge=st.floats(0, 1),
)


@given(_faults)
def test_spec_round_trips(f: Faults) -> None:
    assert parse_faults(f.spec()) == f
    assert all(item.split("=")[0] in FAULT_KEYS for item in f.spec().split(",") if item)


@given(st.floats(0, 1), st.integers(0, 2**32))
@settings(max_examples=30)
def test_drawn_error_share_follows_the_rate(rate: float, seed: int) -> None:
    d = FaultDrawer(Faults(error_rate=rate, error_status=429), seed)
    n = 2000
    errors = sum(d.draw(stream=True).error_status == 429 for _ in range(n))
    assert abs(errors / n - rate) < 0.05
    # same seed, same choices
    a = [FaultDrawer(Faults(error_rate=rate), seed).draw(stream=True) for _ in range(1)]
    assert a == [FaultDrawer(Faults(error_rate=rate), seed).draw(stream=True)]


def test_stream_only_faults_spare_non_stream_requests() -> None:
    d = FaultDrawer(parse_faults("stall_after_tokens=1,disconnect_rate=1,malformed_rate=1"), 0)
    rf = d.draw(stream=False)
    assert rf.stall_after_tokens is None and rf.disconnect_after_tokens is None and not rf.malformed


@given(
    st.text(max_size=40), st.lists(st.integers(1, 7), min_size=1, max_size=12), st.none() | st.integers(0, 40)
)
def test_words_do_not_depend_on_chunking(prompt: str, sizes: list[int], diverge_at: int | None) -> None:
    """Servers with different k emit different chunk sizes; the text must not depend on them."""
    key = prompt_key(prompt)
    n = sum(sizes)
    whole = WordStream(key, diverge_at).take(n)
    ws = WordStream(key, diverge_at)
    assert [i for s in sizes for i in ws.take(s)] == whole
    plain = WordStream(key).take(n)
    if diverge_at is None or diverge_at >= n:
        assert whole == plain
    else:
        assert whole[:diverge_at] == plain[:diverge_at]
        assert all(a != b for a, b in zip(whole[diverge_at:], plain[diverge_at:], strict=True))
    assert natural_length(key) >= 16


# ---- behaviour ---------------------------------------------------------------------------------
async def _serve(faults: str, fn: Any, profile: Any = FAST, **kw: Any) -> Any:
    async with await start_server(profile, faults=faults, **kw) as h, aiohttp.ClientSession() as s:
        return await fn(h, s)


STREAM = {"prompt": "x", "max_tokens": 12, "ignore_eos": True, "stream": True}


@pytest.mark.parametrize("status", [429, 500, 503])
def test_error_rate_answers_json_errors(status: int) -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> list[SSE]:
        return [await sse(s, h.url + "/v1/completions", STREAM) for _ in range(3)]

    for out in run(_serve(f"error_rate=1,error_status={status}", go)):
        assert out.status == status
        err = orjson.loads(out.body)["error"]
        assert err["code"] == status and "simulated" in err["message"]


def test_partial_error_rate_mixes() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> list[int]:
        outs = await asyncio.gather(*(sse(s, h.url + "/v1/completions", STREAM) for _ in range(40)))
        return [o.status for o in outs]

    statuses = run(_serve("error_rate=0.5,error_status=503", go))
    assert set(statuses) == {200, 503}
    assert 8 <= statuses.count(503) <= 32


@pytest.mark.timing  # gaps under 100 ms but for the stall: runs alone
def test_stall_holds_the_stream_then_resumes() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> SSE:
        return await sse(
            s,
            h.url + "/v1/completions",
            {**STREAM, "stream_options": {"include_usage": True, "continuous_usage_stats": True}},
        )

    out = run(_serve("stall_after_tokens=3,stall_s=0.4", go))
    objs = out.json()
    assert out.payloads[-1] == b"[DONE]" and objs[-1]["usage"]["completion_tokens"] == 12
    gaps = [(b - a) / 1e9 for a, b in zip(out.times_ns, out.times_ns[1:], strict=False)]
    i = max(range(len(gaps)), key=gaps.__getitem__)
    assert gaps[i] >= 0.35  # the stall
    assert objs[i]["usage"]["completion_tokens"] >= 3  # it began once 3 tokens were sent
    assert sorted(gaps)[-2] < 0.1  # one stall only


def test_disconnect_drops_the_connection_and_aborts_the_request() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[SSE, Any]:
        out = await sse(s, h.url + "/v1/completions", {**STREAM, "max_tokens": 50})
        await asyncio.sleep(0.05)
        async with s.get(h.url + "/metrics") as r:
            metrics = await r.text()
        return out, (h.server.engine.counters.requests_aborted, metrics)

    out, (aborted, metrics) = run(_serve("disconnect_rate=1,disconnect_after_tokens=3", go))
    assert out.error is not None  # the client saw the body cut short
    got = sum(len(o["choices"][0]["text"].split()) for o in out.json())
    assert 3 <= got < 50
    assert b"[DONE]" not in out.payloads
    assert aborted == 1
    assert 'vllm:num_requests_running{engine="0",model_name="sim-test"} 0.0' in metrics


def test_malformed_chunk_is_invalid_json_once() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> SSE:
        return await sse(
            s, h.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 12}, "stream": True}
        )

    out = run(_serve("malformed_rate=1", go))
    bad = 0
    for p in out.payloads[:-1]:
        try:
            orjson.loads(p)
        except orjson.JSONDecodeError:
            bad += 1
    assert bad == 1 and out.payloads[-1] == b"[DONE]"


@pytest.mark.timing  # three requests inside a 0.4 s start: runs alone
def test_slow_start_answers_503_then_ready() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[list[int], list[int]]:
        early = []
        for path in ("/health", "/health_generate"):
            async with s.get(h.url + path) as r:
                early.append(r.status)
        async with s.post(h.url + "/v1/completions", json={"prompt": "x"}) as r:
            early.append(r.status)
        await asyncio.sleep(0.45)
        late = []
        for path in ("/health", "/health_generate"):
            async with s.get(h.url + path) as r:
                late.append(r.status)
        async with s.post(h.url + "/v1/completions", json={"prompt": "x"}) as r:
            late.append(r.status)
        return early, late

    early, late = run(_serve("slow_start_s=0.4", go))
    assert early == [503, 503, 503]
    assert late == [200, 200, 200]


def test_diverge_changes_text_but_not_length() -> None:
    body = {"prompt": "Same prompt", "max_tokens": 60, "temperature": 0, "ignore_eos": True}

    async def go(h: Any, s: aiohttp.ClientSession) -> str:
        async with s.post(h.url + "/v1/completions", json=body) as r:
            return str((await r.json())["choices"][0]["text"])

    lossless = lossless_text("Same prompt", 60)
    assert run(_serve("diverge=0", go)) == lossless
    diverged = run(_serve("diverge=1", go))
    assert diverged != lossless and len(diverged.split()) == 60


def test_in_process_crash_resets_connections() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[list[int], bool, bool]:
        ok = []
        for _ in range(2):
            async with s.post(h.url + "/v1/completions", json={"prompt": "x", "max_tokens": 3}) as r:
                ok.append(r.status)
        t0 = time.monotonic()
        with pytest.raises(aiohttp.ClientError):
            async with s.post(h.url + "/v1/completions", json={"prompt": "x", "max_tokens": 3}) as r:
                await r.read()
        with pytest.raises(aiohttp.ClientError):
            async with s.get(h.url + "/health") as r:
                await r.read()
        return ok, h.server.crashed, time.monotonic() - t0 < 5

    ok, crashed, quick = run(_serve("crash_after=2", go))
    assert ok == [200, 200] and crashed and quick
