"""A real localhost HTTP server that streams a scripted schedule (known TTFT, gaps, tokens/chunk).

Used to check the client's timing against ground truth: each chunk is written at
send + ttft + sum(gaps) on the server's clock, and the server logs the monotonic time it wrote it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import orjson
from aiohttp import web


@dataclass
class Script:
    ttft_s: float = 0.05
    gaps_s: list[float] = field(default_factory=lambda: [0.02, 0.03, 0.01, 0.04])
    tokens: list[int] = field(default_factory=lambda: [1, 3, 2, 4, 1])  # first chunk + one per gap
    word: str = "tok"
    mode: str = "ok"  # ok | http500 | malformed | truncate | stall | error_obj | every_other_500 | close_after  # | late_headers (the response headers go out with the first chunk, not on arrival)


class ProcessServer:
    """Runs a ScriptedServer in its own process: no shared event loop or GIL with the client."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def __enter__(self) -> ProcessServer:
        import subprocess
        import sys

        arg = orjson.dumps(self.script.__dict__).decode()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.client.scripted_server", arg],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.url = line.strip().rsplit(" ", 1)[-1]
        return self

    def fetch(self) -> tuple[list[list[int]], list[int]]:
        import urllib.request

        with urllib.request.urlopen(self.url + "/_log") as r:
            d = orjson.loads(r.read())
        return d["writes"], d["recv"]

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class ScriptedServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.writes: list[list[int]] = []  # per request: monotonic ns of each chunk write
        self.recv: list[int] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/generate", self._generate)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/_log", self._log)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{self.port}"

    async def close(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    async def _log(self, request: web.Request) -> web.Response:
        return web.json_response({"writes": self.writes, "recv": self.recv})

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def _stream(self, request: web.Request, make) -> web.StreamResponse:  # type: ignore[no-untyped-def]
        t0 = time.monotonic_ns()
        self.recv.append(t0)
        await request.read()
        s = self.script
        if s.mode == "http500" or (s.mode == "every_other_500" and len(self.recv) % 2 == 0):
            return web.json_response({"error": "boom"}, status=500)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if s.mode == "late_headers":
            await asyncio.sleep(max(0.0, t0 / 1e9 + s.ttft_s - time.monotonic()))
        await resp.prepare(request)
        writes: list[int] = []
        self.writes.append(writes)
        offsets = [s.ttft_s]
        for g in s.gaps_s:
            offsets.append(offsets[-1] + g)
        total = 0
        for i, (off, n) in enumerate(zip(offsets, s.tokens, strict=True)):
            delay = t0 / 1e9 + off - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            total += n
            last = i == len(offsets) - 1
            payload = make(n, total, last)
            writes.append(time.monotonic_ns())
            if i == 2 and s.mode == "malformed":
                await resp.write(b"data: {not json\n\n")
                continue
            if i == 2 and s.mode == "error_obj":
                await resp.write(b'data: {"error": {"message": "out of memory"}}\n\n')
                continue
            if i == 2 and s.mode == "truncate":
                request.transport.close()  # type: ignore[union-attr]
                return resp
            if i == 2 and s.mode == "stall":
                await asyncio.sleep(30)
            await resp.write(b"data: " + orjson.dumps(payload) + b"\n\n")
        tail = make(0, total, None)
        if tail is not None:
            await resp.write(b"data: " + orjson.dumps(tail) + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        if s.mode == "close_after":  # like llama-server: close after the stream, without saying so
            await resp.write_eof()
            request.transport.close()  # type: ignore[union-attr]
        return resp

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        text: list[str] = []

        def make(n: int, total: int, last: bool | None) -> dict | None:  # type: ignore[type-arg]
            if last is None:
                return None
            text.extend([" " + self.script.word] * n)
            return {
                "text": "".join(text),
                "meta_info": {"completion_tokens": total, "prompt_tokens": 7, "spec_verify_ct": 0,
                              "finish_reason": {"type": "length"} if last else None},
            }  # fmt: skip

        return await self._stream(request, make)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        def make(n: int, total: int, last: bool | None) -> dict:  # type: ignore[type-arg]
            usage = {"prompt_tokens": 7, "completion_tokens": total, "total_tokens": 7 + total}
            if last is None:
                return {"id": "x", "object": "text_completion", "choices": [], "usage": usage}
            return {"id": "x", "object": "text_completion",
                    "choices": [{"index": 0, "text": (" " + self.script.word) * n,
                                 "finish_reason": "length" if last else None}],
                    "usage": usage}  # fmt: skip

        return await self._stream(request, make)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        def make(n: int, total: int, last: bool | None) -> dict:  # type: ignore[type-arg]
            if last is None:
                return {"id": "x", "choices": [],
                        "usage": {"prompt_tokens": 7, "completion_tokens": total}}  # fmt: skip
            return {"id": "x", "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"content": (" " + self.script.word) * n},
                                 "finish_reason": "length" if last else None}]}  # fmt: skip

        return await self._stream(request, make)


async def _main(script: Script) -> None:
    srv = ScriptedServer(script)
    url = await srv.start()
    print(f"listening on {url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    import sys

    asyncio.run(_main(Script(**orjson.loads(sys.argv[1]))))
