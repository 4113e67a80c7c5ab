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

from specsweep import redact
from specsweep.errors import UsageError, one_of

DONE = b"[DONE]"
# No response carries more tokens than this (no model has a 10M-token context): a larger count is a
# broken or hostile server, whatever max_tokens was.
MAX_TOKENS_PER_RESPONSE = 10_000_000


def _shown(payload: bytes, limit: int) -> str:
    """A payload in an error message: as ``repr`` shows it, scrubbed before it is cut (``redact.clip``)."""
    return redact.clip(repr(payload[: 16 * limit]), limit)


class ChunkError(Exception):
    """A payload that does not parse in the dialect, or an error object in the stream."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "malformed" | "server_error" | "bad_count"


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


def _count(v: Any, what: str, st: StreamState, *, output: bool = True) -> int | None:
    """A token count the server reported: None when absent (or not a number: the tokenizer counts
    instead); a ChunkError 'bad_count' when impossible: ``true``, negative, beyond
    MAX_TOKENS_PER_RESPONSE, or (output counts) beyond the request's max_tokens plus a small slack."""
    if v is None or isinstance(v, (float, str)):
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ChunkError("bad_count", f"{what} is not a token count: {str(v)[:60]!r}")
    limit = MAX_TOKENS_PER_RESPONSE
    if output and st.max_tokens is not None:
        limit = min(limit, st.max_tokens + max(4, st.max_tokens // 20))
    if not 0 <= v <= limit:
        asked = f" for {st.max_tokens} requested" if output and st.max_tokens is not None else ""
        raise ChunkError("bad_count", f"impossible {what} {v}{asked} (accepted: 0 to {limit})")
    return v


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
            raise ChunkError("server_error", f"server error in stream: {redact.clip(str(msg), 300)}")
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
    ct = _count(meta.get("completion_tokens"), "meta_info.completion_tokens", st)
    if ct is not None:
        new_tokens = max(0, ct - st.tokens)
        st.tokens = max(st.tokens, ct)
        st.server_tokens = True
    else:
        new_tokens = count(new_text) if new_text else 0
        st.tokens += new_tokens
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
        _count(usage.get("completion_tokens"), "usage.completion_tokens", st)
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
        new_tokens = max(1, count(new_text))
        st.tokens += new_tokens
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
