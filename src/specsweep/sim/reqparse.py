"""Request bodies of the simulated server: prompts, chat messages, sampling fields; errors as vLLM words them.

Pure functions; each raises :class:`BadRequest` (status, message, error type, offending parameter),
which the server turns into vLLM's JSON error body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specsweep.sim.settings import DEFAULT_COMPLETIONS_MAX_TOKENS, DEFAULT_GENERATE_MAX_NEW_TOKENS


class BadRequest(Exception):
    """A request the server rejects (4xx), with the parameter it names."""

    def __init__(self, status: int, message: str, etype: str = "BadRequestError", param: str | None = None):
        super().__init__(message)
        self.status = status
        self.etype = etype
        self.param = param


def parse_prompt(p: Any, name: str, count: Callable[[str], int]) -> tuple[str | list[int], int]:
    """A prompt as text or token ids (a batch of one is accepted), with its token count."""
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], (str, list)):
        p = p[0]
    if isinstance(p, str):
        return p, count(p)
    if isinstance(p, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in p):
        if not p:
            raise BadRequest(400, f"{name} is empty", param=name)
        return p, len(p)
    if isinstance(p, list) and p and all(isinstance(x, (str, list)) for x in p):
        raise BadRequest(
            400,
            f"{name}: batched prompts are not supported by the simulator; send one per request",
            param=name,
        )
    raise BadRequest(
        400, f"{name} must be a string or a list of token ids, got {type(p).__name__}", param=name
    )


def chat_prompt(messages: Any, count: Callable[[str], int]) -> tuple[str, int]:
    """Messages rendered with a minimal template (``<|role|>`` headers); counted by the built-in tokenizer."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest(
            400, "messages must be a non-empty list of {role, content} objects", param="messages"
        )
    parts = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise BadRequest(400, f"messages[{i}] must be an object with a string 'role'", param="messages")
        c = m.get("content")
        if isinstance(c, list):  # content parts: keep the text ones
            c = "".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
        elif c is None:
            c = ""
        elif not isinstance(c, str):
            raise BadRequest(
                400, f"messages[{i}].content must be a string or a list of parts", param="messages"
            )
        parts.append(f"<|{m['role']}|>\n{c}\n")
    parts.append("<|assistant|>\n")
    text = "".join(parts)
    return text, count(text)


def opt_int(v: Any, name: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(400, f"{name} must be an integer, got {v!r}", param=name)
    return v


def temperature(v: Any, default: float) -> float:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise BadRequest(400, f"temperature must be a number >= 0, got {v!r}", param="temperature")
    return float(v)


@dataclass(frozen=True)
class Generation:
    """A generation request as its endpoint parsed it: what admission and the reply need."""

    kind: str  # "cmpl" | "chat" | "gen"
    prompt: str | list[int]
    prompt_tokens: int
    max_tokens: int | None  # None: as many as the context leaves
    ignore_eos: bool
    temperature: float
    stream: bool
    include_usage: bool = False  # OpenAI stream_options
    continuous_usage: bool = False


def openai_generation(body: dict[str, Any], chat: bool, count: Callable[[str], int]) -> Generation:
    """/v1/completions (``chat`` False) and /v1/chat/completions, validated as vLLM validates them."""
    prompt: str | list[int]
    if chat:
        prompt, ptoks = chat_prompt(body.get("messages"), count)
        max_tokens = opt_int(
            body.get("max_completion_tokens", body.get("max_tokens")), "max_completion_tokens"
        )
    else:
        prompt, ptoks = parse_prompt(body.get("prompt"), "prompt", count)
        max_tokens = opt_int(body.get("max_tokens", DEFAULT_COMPLETIONS_MAX_TOKENS), "max_tokens")
    if max_tokens is not None and max_tokens < 1:
        raise BadRequest(400, f"max_tokens must be at least 1, got {max_tokens}.", param="max_tokens")
    stream = bool(body.get("stream", False))
    so = body.get("stream_options") or {}
    if not isinstance(so, dict):
        raise BadRequest(400, "stream_options must be an object", param="stream_options")
    if so and not stream:
        raise BadRequest(
            400, "Stream options can only be defined when `stream=True`.", param="stream_options"
        )
    temp = temperature(body.get("temperature"), 1.0)
    n_choices = body.get("n", 1)
    if n_choices not in (1, None):
        raise BadRequest(400, f"n={n_choices!r}: the simulator serves one choice per request", param="n")
    include_usage = bool(so.get("include_usage", False))
    return Generation(
        kind="chat" if chat else "cmpl", prompt=prompt, prompt_tokens=ptoks, max_tokens=max_tokens,
        ignore_eos=bool(body.get("ignore_eos", False)), temperature=temp, stream=stream,
        include_usage=include_usage,
        # as vLLM's should_include_usage
        continuous_usage=include_usage and bool(so.get("continuous_usage_stats", False)),
    )  # fmt: skip


def sglang_generation(body: dict[str, Any], count: Callable[[str], int]) -> Generation:
    """SGLang's /generate: ``text`` or ``input_ids``, and ``sampling_params``."""
    if body.get("input_ids") is not None:
        prompt, ptoks = parse_prompt(body["input_ids"], "input_ids", count)
    else:
        prompt, ptoks = parse_prompt(body.get("text"), "text", count)
    sp = body.get("sampling_params") or {}
    if not isinstance(sp, dict):
        raise BadRequest(400, "sampling_params must be an object", param="sampling_params")
    max_new = opt_int(sp.get("max_new_tokens", DEFAULT_GENERATE_MAX_NEW_TOKENS), "max_new_tokens")
    if max_new is not None and max_new < 1:
        raise BadRequest(400, f"max_new_tokens must be at least 1, got {max_new}", param="max_new_tokens")
    stream = bool(body.get("stream", False))
    return Generation(
        kind="gen", prompt=prompt, prompt_tokens=ptoks, max_tokens=max_new,
        ignore_eos=bool(sp.get("ignore_eos", False)), temperature=temperature(sp.get("temperature"), 1.0),
        stream=stream,
    )  # fmt: skip
