"""The simulator with faults placed at a stage, for the fault matrix (runs as a `command` server).

    python staged_sim.py --port P [--host H] [--faults SPEC] [--fault-requests A:B]
                         [--readiness-fault hang|abort|garbage] [--trap-sigterm] [--child]

--faults is the sim's own fault spec (specsweep.sim.faults); --fault-requests limits it to the
generation requests numbered A..B (1-based, arrival order; B empty = no end), so a test can aim a
fault at readiness (request 1), the warmup or the measured requests. --readiness-fault breaks the
non-streaming /v1/completions answer (the launcher's readiness probe) while streams stay healthy.
--trap-sigterm ignores SIGTERM (teardown must escalate to SIGKILL); --child leaves a grandchild in
the process group that ignores SIGTERM too.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
from typing import Any

from aiohttp import web

from specsweep.sim.faults import RequestFaults, parse_faults
from specsweep.sim.profile import load_profile
from specsweep.sim.server import SimServer
from specsweep.sim.settings import SimConfig

GRANDCHILD = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"


def _range(s: str) -> tuple[int, float]:
    a, _, b = s.partition(":")
    return int(a or 1), float(b) if b else float("inf")


async def main(a: argparse.Namespace) -> None:
    cfg = SimConfig(
        profile=load_profile("toy"), host=a.host, port=a.port, seed=a.seed, time_scale=a.time_scale,
        faults=parse_faults(a.faults), served_model_name=a.served_model_name,
    )  # fmt: skip
    server = SimServer(cfg)
    lo, hi = _range(a.fault_requests)
    draw = server.fault_drawer.draw
    seen = [0]

    def staged_draw(*, stream: bool) -> RequestFaults:
        seen[0] += 1
        rf = draw(stream=stream)
        print(f"staged_sim: generation request {seen[0]} stream={stream}", flush=True)
        return rf if lo <= seen[0] <= hi else RequestFaults()

    server.fault_drawer.draw = staged_draw  # type: ignore[method-assign]

    @web.middleware
    async def readiness_fault(request: web.Request, handler: Any) -> web.StreamResponse:
        if a.readiness_fault and request.method == "POST" and request.path == "/v1/completions":
            body = await request.json()
            if not body.get("stream"):
                print(f"staged_sim: readiness fault {a.readiness_fault}", flush=True)
                if a.readiness_fault == "hang":
                    await asyncio.sleep(3600)
                if a.readiness_fault == "abort" and request.transport is not None:
                    request.transport.abort()
                return web.Response(status=200, text="<html>upstream garbage</html>")
        return await handler(request)

    server.app.middlewares.append(readiness_fault)
    runner = web.AppRunner(server.app, handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, a.host, a.port).start()
    if a.child:
        p = subprocess.Popen([sys.executable, "-c", GRANDCHILD])
        print(f"staged_sim: grandchild pid {p.pid}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if a.trap_sigterm:
        loop.add_signal_handler(signal.SIGTERM, lambda: print("staged_sim: ignoring SIGTERM", flush=True))
    else:
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    print(f"staged_sim listening on http://{a.host}:{a.port}", flush=True)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-scale", type=float, default=20.0)
    ap.add_argument("--faults", default="")
    ap.add_argument("--fault-requests", default="1:")
    ap.add_argument("--readiness-fault", choices=["hang", "abort", "garbage"])
    ap.add_argument("--trap-sigterm", action="store_true")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--api-key", help="accepted and ignored (secret-redaction tests)")
    ap.add_argument("--served-model-name")
    asyncio.run(main(ap.parse_args()))
