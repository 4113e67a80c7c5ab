"""A minimal, fast streaming server for client benchmarks (raw asyncio, HTTP/1.1 chunked SSE).

Every request streams ``chunks`` OpenAI-completions chunks (continuous usage), one every ``gap_ms``,
all streams written in one pass per tick. Each chunk's text carries the server's monotonic ns at
write time (``" t<ns>"``), so a client that keeps the text can compute its own timestamp error.

    python benchmarks/firehose.py --port 0 --chunks 64 --gap-ms 10 [--cpu 1]
prints ``firehose listening on http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import orjson

from specsweep.client import kstamp

_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"Connection: keep-alive\r\n\r\n"
)
_MODELS = orjson.dumps({"object": "list", "data": [{"id": "firehose", "object": "model"}]})


def _frame(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Stream:
    __slots__ = ("arrival", "n", "tr")

    def __init__(self, tr: asyncio.Transport, arrival: int = 0) -> None:
        self.tr = tr
        self.n = 0
        self.arrival = arrival  # monotonic ns the request was read


class Server:
    """Writes ``burst`` chunks per stream per tick in one write (burst > 1: a server that costs less
    CPU per chunk than the client). Subclasses change a chunk's text (``text``) or watch writes
    (``on_write``)."""

    def __init__(self, chunks: int, gap_ms: float, tokens_per_chunk: int, burst: int = 1) -> None:
        self.chunks = chunks
        self.gap = gap_ms / 1000.0
        self.tpc = tokens_per_chunk
        self.burst = burst
        self.streams: list[Stream] = []
        self.wake = asyncio.Event()

    def text(self, s: Stream, now: int) -> str:
        return f" t{now}"

    def on_write(self, now: int) -> None:
        pass

    def _chunk(self, s: Stream) -> bytes:
        s.n += 1
        now = time.monotonic_ns()
        body = orjson.dumps({
            "id": "f", "object": "text_completion", "model": "firehose",
            "choices": [{"index": 0, "text": self.text(s, now), "finish_reason": "length" if s.n == self.chunks else None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": s.n * self.tpc, "total_tokens": 1 + s.n * self.tpc},
        })  # fmt: skip
        self.on_write(now)
        return b"data: " + body + b"\n\n"

    async def ticker(self) -> None:
        loop = asyncio.get_running_loop()
        nxt = loop.time()
        while True:
            if not self.streams:
                self.wake.clear()
                await self.wake.wait()
                nxt = loop.time()
            nxt += self.gap
            alive: list[Stream] = []
            for s in self.streams:
                if s.tr.is_closing():
                    continue
                out = _frame(b"".join(self._chunk(s) for _ in range(min(self.burst, self.chunks - s.n))))
                if s.n >= self.chunks:
                    out += _frame(b"data: [DONE]\n\n") + b"0\r\n\r\n"
                else:
                    alive.append(s)
                s.tr.write(out)
            self.streams = alive
            await asyncio.sleep(max(0.0, nxt - loop.time()))


class Proto(asyncio.Protocol):
    """Minimal HTTP/1.1: GET answers JSON (``get_body``), any other request starts a stream."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.buf = b""
        self.tr: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.tr = transport  # type: ignore[assignment]

    def get_body(self, path: str) -> bytes:
        return _MODELS if path.startswith("/v1/models") else b"{}"

    def start_stream(self) -> None:
        assert self.tr is not None
        self.tr.write(_HEAD)
        # the request's arrival: the kernel's receive stamp of the read that completed it (see kstamp)
        self.srv.streams.append(Stream(self.tr, kstamp.arrival_ns(self.tr)))
        self.srv.wake.set()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v)
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length :]
            assert self.tr is not None
            if head.startswith("GET"):
                body = self.get_body(head.split("\r\n", 1)[0].split(" ")[1])
                self.tr.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                              % (len(body), body))  # fmt: skip
                continue
            self.start_stream()


async def listen(srv: Server, proto: type[Proto] = Proto, port: int = 0) -> asyncio.Server:
    """Serve ``srv`` on 127.0.0.1 (a kernel-stamped listening socket: request arrivals are exact) and
    print ``firehose listening on URL``."""
    sock = kstamp.listen("127.0.0.1", port)
    server = await asyncio.get_running_loop().create_server(lambda: proto(srv), sock=sock, backlog=4096)
    print(f"firehose listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    return server


async def main(args: argparse.Namespace) -> None:
    srv = Server(args.chunks, args.gap_ms, args.tokens_per_chunk)
    await listen(srv, port=args.port)
    await srv.ticker()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--chunks", type=int, default=64)
    ap.add_argument("--gap-ms", type=float, default=10.0)
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    a = ap.parse_args()
    if a.cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {a.cpu})
    asyncio.run(main(a))  # the standard loop: its transports read through the stamped sockets
