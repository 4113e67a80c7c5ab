"""Load from several client processes: one benchmark split across N workers, merged into one run.

Why: one Python client process tops out at some tens of thousands of SSE chunks/s (see
docs/perf/client_overhead.md); past that its own delays show up as server latency. N workers
share the load and the run stays one run.

How:
- Every worker builds the same request list (same scenario, seed, tokenizer) and sends its share:
  request ``i`` goes to the worker owning concurrency slot ``i mod C`` (slot ``s`` belongs to worker
  ``s mod N``), so worker ``w`` drives ``C // N (+1)`` of the ``C`` in-flight slots. Open loop: each
  worker keeps its requests' offsets on the common schedule, so the merged arrivals are exactly the
  one-worker schedule.
- Clocks: each worker stamps with its own ``time.monotonic_ns()``. The driver measures each worker's
  offset by ping-pong (``offset = t_worker - (t_send + t_recv) / 2``, keeping the sample of least
  round trip, whose error is at most RTT/2), before and after the run, and shifts every record's
  ns times onto its own clock: ``t_driver = t_worker - offset``. The measured run starts on all
  workers at one driver instant (each converts it to its own clock).
- Every worker measures with ``client.runner.measure_run`` (the single-process path) and returns a
  ``WorkerRun``; the driver shifts their records onto its clock and ``client.result.build_outcome``
  makes the one result line and the one self-check verdict, as for a single process.

Workers are local processes (``python -m specsweep.client.multiworker``, pickled frames over
stdin/stdout) or, with ``ray_address``, Ray actors spread over the cluster's nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from specsweep.client import kstamp
from specsweep.client.bench_types import BenchConfig, BenchOutcome
from specsweep.client.ray_support import require_ray
from specsweep.client.result import ServerSide, WorkerRun, build_outcome
from specsweep.errors import BenchError
from specsweep.measure.records import RequestRecord
from specsweep.store import redact
from specsweep.workload.scenarios import default_num_prompts

_now = time.monotonic_ns
CLOCK_SAMPLES = 25
START_LEAD_S = 0.25  # the measured run starts this long after the go message (all workers ready)


# ---- shares (pure) -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Share:
    """What one worker sends: request indices into the common list, its in-flight limit, warmup."""

    worker: int
    indices: tuple[int, ...]
    concurrency: int | None  # None: unlimited
    warmup: int


def effective_workers(workers: int, n: int, concurrency: int | None) -> int:
    """No more workers than requests or concurrency slots (an idle worker would only add noise)."""
    return max(1, min(workers, n, concurrency or n))


def plan_shares(n: int, concurrency: int | None, workers: int, warmup: int = 0) -> list[Share]:
    """Split ``n`` requests and ``concurrency`` slots over ``workers`` (see the module docstring).

    Invariants: every index in exactly one share, each share's indices ascending; concurrencies sum
    to ``concurrency``; warmups sum to ``warmup`` (each worker at least 1 when warmup > 0).
    """
    k = effective_workers(workers, n, concurrency)
    owner = [(i % concurrency) % k if concurrency else i % k for i in range(n)]
    out = []
    for w in range(k):
        conc = None if concurrency is None else concurrency // k + (1 if w < concurrency % k else 0)
        warm = (warmup // k + (1 if w < warmup % k else 0)) if warmup else 0
        out.append(Share(w, tuple(i for i in range(n) if owner[i] == w), conc, max(warm, 1 if warmup else 0)))
    return out


# ---- clocks (pure) -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ClockSample:
    offset_ns: int  # worker clock - driver clock
    rtt_ns: int


def clock_sample(t_send: int, t_worker: int, t_recv: int) -> ClockSample:
    return ClockSample(offset_ns=t_worker - (t_send + t_recv) // 2, rtt_ns=t_recv - t_send)


def best_sample(samples: Sequence[ClockSample]) -> ClockSample:
    """The least-RTT sample: its offset error is at most rtt/2 (the reply's place in the round trip)."""
    return min(samples, key=lambda s: s.rtt_ns)


def shift_record(r: RequestRecord, delta_ns: int) -> None:
    """Move a record's timestamps by ``-delta_ns`` (a worker's clock onto the driver's). 0 = unset."""
    if delta_ns == 0:
        return
    for name in ("scheduled_ns", "send_ns", "headers_ns", "end_ns"):
        v = getattr(r, name)
        if v:
            setattr(r, name, v - delta_ns)
    r.chunk_ns = [t - delta_ns for t in r.chunk_ns]


# ---- the worker side ---------------------------------------------------------------------------
class WorkerCore:
    """One worker's state between messages: its own event loop, HTTP session, share and runner."""

    def __init__(self) -> None:
        self.loop = kstamp.new_event_loop()
        self.session: Any = None
        self.runner: Any = None
        self.specs: list[Any] = []
        self.offsets: list[float] | None = None
        self.share: Share | None = None
        self.warm: list[RequestRecord] = []

    def handle(self, msg: tuple[Any, ...]) -> Any:
        op = msg[0]
        if op == "clock":
            return _now()
        if op == "setup":
            return self.loop.run_until_complete(self._setup(*msg[1:]))
        if op == "run":
            return self.loop.run_until_complete(self._run(msg[1]))
        if op == "close":
            self.close()
            return None
        raise ValueError(f"unknown worker message {op!r}; expected one of: clock, setup, run, close")

    async def _setup(
        self, cfg: BenchConfig, model: str | None, share: Share, secrets: dict[str, str] | None = None
    ) -> dict[str, Any]:
        from specsweep.client.runner import Runner, drive, make_session, prewarm, request_plan
        from specsweep.workload.prompts import warmup_specs
        from specsweep.workload.tokenizer import load_tokenizer

        # the driver's known secrets: what this worker cuts short (error bodies) is scrubbed first
        redact.adopt(secrets or {})

        tok = load_tokenizer(cfg.tokenizer, warn=False)
        specs, offsets = request_plan(cfg, tok)
        self.share = share
        self.specs = [specs[i] for i in share.indices]
        self.offsets = None if offsets is None else [offsets[i] for i in share.indices]
        self.session = make_session(cfg.base_url)
        self.runner = Runner(cfg, self.session, tok, model)
        self.runner.worker = share.worker
        if share.warmup:
            self.warm, _ = await drive(
                self.runner, warmup_specs(specs[0], share.warmup), None, share.concurrency
            )
        if share.concurrency:
            await prewarm(self.session, cfg.base_url, min(share.concurrency, len(self.specs)))
        return {"worker": share.worker, "pid": os.getpid(), "host": _hostname(), "requests": len(self.specs)}

    async def _run(self, start_ns: int) -> WorkerRun:
        from specsweep.client.runner import measure_run

        assert self.share is not None and self.runner is not None
        delay = (start_ns - _now()) / 1e9
        if delay > 0.002:
            await asyncio.sleep(delay - 0.002)
        while _now() < start_ns:  # the last 2 ms spun: every worker starts within ~a loop tick
            pass
        run = await measure_run(self.runner, self.specs, self.offsets, self.share.concurrency, self.warm)
        run.host, run.pid = _hostname(), os.getpid()
        return run

    def close(self) -> None:
        if self.session is not None:
            with contextlib.suppress(Exception):
                if getattr(self, "runner", None) is not None:
                    self.loop.run_until_complete(self.runner.close())
                self.loop.run_until_complete(self.session.close())
            self.session = None
        self.loop.close()


def _hostname() -> str:
    import socket

    return socket.gethostname()


# ---- transports: local process or Ray actor ----------------------------------------------------
class WorkerHandle(Protocol):
    def call(self, msg: tuple[Any, ...]) -> Any: ...

    def close(self) -> None: ...


def _write_frame(f: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _read_frame(f: IO[bytes]) -> Any:
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", head)
    data = f.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class ProcessWorker:
    """A local worker process speaking length-prefixed pickle frames over its stdin/stdout."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "specsweep.client.multiworker", str(index)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,  # Ctrl-C reaches the driver only; it stops the workers (close/EOF)
        )

    def call(self, msg: tuple[Any, ...]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            _write_frame(self.proc.stdin, msg)
            ok, value = _read_frame(self.proc.stdout)
        except (EOFError, BrokenPipeError, OSError) as e:
            code = self.proc.poll()
            raise BenchError(
                f"client worker {self.index} (pid {self.proc.pid}) died (exit code {code})"
            ) from e
        if not ok:
            raise BenchError(f"client worker {self.index}: {value}")
        return value

    def close(self) -> None:
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            _write_frame(self.proc.stdin, ("close",))
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _skew_clock(index: int) -> None:
    """Test hook: ``SPECSWEEP_WORKER_CLOCK_SKEW_NS="a,b,..."`` adds ``a`` ns to worker 0's monotonic
    clock, ``b`` to worker 1's, ... - the clocks of other hosts, for testing offset removal."""
    skews = os.environ.get("SPECSWEEP_WORKER_CLOCK_SKEW_NS")
    if not skews:
        return
    vals = [int(x) for x in skews.split(",")]
    skew = vals[index] if index < len(vals) else 0
    if skew:
        global _now
        real = time.monotonic_ns
        time.monotonic_ns = lambda: real() + skew  # before the runner binds it
        _now = time.monotonic_ns


def _worker_main(index: int = 0) -> None:
    """``python -m specsweep.client.multiworker INDEX``: serve frames on stdin/stdout until close/EOF."""
    _skew_clock(index)
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the frame stream
    proto_in = sys.stdin.buffer
    core = WorkerCore()
    while True:
        try:
            msg = _read_frame(proto_in)
        except EOFError:
            break
        try:
            reply: tuple[bool, Any] = (True, core.handle(msg))
        except Exception as e:
            reply = (False, f"{type(e).__name__}: {e}")
        _write_frame(proto_out, reply)
        if msg[0] == "close":
            return
    with contextlib.suppress(Exception):
        core.close()


def _ray() -> Any:
    return require_ray("client workers on a Ray cluster (--ray-address)")


class RayWorker:
    """A worker as a Ray actor (one CPU, spread over the cluster's nodes)."""

    _cls: Any = None

    def __init__(self, index: int) -> None:
        ray = _ray()
        if RayWorker._cls is None:
            RayWorker._cls = ray.remote(num_cpus=1)(_ActorBody)
        self.index = index
        self.actor = RayWorker._cls.options(scheduling_strategy="SPREAD").remote()

    def call(self, msg: tuple[Any, ...]) -> Any:
        ray = _ray()
        try:
            ok, value = ray.get(self.actor.handle.remote(msg))
        except ray.exceptions.RayError as e:
            raise BenchError(f"client worker {self.index} (Ray actor) failed: {e}") from e
        if not ok:
            raise BenchError(f"client worker {self.index}: {value}")
        return value

    def close(self) -> None:
        ray = _ray()
        with contextlib.suppress(Exception):
            ray.get(self.actor.handle.remote(("close",)), timeout=10)
        with contextlib.suppress(Exception):
            ray.kill(self.actor)


class _ActorBody:
    def __init__(self) -> None:
        self.core = WorkerCore()

    def handle(self, msg: tuple[Any, ...]) -> tuple[bool, Any]:
        try:
            return True, self.core.handle(msg)
        except Exception as e:
            return False, f"{type(e).__name__}: {e}"


# ---- the driver --------------------------------------------------------------------------------
@dataclass
class _Clock:
    before: ClockSample
    after: ClockSample | None = None
    samples: list[ClockSample] = field(default_factory=list)

    @property
    def best(self) -> ClockSample:
        return best_sample(self.samples)


def measure_clock(h: WorkerHandle, samples: int = CLOCK_SAMPLES) -> list[ClockSample]:
    out = []
    for _ in range(samples):
        t0 = _now()
        tw = h.call(("clock",))
        out.append(clock_sample(t0, tw, _now()))
    return out


def run_multiworker(cfg: BenchConfig, *, ray_address: str | None = None) -> BenchOutcome:
    return kstamp.run(run_multiworker_async(cfg, ray_address=ray_address))


async def run_multiworker_async(
    cfg: BenchConfig, *, ray_address: str | None = None, use_ray: bool | None = None
) -> BenchOutcome:
    """Like ``run_bench_async`` with the load split over ``cfg.workers`` workers (module docstring).

    ``use_ray`` (default: when ``ray_address`` is given or Ray is already initialised in this
    process) makes the workers Ray actors; otherwise they are local processes.
    """
    from specsweep.client import server_info
    from specsweep.client.runner import make_session, resolve_model
    from specsweep.workload.tokenizer import load_tokenizer

    tok = load_tokenizer(cfg.tokenizer, warn=not cfg.quiet)
    n = cfg.num_prompts or default_num_prompts(cfg.max_concurrency or 1)
    shares = plan_shares(n, cfg.max_concurrency, cfg.workers, cfg.warmup_requests)
    if use_ray is None:
        use_ray = ray_address is not None
    if use_ray:
        ray = _ray()
        if not ray.is_initialized():
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
    base = cfg.base_url.rstrip("/")
    handles: list[WorkerHandle] = []
    try:
        async with make_session(cfg.base_url) as session:
            model = await resolve_model(session, cfg)
            srv = ServerSide(version=await server_info.server_version(session, base))
            for s in shares:
                handles.append(RayWorker(s.worker) if use_ray else ProcessWorker(s.worker))
            await asyncio.gather(
                *(
                    asyncio.to_thread(h.call, ("setup", cfg, model, s, redact.known()))
                    for h, s in zip(handles, shares, strict=True)
                )
            )
            if cfg.warmup_requests > 0:
                await asyncio.sleep(cfg.warmup_sleep_s)
            srv.spec_before = await server_info.scrape_spec(session, base) if cfg.scrape_metrics else None
            clocks = [_Clock(best_sample(sm), samples=sm) for sm in map(measure_clock, handles)]
            start = _now() + int(START_LEAD_S * 1e9)
            runs: list[WorkerRun] = await asyncio.gather(
                *(
                    asyncio.to_thread(h.call, ("run", start + c.before.offset_ns))
                    for h, c in zip(handles, clocks, strict=True)
                )
            )
            for h, c in zip(handles, clocks, strict=True):
                sm = measure_clock(h)
                c.after = best_sample(sm)
                c.samples += sm
            if cfg.scrape_metrics:
                srv.spec_after = await server_info.scrape_spec(session, base)
                srv.accept_length = await server_info.server_accept_length(session, base)
    finally:
        for h in handles:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(h.close)
    return merge_runs(cfg, model, tok.name, srv, runs, clocks)


def merge_runs(
    cfg: BenchConfig,
    model: str | None,
    tokenizer: str,
    srv: ServerSide,
    runs: Sequence[WorkerRun],
    clocks: Sequence[_Clock],
) -> BenchOutcome:
    """Put every worker's records on the driver's clock and build the one result line."""
    info = []
    for run, clk in zip(runs, clocks, strict=True):
        off = clk.best.offset_ns
        for r in (*run.warm, *run.records):
            shift_record(r, off)
        info.append({
            "clock_offset_ns": off, "clock_rtt_ns": clk.best.rtt_ns,
            "clock_drift_ns": (clk.after.offset_ns - clk.before.offset_ns) if clk.after else None,
        })  # fmt: skip
    return build_outcome(cfg, model, tokenizer, srv, runs, info)


if __name__ == "__main__":
    # Run the importable module's copy, so pickled classes name specsweep.client.multiworker.
    from specsweep.client import multiworker

    multiworker._worker_main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
