"""A real localhost server that streams well-formed SSE with hostile usage numbers.

``serve(completion_tokens=..., event_bytes=..., words=..., usage=...)`` starts a ThreadingHTTPServer
on 127.0.0.1 in a daemon thread and returns (base_url, stop). Every POST gets two text chunks, each
carrying ``usage.completion_tokens`` = the given value (vLLM continuous usage), then ``[DONE]``. With
``event_bytes``, the first event's text is that many bytes long (one huge SSE event); with
``words``, it is that many words (a flood of text for any max_tokens); ``usage=False`` sends no
usage object at all (the client must count the text itself). ``metrics``: the texts that successive
``GET /metrics`` get (the last one repeats), e.g. spec-decode counters that lie.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


def serve(
    completion_tokens: Any = 2,
    event_bytes: int = 0,
    words: int = 0,
    usage: bool = True,
    metrics: Sequence[str] = (),
) -> tuple[str, Callable[[], None]]:
    flood = " word" * words
    scrapes = list(metrics)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path != "/metrics" or not scrapes:
                self.send_error(404)
                return
            body = (scrapes.pop(0) if len(scrapes) > 1 else scrapes[0]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            counts = {"prompt_tokens": 16, "completion_tokens": completion_tokens}
            first = "x" * event_bytes if event_bytes else flood or "tok"
            for i, text in enumerate([first, " tok"]):
                choice = {"index": 0, "text": text, "finish_reason": "length" if i else None}
                chunk = {"choices": [choice], **({"usage": counts} if usage else {})}
                self.wfile.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")

    return start(Handler)


def start(handler: type[BaseHTTPRequestHandler]) -> tuple[str, Callable[[], None]]:
    """Serve ``handler`` on a free 127.0.0.1 port in a daemon thread: (base_url, stop)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    def stop() -> None:
        srv.shutdown()
        srv.server_close()

    return f"http://127.0.0.1:{srv.server_address[1]}", stop
