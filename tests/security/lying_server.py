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
import signal
from typing import Any

from aiohttp import web

from specsweep.sim.profile import load_profile
from specsweep.sim.server import SimServer
from specsweep.sim.settings import SimConfig

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
    server = SimServer(
        SimConfig(profile=load_profile("toy"), host=a.host, port=a.port, seed=1, time_scale=20.0)
    )
    scrapes = [0]

    @web.middleware
    async def lie(request: web.Request, handler: Any) -> web.StreamResponse:
        if a.lie_metrics and request.path == "/metrics":
            scrapes[0] += 1
            return web.Response(text=metrics_text(a.lie_metrics, scrapes[0]), content_type="text/plain")
        if a.flood_words and request.method == "POST" and request.path.endswith("/completions"):
            body = json.loads(await request.read() or b"{}")
            if body.get("stream"):
                resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
                await resp.prepare(request)
                key = "delta" if "chat" in request.path else "text"
                text = " word" * a.flood_words
                choice = {
                    "index": 0,
                    key: {"content": text} if key == "delta" else text,
                    "finish_reason": "length",
                }
                await resp.write(b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n")
                await resp.write(b"data: [DONE]\n\n")
                await resp.write_eof()
                return resp
        return await handler(request)

    server.app.middlewares.insert(0, lie)
    runner = web.AppRunner(server.app, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, a.host, a.port).start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"lying server listening on http://{a.host}:{a.port}", flush=True)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--flood-words", type=int, default=0)
    ap.add_argument("--lie-metrics", choices=sorted(STEP))
    ap.add_argument("--spec-tokens", type=int, help="accepted and ignored (the config's k)")
    asyncio.run(main(ap.parse_args()))
