"""A hostile server for the secret tests: the simulator, plus everything a careless engine does.

    python hostile_server.py --port P [--host H] [--require-basic USER:PW] [--received FILE] [ANY ARGS]

- prints its whole argv and environment at startup (engines do: vLLM's "non-default args");
- prints every request's Authorization header and body;
- answers streaming generation requests 2 and 3 with ``401 invalid credentials: <the Authorization
  header> body=<the request body>`` (a server echoing the bearer token and ``api_key`` back);
- prints ``[/INST]`` and ANSI escapes (markup and terminal control in a log tail);
- ``--require-basic``: /health, /v1/models and the non-streaming probe need that Basic credential
  (a ``url:`` with userinfo must still get ready);
- ``--received FILE``: writes what it was given (argv, env) there, outside the run dir, so a test
  can check the secrets did reach the server.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import sys
from typing import Any

from aiohttp import web
from sim_front import arguments, serve  # a script: its folder is on sys.path


async def main(a: argparse.Namespace) -> None:
    print(f"hostile: argv {sys.argv}", flush=True)
    print(f"hostile: env {dict(os.environ)}", flush=True)
    print("hostile: [/INST] [bold]not markup[/bold] \x1b[31mred\x1b[0m", flush=True)
    if a.received:
        with open(a.received, "w") as f:
            json.dump({"argv": sys.argv, "env": dict(os.environ)}, f)
    streams = [0]

    @web.middleware
    async def hostile(request: web.Request, handler: Any) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        body = await request.read()
        print(
            f"hostile: {request.method} {request.path} Authorization={auth!r} body={body[:500]!r}", flush=True
        )
        stream = False
        if request.method == "POST":
            with contextlib.suppress(ValueError):
                stream = bool(json.loads(body or b"{}").get("stream"))
        if a.require_basic and not stream:
            want = "Basic " + base64.b64encode(a.require_basic.encode()).decode()
            if auth != want:
                return web.Response(status=401, text=f"need basic auth, got {auth!r}")
        if stream:
            streams[0] += 1
            if streams[0] in (2, 3):
                text = f"invalid credentials: {auth} body={body.decode('utf-8', 'replace')} [/INST]"
                return web.Response(status=401, text=text)
        return await handler(request)

    await serve(a.host, a.port, hostile, "hostile")


if __name__ == "__main__":
    ap = arguments()
    ap.add_argument("--require-basic")
    ap.add_argument("--received")
    args, _unknown = ap.parse_known_args()  # --api-key, --bearer, --pass, --header ...: accepted
    asyncio.run(main(args))
