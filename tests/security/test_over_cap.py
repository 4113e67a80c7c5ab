"""Issue 27, defect 1: a response over its request's max_tokens, by the server's count or by the
client's own count of its text, is a failed request of its own kind (``over_max_tokens``), counted
in ``errors_by_kind``; none of its tokens count as output. Before, a server that sent one flood of
words with no usage field was credited every word (a cell `ok` at 1.37M tok/s, the report's winner).

Against a real localhost server (tests/security/hostile_counts_server.py); the dialect rules also
directly, at their boundaries."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from specsweep.client.bench import BenchConfig
from specsweep.client.dialects import (
    OVER_CAP,
    ChunkError,
    StreamState,
    client_count_limit,
    get_dialect,
    server_count_limit,
    text_over_cap,
)
from specsweep.client.runner import run_bench_async
from specsweep.measure.records import ERROR_KINDS
from specsweep.workload.scenarios import Scenario
from specsweep.workload.tokenizer import BuiltinTokenizer

from .hostile_counts_server import serve

SC = Scenario(name="t", input_len=16, output_len=8, range_ratio=1.0)  # every request: max_tokens 8


def _bench(url: str, backend: str = "openai", n: int = 2) -> dict[str, Any]:
    cfg = BenchConfig(base_url=url, scenario=SC, backend=backend, model="m", num_prompts=n, max_concurrency=2,
                      scrape_metrics=False, quiet=True, request_timeout_s=20)  # fmt: skip
    out = asyncio.run(run_bench_async(cfg))
    return out.result  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("backend", "usage", "claim"),
    [
        ("openai", False, None),  # no usage at all: only the client's count says anything
        ("vllm", True, 8),  # continuous usage that fits the request, text that cannot
        ("vllm", True, 200_000),  # the server's own count says it
    ],
    ids=["no_usage", "usage_fits_text_floods", "usage_over"],
)
def test_a_flood_over_max_tokens_is_a_failed_request(backend: str, usage: bool, claim: int | None) -> None:
    url, stop = serve(completion_tokens=claim, words=20_000, usage=usage)
    try:
        res = _bench(url, backend)
    finally:
        stop()
    assert res["errors_by_kind"] == {OVER_CAP: 2}, res["errors_by_kind"]
    assert res["completed"] == 0 and res["total_output_tokens"] == 0 and res["output_throughput"] == 0.0
    assert OVER_CAP in ERROR_KINDS


def test_an_answer_within_its_cap_still_counts() -> None:
    url, stop = serve(usage=False)  # "tok" + " tok": 2 tokens by the client's count, 8 requested
    try:
        res = _bench(url, "openai")
    finally:
        stop()
    assert res["completed"] == 2 and res["errors_by_kind"] == {}
    assert res["total_output_tokens"] == 4 and res["output_tokens_source"] == "retokenized"


def _words(n: int) -> bytes:
    return b" w" * n


@pytest.mark.parametrize(
    ("backend", "chunk"),
    [
        ("openai", lambda n: b'{"choices":[{"index":0,"text":" w"}]}'),
        ("openai-chat", lambda n: b'{"choices":[{"index":0,"delta":{"content":" w"}}]}'),
        # SGLang's text is cumulative: chunk n repeats the n words so far
        ("sglang", lambda n: b'{"text":"%s","meta_info":{}}' % _words(n)),
    ],
    ids=["openai", "openai-chat", "sglang"],
)
def test_client_counted_streams_stop_at_the_chunk_past_the_limit(backend: str, chunk: Any) -> None:
    """Where the server gives no count, the client's running count is checked at each chunk: the
    stream is failed at the chunk that passes ``client_count_limit`` (the rest is not read)."""
    cap = 8
    limit = client_count_limit(cap)
    st = StreamState(max_tokens=cap)
    d = get_dialect(backend)
    tok = BuiltinTokenizer()
    sent = 0
    with pytest.raises(ChunkError) as ei:
        for _ in range(limit + 1):  # one word a chunk
            sent += 1
            d.parse(chunk(sent), st, tok.count)
    assert ei.value.kind == OVER_CAP and sent == limit + 1
    assert f"for {cap} requested" in str(ei.value) and f"up to {limit}" in str(ei.value)


def test_the_server_count_limit_is_a_boundary() -> None:
    cap = 100
    d = get_dialect("vllm")
    ok = StreamState(max_tokens=cap)
    d.parse(b'{"choices":[{"text":"a"}],"usage":{"completion_tokens":%d}}' % server_count_limit(cap), ok, len)
    assert ok.tokens == server_count_limit(cap)
    over = StreamState(max_tokens=cap)
    with pytest.raises(ChunkError) as ei:
        d.parse(b'{"choices":[],"usage":{"completion_tokens":%d}}' % (server_count_limit(cap) + 1), over, len)
    assert ei.value.kind == OVER_CAP
    with pytest.raises(ChunkError) as ei:  # beyond any response whatever was asked: impossible
        d.parse(b'{"choices":[],"usage":{"completion_tokens":100000000}}', StreamState(max_tokens=cap), len)
    assert ei.value.kind == "bad_count"


def test_text_over_cap_counts_the_whole_text() -> None:
    count = BuiltinTokenizer().count
    st = StreamState(max_tokens=10, text_parts=["a" + " b" * (client_count_limit(10) - 1)])
    assert text_over_cap(st, count) is None
    st.text_parts.append(" c")
    why = text_over_cap(st, count)
    assert why is not None and f"{client_count_limit(10) + 1:,} tokens" in why
    assert text_over_cap(StreamState(max_tokens=None, text_parts=["x " * 10_000]), count) is None
