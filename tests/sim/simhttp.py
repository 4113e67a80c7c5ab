"""Helpers for the sim server tests: a test profile, an SSE reader with arrival times, JSON shapes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import orjson

from specsweep.sim.profile import Profile

FIXTURES = Path(__file__).parent / "fixtures"
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def make_profile(**kw: Any) -> Profile:
    """Steps of exactly t0_ms (no token, KV or admission costs), 3 drafts, room for 64 sequences."""
    base: dict[str, Any] = dict(
        name="test", model_name="sim-test", spec_method="dspark", k=3, survival=[0.7, 0.5, 0.3],
        t0_ms=20.0, c_tok_ms=0.0, c_kv_ms=0.0, prefill_ms_per_tok=0.0, admit_ms=0.0, cliff_ms=0.0,
        max_batch=64, kv_tokens=1_000_000, prefill_chunk=8192,
    )  # fmt: skip
    base.update(kw)
    return Profile(**base)


class SSE:
    """One streamed response: status, the data payloads, and each payload's arrival (monotonic ns)."""

    def __init__(self) -> None:
        self.status = 0
        self.payloads: list[bytes] = []
        self.times_ns: list[int] = []
        self.sent_ns = 0
        self.error: BaseException | None = None
        self.body = b""

    def json(self) -> list[dict[str, Any]]:
        return [orjson.loads(p) for p in self.payloads if p != b"[DONE]"]


async def sse(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> SSE:
    out = SSE()
    out.sent_ns = time.monotonic_ns()
    try:
        async with session.post(url, json=body) as r:
            out.status = r.status
            if r.status != 200 or not r.headers.get("Content-Type", "").startswith("text/event-stream"):
                out.body = await r.read()
                return out
            async for line in r.content:
                if line.startswith(b"data: "):
                    out.times_ns.append(time.monotonic_ns())
                    out.payloads.append(line[6:].rstrip(b"\r\n"))
    except (aiohttp.ClientError, asyncio.TimeoutError) as e:
        out.error = e
    return out


def read_sse_fixture(name: str) -> list[bytes]:
    """The data payloads of a recorded stream (':' comment lines skipped, as SSE does)."""
    return [
        line[6:].encode() for line in (FIXTURES / name).read_text().splitlines() if line.startswith("data: ")
    ]


def read_json_fixture(name: str) -> Any:
    obj = orjson.loads((FIXTURES / name).read_bytes())
    obj.pop("_source", None)
    return obj


def shape(v: Any) -> Any:
    """The structure of a JSON value: key sets and nesting, scalar values replaced by their JSON type."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def assert_same_shape(ours: Any, ref: Any, where: str = "$") -> None:
    """Same keys at every level, same JSON types; ``null`` only matches ``null``."""
    so, sr = shape(ours), shape(ref)
    assert so == sr, f"{where}: shape differs\n ours: {so}\n  ref: {sr}"
