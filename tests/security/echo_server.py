"""A real localhost server that echoes each request's body back in an error, padded so that a
secret in the body straddles the length at which the client cuts that kind of error short
(issue 27, item 7: truncation before scrubbing left 15-20 characters of the secret).

``serve(mode, secret, cut)`` starts a ThreadingHTTPServer on 127.0.0.1 in a daemon thread and
returns (base_url, stop). Every POST is answered with an echo of its body: ``x`` padding and the
body (or its end), so that ``secret`` starts ``len(secret) // 2`` characters before ``cut``:

- ``http``: status 401 and the echo as the body (the client keeps 500 characters);
- ``chunk``: 200 and one SSE event that is not JSON, the echo (kept: 120 characters of its repr);
- ``error``: 200 and one SSE event ``{"error": {"message": echo}}`` (kept: 300).
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import orjson

from .hostile_counts_server import start


def serve(mode: str, secret: str, cut: int) -> tuple[str, Callable[[], None]]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *a: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            at, where = body.find(secret), cut - len(secret) // 2  # where the secret must start
            skip = max(0, at + 1 - where)  # a body longer than that: echo its end only
            echo = "x" * (where - at + skip) + body[skip:]
            if mode == "http":
                self.send_response(401)
                self.end_headers()
                self.wfile.write(echo.encode())
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            event = echo.encode() if mode == "chunk" else orjson.dumps({"error": {"message": echo}})
            self.wfile.write(b"data: " + event + b"\n\n")

    return start(Handler)
