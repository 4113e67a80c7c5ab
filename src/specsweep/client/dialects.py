"""Request bodies and stream-chunk parsing for each server dialect.

A dialect turns a RequestSpec into (path, JSON body) and folds each SSE payload into a StreamState.
Output tokens per chunk come from the server when it says (SGLang ``meta_info.completion_tokens``,
OpenAI ``usage.completion_tokens`` with ``continuous_usage_stats``); otherwise from the client
tokenizer applied to the chunk's text (``tokens_source`` says which).

Speculative acceptance per response, where the server reports it: SGLang's ``meta_info.spec_verify_ct``
(verify steps), llama-server's ``timings`` object on its last chunk (``draft_n`` draft tokens proposed,
``draft_n_accepted`` accepted). vLLM reports none per response (only its ``/metrics`` counters).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from specsweep.errors import UsageError, one_of
from specsweep.store import redact_pieces

DONE = b"[DONE]"
# No response carries more tokens than this (no model has a 10M-token context): a larger count is a
# broken or hostile server, whatever max_tokens was.
MAX_TOKENS_PER_RESPONSE = 10_000_000
# The error kind of a response with more output than its request allowed, by the server's count or by
# the client's own count of its text (records.ERROR_KINDS).
OVER_CAP = "over_max_tokens"


def _shown(payload: bytes, limit: int) -> str:
    """A payload in an error message: as ``repr`` shows it, scrubbed before it is cut (``redact_pieces.clip``)."""
    return redact_pieces.clip(repr(payload[: 16 * limit]), limit)


class ChunkError(Exception):
    """A payload that does not parse in the dialect, or an error object in the stream."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "malformed" | "server_error" | "bad_count" | "over_max_tokens"


@dataclass(slots=True)
class StreamState:
    text_parts: list[str] = field(default_factory=list)
    tokens: int = 0  # cumulative output tokens so far
    server_tokens: bool = False  # token counts came from the server
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    spec_verify_ct: int | None = None
    draft_tokens: int | None = None  # llama-server timings.draft_n
    draft_accepted: int | None = None  # llama-server timings.draft_n_accepted
    done: bool = False  # saw [DONE]
    final_usage_tokens: int | None = None
    max_tokens: int | None = None  # what the request asked for: a larger output count is impossible


def requested_max_tokens(output_len: int, extra: dict[str, Any]) -> int | None:
    """The most output tokens a request may get: its output_len, unless the extra request body sets
    its own limit (None when that is not an integer: no bound but MAX_TOKENS_PER_RESPONSE)."""
    sp = extra.get("sampling_params")
    for v in (
        extra.get("max_tokens"),
        extra.get("max_completion_tokens"),
        (sp or {}).get("max_new_tokens") if isinstance(sp, dict) else None,
    ):
        if v is not None:
            return v if isinstance(v, int) and not isinstance(v, bool) else None
    return output_len


def server_count_limit(max_tokens: int) -> int:
    """The most output tokens a server may report for ``max_tokens`` requested: 5% (at least 4) of
    slack for engines that count a last speculative step's extra tokens."""
    return max_tokens + max(4, max_tokens // 20)


def client_count_limit(max_tokens: int) -> int:
    """The most tokens the client's own count of a response's text may find for ``max_tokens``
    requested: twice as many, plus 16. The client's tokenizer is not the server's (the built-in one
    counts each word and each punctuation mark, where one model token may hold several marks), so
    its count is allowed that far off; text beyond it cannot have come from ``max_tokens`` tokens."""
    return 2 * max_tokens + 16


def _count(v: Any, what: str, st: StreamState, *, output: bool = True, cap: bool = False) -> int | None:
    """A token count the server reported: None when absent (or not a number: the tokenizer counts
    instead); a ChunkError 'bad_count' when impossible: ``true``, negative, beyond
    MAX_TOKENS_PER_RESPONSE, or (output counts) beyond the request's ``server_count_limit``. The
    response's own output count (``cap``) beyond that limit is 'over_max_tokens' instead: the
    response is more than its request allowed."""
    if v is None or isinstance(v, (float, str)):
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ChunkError("bad_count", f"{what} is not a token count: {str(v)[:60]!r}")
    limit = MAX_TOKENS_PER_RESPONSE
    if (output or cap) and st.max_tokens is not None:
        limit = min(limit, server_count_limit(st.max_tokens))
    if cap and st.max_tokens is not None and limit < v <= MAX_TOKENS_PER_RESPONSE:
        raise ChunkError(
            OVER_CAP, f"the server counts {what} {v} for {st.max_tokens} requested (accepted: up to {limit})"
        )
    if not 0 <= v <= limit:
        asked = f" for {st.max_tokens} requested" if output and st.max_tokens is not None else ""
        raise ChunkError("bad_count", f"impossible {what} {v}{asked} (accepted: 0 to {limit})")
    return v


# A text longer than this many characters per token its count may still take is not counted whole
# when a prefix of it already takes more (a flood costs the client only the prefix).
_CHARS_PER_TOKEN = 16


def _count_upto(text: str, count: Callable[[str], int], budget: int) -> int:
    """``count(text)``, or, for a long text whose prefix already counts more than ``budget``, that
    prefix's count less 4 (a cut can split a word or a merged token in two: a prefix counts at most
    a token or two more than it holds of the whole)."""
    cut = _CHARS_PER_TOKEN * (budget + 1)
    if len(text) > cut:
        n = count(text[:cut]) - 4
        if n > budget:
            return n
    return count(text)


def _client_counted(st: StreamState, text: str, count: Callable[[str], int], least: int = 0) -> int:
    """Count ``text`` with the client's tokenizer (no count from the server; at least ``least``) and
    add it to ``st``; a ChunkError 'over_max_tokens' once the total passes ``client_count_limit``:
    the stream is not read further."""
    if st.max_tokens is None:
        n = max(least, count(text)) if text else least
    else:
        budget = max(0, client_count_limit(st.max_tokens) - st.tokens)
        n = max(least, _count_upto(text, count, budget)) if text else least
    st.tokens += n
    if st.max_tokens is not None and st.tokens > client_count_limit(st.max_tokens):
        raise ChunkError(OVER_CAP, _over_cap_text(st.tokens, st.max_tokens, "at least"))
    return n


def _over_cap_text(n: int, max_tokens: int, least: str = "") -> str:
    return (
        f"the response's text is {least + ' ' if least else ''}{n:,} tokens by the client's count for "
        f"{max_tokens} requested (accepted: up to {client_count_limit(max_tokens):,}, twice the request "
        "plus 16, for the client's tokenizer differing from the server's)"
    )


def text_over_cap(st: StreamState, count: Callable[[str], int]) -> str | None:
    """Why a response whose counts came from the server is more than its request allowed by the
    client's own count of its whole text, or None (the server's counts are checked as they come)."""
    if st.max_tokens is None or not st.text_parts:
        return None
    limit = client_count_limit(st.max_tokens)
    n = _count_upto("".join(st.text_parts), count, limit)
    return _over_cap_text(n, st.max_tokens, "at least") if n > limit else None


@dataclass(frozen=True)
class Dialect:
    name: str
    path: str
    chat: bool
    native: bool  # SGLang /generate
    continuous_usage: bool

    def build(
        self,
        prompt: str | list[int],
        max_tokens: int,
        *,
        model: str | None,
        temperature: float,
        ignore_eos: bool,
        extra: dict[str, Any],
        count: Callable[[str], int] | None = None,
        decode: Callable[[list[int]], str] | None = None,
        messages: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        """The request body. Chat dialects send ``messages`` (a dataset's conversation) when given,
        else the prompt as one user message; the server applies the model's chat template."""
        if self.native:
            body: dict[str, Any] = {
                "sampling_params": {
                    "temperature": temperature,
                    "max_new_tokens": max_tokens,
                    "ignore_eos": ignore_eos,
                },
                "stream": True,
            }
            if isinstance(prompt, list):
                body["input_ids"] = prompt
            else:
                body["text"] = prompt
        else:
            body = {"model": model, "temperature": temperature, "max_tokens": max_tokens, "stream": True}
            so: dict[str, Any] = {"include_usage": True}
            if self.continuous_usage:
                so["continuous_usage_stats"] = True
            body["stream_options"] = so
            if ignore_eos:
                body["ignore_eos"] = True
            if self.chat and messages:
                body["messages"] = [dict(m) for m in messages]
            elif self.chat:
                text = prompt if isinstance(prompt, str) else (decode(prompt) if decode else str(prompt))
                body["messages"] = [{"role": "user", "content": text}]
            else:
                body["prompt"] = prompt
        for k, v in extra.items():  # --extra-request-body merges last; nested dicts merge one level
            if isinstance(v, dict) and isinstance(body.get(k), dict):
                body[k] = {**body[k], **v}
            else:
                body[k] = v
        return body

    def parse(self, payload: bytes, st: StreamState, count: Callable[[str], int]) -> tuple[str, int]:
        """Fold one SSE payload into ``st``; return (new text, new tokens) it carried."""
        if payload == DONE or payload.strip() == DONE:
            st.done = True
            return "", 0
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError as e:
            raise ChunkError("malformed", f"chunk is not JSON: {_shown(payload, 120)}") from e
        if not isinstance(obj, dict):
            raise ChunkError("malformed", f"chunk is not a JSON object: {_shown(payload, 120)}")
        if "error" in obj and not obj.get("choices") and "text" not in obj:
            err = obj["error"]
            msg = err.get("message", err) if isinstance(err, dict) else err
            raise ChunkError("server_error", f"server error in stream: {redact_pieces.clip(str(msg), 300)}")
        if self.native:
            return _parse_sglang(obj, st, count)
        return _parse_openai(obj, st, count, chat=self.chat)


def _parse_sglang(obj: dict[str, Any], st: StreamState, count: Callable[[str], int]) -> tuple[str, int]:
    text = obj.get("text")
    meta = obj.get("meta_info")
    if not isinstance(text, str) or not isinstance(meta, dict):
        raise ChunkError("malformed", "sglang chunk lacks 'text' or 'meta_info'")
    prev_len = sum(len(p) for p in st.text_parts)
    new_text = text[prev_len:] if len(text) >= prev_len else ""
    if new_text:
        st.text_parts.append(new_text)
    ct = _count(meta.get("completion_tokens"), "meta_info.completion_tokens", st, cap=True)
    if ct is not None:
        new_tokens = max(0, ct - st.tokens)
        st.tokens = max(st.tokens, ct)
        st.server_tokens = True
    else:
        new_tokens = _client_counted(st, new_text, count)
    pt = _count(meta.get("prompt_tokens"), "meta_info.prompt_tokens", st, output=False)
    if pt is not None:
        st.prompt_tokens = pt
    svc = _count(meta.get("spec_verify_ct"), "meta_info.spec_verify_ct", st)
    if svc is not None:
        st.spec_verify_ct = svc
    fr = meta.get("finish_reason")
    if fr:
        st.finish_reason = str(fr.get("type", fr)) if isinstance(fr, dict) else str(fr)
    return new_text, new_tokens


def _parse_openai(
    obj: dict[str, Any], st: StreamState, count: Callable[[str], int], *, chat: bool
) -> tuple[str, int]:
    choices = obj.get("choices")
    usage = obj.get("usage")
    new_text = ""
    if isinstance(choices, list) and choices:
        c = choices[0]
        if not isinstance(c, dict):
            raise ChunkError("malformed", "choices[0] is not an object")
        if chat:
            delta = c.get("delta") or {}
            t = delta.get("content") if isinstance(delta, dict) else None
            if t is None and isinstance(delta, dict):
                t = delta.get("reasoning_content")
        else:
            t = c.get("text")
        if t:
            if not isinstance(t, str):
                raise ChunkError("malformed", "choice text is not a string")
            new_text = t
            st.text_parts.append(t)
        if c.get("finish_reason"):
            st.finish_reason = str(c["finish_reason"])
    elif choices is None and usage is None:
        raise ChunkError("malformed", "OpenAI chunk has neither 'choices' nor 'usage'")
    ct = (
        _count(usage.get("completion_tokens"), "usage.completion_tokens", st, cap=True)
        if isinstance(usage, dict)
        else None
    )
    pt = (
        _count(usage.get("prompt_tokens"), "usage.prompt_tokens", st, output=False)
        if isinstance(usage, dict)
        else None
    )
    if pt is not None:
        st.prompt_tokens = pt
    timings = obj.get("timings")
    if isinstance(timings, dict):  # llama-server, on the last chunk: its drafts for this response
        dn = _count(timings.get("draft_n"), "timings.draft_n", st, output=False)
        # accepted drafts past max_tokens are counted too (then discarded): bounded by draft_n only
        da = _count(timings.get("draft_n_accepted"), "timings.draft_n_accepted", st, output=False)
        if dn is not None and da is not None:
            if da > dn:
                raise ChunkError("bad_count", f"timings.draft_n_accepted {da} > timings.draft_n {dn}")
            st.draft_tokens, st.draft_accepted = dn, da
    new_tokens = 0
    if ct is not None and choices:  # continuous usage: cumulative count on every chunk
        new_tokens = max(0, ct - st.tokens)
        st.tokens = max(st.tokens, ct)
        st.server_tokens = True
    elif ct is not None:  # final usage-only chunk
        st.final_usage_tokens = ct
    elif new_text:  # no count from the server: our tokenizer, at least one token per text chunk
        new_tokens = _client_counted(st, new_text, count, least=1)
    return new_text, new_tokens


DIALECTS: dict[str, Dialect] = {
    d.name: d
    for d in [
        Dialect("sglang", "/generate", chat=False, native=True, continuous_usage=False),
        Dialect("vllm", "/v1/completions", chat=False, native=False, continuous_usage=True),
        Dialect("openai", "/v1/completions", chat=False, native=False, continuous_usage=False),
        Dialect("openai-chat", "/v1/chat/completions", chat=True, native=False, continuous_usage=False),
        Dialect("sglang-oai", "/v1/completions", chat=False, native=False, continuous_usage=True),
        Dialect("sglang-oai-chat", "/v1/chat/completions", chat=True, native=False, continuous_usage=True),
        Dialect("vllm-chat", "/v1/chat/completions", chat=True, native=False, continuous_usage=True),
    ]
}


def get_dialect(name: str) -> Dialect:
    if name not in DIALECTS:
        raise UsageError(f"unknown --backend: {one_of(name, DIALECTS)}")
    return DIALECTS[name]
