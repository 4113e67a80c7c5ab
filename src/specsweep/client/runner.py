"""The async load generator: one keep-alive connection pool, closed and/or open loop, raw records.

Timing: every timestamp is on ``time.monotonic_ns()``'s clock. A chunk's arrival is the kernel's
receive stamp of the socket read that completed its SSE event (Linux, see ``kstamp``; elsewhere the
time of the read), so a busy client does not delay its own timestamps. SSE events completed by one
read share its stamp; only the newest bytes of a read have an exact stamp (the kernel keeps one per
merged segment), so every chunk that was not the read's last event gets a bound: how much earlier
it may have arrived (since the socket's floor: the last read that drained it, or the last selector
call that found it empty (``kstamp.ReadyFloorSelector``), or the request's send). The
self-check (``client.selfcheck``) turns those bounds into how far TTFT and ITL could be off and marks
the run invalid past 1 ms. A request's send time is when its last bytes were handed to the kernel.

One measurement path: :func:`measure_run` drives one client process's requests and returns a
:class:`~specsweep.client.result.WorkerRun`; a single-process run is one of them, a ``--workers N``
run (``client.multiworker``) is N of them, and :func:`~specsweep.client.result.build_outcome` makes
the result line from any number.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence

import aiohttp
import orjson

from specsweep.client import server_info, usage_check
from specsweep.client.bench_types import BenchConfig, BenchOutcome
from specsweep.client.dialects import (
    OVER_CAP,
    ChunkError,
    Dialect,
    StreamState,
    get_dialect,
    requested_max_tokens,
    text_over_cap,
)
from specsweep.client.result import ServerSide, WorkerRun, build_outcome
from specsweep.client.selfcheck import StampBounds, measuring
from specsweep.client.sse import SSEDecoder
from specsweep.client.transport import (
    SendPacer,
    auth_headers,
    connector,
    make_session,
    new_session,
    prewarm,
    take_arrivals,
)
from specsweep.errors import BenchError
from specsweep.measure.records import CATEGORY_HEADER, RequestRecord, RequestSpec
from specsweep.store import redact_pieces
from specsweep.workload.arrivals import arrival_offsets
from specsweep.workload.prompts import generate, warmup_specs
from specsweep.workload.scenarios import default_num_prompts
from specsweep.workload.tokenizer import Tokenizer, load_tokenizer

__all__ = ["Runner", "auth_headers", "drive", "make_session", "measure_run", "prewarm", "resolve_model",
           "run_bench_async"]  # fmt: skip

_now = time.monotonic_ns
_JSON_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}
_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")
ERROR_BODY_READ = 16384  # bytes of an error response read; 500 characters of it are kept


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
        self.send_stamps = [0, 0]  # measured requests whose send time was [the call's, the kernel's]
        self.read_time_responses = 0  # measured responses stamped at read time (no arrival record)
        self.pacer = SendPacer()
        self.bounds: StampBounds = {}  # measured requests' chunks whose stamp may be late (selfcheck)
        self.redirects = 0
        self.count_disagreements: list[tuple[int, str]] = []  # measured requests (usage_check)
        self.on_request: Callable[[], None] | None = None  # called after each measured request

    def _fresh_session(self) -> aiohttp.ClientSession:
        if self._fresh is None:
            self._fresh = new_session(connector(force_close=True), self.cfg.base_url)
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
            messages=spec.messages,
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
            if (
                self.on_request is not None
            ):  # a live progress line (specsweep.commands.progress.BenchProgress)
                self.on_request()

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
            allow_redirects=self.cfg.allow_redirects,
        ) as resp:
            if resp.history:
                self.redirects += 1
            rec.headers_ns = _now()
            arr = take_arrivals(resp)
            if arr is not None:
                rec.headers_ns = min(rec.headers_ns, arr.hdr_ns or rec.headers_ns)
                rec.send_ns = max(rec.send_ns, min(arr.sent_ns, rec.headers_ns))
            rec.http_status = resp.status
            if 300 <= resp.status < 400 and not self.cfg.allow_redirects:
                rec.error_kind, rec.error = (
                    "http_status",
                    (
                        f"HTTP {resp.status}: redirect to {resp.headers.get('Location', '?')!r} refused (the "
                        "numbers would describe another server; pass --allow-redirects to follow it)"
                    ),
                )
                return
            if resp.status != 200:
                # read past the 500 characters kept: a secret the server echoes is scrubbed whole
                # before the cut (redact_pieces.clip), never cut first and left half-shown
                detail = (await resp.content.read(ERROR_BODY_READ)).decode("utf-8", "replace")
                rec.error_kind, rec.error = (
                    "http_status",
                    f"HTTP {resp.status}: {redact_pieces.clip(detail.strip(), 500)}",
                )
                return
            dec = SSEDecoder()
            chunk_ns, chunk_tokens = rec.chunk_ns, rec.chunk_tokens

            bounds: list[tuple[int, int]] = []

            def feed(piece: bytes, t: int, lo: int) -> None:
                """Record the chunks of the SSE events that ``piece`` (one read, stamped ``t``)
                completed. Only the read's newest bytes have that exact stamp: an event before the
                read's last one, or one followed by part of the next, may have come as early as
                ``lo`` (the socket's floor: the last draining read or empty selector call began) or
                the send, whichever is later.
                Events without output (``[DONE]``, usage or finish-only) are taken as written with
                the chunk before them: servers write them in the same step."""
                j0 = len(chunk_ns)
                for payload in dec.feed(piece):
                    text, n = dialect.parse(payload, st, count)
                    if n or (text and not chunk_ns):
                        chunk_ns.append(t)
                        chunk_tokens.append(n)
                late = t - max(lo, rec.send_ns)
                if late > 0 and len(chunk_ns) > j0:
                    last = len(chunk_ns) - (1 if piece.endswith(_EVENT_ENDS) else 0)
                    bounds.extend((j, late) for j in range(j0, last))

            content = resp.content
            if arr is None:  # no stamping protocol: the time the coroutine got the bytes
                self.read_time_responses += not rec.is_warmup
                async for data in content.iter_any():
                    now = _now()
                    feed(data, now, now)
            else:
                failure: list[BaseException] = []

                def sink(data: bytes, t: int, lo: int) -> None:  # called from the read callback
                    if failure:
                        return
                    try:
                        feed(data, t, lo)
                    except Exception as e:  # a malformed chunk: fail the request, as the reader would
                        failure.append(e)
                        content.set_exception(e)

                # What arrived before now waits in the payload: split it at its reads' boundaries.
                buffered = content.read_nowait(-1)
                pos, last_t = 0, rec.send_ns
                for end, t, lo in arr.marks:
                    if end > pos and pos < len(buffered):
                        feed(buffered[pos:end], t, lo)
                        pos, last_t = end, t
                if pos < len(buffered):
                    feed(buffered[pos:], _now(), last_t)
                arr.marks.clear()
                arr.sink = sink
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
                    arr.sink = None
                if failure:
                    raise failure[0]
                rest = content.read_nowait(-1)  # defensive: body bytes the sink did not get
                if rest:
                    feed(rest, _now(), rec.send_ns)
            if arr is not None and arr.kernel:
                self.kernel_stamps = True
            if arr is not None and not rec.is_warmup:
                self.send_stamps[arr.send_kernel] += 1
            if bounds and not rec.is_warmup:
                self.bounds[rec.index] = bounds
                rec.chunk_bound_ns = [0] * len(chunk_ns)
                for j, b in bounds:  # each bounded chunk once
                    rec.chunk_bound_ns[j] = b
            for payload in dec.close():
                dialect.parse(payload, st, count)

    def _finish(self, rec: RequestRecord, st: StreamState) -> None:
        rec.finish_reason = st.finish_reason
        rec.prompt_tokens_server = st.prompt_tokens
        rec.spec_verify_ct = st.spec_verify_ct
        rec.draft_tokens, rec.draft_accepted = st.draft_tokens, st.draft_accepted
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
            elif st.server_tokens and (why := text_over_cap(st, self.tok.count)):
                # the server's counts fit the request, its text does not (the client counted the
                # text chunk by chunk, and stopped reading, where the server gave no count)
                rec.error_kind, rec.error = OVER_CAP, why
            elif rec.output_tokens_source == "server" and not rec.is_warmup:
                # the server's count against the text it sent, both ways (usage_check)
                why = usage_check.disagreement(rec.output_tokens, "".join(st.text_parts), self.tok.count)
                if why:
                    self.count_disagreements.append((rec.index, why))


async def drive(
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


async def resolve_model(session: aiohttp.ClientSession, cfg: BenchConfig) -> str | None:
    if cfg.model:
        return cfg.model
    model = await server_info.first_model(session, cfg.base_url.rstrip("/"))
    if model is None and not get_dialect(cfg.backend).native:
        raise BenchError(
            f"cannot list models at {cfg.base_url}/v1/models (server unreachable or not OpenAI-"
            "compatible); pass --model or check --base-url"
        )
    return model


async def measure_run(
    runner: Runner,
    specs: Sequence[RequestSpec],
    offsets: Sequence[float] | None,
    concurrency: int | None,
    warm: list[RequestRecord] | None = None,
) -> WorkerRun:
    """One client process's measured run (the same in a single process and in every worker)."""
    runner.bounds = {}
    async with measuring() as load:
        records, load.sched_lag_ms = await drive(runner, specs, offsets, concurrency)
    load.read_time_responses = runner.read_time_responses
    return WorkerRun(
        worker=runner.worker, records=records, warm=warm or [], load=load, kernel=runner.kernel_stamps,
        bounds=runner.bounds, redirects=runner.redirects, send_stamps=runner.send_stamps,
        count_disagreements=list(runner.count_disagreements),
    )  # fmt: skip


def request_plan(cfg: BenchConfig, tok: Tokenizer) -> tuple[list[RequestSpec], list[float] | None]:
    """The run's request list and, in open loop, each request's offset on the schedule."""
    n = cfg.num_prompts or default_num_prompts(cfg.max_concurrency or 1)
    specs = generate(cfg.scenario, n, tok, cfg.seed, pool=cfg.prompt_pool)
    offsets = (
        None
        if math.isinf(cfg.request_rate)
        else arrival_offsets(n, cfg.request_rate, cfg.burstiness, cfg.seed)
    )
    return specs, offsets


async def run_bench_async(cfg: BenchConfig, on_request: Callable[[], None] | None = None) -> BenchOutcome:
    """One benchmark run against a live server: warmup, measured run, spec counters, metrics."""
    tok = load_tokenizer(cfg.tokenizer, warn=not cfg.quiet)
    get_dialect(cfg.backend)
    specs, offsets = request_plan(cfg, tok)
    base = cfg.base_url.rstrip("/")
    async with make_session(cfg.base_url) as session:
        model = await resolve_model(session, cfg)
        runner = Runner(cfg, session, tok, model)
        try:
            srv = ServerSide(version=await server_info.server_version(session, base))
            warm: list[RequestRecord] = []
            if cfg.warmup_requests > 0:
                warm, _ = await drive(
                    runner, warmup_specs(specs[0], cfg.warmup_requests), None, cfg.max_concurrency
                )
                await asyncio.sleep(cfg.warmup_sleep_s)
            if cfg.max_concurrency:
                await prewarm(session, base, min(cfg.max_concurrency, len(specs)))
            srv.spec_before = await server_info.scrape_spec(session, base) if cfg.scrape_metrics else None
            runner.on_request = on_request  # measured requests only, not warmup
            run = await measure_run(runner, specs, offsets, cfg.max_concurrency, warm)
            if cfg.scrape_metrics:
                srv.spec_after = await server_info.scrape_spec(session, base)
                srv.accept_length = await server_info.server_accept_length(session, base)
        finally:
            await runner.close()
    return build_outcome(cfg, model, tok.name, srv, [run])
