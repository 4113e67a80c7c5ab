"""The async load generator: one keep-alive connection pool, closed and/or open loop, raw records.

Timing: every timestamp is on ``time.monotonic_ns()``'s clock. A chunk's arrival is the kernel's
receive stamp of the socket read that completed its SSE event (Linux, see ``kstamp``; elsewhere the
time of the read), so a busy client does not delay its own timestamps; SSE events completed by one
read share its stamp (they arrived together). A request's send time is when its last bytes were
handed to the kernel. The result says which stamps a run got (``arrival_stamps``). A monitor task
measures event-loop lag and the process CPU share, so a run whose client was the bottleneck is
marked invalid instead of silently reporting the client's own delays as server latency.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import gc
import inspect
import itertools
import logging
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import numpy as np
import orjson
from aiohttp.client_proto import ResponseHandler

from specsweep import __version__, acceptance, kstamp
from specsweep.bench import BenchConfig, BenchOutcome
from specsweep.client import probes
from specsweep.client.dialects import ChunkError, Dialect, StreamState, get_dialect, requested_max_tokens
from specsweep.client.sse import SSEDecoder
from specsweep.errors import BenchError
from specsweep.metrics import compute_metrics
from specsweep.metrics_category import per_category
from specsweep.records import CATEGORY_HEADER, RequestRecord, RequestSpec
from specsweep.workload.arrivals import arrival_offsets
from specsweep.workload.prompts import generate, warmup_specs
from specsweep.workload.scenarios import default_num_prompts
from specsweep.workload.tokenizer import Tokenizer, load_tokenizer

log = logging.getLogger(__name__)
_now = time.monotonic_ns
_SOCKET_FACTORY = "socket_factory" in inspect.signature(aiohttp.TCPConnector).parameters
_JSON_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}

# Self-check thresholds. A run is invalid when the client itself was the bottleneck: its process
# saturated a core, or its event loop / arrival schedule fell behind while it was busy (CPU share
# above BUSY_CLIENT_CPU). Lag while the client was mostly idle means the host was busy with other
# work (the OS did not schedule us): the numbers are noisier, not the client's doing - a warning.
MAX_CLIENT_CPU = 0.90  # share of one core
BUSY_CLIENT_CPU = 0.50
MAX_LOOP_LAG_P99_MS = 10.0
MAX_SCHEDULE_LAG_P99_MS = 10.0
MAX_SHARED_STAMPS = 0.01  # kernel stamps: share of consecutive chunks of a stream read together


def auth_headers() -> dict[str, str]:
    """Bearer token from OPENAI_API_KEY or API_KEY. Never logged, never stored."""
    key = os.environ.get("OPENAI_API_KEY") or os.environ.get("API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


class _LagMonitor:
    """Samples event-loop lag every ``period`` seconds (how late a sleep wakes up)."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.lags_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        p_ns = int(self.period * 1e9)
        while True:
            t = _now()
            await asyncio.sleep(self.period)
            self.lags_ms.append(max(0.0, (_now() - t - p_ns) / 1e6))

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class _StampingHandler(ResponseHandler):
    """aiohttp's response protocol, handing each read's body bytes on with their arrival time.

    With hundreds of streams ready at once, reading coroutines wake one after another, all in one
    event-loop pass; a timestamp taken at wake-up would charge that queue to the server, and while
    they run no socket is read. So the body is consumed right here, in the read callback: once the
    runner has set ``sink`` (after the response headers), every read's new body bytes go to
    ``sink(data, arrival_ns)`` at once (SSE decoding, parsing, recording) and the runner's coroutine
    only waits for the end of the body. Bytes that came before the sink was set (with the headers, or
    before the coroutine resumed) wait in the payload; ``marks`` notes ``(body bytes so far, arrival
    ns)`` for each such read, so the runner splits them at those boundaries and every SSE event
    carries the arrival time of the read that completed it. The arrival time is the kernel's receive
    stamp where the socket is a :class:`~specsweep.kstamp.StampedSocket` (Linux), else the time of
    the read. ``hdr_ns`` is the arrival of the read that completed the response headers."""

    __slots__ = ("_ksock", "hdr_ns", "marks", "sink")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.marks: list[tuple[int, int]] = []
        self.hdr_ns = 0
        self.sink: Callable[[bytes, int], None] | None = None
        self._ksock: kstamp.StampedSocket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._ksock = kstamp.stamped(transport)

    def data_received(self, data: bytes) -> None:
        if not data:  # aiohttp's own nudge after its reader drained a buffer: no bytes, no stamp
            super().data_received(data)
            return
        ks = self._ksock
        t = ks.rx_ns if ks is not None else _now()
        before = getattr(self, "_payload", None)
        n0 = before.total_bytes if before is not None else 0
        super().data_received(data)
        after: Any = getattr(self, "_payload", None)
        if after is None:
            return
        if after is not before:  # a response's headers were parsed in this read: earlier state is stale
            self.marks.clear()
            self.sink = None
            self.hdr_ns, n0 = t, 0
        n1 = after.total_bytes
        if n1 <= n0:
            return
        sink = self.sink
        if sink is None:
            self.marks.append((n1, t))
            return
        try:
            body = after.read_nowait(-1)
        except Exception:  # the payload failed (truncated stream...): the runner's wait raises it
            return
        if body:
            sink(body, t)

    @property
    def kernel(self) -> bool:
        """Arrival times on this connection are the kernel's receive stamps."""
        return self._ksock is not None and self._ksock.kernel

    @property
    def sent_ns(self) -> int:
        """When the last bytes on this connection were handed to the kernel (0: not known)."""
        return self._ksock.tx_ns if self._ksock is not None else 0


def _arrival_clock(resp: aiohttp.ClientResponse) -> _StampingHandler | None:
    conn = resp.connection
    proto = conn.protocol if conn is not None else None
    return proto if isinstance(proto, _StampingHandler) else None


class _SendPacer:
    """At most ``per_pass`` requests start per event-loop pass.

    In a closed loop, streams that end in the same server step all start their next request in the
    same loop pass; building and writing a request costs ~0.1 ms of Python, so hundreds of them would
    keep the loop from reading any socket for tens of milliseconds, long enough for two chunks of a
    stream to land in one read and share a kernel stamp. Spread over passes, reads run in between;
    the burst takes as long as before, and a request that waits shows it as queue time (the send
    time is when its bytes leave). Waiters are released in arrival order, ``per_pass`` per pass."""

    __slots__ = ("_loop", "_n", "_pending", "_waiters", "per_pass")

    def __init__(self, per_pass: int = 8) -> None:
        self.per_pass = per_pass
        self._n = 0
        self._pending = False
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _schedule(self) -> None:
        """Run :meth:`_next_pass` at the start of the next loop pass (once)."""
        if not self._pending:
            self._pending = True
            assert self._loop is not None
            self._loop.call_soon(self._next_pass)

    def _next_pass(self) -> None:
        self._n = 0
        self._pending = False
        while self._waiters and self._n < self.per_pass:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # its request starts in the next pass
                self._n += 1
        if self._n:
            self._schedule()

    async def wait(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        self._schedule()
        if self._n < self.per_pass and not self._waiters:
            self._n += 1
            return
        fut = self._loop.create_future()
        self._waiters.append(fut)
        await fut


class Runner:
    def __init__(self, cfg: BenchConfig, session: aiohttp.ClientSession, tok: Tokenizer, model: str | None):
        self.cfg = cfg
        self.session = session
        self.tok = tok
        self.model = model
        self.dialect: Dialect = get_dialect(cfg.backend)
        self.url = cfg.base_url.rstrip("/") + self.dialect.path
        self.worker = 0
        # Set once the server is seen closing connections it did not announce as closed (llama-server
        # does after every stream): from then on every request gets a fresh connection.
        self._fresh: aiohttp.ClientSession | None = None
        self.kernel_stamps = False  # a response's arrival times came from the kernel
        self.pacer = _SendPacer()

    def _fresh_session(self) -> aiohttp.ClientSession:
        if self._fresh is None:
            self._fresh = aiohttp.ClientSession(
                connector=_connector(force_close=True),
                headers=auth_headers(), read_bufsize=1 << 20, auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None, connect=30),
            )  # fmt: skip
        return self._fresh

    async def close(self) -> None:
        if self._fresh is not None:
            await self._fresh.close()

    def body(self, spec: RequestSpec) -> bytes:
        b = self.dialect.build(
            spec.prompt,
            spec.output_len,
            model=self.model,
            temperature=self.cfg.temperature,
            ignore_eos=self.cfg.ignore_eos,
            extra=self.cfg.extra_request_body,
            decode=self.tok.decode,
        )
        return orjson.dumps(b)

    async def one(self, spec: RequestSpec, rec: RequestRecord, body: bytes) -> None:
        """Send one request and fill ``rec`` with what happened; never raises (failures are data).

        A pooled keep-alive connection that the server already closed (servers drop idle ones after
        a few seconds; llama-server closes after every stream) fails before any response byte: that
        attempt never reached the server, so it is retried on a fresh connection (never another pooled
        one, which may be closing too) with the send time taken again, and from then on this runner
        opens a fresh connection per request.
        """
        cfg = self.cfg
        st = StreamState()
        await self.pacer.wait()
        try:
            for attempt in (0, 1):
                st = StreamState(max_tokens=requested_max_tokens(spec.output_len, cfg.extra_request_body))
                rec.send_ns = _now()
                session = self._fresh if self._fresh is not None else self.session
                try:
                    await self._attempt(session, rec, st, body)
                    break
                except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                    if attempt or rec.headers_ns or session is self._fresh:
                        raise
                    self._fresh_session()
        except ChunkError as e:
            rec.error_kind, rec.error = e.kind, str(e)
        except TimeoutError:
            rec.error_kind, rec.error = "timeout", f"no complete response within {cfg.request_timeout_s:g} s"
        except aiohttp.ClientConnectorError as e:
            rec.error_kind, rec.error = "connect", str(e)
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionError) as e:
            rec.error_kind, rec.error = "disconnect", f"{type(e).__name__}: {e}"
        except aiohttp.ClientError as e:
            rec.error_kind, rec.error = "connect", f"{type(e).__name__}: {e}"
        except Exception as e:
            rec.error_kind, rec.error = "client", f"{type(e).__name__}: {e}"
        finally:
            rec.end_ns = _now()
            self._finish(rec, st)

    async def _attempt(
        self, session: aiohttp.ClientSession, rec: RequestRecord, st: StreamState, body: bytes
    ) -> None:
        dialect, count = self.dialect, self.tok.count
        deadline = time.monotonic() + self.cfg.request_timeout_s
        async with session.post(
            self.url,
            data=body,
            headers={**_JSON_HEADERS, CATEGORY_HEADER: rec.category} if rec.category else _JSON_HEADERS,
            timeout=aiohttp.ClientTimeout(total=self.cfg.request_timeout_s),
        ) as resp:
            rec.headers_ns = _now()
            clock = _arrival_clock(resp)
            if clock is not None:
                rec.headers_ns = min(rec.headers_ns, clock.hdr_ns or rec.headers_ns)
                rec.send_ns = max(rec.send_ns, min(clock.sent_ns, rec.headers_ns))
            rec.http_status = resp.status
            if resp.status != 200:
                detail = (await resp.content.read(500)).decode("utf-8", "replace")
                rec.error_kind, rec.error = "http_status", f"HTTP {resp.status}: {detail.strip()}"
                return
            dec = SSEDecoder()
            chunk_ns, chunk_tokens = rec.chunk_ns, rec.chunk_tokens

            def feed(piece: bytes, t: int) -> None:
                for payload in dec.feed(piece):
                    text, n = dialect.parse(payload, st, count)
                    if n or (text and not chunk_ns):
                        chunk_ns.append(t)
                        chunk_tokens.append(n)

            content = resp.content
            if clock is None:  # no stamping protocol: the time the coroutine got the bytes
                async for data in content.iter_any():
                    feed(data, _now())
            else:
                failure: list[BaseException] = []

                def sink(data: bytes, t: int) -> None:  # called from the read callback
                    if failure:
                        return
                    try:
                        feed(data, t)
                    except Exception as e:  # a malformed chunk: fail the request, as the reader would
                        failure.append(e)
                        content.set_exception(e)

                # What arrived before now waits in the payload: split it at its reads' boundaries.
                buffered = content.read_nowait(-1)
                pos = 0
                for end, t in clock.marks:
                    if end > pos and pos < len(buffered):
                        feed(buffered[pos:end], t)
                        pos = end
                if pos < len(buffered):
                    feed(buffered[pos:], _now())
                clock.marks.clear()
                clock.sink = sink
                try:
                    # aiohttp's total timeout covers its own reads only: this wait keeps the deadline
                    await asyncio.wait_for(content.wait_eof(), max(0.0, deadline - time.monotonic()))
                except asyncio.TimeoutError:
                    raise TimeoutError from None
                except Exception:
                    if failure:
                        raise failure[0] from None
                    raise
                finally:
                    clock.sink = None
                if failure:
                    raise failure[0]
                rest = content.read_nowait(-1)  # defensive: body bytes the sink did not get
                if rest:
                    feed(rest, _now())
            if clock is not None and clock.kernel:
                self.kernel_stamps = True
            for payload in dec.close():
                dialect.parse(payload, st, count)

    def _finish(self, rec: RequestRecord, st: StreamState) -> None:
        rec.finish_reason = st.finish_reason
        rec.prompt_tokens_server = st.prompt_tokens
        rec.spec_verify_ct = st.spec_verify_ct
        if st.server_tokens:
            rec.output_tokens, rec.output_tokens_source = st.tokens, "server"
        elif st.final_usage_tokens is not None:
            rec.output_tokens, rec.output_tokens_source = st.final_usage_tokens, "server"
        else:
            rec.output_tokens, rec.output_tokens_source = sum(rec.chunk_tokens), "retokenized"
        if self.cfg.keep_text:
            rec.output_text = "".join(st.text_parts)
        if rec.error_kind is None:
            if not st.done and st.finish_reason is None:
                rec.error_kind = "disconnect"
                rec.error = "stream ended without [DONE] or a finish reason (truncated)"
            elif not rec.chunk_ns:
                rec.error_kind, rec.error = "empty", "the response carried no output token"


async def _drive(
    runner: Runner,
    specs: Sequence[RequestSpec],
    offsets: Sequence[float] | None,
    concurrency: int | None,
) -> tuple[list[RequestRecord], list[float]]:
    """Send ``specs``; closed loop when ``offsets`` is None, else on the absolute schedule."""
    bodies = [runner.body(s) for s in specs]  # built before the clock starts
    records = [
        RequestRecord(
            index=s.index, is_warmup=s.is_warmup, worker=runner.worker, prompt_len=s.prompt_len,
            output_len=s.output_len, scheduled_ns=0, category=s.category,
        )
        for s in specs
    ]  # fmt: skip
    sched_lag_ms: list[float] = []
    if offsets is None:
        it = iter(range(len(specs)))
        n_workers = min(concurrency or len(specs), len(specs))

        async def worker() -> None:
            for i in it:
                records[i].scheduled_ns = _now()
                await runner.one(specs[i], records[i], bodies[i])

        await asyncio.gather(*(worker() for _ in range(n_workers)))
        return records, sched_lag_ms

    sem = asyncio.Semaphore(concurrency) if concurrency else None
    t0 = _now()
    tasks: list[asyncio.Task[None]] = []

    async def gated(i: int) -> None:
        if sem is None:
            await runner.one(specs[i], records[i], bodies[i])
            return
        async with sem:
            await runner.one(specs[i], records[i], bodies[i])

    for i, off in enumerate(offsets):
        due = t0 + int(off * 1e9)
        delay = (due - _now()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        records[i].scheduled_ns = due
        sched_lag_ms.append(max(0.0, (_now() - due) / 1e6))
        tasks.append(asyncio.ensure_future(gated(i)))
    await asyncio.gather(*tasks)
    return records, sched_lag_ms


async def prewarm(session: aiohttp.ClientSession, base_url: str, n: int, timeout_s: float = 10.0) -> int:
    """Open ``n`` keep-alive connections before the measured run (``n`` concurrent GET /v1/models,
    whatever the answer), so its first round reuses pooled connections like every later round
    instead of opening them all in one event-loop pass (hundreds of connects and request writes in a
    row, during which no socket is read). Returns how many answered; failures are ignored: a server
    that closes connections after each response gets nothing from this, and loses nothing."""
    if n <= 1:
        return 0
    url = base_url.rstrip("/") + "/v1/models"

    async def one() -> bool:
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
                await r.read()
                return True
        except (aiohttp.ClientError, TimeoutError, asyncio.TimeoutError, OSError):
            return False

    return sum(await asyncio.gather(*(one() for _ in range(n))))


async def resolve_model(session: aiohttp.ClientSession, cfg: BenchConfig) -> str | None:
    if cfg.model:
        return cfg.model
    model = await probes.first_model(session, cfg.base_url.rstrip("/"))
    if model is None and not get_dialect(cfg.backend).native:
        raise BenchError(
            f"cannot list models at {cfg.base_url}/v1/models (server unreachable or not OpenAI-"
            "compatible); pass --model or check --base-url"
        )
    return model


def _connector(**kw: Any) -> aiohttp.TCPConnector:
    if _SOCKET_FACTORY:  # kernel arrival/send stamps (see kstamp); aiohttp >= 3.12
        kw["socket_factory"] = kstamp.socket_factory
    connector = aiohttp.TCPConnector(limit=0, **kw)
    if hasattr(connector, "_factory"):  # arrival timestamps (see _StampingHandler); else wake-up times
        connector._factory = functools.partial(_StampingHandler, loop=asyncio.get_running_loop())  # type: ignore[assignment]
    return connector


def make_session() -> aiohttp.ClientSession:
    connector = _connector(ttl_dns_cache=300, keepalive_timeout=4)  # < servers' 5 s
    return aiohttp.ClientSession(
        connector=connector, headers=auth_headers(), read_bufsize=1 << 20, auto_decompress=False,
        timeout=aiohttp.ClientTimeout(total=None, connect=30),
    )  # fmt: skip


async def run_bench_async(cfg: BenchConfig) -> BenchOutcome:
    """One benchmark run against a live server: warmup, measured run, spec counters, metrics."""
    tok = load_tokenizer(cfg.tokenizer, warn=not cfg.quiet)
    get_dialect(cfg.backend)
    n = cfg.num_prompts or default_num_prompts(cfg.max_concurrency or 1)
    specs = generate(cfg.scenario, n, tok, cfg.seed)
    async with make_session() as session:
        model = await resolve_model(session, cfg)
        runner = Runner(cfg, session, tok, model)
        try:
            m = await _measure(runner, session, cfg, specs)
        finally:
            await runner.close()
    return _outcome(cfg, model, tok, m)


@dataclass
class _Measured:
    warm: list[RequestRecord]
    records: list[RequestRecord]
    sched_lag_ms: list[float]
    loop_lag_ms: list[float]
    cpu_s: float
    wall_s: float
    version: dict[str, Any] | None
    spec_before: dict[str, Any] | None
    spec_after: dict[str, Any] | None
    server_accept_length: float | None
    kernel_stamps: bool = False
    read_age_ns: list[int] | None = None  # kernel stamps only: how long each read's bytes waited


async def _measure(
    runner: Runner, session: aiohttp.ClientSession, cfg: BenchConfig, specs: list[RequestSpec]
) -> _Measured:
    base = cfg.base_url.rstrip("/")
    version = await probes.server_version(session, base)
    warm: list[RequestRecord] = []
    if cfg.warmup_requests > 0:
        warm, _ = await _drive(runner, warmup_specs(specs[0], cfg.warmup_requests), None, cfg.max_concurrency)
        await asyncio.sleep(cfg.warmup_sleep_s)
    if cfg.max_concurrency:
        await prewarm(session, base, min(cfg.max_concurrency, len(specs)))
    before = await probes.scrape_spec(session, base) if cfg.scrape_metrics else None
    offsets = (
        None
        if math.isinf(cfg.request_rate)
        else arrival_offsets(len(specs), cfg.request_rate, cfg.burstiness, cfg.seed)
    )
    mon = _LagMonitor()
    mon.start()
    cpu0, wall0 = time.process_time(), time.monotonic()
    # No cyclic garbage collection while measuring: a collection pass stalls the event loop for
    # milliseconds and every chunk that arrives meanwhile gets a late timestamp (it halved the TTFT
    # error at 5,000 chunks/s in benchmarks/client_overhead.py). Collected right after.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    kstamp.read_ages_start()
    try:
        records, sched_lag = await _drive(runner, specs, offsets, cfg.max_concurrency)
    finally:
        ages = kstamp.read_ages_stop()
        if gc_was_enabled:
            gc.enable()
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    await mon.stop()
    gc.collect()
    after = await probes.scrape_spec(session, base) if cfg.scrape_metrics else None
    srv_al = await probes.server_accept_length(session, base) if cfg.scrape_metrics else None
    return _Measured(
        warm, records, sched_lag, mon.lags_ms, cpu, wall, version, before, after, srv_al, runner.kernel_stamps,
        ages,
    )  # fmt: skip


def lateness_figures(loop_lag_ms: list[float], read_age_ns: list[int] | None) -> dict[str, float]:
    """Event-loop lag (how late a 5 ms sleep wakes) and, with kernel stamps, the read delay (how long
    each read's bytes had waited in the socket: the direct measure of a client falling behind)."""
    lag = np.asarray(loop_lag_ms or [0.0])
    out = {
        "loop_lag_p50_ms": float(np.percentile(lag, 50)),
        "loop_lag_p99_ms": float(np.percentile(lag, 99)),
        "loop_lag_max_ms": float(lag.max()),
    }
    if read_age_ns:
        ages = np.asarray(read_age_ns, dtype=np.float64) / 1e6
        out["read_delay_p50_ms"] = float(np.percentile(ages, 50))
        out["read_delay_p99_ms"] = float(np.percentile(ages, 99))
    return out


def shared_stamp_fraction(records: Sequence[RequestRecord], min_gap_ns: int = 2_000_000) -> float:
    """Share of a stream's consecutive output chunks that got the same arrival time, i.e. came in one
    socket read, counted in streams whose chunks are on average more than ``min_gap_ns`` apart.
    Engines write one SSE event per step, so with kernel stamps this is what a late client damages:
    two chunks read together share the newer one's time, an error of up to their gap; in a stream
    whose chunks come a fraction of a millisecond apart (a fast server, a time-scaled sim) that error
    is below what we resolve anyway, and a merge there is no sign of a late client."""
    pairs = same = 0
    for r in records:
        ns = r.chunk_ns
        if r.error_kind is None and len(ns) > 1:
            pairs += len(ns) - 1
            if (ns[-1] - ns[0]) / (len(ns) - 1) > min_gap_ns:
                same += sum(1 for a, b in itertools.pairwise(ns) if a == b)
    return same / pairs if pairs else 0.0


def lateness_reason(check: dict[str, Any]) -> str | None:
    """Why the client's lateness damaged this run's timestamps, or None. Kernel-stamped runs: chunks
    that shared a read (more than MAX_SHARED_STAMPS of consecutive pairs) - a slow read alone does
    not move a kernel stamp; read-time stamps: event-loop lag p99 over MAX_LOOP_LAG_P99_MS."""
    if check.get("shared_stamp_frac") is not None and check.get("read_delay_p99_ms") is not None:
        frac = float(check["shared_stamp_frac"])
        if frac > MAX_SHARED_STAMPS:
            return (f"{frac:.1%} of consecutive chunks shared a socket read (socket read delay p99 "
                    f"{check['read_delay_p99_ms']:.1f} ms): their arrival times merged")  # fmt: skip
        return None
    lag = float(check["loop_lag_p99_ms"])  # read-time stamps: a late loop means late timestamps
    if lag > MAX_LOOP_LAG_P99_MS:
        return f"event-loop lag p99 {lag:.1f} ms > {MAX_LOOP_LAG_P99_MS:g} ms"
    return None


def self_check(m: _Measured) -> tuple[dict[str, float], list[str], list[str]]:
    """(figures, reasons the run is invalid, warnings) from the client's own load during the run."""
    check = {
        "client_cpu_util": m.cpu_s / m.wall_s if m.wall_s > 0 else 0.0,
        **lateness_figures(m.loop_lag_ms, m.read_age_ns if m.kernel_stamps else None),
        "schedule_lag_p99_ms": float(np.percentile(m.sched_lag_ms, 99)) if m.sched_lag_ms else 0.0,
    }
    if m.kernel_stamps:
        check["shared_stamp_frac"] = shared_stamp_fraction(m.records)
    reasons: list[str] = []
    warns: list[str] = []
    cpu_share, slag = check["client_cpu_util"], check["schedule_lag_p99_ms"]
    busy = cpu_share > BUSY_CLIENT_CPU
    if cpu_share > MAX_CLIENT_CPU:
        reasons.append(f"client CPU saturated ({cpu_share:.0%} of one core)")
    late = lateness_reason(check)
    if late:
        if busy:
            reasons.append(f"{late}, with the client busy ({cpu_share:.0%} CPU)")
        else:
            effect = "" if m.kernel_stamps else "; timestamps may be late by up to that much"
            warns.append(
                f"{late}, while the client was mostly idle ({cpu_share:.0%} CPU): the host is busy{effect}"
            )
    if slag > MAX_SCHEDULE_LAG_P99_MS:
        (reasons if busy else warns).append(f"arrival schedule late: p99 {slag:.1f} ms")
    return check, reasons, warns


def _outcome(cfg: BenchConfig, model: str | None, tok: Tokenizer, m: _Measured) -> BenchOutcome:
    metrics = compute_metrics(m.records, goodput=cfg.goodput or None)
    if metrics["completed"] == 0 and m.records:
        first = next((r.error for r in m.records if r.error), "")
        log.warning("every request failed (%s): %s", metrics["errors_by_kind"], first)
    result = _result_line(cfg, model, tok, m.version, metrics)
    result.update(probes.spec_delta(m.spec_before, m.spec_after))
    result.update(acceptance.fill(result))  # one definition for every engine (specsweep.acceptance)
    result["server_accept_length"] = m.server_accept_length
    result["per_category"] = per_category(m.records, result.get("accept_length"))
    check, reasons, warns = self_check(m)
    result["self_check"] = check
    result["arrival_stamps"] = "kernel" if m.kernel_stamps else "read"
    result["warnings"] = warns
    invalid = "; ".join(reasons) or None
    result["invalid"] = invalid is not None
    result["invalid_reason"] = invalid
    if cfg.scenario.dataset == "random-ids" and (
        result.get("spec_num_drafts") or result.get("accept_length")
    ):
        warnings.warn(
            "random-ids prompts against a speculative server: acceptance on random tokens is not "
            "representative; use real-text prompts (--dataset-name random) to compare speculation",
            stacklevel=2,
        )
    return BenchOutcome(result=result, records=m.warm + m.records, invalid_reason=invalid)


def _result_line(
    cfg: BenchConfig, model: str | None, tok: Tokenizer, version: dict[str, Any] | None, m: dict[str, Any]
) -> dict[str, Any]:
    sc = cfg.scenario
    head: dict[str, Any] = {
        "backend": cfg.backend,
        "base_url": cfg.base_url,
        "model": model,
        "tokenizer": tok.name,
        "dataset_name": sc.dataset,
        "scenario": sc.name,
        "request_rate": None if math.isinf(cfg.request_rate) else cfg.request_rate,
        "burstiness": cfg.burstiness,
        "max_concurrency": cfg.max_concurrency,
        "num_prompts": cfg.num_prompts or default_num_prompts(cfg.max_concurrency or 1),
        "random_input_len": sc.input_len,
        "random_output_len": sc.output_len,
        "random_range_ratio": sc.range_ratio,
        "range_ratio_mode": sc.range_mode,
        "warmup_requests": cfg.warmup_requests,
        "seed": cfg.seed,
        "ignore_eos": cfg.ignore_eos,
        "temperature": cfg.temperature,
        "tag": cfg.tag,
        "specsweep_version": __version__,
        "date": time.strftime("%Y%m%d-%H%M%S"),
        "server_version": version,
        "time_scale": (version or {}).get("time_scale"),
    }
    head.update(m)
    return head
