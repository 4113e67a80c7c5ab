"""Running the simulated server as a process: `specsweep sim serve` flags, signal handling, and
:class:`SubprocessServer` (the server in a child process, for tests and launchers).

``python -m specsweep.sim.serve --profile NAME --port 0`` prints ``specsweep-sim listening on
http://HOST:PORT`` once it accepts connections; SIGTERM / SIGINT stop it with exit status 0; a simulated
crash (``--faults crash_after=N``) exits with :data:`CRASH_EXIT_CODE`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import secrets
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from specsweep.errors import UsageError
from specsweep.sim.faults import FAULT_KEYS, Faults, parse_faults
from specsweep.sim.profile import Profile, list_profiles, load_profile
from specsweep.sim.server import ServerHandle, start_server
from specsweep.sim.settings import DEFAULT_MAX_MODEL_LEN

CRASH_EXIT_CODE = 70  # exit status of a simulated crash (crash_after fault)
ENGINE_FAILED_EXIT_CODE = 3  # the engine itself failed (a bug): traceback on stderr


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile", required=True, help=f"profile name ({', '.join(list_profiles())}) or a .yaml path"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (0 = pick a free one; default 8000)")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of acceptance sampling, sampling and faults (default: a fresh one each start, printed "
        "and in /sim_info; a real server's second launch is a second run, not a replay of the first)",
    )
    p.add_argument(
        "--time-scale", type=float, default=1.0, help="virtual seconds per wall second (2 = twice as fast)"
    )
    p.add_argument(
        "--truth",
        help="append one JSON line per request (ground truth): its arrival (the kernel's receive stamp on "
        "Linux) and every chunk's write time, scheduled time and tokens, on CLOCK_MONOTONIC and the epoch",
    )
    p.add_argument(
        "--faults",
        help="fault injection: KEY=VALUE items separated by ',' or ';', e.g. "
        "'error_rate=0.1,error_status=503;stall_after_tokens=5,stall_s=30'; keys: " + ", ".join(FAULT_KEYS),
    )
    p.add_argument("--served-model-name", help="model id to serve (default: the profile's model_name)")
    p.add_argument("--max-model-len", type=int, default=DEFAULT_MAX_MODEL_LEN, help="context length")
    p.add_argument(
        "--writer-threads",
        type=int,
        default=0,
        help="split each step's socket writes over N threads (multi-core hosts, hundreds of streams; "
        "default 0: the event loop writes them)",
    )


def serve_main(args: argparse.Namespace) -> int:
    """Run until SIGTERM / SIGINT (exit 0); a simulated crash exits with CRASH_EXIT_CODE."""
    profile = load_profile(args.profile)
    faults = parse_faults(args.faults)
    if not args.time_scale > 0:
        raise UsageError(f"--time-scale {args.time_scale!r}; expected a positive number")
    if not 0 <= args.writer_threads <= 64:
        raise UsageError(f"--writer-threads {args.writer_threads}; expected 0..64")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}; expected 0..65535")
    if args.truth:
        Path(args.truth).parent.mkdir(parents=True, exist_ok=True)
    if args.seed is None:  # two launches must not replay one run: repeats would measure no noise
        args.seed = secrets.randbelow(2**31)
    return asyncio.run(_serve(args, profile, faults))


async def _serve(args: argparse.Namespace, profile: Profile, faults: Faults) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    holder: dict[str, ServerHandle] = {}

    def crash() -> None:
        sys.stderr.write(f"specsweep-sim: simulated crash (crash_after={faults.crash_after})\n")
        sys.stderr.flush()
        h = holder.get("h")
        if h is not None:
            h.server.flush_truth()
        os._exit(CRASH_EXIT_CODE)

    try:
        handle = await start_server(
            profile, args.host, args.port, seed=args.seed, time_scale=args.time_scale, truth=args.truth,
            faults=faults, served_model_name=args.served_model_name, max_model_len=args.max_model_len,
            on_crash=crash, writer_threads=args.writer_threads,
        )  # fmt: skip
    except OSError as e:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    holder["h"] = handle
    # a long-lived server with many small objects: keep the cyclic GC's pauses out of the schedule
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(f"specsweep-sim listening on {handle.url}\nspecsweep-sim seed {args.seed}\n")
    sys.stdout.flush()
    dead = handle.server.dead
    assert dead is not None
    try:
        await asyncio.wait(
            [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(dead.wait())],
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        await handle.close()
    if handle.server.failure is not None:
        err = handle.server.failure
        sys.stderr.write("specsweep-sim: the engine failed; exiting\n")
        sys.stderr.write("".join(traceback.format_exception(type(err), err, err.__traceback__)))
        sys.stderr.flush()
        return ENGINE_FAILED_EXIT_CODE
    return 0


def main(argv: list[str] | None = None) -> int:
    from specsweep.errors import SpecsweepError

    parser = argparse.ArgumentParser(prog="specsweep sim serve", description=__doc__.splitlines()[0])
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return serve_main(args)
    except SpecsweepError as e:
        sys.stderr.write(f"specsweep: error: {e}\n")
        return e.exit_code


class SubprocessServer:
    """A sim server in a child process (``python -m specsweep.sim.serve``), for tests and launchers.

    Use as a context manager; ``.port`` / ``.url`` are known once the child printed its listening line.
    """

    def __init__(
        self, *args: str, startup_timeout_s: float = 20.0, env: dict[str, str] | None = None
    ) -> None:
        cmd = [sys.executable, "-m", "specsweep.sim.serve", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.port = -1
        self.host = "127.0.0.1"
        deadline = time.monotonic() + startup_timeout_s
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                self.proc.wait(5)
                raise RuntimeError(
                    f"sim server exited ({self.proc.returncode}) before listening: {err.strip()}"
                )
            if line.startswith("specsweep-sim listening on http://"):
                hostport = line.strip().rsplit("/", 1)[1]
                self.host, _, p = hostport.rpartition(":")
                self.port = int(p)
                return
        self.close()
        raise RuntimeError("sim server did not print its listening line in time")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def close(self, timeout_s: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()
        return self.proc.returncode

    def __enter__(self) -> SubprocessServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    sys.exit(main())
