"""Wire formats of `sim serve` against recorded vLLM / SGLang examples (tests/sim/fixtures/)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specsweep.client.dialects import StreamState, get_dialect
from specsweep.sim.server import start_server
from specsweep.sim.textgen import lossless_text, word_table
from specsweep.sim.wire import ChatEncoder, CompletionsEncoder, GenerateEncoder
from specsweep.workload.tokenizer import BuiltinTokenizer

from .simhttp import (
    FIXTURES,
    SSE,
    assert_same_shape,
    make_profile,
    read_json_fixture,
    read_sse_fixture,
    run,
    sse,
)

FAST = make_profile(t0_ms=1.0)
TOK = BuiltinTokenizer()


async def _with_server(fn: Any, profile: Any = FAST, **kw: Any) -> Any:
    async with await start_server(profile, **kw) as h, aiohttp.ClientSession() as s:
        return await fn(h, s)


def _stream(path: str, body: dict[str, Any], **kw: Any) -> SSE:
    async def go(h: Any, s: aiohttp.ClientSession) -> SSE:
        return await sse(s, h.url + path, body)

    out: SSE = run(_with_server(go, **kw))
    assert out.status == 200, out.body
    return out


def _roles(payloads: list[bytes]) -> dict[str, Any]:
    """Chunks of a stream by role: first, middle, last (carries finish_reason), usage-only, [DONE]."""
    assert payloads[-1] == b"[DONE]", "a stream ends with data: [DONE]"
    objs = [orjson.loads(p) for p in payloads[:-1]]
    usage = [o for o in objs if o.get("choices") == []]
    content = [o for o in objs if o.get("choices") != []]
    return {"first": content[0], "middle": content[1], "last": content[-1], "usage": usage}


@pytest.mark.parametrize(
    ("fixture", "path", "body"),
    [
        (
            "vllm_completions_continuous_usage.sse",
            "/v1/completions",
            {"prompt": "The capital", "max_tokens": 24, "ignore_eos": True, "stream": True,
             "stream_options": {"include_usage": True, "continuous_usage_stats": True}},
        ),
        ("vllm_completions_plain.sse", "/v1/completions", {"prompt": "Hi", "max_tokens": 24, "ignore_eos": True, "stream": True}),
        (
            "vllm_chat_include_usage.sse",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 24, "ignore_eos": True, "stream": True,
             "stream_options": {"include_usage": True}},
        ),
        (
            "vllm_chat_continuous_usage.sse",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 24, "ignore_eos": True,
             "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True}},
        ),
    ],
)  # fmt: skip
def test_openai_stream_shapes_match_vllm(fixture: str, path: str, body: dict[str, Any]) -> None:
    ours = _roles(_stream(path, body).payloads)
    ref = _roles(read_sse_fixture(fixture))
    for role in ("first", "middle", "last"):
        assert_same_shape(ours[role], ref[role], f"{fixture}:{role}")
    assert len(ours["usage"]) == len(ref["usage"])
    if ref["usage"]:
        assert_same_shape(ours["usage"][0], ref["usage"][0], f"{fixture}:usage")
        assert ours["usage"][0]["usage"]["completion_tokens"] == 24
    if path.endswith("chat/completions"):  # the first chunk carries the role only
        assert ours["first"]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert ours["last"]["choices"][0]["finish_reason"] == "length"


def test_chat_continuous_usage_counts_every_chunk() -> None:
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 30, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}  # fmt: skip
    objs = _stream("/v1/chat/completions", body).json()
    seen = 0
    for o in objs[1:-1]:  # after the role chunk, before the usage-only chunk
        text = o["choices"][0]["delta"]["content"]
        seen += TOK.count(text)
        assert o["usage"]["completion_tokens"] == seen  # each word is one built-in token
    assert seen == 30 == objs[-1]["usage"]["completion_tokens"]
    assert objs[0]["usage"]["completion_tokens"] == 0


def test_sglang_generate_stream_shape_and_cumulative_text() -> None:
    body = {"text": "The capital of France", "sampling_params": {"temperature": 0, "max_new_tokens": 20, "ignore_eos": True}, "stream": True}  # fmt: skip
    out = _stream("/generate", body)
    assert out.payloads[-1] == b"[DONE]"
    ours = out.json()
    ref = [orjson.loads(p) for p in read_sse_fixture("sglang_generate_spec.sse")[:-1]]
    assert_same_shape(ours[0], ref[0], "first")
    assert_same_shape(ours[1], ref[1], "middle")
    assert_same_shape(ours[-1], ref[-1], "last")
    prev = ""
    for o in ours:  # text and output_ids are cumulative; completion_tokens counts them
        assert o["text"].startswith(prev)
        prev = o["text"]
        assert o["meta_info"]["completion_tokens"] == len(o["output_ids"]) == TOK.count(o["text"])
        assert o["meta_info"]["prompt_tokens"] == 4
    assert all(o["meta_info"]["finish_reason"] is None for o in ours[:-1])
    assert ours[-1]["meta_info"]["finish_reason"] == {"type": "length", "length": 20}
    # one chunk per engine step: the prefill step, then one per verify step
    assert ours[-1]["meta_info"]["spec_verify_ct"] == len(ours) - 1
    assert ours[-1]["text"] == lossless_text("The capital of France", 20)
    assert TOK.encode(ours[-1]["text"]) == ours[-1]["output_ids"]


@pytest.mark.parametrize(
    ("fixture", "path", "body"),
    [
        ("vllm_completion_nonstream.json", "/v1/completions", {"prompt": "Hi", "max_tokens": 7}),
        ("vllm_chat_nonstream.json", "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 7}),
        ("sglang_generate_nonstream.json", "/generate", {"input_ids": [5, 6, 7], "sampling_params": {"max_new_tokens": 7}}),
    ],
)  # fmt: skip
def test_nonstream_bodies_match(fixture: str, path: str, body: dict[str, Any]) -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> Any:
        async with s.post(h.url + path, json=body) as r:
            assert r.status == 200
            return await r.json()

    ours = run(_with_server(go))
    assert_same_shape(ours, read_json_fixture(fixture), fixture)
    if path == "/generate":
        assert ours["meta_info"]["prompt_tokens"] == 3 and ours["meta_info"]["completion_tokens"] == 7
    else:
        assert ours["usage"]["completion_tokens"] == 7


def test_probes_match() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> dict[str, Any]:
        got: dict[str, Any] = {}
        # one generation first, so the speculative state exists
        async with s.post(
            h.url + "/generate", json={"text": "x", "sampling_params": {"max_new_tokens": 9}}
        ) as r:
            assert r.status == 200
        for path in ("/health", "/health_generate"):
            async with s.get(h.url + path) as r:
                got[path] = r.status
        for path in ("/v1/models", "/get_model_info", "/server_info", "/get_server_info", "/version"):
            async with s.get(h.url + path) as r:
                assert r.status == 200, path
                got[path] = await r.json()
        async with s.post(h.url + "/tokenize", json={"prompt": "Hello world, again"}) as r:
            got["/tokenize"] = await r.json()
        async with s.post(h.url + "/v1/completions", json={"model": "no-such-model", "prompt": "x"}) as r:
            got["404"] = (r.status, await r.json())
        async with s.post(h.url + "/v1/completions", data=b"{not json") as r:
            got["400"] = (r.status, await r.json())
        return got

    got = run(_with_server(go, time_scale=2.0))
    assert got["/health"] == 200 and got["/health_generate"] == 200
    assert_same_shape(got["/v1/models"], read_json_fixture("vllm_models.json"), "models")
    assert got["/v1/models"]["data"][0]["id"] == "sim-test"
    assert_same_shape(got["/get_model_info"], read_json_fixture("sglang_model_info.json"), "model_info")
    ref_info = read_json_fixture("sglang_server_info.json")
    for path in ("/server_info", "/get_server_info"):
        info = got[path]
        assert set(ref_info) <= set(info), set(ref_info) - set(info)
        state = info["internal_states"][0]
        assert state["avg_spec_accept_length"] > 1.0
        assert info["time_scale"] == 2.0  # a time-scaled server says so
    assert got["/version"]["time_scale"] == 2.0 and isinstance(got["/version"]["version"], str)
    assert_same_shape(got["/tokenize"], read_json_fixture("vllm_tokenize.json"), "tokenize")
    assert got["/tokenize"]["count"] == 4
    status, body = got["404"]
    assert status == 404
    assert_same_shape(body, read_json_fixture("vllm_error_404.json"), "404")
    assert "no-such-model" in body["error"]["message"]
    status, body = got["400"]
    assert status == 400 and body["error"]["code"] == 400


def _prom(text: str) -> tuple[dict[str, str], dict[str, set[frozenset[str]]]]:
    """(family -> type, sample name -> label-key sets) of a Prometheus text exposition."""
    types: dict[str, str] = {}
    samples: dict[str, set[frozenset[str]]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            head, _, value = line.rpartition(" ")
            float(value)
            name, _, labels = head.partition("{")
            keys = frozenset(kv.split("=", 1)[0] for kv in labels.rstrip("}").split(",") if kv)
            samples.setdefault(name, set()).add(keys)
    return types, samples


def test_metrics_shape_matches_vllm() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> str:
        async with s.post(h.url + "/v1/completions", json={"prompt": "x", "max_tokens": 12}) as r:
            assert r.status == 200
        async with s.get(h.url + "/metrics") as r:
            assert r.headers["Content-Type"].startswith("text/plain")
            return await r.text()

    ours_t, ours_s = _prom(run(_with_server(go)))
    ref_t, ref_s = _prom((FIXTURES / "vllm_metrics_spec.txt").read_text())
    for fam, kind in ref_t.items():
        assert ours_t.get(fam) == kind, fam
    for name, keysets in ref_s.items():
        assert ours_s.get(name) == keysets, name  # same label keys, _created samples included


def test_no_spec_profile_has_no_spec_fields() -> None:
    prof = make_profile(k=0, survival=[], spec_method=None, t0_ms=1.0)

    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[SSE, str, dict[str, Any]]:
        out = await sse(
            s, h.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 5}, "stream": True}
        )
        async with s.get(h.url + "/metrics") as r:
            m = await r.text()
        async with s.get(h.url + "/server_info") as r:
            info = await r.json()
        return out, m, info

    out, metrics, info = run(_with_server(go, prof))
    assert all("spec_verify_ct" not in o["meta_info"] for o in out.json())
    assert "spec_decode" not in metrics
    assert "avg_spec_accept_length" not in info["internal_states"][0]
    assert len(out.json()) == 5  # one token per step without speculation


def test_temperature_zero_is_deterministic_per_prompt_across_servers() -> None:
    """Same prompt -> same text on servers with different k, seeds and time scales (lossless baseline)."""
    body = {"prompt": "Tell me a story", "max_tokens": 40, "temperature": 0, "ignore_eos": True}

    async def text(h: Any, s: aiohttp.ClientSession) -> str:
        async with s.post(h.url + "/v1/completions", json=body) as r:
            return str((await r.json())["choices"][0]["text"])

    a = run(_with_server(text, make_profile(t0_ms=1.0), seed=1))
    b = run(_with_server(text, make_profile(k=5, survival=[0.9, 0.8, 0.6, 0.5, 0.3], t0_ms=2.0), seed=7))
    c = run(_with_server(text, make_profile(k=0, survival=[], t0_ms=1.0), seed=3, time_scale=3.0))
    assert a == b == c == lossless_text("Tell me a story", 40)
    assert TOK.count(a) == 40


def test_temperature_above_zero_varies_and_ids_prompt_counts() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> list[dict[str, Any]]:
        outs = []
        for _ in range(2):
            async with s.post(
                h.url + "/v1/completions",
                json={"prompt": [1, 2, 3, 4, 5], "max_tokens": 30, "temperature": 0.8},
            ) as r:
                outs.append(await r.json())
        return outs

    a, b = run(_with_server(go))
    assert a["choices"][0]["text"] != b["choices"][0]["text"]
    assert a["usage"]["prompt_tokens"] == 5


def test_eos_without_ignore_eos_stops_early_with_stop() -> None:
    body = {"prompt": "p", "max_tokens": 100_000, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip

    async def go(h: Any, s: aiohttp.ClientSession) -> SSE:
        return await sse(s, h.url + "/v1/completions", body)

    objs = run(_with_server(go, make_profile(t0_ms=0.05))).json()
    n = objs[-1]["usage"]["completion_tokens"]
    assert 16 <= n < 100_000
    assert objs[-2]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("backend", ["sglang", "vllm", "openai", "openai-chat", "vllm-chat"])
def test_client_dialects_count_exactly(backend: str) -> None:
    """The project's own client parses our streams and counts every token (server count = re-count)."""
    d = get_dialect(backend)
    body = d.build("Hello there", 33, model=None, temperature=0.0, ignore_eos=True, extra={})

    async def go(h: Any, s: aiohttp.ClientSession) -> SSE:
        return await sse(s, h.url + d.path, body)

    out = run(_with_server(go))
    st = StreamState()
    total = 0
    for p in out.payloads:
        _, n = d.parse(p, st, TOK.count)
        total += n
    assert st.done
    assert TOK.count("".join(st.text_parts)) == 33
    assert total == 33 or st.final_usage_tokens == 33


@pytest.mark.parametrize(
    ("path", "body", "status", "needle"),
    [
        ("/v1/completions", {"prompt": "x", "max_tokens": 0}, 400, "max_tokens"),
        ("/v1/completions", {"prompt": "x", "max_tokens": "ten"}, 400, "max_tokens"),
        ("/v1/completions", {"prompt": 5}, 400, "prompt"),
        ("/v1/completions", {"prompt": "x", "temperature": -1}, 400, "temperature"),
        ("/v1/completions", {"prompt": "x", "stream_options": {"include_usage": True}}, 400, "stream"),
        ("/v1/chat/completions", {"messages": []}, 400, "messages"),
        ("/v1/completions", {"prompt": "x", "max_tokens": 10**6}, 400, "context length"),
        ("/generate", {"sampling_params": {"max_new_tokens": 3}}, 400, "text"),
        ("/generate", [1, 2], 400, "JSON object"),
    ],
)
def test_bad_requests_are_json_errors(path: str, body: Any, status: int, needle: str) -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[int, Any]:
        async with s.post(h.url + path, json=body) as r:
            return r.status, await r.json()

    got_status, got = run(_with_server(go))
    assert got_status == status
    assert needle in got["error"]["message"]
    assert got["error"]["code"] == status


def test_served_model_name_is_the_only_model() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[str, int, int]:
        async with s.get(h.url + "/v1/models") as r:
            mid = (await r.json())["data"][0]["id"]
        async with s.post(
            h.url + "/v1/completions", json={"model": "my-model", "prompt": "x", "max_tokens": 2}
        ) as r:
            ok = r.status
        async with s.post(
            h.url + "/v1/completions", json={"model": "sim-test", "prompt": "x", "max_tokens": 2}
        ) as r:
            other = r.status
        return mid, ok, other

    assert run(_with_server(go, served_model_name="my-model")) == ("my-model", 200, 404)


_word_idx = st.lists(st.integers(0, len(word_table()[0]) - 1), min_size=1, max_size=8)


@given(
    st.lists(_word_idx, min_size=1, max_size=6),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["length", "stop"]),
)
def test_encoders_write_valid_json_events(
    chunks: list[list[int]], include: bool, cont: bool, fr: str
) -> None:
    """Every event of every encoder parses, and its counts and text add up, for any words and splits."""
    words, ids = word_table()
    encs = [
        CompletionsEncoder("cmpl-1", 1, 'model "q"', 7, include, cont),
        ChatEncoder("chatcmpl-1", 1, "m", 7, include, cont),
    ]
    for enc in encs:
        stream = enc.start()
        n = 0
        for i, c in enumerate(chunks):
            n += len(c)
            last = i == len(chunks) - 1
            stream += enc.chunk(b"".join(words[j] for j in c), n, fr if last else None)
        stream += enc.end(n)
        events = [e for e in stream.split(b"\n\n") if e]
        assert all(e.startswith(b"data: ") for e in events) and events[-1] == b"data: [DONE]"
        objs = [orjson.loads(e[6:]) for e in events[:-1]]
        content = [o for o in objs if o["choices"]]
        key = "text" if isinstance(enc, CompletionsEncoder) else None
        texts = [o["choices"][0]["text"] if key else o["choices"][0]["delta"]["content"] for o in content]
        assert TOK.count("".join(texts)) == n
        assert content[-1]["choices"][0]["finish_reason"] == fr
        assert (objs[-1]["choices"] == []) == include
        if cont:
            assert content[-1]["usage"]["completion_tokens"] == n
    gen = GenerateEncoder("r1", 7, spec=True)
    n = 0
    for i, c in enumerate(chunks):
        n += len(c)
        gen.add(b"".join(words[j] for j in c), [ids[j] for j in c])
        last = i == len(chunks) - 1
        o = orjson.loads(gen.event(n, i, fr if last else None, 0.5 if last else None)[6:])
        assert o["meta_info"]["completion_tokens"] == n == len(o["output_ids"]) == TOK.count(o["text"])
        assert TOK.encode(o["text"]) == o["output_ids"]
    assert o["meta_info"]["finish_reason"]["type"] == fr


def test_continuous_usage_needs_include_usage_like_vllm() -> None:
    body = {"prompt": "x", "max_tokens": 6, "ignore_eos": True, "stream": True,
            "stream_options": {"continuous_usage_stats": True}}  # fmt: skip
    objs = _stream("/v1/completions", body).json()
    assert all(o["usage"] is None for o in objs) and all(o["choices"] for o in objs)


def test_context_length_follows_the_kv_cache() -> None:
    """Like vLLM, max_model_len fits the KV cache; without max_tokens a chat fills the context."""
    prof = make_profile(t0_ms=0.1, kv_tokens=600)

    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[int, Any]:
        async with s.get(h.url + "/v1/models") as r:
            mml = (await r.json())["data"][0]["max_model_len"]
        body = {"messages": [{"role": "user", "content": "hi"}], "ignore_eos": True}
        async with s.post(h.url + "/v1/chat/completions", json=body) as r:
            return mml, await r.json()

    mml, out = run(_with_server(go, prof, time_scale=10.0))
    assert mml == 600 - 3
    assert out["usage"]["total_tokens"] == mml and out["choices"][0]["finish_reason"] == "length"


def test_health_generate_runs_through_the_engine() -> None:
    async def go(h: Any, s: aiohttp.ClientSession) -> tuple[int, int, int]:
        before = h.server.engine.counters.requests_finished
        async with s.get(h.url + "/health_generate") as r:
            status = r.status
        return status, before, h.server.engine.counters.requests_finished

    status, before, after = run(_with_server(go))
    assert status == 200 and after == before + 1
