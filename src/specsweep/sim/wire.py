"""Wire formats of the simulated server: SSE events as real engines write them, pre-encoded.

Shapes follow the engines' sources (see tests/sim/fixtures/ for recorded examples and citations):

- OpenAI completions / chat streams as vLLM writes them (``vllm/entrypoints/openai/serving_completion.py``,
  ``serving_chat.py``, ``protocol.py``): completions chunks are dumped with every field (``usage: null``
  unless continuous usage is on); chat chunks only carry the fields that were set; the final usage-only
  chunk has ``choices: []``; the stream ends with ``data: [DONE]``.
- SGLang native ``/generate`` (``python/sglang/srt/managers/tokenizer_manager.py``,
  ``entrypoints/http_server.py``): each event holds the cumulative ``text`` and ``output_ids`` and a
  ``meta_info`` whose ``finish_reason`` is null until the end, then ``{"type": "length", "length": N}``
  or ``{"type": "stop", "matched": EOS}``.

Generated text is ASCII lowercase words, so it is spliced into JSON without escaping; everything per
request that does not change between chunks is encoded once, when the stream opens.
"""

from __future__ import annotations

from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"
EOS_TOKEN_ID = 2  # the id SGLang reports in finish_reason.matched when the simulated model stops


def _j(value: Any) -> bytes:
    return orjson.dumps(value)


def usage_dict(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


class CompletionsEncoder:
    """vLLM ``/v1/completions`` stream events (``CompletionStreamResponse``, dumped with all fields)."""

    __slots__ = ("_continuous", "_head", "_include_usage", "_mid", "_prompt_tokens", "_usage_head")

    def __init__(
        self, rid: str, created: int, model: str, prompt_tokens: int, include_usage: bool, continuous: bool
    ) -> None:
        common = b'{"id":%b,"object":"text_completion","created":%d,"model":%b,' % (
            _j(rid),
            created,
            _j(model),
        )
        self._head = b"data: " + common + b'"choices":[{"index":0,"text":"'
        self._mid = b'","logprobs":null,"finish_reason":'
        self._usage_head = b"data: " + common + b'"choices":[],"usage":'
        self._prompt_tokens = prompt_tokens
        self._include_usage = include_usage
        self._continuous = continuous

    def start(self) -> bytes:
        return b""

    def chunk(self, text: bytes, completion_tokens: int, finish_reason: str | None) -> bytes:
        fr = b"null" if finish_reason is None else b'"%b"' % finish_reason.encode()
        if self._continuous:
            p = self._prompt_tokens
            usage = (
                b'{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null}'
                % (p, p + completion_tokens, completion_tokens)
            )
        else:
            usage = b"null"
        return b'%b%b%b%b,"stop_reason":null}],"usage":%b}\n\n' % (self._head, text, self._mid, fr, usage)

    def end(self, completion_tokens: int) -> bytes:
        if not self._include_usage:
            return DONE
        return self._usage_head + _j(usage_dict(self._prompt_tokens, completion_tokens)) + b"}\n\n" + DONE

    def malformed(self) -> bytes:
        return self._head + b"\n\n"  # truncated JSON: the text string and the object never close


class ChatEncoder:
    """vLLM ``/v1/chat/completions`` stream events (``ChatCompletionStreamResponse``, exclude_unset)."""

    __slots__ = ("_continuous", "_head", "_include_usage", "_prompt_tokens", "_usage_head")

    def __init__(
        self, rid: str, created: int, model: str, prompt_tokens: int, include_usage: bool, continuous: bool
    ) -> None:
        common = b'{"id":%b,"object":"chat.completion.chunk","created":%d,"model":%b,' % (
            _j(rid),
            created,
            _j(model),
        )
        self._head = b"data: " + common + b'"choices":[{"index":0,"delta":'
        self._usage_head = b"data: " + common + b'"choices":[],"usage":'
        self._prompt_tokens = prompt_tokens
        self._include_usage = include_usage
        self._continuous = continuous

    def _usage(self, completion_tokens: int) -> bytes:
        if not self._continuous:
            return b"}\n\n"
        p = self._prompt_tokens
        return b',"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}\n\n' % (
            p,
            p + completion_tokens,
            completion_tokens,
        )

    def start(self) -> bytes:
        """The role-only first chunk (vLLM sends it with the first engine output)."""
        return (
            self._head
            + b'{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]'
            + self._usage(0)
        )

    def chunk(self, text: bytes, completion_tokens: int, finish_reason: str | None) -> bytes:
        if finish_reason is None:
            tail = b'"},"logprobs":null,"finish_reason":null}]'
        else:
            tail = b'"},"logprobs":null,"finish_reason":"%b","stop_reason":null}]' % finish_reason.encode()
        return b'%b{"content":"%b%b%b' % (self._head, text, tail, self._usage(completion_tokens))

    def end(self, completion_tokens: int) -> bytes:
        if not self._include_usage:
            return DONE
        return self._usage_head + _j(usage_dict(self._prompt_tokens, completion_tokens)) + b"}\n\n" + DONE

    def malformed(self) -> bytes:
        return self._head + b'{"content":"\n\n'


class GenerateEncoder:
    """SGLang ``/generate`` stream events: cumulative text and output ids, ``meta_info`` per event."""

    __slots__ = ("_ids", "_meta_head", "_prompt_tokens", "_spec", "_text")

    def __init__(self, rid: str, prompt_tokens: int, spec: bool) -> None:
        self._meta_head = b'"meta_info":{"id":%b,"finish_reason":' % _j(rid)
        self._prompt_tokens = prompt_tokens
        self._spec = spec
        self._text = bytearray()
        self._ids = bytearray()

    def start(self) -> bytes:
        return b""

    def add(self, text: bytes, ids: list[int]) -> None:
        self._text += text
        if ids:
            if self._ids:
                self._ids += b","
            self._ids += b",".join(b"%d" % i for i in ids)

    def event(
        self, completion_tokens: int, verify_ct: int, finish_reason: str | None, e2e_latency: float | None
    ) -> bytes:
        if finish_reason is None:
            fr = b"null"
        elif finish_reason == "length":
            fr = b'{"type":"length","length":%d}' % completion_tokens
        else:
            fr = b'{"type":"stop","matched":%d}' % EOS_TOKEN_ID
        meta = (
            b'%b,"prompt_tokens":%d,"weight_version":"default","completion_tokens":%d,"cached_tokens":0'
            % (
                fr,
                self._prompt_tokens,
                completion_tokens,
            )
        )
        if self._spec:
            meta += b',"spec_verify_ct":%d' % verify_ct
        if e2e_latency is not None:
            meta += b',"e2e_latency":' + _j(e2e_latency)
        body = (self._text, self._ids, self._meta_head, meta)
        return b'data: {"text":"%b","output_ids":[%b],%b%b}}\n\n' % body  # type: ignore[str-format]

    def end(self) -> bytes:
        return DONE

    def malformed(self) -> bytes:
        return b'data: {"text":"' + bytes(self._text) + b"\n\n"
