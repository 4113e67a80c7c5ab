"""A hostile server that lies about what it did: the simulator, with its answers replaced.

    python lying_server.py --port P [--host H] [--flood-words N] [--lie-metrics inflate|backwards]
                           [--spec-tokens K]

- ``--flood-words N``: every streaming generation request gets one chunk of N words, whatever its
  max_tokens, with no usage object (the client has only its own count), then ``[DONE]``. The
  readiness probe (not streaming) is answered by the simulator.
- ``--lie-metrics inflate``: ``/metrics`` counts 1 draft, 3 draft tokens and 7,000,000 accepted
  tokens more at every scrape (an acceptance rate of 2,333,333 and an accept length of 7,000,001).
- ``--lie-metrics backwards``: the counters fall at every scrape (what a restart looks like).

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
STEP = {"inflate": (1, 3, 7_000_000), "backwards": (-100, -300, -200)}
START = {"inflate": (0, 0, 0), "backwards": (10_000, 30_000, 20_000)}


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
        if a.flood_words and request.method == "POST" and request.path.endswith("/completions"):
            body = json.loads(await request.read() or b"{}")
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


if __name__ == "__main__":
    ap = arguments()
    ap.add_argument("--flood-words", type=int, default=0)
    ap.add_argument("--lie-metrics", choices=sorted(STEP))
    ap.add_argument("--spec-tokens", type=int, help="accepted and ignored (the config's k)")
    asyncio.run(main(ap.parse_args()))
