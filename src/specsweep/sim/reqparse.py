"""Request bodies of the simulated server: prompts, chat messages, sampling fields; errors as vLLM words them.

Pure functions; each raises :class:`BadRequest` (status, message, error type, offending parameter),
which the server turns into vLLM's JSON error body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
