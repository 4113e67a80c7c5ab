"""`specsweep sim serve`: the simulated engine behind real HTTP endpoints, against the wall clock.

One task drives the engine: while requests are pending it takes ``step = engine.step()``, waits until
``wall_start + step.end / time_scale`` (an absolute schedule: a late step does not delay the next), and
writes every emission of the step to its stream in one pass, straight to the socket (pre-encoded bytes,
HTTP chunked framing, no per-chunk await). While idle it waits for an arrival and moves the engine's
virtual clock to the arrival's time. Asyncio timers wake up 1-2 ms late (epoll has millisecond timeouts),
so the driver waits for a deadline with ``time.sleep`` in slices of at most 2 ms (one event-loop pass
between slices lets arrivals in) and polls the clock for the last ``spin_s``.

Endpoints (shapes as vLLM / SGLang write them; see ``wire.py``)::

    POST /v1/completions  /v1/chat/completions     OpenAI (vLLM flavour), stream and non-stream
    POST /generate                                  SGLang native
    GET  /health  /health_generate  /v1/models  /get_model_info  /server_info  /get_server_info
    GET  /metrics  /version        POST /tokenize

With ``truth`` set, one JSON line per request records when each chunk was written to the socket
(``mono_ns``: time.monotonic_ns() as the bytes were handed to send(2), so a client on the same machine
never sees them earlier; ``epoch_ns``: the same instant on time.time_ns(); ``sched_mono_ns``: the
engine's scheduled time on the monotonic clock) and the tokens it carried.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
from aiohttp import web

from specsweep import kstamp
from specsweep.errors import UsageError
from specsweep.records import CATEGORY_HEADER
from specsweep.sim import probes, reqparse
from specsweep.sim.engine import Engine, Step
from specsweep.sim.faults import FaultDrawer, Faults, RequestFaults, parse_faults
from specsweep.sim.profile import Profile, load_profile
from specsweep.sim.reqparse import BadRequest
from specsweep.sim.textgen import WordStream, natural_length, prompt_key, word_table
from specsweep.sim.wire import ChatEncoder, CompletionsEncoder, GenerateEncoder
from specsweep.workload.tokenizer import BuiltinTokenizer

DEFAULT_MAX_MODEL_LEN = 131072
DEFAULT_COMPLETIONS_MAX_TOKENS = 16  # vLLM's /v1/completions default
DEFAULT_GENERATE_MAX_NEW_TOKENS = 128  # SGLang's sampling_params default

_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def _error(
    status: int, message: str, etype: str = "BadRequestError", param: str | None = None
) -> web.Response:
    body = probes.error_body(status, message, etype, param)
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(obj), content_type="application/json")


@dataclass
class SimConfig:
    """Everything a sim server is started with (see :func:`start_server` for the meaning)."""

    profile: Profile
    host: str = "127.0.0.1"
    port: int = 0
    seed: int = 0
    time_scale: float = 1.0
    truth: str | None = None
    faults: Faults = field(default_factory=Faults)
    served_model_name: str | None = None
    max_model_len: int = DEFAULT_MAX_MODEL_LEN
    spin_s: float = 0.0002  # the driver polls the clock for the last this-many seconds before a deadline
    on_crash: Callable[[], None] | None = None  # default: drop every connection and stop serving
    writer_threads: int = 0  # > 1: a step's socket writes are split over this many threads

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.profile.model_name


# flags of a prepared emission
_FINISHED, _NONSTREAM, _HOLD, _DISCONNECT = 1, 2, 4, 8
_SLICE_S = 0.002  # the driver's longest blocking sleep between event-loop passes while it waits


class _Req:
    """One generation request in flight."""

    __slots__ = (
        "arrival_epoch_ns",
        "arrival_mono_ns",
        "category",
        "disconnected",
        "done",
        "enc",
        "endpoint",
        "faults",
        "faulty",
        "fd",
        "finish_reason",
        "held",
        "ids",
        "kind",
        "malformed_sent",
        "max_tokens",
        "n_chunks",
        "n_out",
        "prompt_tokens",
        "rid",
        "stall_until",
        "stalled",
        "stream",
        "transport",
        "truth",
        "verify_ct",
        "words",
    )

    def __init__(self, rid: str, kind: str, endpoint: str, stream: bool, prompt_tokens: int, max_tokens: int):
        self.rid = rid
        self.category: str | None = None
        self.kind = kind  # "cmpl" | "chat" | "gen" | "health"
        self.endpoint = endpoint
        self.stream = stream
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.finish_reason = "length"
        self.words: WordStream | None = None
        self.enc: Any = None
        self.transport: asyncio.Transport | None = None
        self.fd = -1  # the socket's file descriptor (direct writes, writer threads)
        self.done: asyncio.Future[None] | None = None
        self.faults = RequestFaults()
        self.faulty = False  # any fault drawn for this request (checked per chunk)
        self.ids: list[int] = []  # output word indices (non-stream)
        self.n_out = 0
        self.n_chunks = 0
        self.verify_ct = 0
        self.truth: list[tuple[int, int, int, int]] | None = None
        self.held: list[bytes] = []
        self.stall_until = 0.0
        self.stalled = False
        self.malformed_sent = False
        self.disconnected = False
        self.arrival_mono_ns = time.monotonic_ns()
        self.arrival_epoch_ns = time.time_ns()


class SimServer:
    """The aiohttp application around one Engine; create with :func:`start_server`."""

    def __init__(self, cfg: SimConfig) -> None:
        if not cfg.time_scale > 0:
            raise UsageError(f"--time-scale {cfg.time_scale!r}; expected a positive number")
        self.cfg = cfg
        self.profile = cfg.profile
        self.engine = Engine(cfg.profile, seed=cfg.seed)
        self.model = cfg.model_name
        # like vLLM, a context never exceeds what the KV cache holds (prompt + output + k lookahead)
        self.max_model_len = max(1, min(cfg.max_model_len, cfg.profile.kv_tokens - cfg.profile.k))
        self.tokenizer = BuiltinTokenizer()
        self._words, self._word_ids = word_table()
        self._scale = float(cfg.time_scale)
        self._spec = cfg.profile.k > 0
        self._drawer = FaultDrawer(cfg.faults, cfg.seed)
        self._rng = random.Random(f"sampling:{cfg.seed}")
        self._reqs: dict[str, _Req] = {}
        self._accepted = 0
        self._truth_file: IO[bytes] | None = None
        self._truth_pending: list[_Req] = []
        self._wake: asyncio.Event | None = None
        self._driver: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.wall0 = 0.0  # loop.time() at virtual time 0
        self.started_epoch = time.time()
        self.crashed = False
        self.failure: BaseException | None = None  # the engine driver's exception, if it died
        self.dead: asyncio.Event | None = None  # set when the driver dies (created on startup)
        self._crash_cb: Callable[[], None] = cfg.on_crash or self._default_crash
        self._pool = (
            ThreadPoolExecutor(cfg.writer_threads, thread_name_prefix="sim-writer")
            if cfg.writer_threads > 1
            else None
        )
        self.app = self._make_app()

    # ---- lifecycle ----------------------------------------------------------------------------
    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._crash_middleware])
        r = app.router
        r.add_post("/v1/completions", self._h_completions)
        r.add_post("/v1/chat/completions", self._h_chat)
        r.add_post("/generate", self._h_generate)
        r.add_get("/health", self._h_health)
        r.add_get("/health_generate", self._h_health_generate)
        r.add_get("/v1/models", self._h_models)
        r.add_get("/get_model_info", self._h_model_info)
        r.add_get("/server_info", self._h_server_info)
        r.add_get("/get_server_info", self._h_server_info)
        r.add_get("/metrics", self._h_metrics)
        r.add_post("/tokenize", self._h_tokenize)
        r.add_get("/version", self._h_version)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(self._on_shutdown)
        return app

    @web.middleware
    async def _crash_middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self.crashed:
            try:
                return await handler(request)
            except _Crashed:
                pass
        if request.transport is not None:
            request.transport.abort()  # a crashed server answers nothing
        raise web.HTTPServiceUnavailable()

    async def _on_startup(self, app: web.Application) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self.wall0 = self._loop.time()
        self.started_epoch = time.time()
        if self.cfg.truth:
            self._truth_file = open(self.cfg.truth, "ab")  # noqa: SIM115 - closed on shutdown
        self.dead = asyncio.Event()
        self._driver = asyncio.create_task(self._drive(), name="specsweep-sim-engine")
        self._driver.add_done_callback(self._driver_done)

    def _driver_done(self, task: asyncio.Task[None]) -> None:
        """A dead engine must not look like a slow one: every open stream is reset, the server answers
        nothing more, and ``dead`` is set (``sim serve`` then exits non-zero with the traceback)."""
        if task.cancelled() or task.exception() is None:
            return
        self.failure = task.exception()
        self.crashed = True
        for req in list(self._reqs.values()):
            if req.transport is not None:
                req.transport.abort()
        assert self.dead is not None
        self.dead.set()

    async def _on_shutdown(self, app: web.Application) -> None:
        if self._driver is not None and not self._driver.done():
            self._driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._driver
        for req in list(self._reqs.values()):
            if req.transport is not None:
                req.transport.close()
            self._finish(req)
        self.flush_truth()
        if self._truth_file is not None:
            self._truth_file.close()
            self._truth_file = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _vnow(self) -> float:
        assert self._loop is not None
        return (self._loop.time() - self.wall0) * self._scale

    def _ready(self) -> bool:
        assert self._loop is not None
        return self._loop.time() - self.wall0 >= self.cfg.faults.slow_start_s

    # ---- the engine driver --------------------------------------------------------------------
    async def _drive(self) -> None:
        """Run the engine against the wall clock: compute and encode the next step as soon as the
        previous one is written, wait for its deadline, write all its chunks in one pass.

        The wait: the event loop's own timers wake 1-2 ms late (epoll has millisecond timeouts) and a
        timer thread must win the GIL back and wake the loop through its self-pipe (both measured:
        docs/perf/sim_capacity.md). So the driver sleeps in this thread, in slices of at most
        ``_SLICE_S``, giving the loop one pass between slices (arrivals are read, parsed and queued for
        the engine, which takes them at its next step, exactly as when they are read at once), and
        polls the clock for the last ``spin_s``. A late step does not delay the next: the schedule is
        absolute."""
        loop = self._loop
        assert loop is not None and self._wake is not None
        eng = self.engine
        wake = self._wake
        spin = self.cfg.spin_s
        clock = loop.time
        sleep = time.sleep
        while True:
            if eng.idle:
                wake.clear()
                await wake.wait()
                continue
            step = eng.step()
            if step is None:
                continue
            target = self.wall0 + step.end / self._scale
            prepared = self._prepare(step, target)
            await asyncio.sleep(0)  # one loop pass even when behind schedule: arrivals keep coming in
            while (delay := target - clock() - spin) > 0:
                if delay > _SLICE_S:
                    sleep(_SLICE_S)
                    await asyncio.sleep(0)
                else:
                    sleep(delay)
                    break
            while clock() < target:  # the last ``spin`` seconds
                pass
            self._emit(prepared, target)

    def _prepare(self, step: Step, target: float) -> list[tuple[_Req, bytes, int, int]]:
        """Encode every emission of a step ahead of its deadline: (request, HTTP chunk frame, tokens, flags)."""
        reqs = self._reqs
        words = self._words
        sched_ns = int(target * 1e9)
        out: list[tuple[_Req, bytes, int, int]] = []
        for em in step.emissions:
            req = reqs.get(em.rid)  # type: ignore[call-overload]
            if req is None:
                continue
            n = em.n_tokens
            assert req.words is not None
            idx = req.words.take(n)
            req.n_out += n
            if not em.first:
                req.verify_ct += 1
            flags = _FINISHED if em.finished else 0
            if not req.stream:
                req.ids.extend(idx)
                out.append((req, b"", n, flags | _NONSTREAM))
                continue
            text = b"".join([words[i] for i in idx])
            fr = req.finish_reason if em.finished else None
            enc = req.enc
            if req.kind == "gen":
                enc.add(text, [self._word_ids[i] for i in idx])
                e2e = (sched_ns - req.arrival_mono_ns) / 1e9 if em.finished else None
                data = enc.event(req.n_out, req.verify_ct, fr, e2e)
            else:
                data = enc.chunk(text, req.n_out, fr)
                if em.first:
                    data = enc.start() + data
            if req.faulty:
                rf = req.faults
                if rf.malformed and not req.malformed_sent and (req.n_chunks == 1 or em.finished):
                    data = enc.malformed()
                    req.malformed_sent = True
                if req.stalled or (
                    rf.stall_after_tokens is not None
                    and not req.stall_until
                    and req.n_out - n >= rf.stall_after_tokens
                ):
                    req.stalled = True
                    flags |= _HOLD
                elif rf.disconnect_after_tokens is not None and req.n_out >= rf.disconnect_after_tokens:
                    flags |= _DISCONNECT
            if em.finished:
                data += enc.end(req.n_out) if req.kind != "gen" else enc.end()
            req.n_chunks += 1
            out.append((req, b"%x\r\n%b\r\n" % (len(data), data), n, flags))
        return out

    def _emit(self, prepared: list[tuple[_Req, bytes, int, int]], target: float) -> None:
        """At the deadline: one socket write per stream, in one pass; bookkeeping afterwards."""
        mono = time.monotonic_ns
        sched_ns = int(target * 1e9)
        to_epoch = time.time_ns() - mono()  # one epoch reading per step, not per chunk
        times = (sched_ns, to_epoch)
        finished: list[_Req] = []
        lost: list[_Req] = []
        pool = self._pool
        direct: list[tuple[_Req, bytes, int]] = []  # for the writer threads: (req, frame, n)
        if pool is not None and len(prepared) < 4 * self.cfg.writer_threads:
            pool = None  # a small step: threads would cost more than they save
        for req, frame, n, flags in prepared:
            if flags & _NONSTREAM:
                if flags & _FINISHED:
                    finished.append(req)
                continue
            t = req.transport
            if t is None or t.is_closing():
                lost.append(req)
                continue
            if flags & _HOLD and req.stalled:  # (a stall released since prepare: write as usual)
                self._hold(req, frame, n, sched_ns, bool(flags & _FINISHED))
                continue
            if req.fd >= 0 and not flags & _DISCONNECT and not t.get_write_buffer_size():
                if pool is not None:
                    direct.append((req, frame, n))
                else:
                    k = _send_frame(req, frame, n, times)
                    if k < len(frame):  # the tail, or all of it on a dead connection (asyncio closes it)
                        t.write(frame[k:] if k > 0 else frame)
            else:
                if req.truth is not None:
                    m = mono()
                    req.truth.append((m, m + to_epoch, sched_ns, n))
                t.write(frame)
            if flags & _FINISHED:
                finished.append(req)
            elif flags & _DISCONNECT:
                req.disconnected = True
                t.close()
                lost.append(req)
        if direct:
            assert pool is not None
            w = self.cfg.writer_threads
            parts = [direct[i::w] for i in range(w)]
            for req, rest in (x for part in pool.map(_write_raw, parts, [times] * w) for x in part):
                t = req.transport
                if rest is None or t is None or t.is_closing():
                    lost.append(req)
                else:
                    t.write(rest)  # the socket took part of the frame: asyncio sends the rest, in order
        for req in lost:
            if req.rid in self._reqs:
                self.engine.abort(req.rid)
                req.finish_reason = "abort"
                self._finish(req)
        for req in finished:
            self._finish(req)
        self.flush_truth()

    def _hold(self, req: _Req, data: bytes, n: int, sched_ns: int, finished: bool) -> None:
        """Stall fault: keep the request's chunks back until its stall ends, then write them at once."""
        assert self._loop is not None
        req.held.append(data)
        if req.truth is not None:
            req.truth.append((0, 0, sched_ns, n))  # write time filled in on release
        if not req.stall_until:
            req.stall_until = self._loop.time() + self.cfg.faults.stall_s
            self._loop.call_at(req.stall_until, self._release, req)
        if finished:
            req.held.append(b"")  # marker: the request ends with the held chunks

    def _release(self, req: _Req) -> None:
        req.stalled = False
        ended = bool(req.held) and req.held[-1] == b""
        chunks = [d for d in req.held if d]
        req.held = []
        t = req.transport
        if t is None or t.is_closing():
            self.engine.abort(req.rid)
            self._finish(req)
            return
        now_m, now_e = time.monotonic_ns(), time.time_ns()  # before the write, as in _emit
        t.write(b"".join(chunks))
        if req.truth is not None:
            req.truth[:] = [(m or now_m, e or now_e, s, n) for m, e, s, n in req.truth]
        if ended:
            self._finish(req)
            self.flush_truth()

    def _finish(self, req: _Req) -> None:
        if self._reqs.pop(req.rid, None) is None:
            return
        if req.truth is not None:
            self._truth_pending.append(req)
        if req.done is not None and not req.done.done():
            req.done.set_result(None)

    def flush_truth(self) -> None:
        """Write the truth lines of finished requests (called after each step's writes)."""
        f = self._truth_file
        if f is None or not self._truth_pending:
            self._truth_pending.clear()
            return
        lines = []
        for req in self._truth_pending:
            rec = {
                "rid": req.rid,
                "endpoint": req.endpoint,
                "stream": req.stream,
                "prompt_tokens": req.prompt_tokens,
                "max_tokens": req.max_tokens,
                "completion_tokens": req.n_out,
                "finish_reason": "abort" if req.disconnected else req.finish_reason,
                "arrival_mono_ns": req.arrival_mono_ns,
                "arrival_epoch_ns": req.arrival_epoch_ns,
                "chunks": [
                    {"mono_ns": m, "epoch_ns": e, "sched_mono_ns": s, "tokens": n}
                    for m, e, s, n in (req.truth or ())
                ],
            }
            lines.append(orjson.dumps(rec) + b"\n")
        self._truth_pending.clear()
        f.write(b"".join(lines))
        f.flush()

    # ---- admission ----------------------------------------------------------------------------
    def _admit(
        self,
        kind: str,
        endpoint: str,
        *,
        prompt: str | list[int],
        prompt_tokens: int,
        max_tokens: int | None,
        ignore_eos: bool,
        temperature: float,
        stream: bool,
        rf: RequestFaults,
        transport: Any = None,
        category: str | None = None,
    ) -> _Req:
        """Validate and create a request (its text seeded); :meth:`_start` hands it to the engine.

        ``transport``: the request's connection; its arrival time (``arrival_mono_ns``, in the truth
        file) is the kernel's receive stamp of the request's last bytes where the server listens on a
        stamped socket (Linux), so a burst of requests parsed one after another keeps true arrivals.

        Raises BadRequest before anything is sent, so a stream's headers go out only for a request
        the engine will take.
        """
        assert self._loop is not None and self._wake is not None
        room = self.max_model_len - prompt_tokens
        if room < 1:
            raise BadRequest(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens. However, your "
                f"request has {prompt_tokens} input tokens. Please reduce the length of the input.",
            )
        if max_tokens is None:
            max_tokens = room
        elif max_tokens > room:
            raise BadRequest(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                f"requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the input, {max_tokens} "
                "in the completion). Please reduce the length of the input or completion.",
                param="max_tokens",
            )
        pkey = prompt_key(prompt)
        n = max_tokens
        finish = "length"
        if not ignore_eos:
            nat = natural_length(pkey)
            if nat < max_tokens:
                n, finish = nat, "stop"
        key = pkey if temperature == 0 else self._rng.getrandbits(64)
        diverge_at = None
        if rf.diverge:
            diverge_at = random.Random(f"diverge:{self.cfg.seed}:{pkey}").randrange(n)
        rid = uuid.uuid4().hex
        req = _Req(rid, kind, endpoint, stream, prompt_tokens, n)
        req.category = category  # the X-Specsweep-Category header: picks the acceptance curve
        arrived = kstamp.arrival_ns(transport, req.arrival_mono_ns)
        req.arrival_epoch_ns -= req.arrival_mono_ns - arrived
        req.arrival_mono_ns = arrived
        req.finish_reason = finish
        req.words = WordStream(key, diverge_at)
        req.faults = rf
        req.faulty = rf.any
        req.done = self._loop.create_future()
        if self._truth_file is not None:
            req.truth = []
        if not self.engine.fits(prompt_tokens, n):
            raise BadRequest(
                400,
                f"request needs {self.engine.kv_need(prompt_tokens, n)} KV tokens (prompt {prompt_tokens} + "
                f"max_tokens {n} + k {self.profile.k}); the simulated KV cache holds {self.profile.kv_tokens}",
                param="max_tokens",
            )
        return req

    def _start(self, req: _Req) -> None:
        """The request arrives at the engine now (virtual time follows the wall clock while idle)."""
        assert self._wake is not None
        eng = self.engine
        if eng.idle:
            eng.advance_to(self._vnow())
        eng.add(req.rid, req.prompt_tokens, req.max_tokens, req.category)
        self._reqs[req.rid] = req
        self._wake.set()

    def _gate(self, stream: bool) -> tuple[RequestFaults, web.Response | None]:
        """Slow start, crash and error faults, checked on every generation request's arrival."""
        if not self._ready():
            return RequestFaults(), _error(
                503, "server is starting (simulated slow start)", "ServiceUnavailable"
            )
        f = self.cfg.faults
        if f.crash_after is not None and self._accepted >= f.crash_after:
            self._crash()
        self._accepted += 1
        rf = self._drawer.draw(stream=stream)
        if rf.error_status is not None:
            etype = {429: "RateLimitError", 503: "ServiceUnavailable"}.get(
                rf.error_status, "InternalServerError"
            )
            return rf, _error(rf.error_status, f"simulated fault: HTTP {rf.error_status}", etype)
        return rf, None

    def _crash(self) -> None:
        self.crashed = True
        self._crash_cb()

    def _default_crash(self) -> None:
        """In-process crash: every connection is reset and the engine stops."""
        if self._driver is not None:
            self._driver.cancel()
        for req in list(self._reqs.values()):
            if req.transport is not None:
                req.transport.abort()
        raise _Crashed

    async def _read_json(self, request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise BadRequest(400, f"request body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise BadRequest(400, f"request body must be a JSON object, got {type(body).__name__}")
        return body

    def _check_model(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if model is not None and model != self.model:
            raise BadRequest(404, f"The model `{model}` does not exist.", "NotFoundError", "model")

    # ---- generation endpoints -----------------------------------------------------------------
    async def _h_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._openai(request, chat=False)

    async def _h_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._openai(request, chat=True)

    async def _openai(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        prompt: str | list[int]
        try:
            body = await self._read_json(request)
            self._check_model(body)
            if chat:
                prompt, ptoks = reqparse.chat_prompt(body.get("messages"), self.tokenizer.count)
                mt = body.get("max_completion_tokens", body.get("max_tokens"))
                max_tokens = reqparse.opt_int(mt, "max_completion_tokens")
            else:
                prompt, ptoks = reqparse.parse_prompt(body.get("prompt"), "prompt", self.tokenizer.count)
                max_tokens = reqparse.opt_int(
                    body.get("max_tokens", DEFAULT_COMPLETIONS_MAX_TOKENS), "max_tokens"
                )
            if max_tokens is not None and max_tokens < 1:
                raise BadRequest(400, f"max_tokens must be at least 1, got {max_tokens}.", param="max_tokens")
            stream = bool(body.get("stream", False))
            so = body.get("stream_options") or {}
            if not isinstance(so, dict):
                raise BadRequest(400, "stream_options must be an object", param="stream_options")
            if so and not stream:
                raise BadRequest(
                    400, "Stream options can only be defined when `stream=True`.", param="stream_options"
                )
            temperature = reqparse.temperature(body.get("temperature"), 1.0)
            n_choices = body.get("n", 1)
            if n_choices not in (1, None):
                raise BadRequest(
                    400, f"n={n_choices!r}: the simulator serves one choice per request", param="n"
                )
            rf, err = self._gate(stream)
            if err is not None:
                return err
            req = self._admit(
                "chat" if chat else "cmpl",
                request.path,
                prompt=prompt,
                prompt_tokens=ptoks,
                max_tokens=max_tokens,
                ignore_eos=bool(body.get("ignore_eos", False)),
                temperature=temperature,
                stream=stream,
                rf=rf,
                transport=request.transport,
                category=request.headers.get(CATEGORY_HEADER),
            )
        except BadRequest as e:
            return _error(e.status, str(e), e.etype, e.param)
        created = int(time.time())
        rid = ("chatcmpl-" if chat else "cmpl-") + req.rid
        if not stream:
            self._start(req)
            assert req.done is not None
            await req.done
            body_fn = probes.chat_body if chat else probes.completion_body
            text = self._text(req)
            return _json(
                body_fn(rid, created, self.model, text, req.finish_reason, req.prompt_tokens, req.n_out)
            )
        enc_cls = ChatEncoder if chat else CompletionsEncoder
        include_usage = bool(so.get("include_usage", False))
        req.enc = enc_cls(
            rid,
            created,
            self.model,
            req.prompt_tokens,
            include_usage,
            include_usage and bool(so.get("continuous_usage_stats", False)),  # as vLLM's should_include_usage
        )
        return await self._stream(request, req)

    async def _stream(self, request: web.Request, req: _Req) -> web.StreamResponse:
        """Headers first (as vLLM/SGLang send them on arrival), then the engine writes the chunks."""
        resp = web.StreamResponse(headers=_SSE_HEADERS)
        try:
            await resp.prepare(request)
        except (ConnectionError, RuntimeError):
            return resp
        req.transport = request.transport
        sock = request.transport.get_extra_info("socket") if request.transport is not None else None
        req.fd = sock.fileno() if sock is not None else -1
        self._start(req)
        assert req.done is not None
        await req.done
        if not req.disconnected and request.transport is not None and not request.transport.is_closing():
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write_eof()
        else:
            resp.force_close()
        return resp

    def _text(self, req: _Req) -> str:
        return b"".join([self._words[i] for i in req.ids]).decode("ascii")

    async def _h_generate(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await self._read_json(request)
            if body.get("input_ids") is not None:
                prompt, ptoks = reqparse.parse_prompt(body["input_ids"], "input_ids", self.tokenizer.count)
            else:
                prompt, ptoks = reqparse.parse_prompt(body.get("text"), "text", self.tokenizer.count)
            sp = body.get("sampling_params") or {}
            if not isinstance(sp, dict):
                raise BadRequest(400, "sampling_params must be an object", param="sampling_params")
            max_new = reqparse.opt_int(
                sp.get("max_new_tokens", DEFAULT_GENERATE_MAX_NEW_TOKENS), "max_new_tokens"
            )
            if max_new is not None and max_new < 1:
                raise BadRequest(
                    400, f"max_new_tokens must be at least 1, got {max_new}", param="max_new_tokens"
                )
            stream = bool(body.get("stream", False))
            rf, err = self._gate(stream)
            if err is not None:
                return err
            req = self._admit(
                "gen",
                "/generate",
                prompt=prompt,
                prompt_tokens=ptoks,
                max_tokens=max_new,
                ignore_eos=bool(sp.get("ignore_eos", False)),
                temperature=reqparse.temperature(sp.get("temperature"), 1.0),
                stream=stream,
                rf=rf,
                transport=request.transport,
                category=request.headers.get(CATEGORY_HEADER),
            )
        except BadRequest as e:
            return _error(e.status, str(e), e.etype, e.param)
        if not stream:
            self._start(req)
            assert req.done is not None
            await req.done
            e2e = (time.monotonic_ns() - req.arrival_mono_ns) / 1e9
            ids = [self._word_ids[i] for i in req.ids]
            verify_ct = req.verify_ct if self._spec else None
            body = probes.generate_body(
                req.rid, self._text(req), ids, req.finish_reason, req.prompt_tokens, verify_ct, e2e
            )
            return _json(body)
        req.enc = GenerateEncoder(req.rid, req.prompt_tokens, self._spec)
        return await self._stream(request, req)

    # ---- probes -------------------------------------------------------------------------------
    async def _h_health(self, request: web.Request) -> web.Response:
        if not self._ready():
            return web.Response(status=503)
        return web.Response(status=200)

    async def _h_health_generate(self, request: web.Request) -> web.Response:
        """SGLang's probe: one real one-token generation through the engine."""
        if not self._ready():
            return web.Response(status=503)
        try:
            req = self._admit(
                "health", "/health_generate", prompt=[0], prompt_tokens=1, max_tokens=1, ignore_eos=True,
                temperature=0.0, stream=False, rf=RequestFaults(),
            )  # fmt: skip
        except BadRequest:
            return web.Response(status=503)
        self._start(req)
        assert req.done is not None
        try:
            await asyncio.wait_for(asyncio.shield(req.done), timeout=20.0)
        except asyncio.TimeoutError:
            return web.Response(status=503)
        return web.Response(status=200)

    async def _h_models(self, request: web.Request) -> web.Response:
        return _json(probes.models_body(self.model, int(self.started_epoch), self.max_model_len))

    async def _h_model_info(self, request: web.Request) -> web.Response:
        return _json(probes.model_info_body(self.model))

    def _info(self) -> dict[str, Any]:
        return probes.sim_info(self.profile, self._scale, self.cfg.seed, self.cfg.faults.spec())

    async def _h_server_info(self, request: web.Request) -> web.Response:
        cfg = self.cfg
        body = probes.server_info_body(
            self.profile, self.engine.counters, model=self.model, host=cfg.host, port=cfg.port,
            max_model_len=self.max_model_len, info=self._info(),
        )  # fmt: skip
        return _json(body)

    async def _h_version(self, request: web.Request) -> web.Response:
        return _json(probes.version_body(self._info()))

    async def _h_tokenize(self, request: web.Request) -> web.Response:
        """vLLM POST /tokenize: {"prompt"} or {"messages"} -> {count, max_model_len, tokens, token_strs}."""
        try:
            body = await self._read_json(request)
            self._check_model(body)
            if "messages" in body:
                text, _ = reqparse.chat_prompt(body["messages"], self.tokenizer.count)
            else:
                p = body.get("prompt")
                if not isinstance(p, str):
                    raise BadRequest(400, "prompt must be a string", param="prompt")
                text = p
        except BadRequest as e:
            return _error(e.status, str(e), e.etype, e.param)
        tokens = self.tokenizer.encode(text)
        return _json(
            {
                "count": len(tokens),
                "max_model_len": self.max_model_len,
                "tokens": tokens,
                "token_strs": None,
            }
        )

    async def _h_metrics(self, request: web.Request) -> web.Response:
        text = probes.metrics_text(self.engine.counters, self.model, self._spec, self.started_epoch)
        return web.Response(
            body=text.encode(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
        )


def _send_frame(req: _Req, frame: bytes, n: int, times: tuple[int, int]) -> int:
    """``os.write`` a step's frame straight to the request's socket (only for sockets asyncio holds
    nothing for, so order is kept; half the cost of ``transport.write``, docs/perf/sim_capacity.md).
    Returns the bytes sent (the caller hands any tail to asyncio), or -1 for a dead connection. The
    truth stamp is taken as the bytes go to send(2): a reader never sees them earlier."""
    sched_ns, to_epoch = times
    m = time.monotonic_ns()
    try:
        k = os.write(req.fd, frame)
    except (BlockingIOError, InterruptedError):
        k = 0
    except OSError:
        return -1
    if req.truth is not None:
        req.truth.append((m, m + to_epoch, sched_ns, n))
    return k


def _write_raw(
    items: list[tuple[_Req, bytes, int]], times: tuple[int, int]
) -> list[tuple[_Req, bytes | None]]:
    """Writer thread: :func:`_send_frame` for each item (send(2) releases the GIL, so threads write
    in parallel); returns what is left to write (the unsent tail, or None for a dead connection)."""
    left: list[tuple[_Req, bytes | None]] = []
    for req, frame, n in items:
        k = _send_frame(req, frame, n, times)
        if k < 0:
            left.append((req, None))
        elif k < len(frame):
            left.append((req, frame[k:]))
    return left


class _Crashed(Exception):
    """Raised out of a handler when the in-process server simulates a crash."""


# ---- running it ---------------------------------------------------------------------------------
@dataclass
class ServerHandle:
    """A running in-process server (see :func:`start_server`)."""

    server: SimServer
    runner: web.AppRunner
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def close(self) -> None:
        await self.runner.cleanup()

    async def __aenter__(self) -> ServerHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def start_server(
    profile: Profile | str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    seed: int = 0,
    time_scale: float = 1.0,
    truth: str | None = None,
    faults: Faults | str | None = None,
    served_model_name: str | None = None,
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
    spin_s: float = 0.0002,
    on_crash: Callable[[], None] | None = None,
    writer_threads: int = 0,
) -> ServerHandle:
    """Start a sim server on the running event loop; ``port=0`` picks a free port (see ``.port``).

    ``profile``: a Profile, a shipped profile's name or a .yaml path. ``time_scale``: virtual seconds
    per wall second. ``truth``: JSON-lines file of every chunk's write time (appended). ``faults``: a
    Faults or a ``--faults`` spec. ``spin_s``: how long before a deadline the driver stops sleeping and polls the clock.
    ``on_crash``: what the crash_after fault does (default: reset every connection, stop answering).
    ``writer_threads``: > 1 splits each step's socket writes over that many threads.

    Use ``async with await start_server(...) as handle:`` or call ``await handle.close()``.
    """
    prof = load_profile(profile) if isinstance(profile, str) else profile
    flt = faults if isinstance(faults, Faults) else parse_faults(faults)
    cfg = SimConfig(
        prof,
        host,
        port,
        seed,
        time_scale,
        truth,
        flt,
        served_model_name,
        max_model_len,
        spin_s,
        on_crash,
        writer_threads,
    )
    server = SimServer(cfg)
    runner = web.AppRunner(server.app, handle_signals=False, access_log=None)
    await runner.setup()
    # request arrivals stamped by the kernel (see kstamp); a plain socket where there are no stamps
    site = web.SockSite(runner, kstamp.listen(host, port))
    await site.start()
    bound = port
    for addr in runner.addresses:
        if isinstance(addr, tuple):
            bound = int(addr[1])
            break
    cfg.port = bound
    return ServerHandle(server, runner, host, bound)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The `specsweep sim serve` flags (see specsweep.sim.serve)."""
    from specsweep.sim.serve import add_serve_arguments as add

    add(parser)


def serve_main(args: argparse.Namespace) -> int:
    """Run `specsweep sim serve` until SIGTERM / SIGINT (see specsweep.sim.serve)."""
    from specsweep.sim.serve import serve_main as run_serve

    return run_serve(args)
