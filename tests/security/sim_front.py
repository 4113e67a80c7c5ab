"""The toy simulator with a middleware in front, served until SIGTERM: the shared frame of the
hostile servers that tests run as `command` servers (hostile_server.py, lying_server.py).

Those run as scripts, so this module is imported by its plain name (a script's folder is on
``sys.path``)."""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

from aiohttp import web

from specsweep.sim.profile import load_profile
from specsweep.sim.server import SimServer
from specsweep.sim.settings import SimConfig


def arguments() -> argparse.ArgumentParser:
    """``--port`` (required) and ``--host``, as a launcher fills them in (``{port}``, ``{host}``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    return ap


async def serve(host: str, port: int, middleware: Any, name: str) -> None:
    """The toy simulator on ``host:port`` behind ``middleware`` (an aiohttp middleware), until SIGTERM."""
    server = SimServer(SimConfig(profile=load_profile("toy"), host=host, port=port, seed=1, time_scale=20.0))
    server.app.middlewares.insert(0, middleware)
    runner = web.AppRunner(server.app, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"{name} listening on http://{host}:{port}", flush=True)
    await stop.wait()
    await runner.cleanup()
