"""Fuzzing the SSE decoder and the dialect parsers with real recorded streams (tests/sim/fixtures).

Properties:
- the decoder's events do not depend on how the bytes were split (any number of cuts, anywhere);
- a real stream split anywhere parses to the same text / tokens / finish reason as unsplit;
- a corrupted stream (bytes flipped, cut, inserted; JSON values swapped for random JSON) ends in a
  ChunkError (kind 'malformed', 'server_error' or 'bad_count') or a result; never another exception (the runner
  would file that as a 'client' error, i.e. a bug of ours, not the server's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specsweep.client.dialects import ChunkError, StreamState, get_dialect
from specsweep.client.sse import SSEDecoder
from specsweep.workload.tokenizer import BuiltinTokenizer

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "sim" / "fixtures"
STREAMS = {
    "sglang_generate_spec.sse": "sglang",
    "vllm_chat_continuous_usage.sse": "vllm-chat",
    "vllm_chat_include_usage.sse": "openai-chat",
    "vllm_completions_continuous_usage.sse": "vllm",
    "vllm_completions_plain.sse": "openai",
}
# Example counts (reported in docs/reliability.md).
N_SPLITS = 300
N_BYTES = 400
N_JSON = 400
N_RAW = 500


def fuzz(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


COUNT = BuiltinTokenizer().count


def decode(pieces: list[bytes]) -> list[bytes]:
    dec = SSEDecoder()
    out: list[bytes] = []
    for p in pieces:
        out += dec.feed(p)
    return out + dec.close()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    idx = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *idx], [*idx, len(data)], strict=True)]


def parse(dialect: str, payloads: list[bytes]) -> tuple[Any, ...]:
    d, s = get_dialect(dialect), StreamState()
    per_chunk = [d.parse(p, s, COUNT) for p in payloads]
    return ("".join(s.text_parts), s.tokens, s.finish_reason, s.done, s.final_usage_tokens, s.prompt_tokens,
            s.spec_verify_ct, sum(n for _, n in per_chunk))  # fmt: skip


def parse_or_chunkerror(dialect: str, payloads: list[bytes]) -> None:
    try:
        parse(dialect, payloads)
    except ChunkError as e:
        assert e.kind in ("malformed", "server_error", "bad_count")
        assert str(e)


def load(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.mark.parametrize("name", sorted(STREAMS))
@fuzz(N_SPLITS)
@given(cuts=st.lists(st.integers(min_value=0), max_size=40), crlf=st.booleans())
def test_split_anywhere_same_result(name: str, cuts: list[int], crlf: bool) -> None:
    data = load(name)
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    whole = decode([data])
    assert whole, "the fixture decodes to events"
    assert decode(split(data, cuts)) == whole
    assert parse(STREAMS[name], decode(split(data, cuts))) == parse(STREAMS[name], whole)


@st.composite
def byte_edits(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "truncate", "dup"]))
        i = draw(st.integers(0, max(0, len(buf) - 1)))
        if op == "flip" and buf:
            buf[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del buf[i : i + draw(st.integers(1, 30))]
        elif op == "insert":
            buf[i:i] = draw(
                st.sampled_from([b"\n", b"\r", b"\n\n", b"data: ", b":x\n", b"{", b"}", b'"', b"\xff\xfe"])
            )
        elif op == "truncate":
            del buf[i:]
        else:
            buf[i:i] = buf[i : i + draw(st.integers(1, 60))]
    return bytes(buf)


@pytest.mark.parametrize("name", sorted(STREAMS))
@fuzz(N_BYTES)
@given(data=st.data(), cuts=st.lists(st.integers(min_value=0), max_size=10))
def test_corrupt_bytes_clear_error_or_result(name: str, data: st.DataObject, cuts: list[int]) -> None:
    raw = data.draw(byte_edits(load(name)))
    events = decode(split(raw, cuts))
    assert events == decode([raw])
    parse_or_chunkerror(STREAMS[name], events)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {**obj, head: _replace(obj[head], rest, value)}
    return [_replace(v, rest, value) if i == head else v for i, v in enumerate(obj)]


@pytest.mark.parametrize("name", sorted(STREAMS))
@fuzz(N_JSON)
@given(data=st.data())
def test_corrupt_json_values_clear_error_or_result(name: str, data: st.DataObject) -> None:
    """A well-formed stream whose chunks carry values of the wrong type or shape (a server bug, a
    proxy, another dialect): ChunkError or a result, never a TypeError/AttributeError/..."""
    payloads = decode([load(name)])
    out = []
    for p in payloads:
        if p == b"[DONE]" or not data.draw(st.booleans()):
            out.append(p)
            continue
        obj = orjson.loads(p)
        path = data.draw(st.sampled_from(_paths(obj)))
        value = data.draw(JSON)
        try:
            out.append(orjson.dumps(_replace(obj, path, value)))
        except (TypeError, orjson.JSONEncodeError):  # floats/ints orjson cannot write: skip
            out.append(p)
    parse_or_chunkerror(STREAMS[name], out)


@fuzz(N_RAW)
@given(raw=st.binary(max_size=400), cuts=st.lists(st.integers(min_value=0), max_size=10))
def test_decoder_random_bytes(raw: bytes, cuts: list[int]) -> None:
    """Arbitrary bytes: the decoder never raises and never depends on the splits; every payload
    goes to every dialect without anything but a ChunkError."""
    events = decode(split(raw, cuts))
    assert events == decode([raw])
    for dialect in ("sglang", "vllm", "openai-chat"):
        for ev in events:
            parse_or_chunkerror(dialect, [ev])
