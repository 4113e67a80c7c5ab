"""A hostile server that lies about what it did: the simulator, with its answers replaced.

    python lying_server.py --port P [--host H] [--flood-words N] [--lie-metrics inflate|backwards]
                           [--spec-tokens K]

- ``--flood-words N``: every streaming generation request gets one chunk of N words, whatever its
  max_tokens, with no usage object (the client has only its own count), then ``[DONE]``. The
  readiness probe (not streaming) is answered by the simulator.
- ``--lie-metrics inflate``: ``/metrics`` counts 1 draft, 3 draft tokens and 7,000,000 accepted
  tokens more at every scrape (an acceptance rate of 2,333,333 and an accept length of 7,000,001).
- ``--lie-metrics backwards``: the counters fall at every scrape (what a restart looks like).
- ``--lie-metrics huge``: 1e17 drafts, 3e17 draft tokens and 3e17 accepted tokens more at every
  scrape: consistent among themselves (acceptance 1.0, accept length 4.00), impossible for a cell of
  a few hundred output tokens (issue 38, defect 5).
- ``--lie-usage empty``: every streaming generation request gets three chunks with no text whose
  usage claims max_tokens (issue 38, defect 4); ``--lie-usage few``: a text of ``max_tokens``
  words whose usage claims 1 token.

Runs as a ``command`` server (``{port}``/``{host}`` in its argv); SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from aiohttp import web
from sim_front import arguments, serve  # a script: its folder is on sys.path

COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
STEP = {
    "inflate": (1, 3, 7_000_000),
    "backwards": (-100, -300, -200),
    "huge": (10**17, 3 * 10**17, 3 * 10**17),
}
START = {"inflate": (0, 0, 0), "backwards": (10_000, 30_000, 20_000), "huge": (0, 0, 0)}


def metrics_text(mode: str, scrape: int) -> str:
    lines = []
    for name, start, step in zip(COUNTERS, START[mode], STEP[mode], strict=True):
        lines += [f"# TYPE vllm:spec_decode_{name} counter",
                  f'vllm:spec_decode_{name}_total{{model_name="m"}} {start + step * scrape}']  # fmt: skip
    return "\n".join(lines) + "\n"


async def main(a: argparse.Namespace) -> None:
    scrapes = [0]

    @web.middleware
    async def lie(request: web.Request, handler: Any) -> web.StreamResponse:
        if a.lie_metrics and request.path == "/metrics":
            scrapes[0] += 1
            return web.Response(text=metrics_text(a.lie_metrics, scrapes[0]), content_type="text/plain")
        if (
            (a.flood_words or a.lie_usage)
            and request.method == "POST"
            and request.path.endswith("/completions")
        ):
            body = json.loads(await request.read() or b"{}")
            if body.get("stream") and a.lie_usage:
                return await lie_usage(request, a.lie_usage, int(body.get("max_tokens") or 16))
            if body.get("stream"):
                return await flood(request, a.flood_words)
        return await handler(request)

    await serve(a.host, a.port, lie, "lying server")


async def flood(request: web.Request, words: int) -> web.StreamResponse:
    """One chunk of ``words`` words, finished, with no usage object; then [DONE]."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    text = " word" * words
    choice = {"index": 0, "finish_reason": "length"}
    choice.update({"delta": {"content": text}} if "chat" in request.path else {"text": text})
    await resp.write(b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def lie_usage(request: web.Request, how: str, max_tokens: int) -> web.StreamResponse:
    """``empty``: three chunks of no text, usage rising to max_tokens; ``few``: max_tokens words in
    three chunks, usage saying 1."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for i in range(3):
        text = "" if how == "empty" else " word" * (max_tokens // 3 + (max_tokens % 3 if i == 2 else 0))
        ct = max_tokens * (i + 1) // 3 if how == "empty" else 1
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length" if i == 2 else None}
        choice.update({"delta": {"content": text}} if "chat" in request.path else {"text": text})
        chunk = {"choices": [choice], "usage": {"prompt_tokens": 16, "completion_tokens": ct}}
        await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        await asyncio.sleep(0.005)
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


if __name__ == "__main__":
    ap = arguments()
    ap.add_argument("--flood-words", type=int, default=0)
    ap.add_argument("--lie-metrics", choices=sorted(STEP))
    ap.add_argument("--lie-usage", choices=["empty", "few"])
    ap.add_argument("--spec-tokens", type=int, help="accepted and ignored (the config's k)")
    asyncio.run(main(ap.parse_args()))
