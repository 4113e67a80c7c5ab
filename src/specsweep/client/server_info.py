"""What the client asks a server about itself: spec-decode counters, /server_info, /v1/models, /version.

Counters are summed over label sets, ``_created`` samples skipped, and matched by suffix after any
prefix (``vllm:``, ``sglang:``, ``llamacpp:``...). Acceptance comes from deltas across the measured
run (after warmup), never from lifetime totals.
"""

from __future__ import annotations

import math
import re
from typing import Any

import aiohttp
import orjson

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_POS = re.compile(r'position="(\d+)"')

SPEC_KEYS = {
    "spec_decode_num_drafts": "num_drafts",
    "spec_decode_num_draft_tokens": "num_draft_tokens",
    "spec_decode_num_accepted_tokens": "num_accepted_tokens",
    # llama.cpp's names (server --metrics)
    "n_drafted": "num_draft_tokens",
    "n_drafted_accepted": "num_accepted_tokens",
}


def parse_spec_counters(text: str) -> dict[str, Any]:
    """{num_drafts, num_draft_tokens, num_accepted_tokens, per_pos: {pos: n}} from Prometheus text."""
    out: dict[str, Any] = {}
    per_pos: dict[int, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        if name.endswith("_created"):
            continue
        base = name.rsplit(":", 1)[-1]
        if base.endswith("_total"):
            base = base[: -len("_total")]
        try:
            v = float(value)
        except ValueError:
            continue
        if math.isnan(v):
            continue
        if base == "spec_decode_num_accepted_tokens_per_pos":
            pm = _POS.search(labels)
            if pm:
                per_pos[int(pm.group(1))] = per_pos.get(int(pm.group(1)), 0.0) + v
            continue
        key = SPEC_KEYS.get(base)
        if key:
            out[key] = out.get(key, 0.0) + v
    if per_pos:
        out["per_pos"] = per_pos
    return out


def spec_delta(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """Acceptance figures from two counter snapshots (empty if the server exposes none)."""
    if not before or not after:
        return {}
    d = {
        k: after.get(k, 0.0) - before.get(k, 0.0)
        for k in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
    }
    out: dict[str, Any] = {f"spec_{k}": v for k, v in d.items()}
    if d["num_draft_tokens"] > 0:
        out["spec_acceptance_rate"] = d["num_accepted_tokens"] / d["num_draft_tokens"]
    if d["num_drafts"] > 0:
        out["spec_accept_length"] = 1.0 + d["num_accepted_tokens"] / d["num_drafts"]
        pb, pa = before.get("per_pos", {}), after.get("per_pos", {})
        if pa:
            out["spec_accept_per_pos"] = [
                (pa.get(p, 0.0) - pb.get(p, 0.0)) / d["num_drafts"] for p in sorted(pa)
            ]
    return out


async def get_json(session: aiohttp.ClientSession, url: str, timeout: float = 10.0) -> Any:
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout)) as r:
            if r.status != 200:
                return None
            return orjson.loads(await r.read())
    except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError, ValueError):
        return None


async def get_text(session: aiohttp.ClientSession, url: str, timeout: float = 10.0) -> str | None:
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout)) as r:
            if r.status != 200:
                return None
            return await r.text()
    except (aiohttp.ClientError, TimeoutError, UnicodeDecodeError):
        return None


async def scrape_spec(session: aiohttp.ClientSession, base_url: str) -> dict[str, Any] | None:
    text = await get_text(session, base_url + "/metrics")
    if text is None:
        return None
    return parse_spec_counters(text)


async def server_accept_length(session: aiohttp.ClientSession, base_url: str) -> float | None:
    """SGLang's lifetime avg_spec_accept_length (a cross-check only: it includes warmup)."""
    for path in ("/server_info", "/get_server_info"):
        info = await get_json(session, base_url + path)
        if isinstance(info, dict):
            states = info.get("internal_states")
            if isinstance(states, list) and states and isinstance(states[0], dict):
                v = states[0].get("avg_spec_accept_length")
                if isinstance(v, (int, float)):
                    return float(v)
            v = info.get("avg_spec_accept_length")
            if isinstance(v, (int, float)):
                return float(v)
    return None


async def first_model(session: aiohttp.ClientSession, base_url: str) -> str | None:
    data = await get_json(session, base_url + "/v1/models")
    if isinstance(data, dict) and isinstance(data.get("data"), list) and data["data"]:
        m = data["data"][0]
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            return m["id"]
    info = await get_json(session, base_url + "/get_model_info")
    if isinstance(info, dict) and isinstance(info.get("model_path"), str):
        return info["model_path"]
    return None


async def server_version(session: aiohttp.ClientSession, base_url: str) -> dict[str, Any] | None:
    v = await get_json(session, base_url + "/version")
    return v if isinstance(v, dict) else None
