"""A tiny OpenAI-compatible server for launcher tests (stdlib only; runs as a subprocess).

    python fakeserver.py --port P [--host H] [--startup-delay S] [--fail-start] [--child]
                         [--model ID] [--no-generate]

--child spawns a long-lived grandchild in the same process group (teardown must kill it too);
--fail-start prints a message and exits 3 before listening.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--startup-delay", type=float, default=0.0)
    ap.add_argument("--fail-start", action="store_true")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--model", default="fake-model")
    ap.add_argument("--no-generate", action="store_true")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    print(f"fakeserver argv={sys.argv[1:]} secret_env={os.environ.get('FAKE_API_KEY', '')!r}", flush=True)
    if a.fail_start:
        print("fatal: cannot load model weights (simulated)", flush=True)
        sys.exit(3)
    if a.child:
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        print(f"child pid {p.pid}", flush=True)
    time.sleep(a.startup_delay)

    class H(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: object) -> None:
            print("request:", fmt % args, flush=True)

        def _json(self, code: int, obj: object) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._json(200, {"status": "ok"})
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": a.model, "object": "model"}]})
            elif self.path == "/version":
                self._json(200, {"version": "fake-1.2.3"})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            req = json.loads(self.rfile.read(n) or b"{}")
            if self.path != "/v1/completions" or a.no_generate:
                self._json(503, {"error": "generation unavailable"})
                return
            self._json(
                200,
                {
                    "id": "x",
                    "model": req.get("model"),
                    "choices": [{"index": 0, "text": " Bob", "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1},
                },
            )

    srv = ThreadingHTTPServer((a.host, a.port), H)
    print(f"fakeserver listening on http://{a.host}:{a.port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
