"""`specsweep sim serve`'s HTTP surface: the endpoints of vLLM and SGLang in front of the engine driver.

Endpoints (shapes as vLLM / SGLang write them; see ``wire.py`` and ``responses.py``)::

    POST /v1/completions  /v1/chat/completions     OpenAI (vLLM flavour), stream and non-stream
    POST /generate                                  SGLang native
    GET  /health  /health_generate  /v1/models  /get_model_info  /server_info  /get_server_info
    GET  /metrics  /version        POST /tokenize

A generation request goes parse -> gate (slow start, crash and error faults) -> admit (context and KV
limits, its text seeded) -> the engine driver (``driver.py``), which writes its chunks on the engine's
schedule. :func:`start_server` runs it on the current event loop; ``serve.py`` runs it as a process.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from specsweep.client import kstamp
from specsweep.errors import UsageError
from specsweep.measure.records import CATEGORY_HEADER
from specsweep.sim import reqparse, responses
from specsweep.sim.driver import EngineDriver, LiveRequest
from specsweep.sim.engine import Engine
from specsweep.sim.faults import FaultDrawer, Faults, RequestFaults, parse_faults
from specsweep.sim.profile import Profile, load_profile
from specsweep.sim.reqparse import BadRequest
from specsweep.sim.settings import (
    DEFAULT_MAX_MODEL_LEN,
    SimConfig,
)
from specsweep.sim.textgen import WordStream, natural_length, prompt_key
from specsweep.sim.wire import ChatEncoder, CompletionsEncoder, GenerateEncoder
from specsweep.workload.tokenizer import BuiltinTokenizer

_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def _error(
    status: int, message: str, etype: str = "BadRequestError", param: str | None = None
) -> web.Response:
    body = responses.error_body(status, message, etype, param)
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(obj), content_type="application/json")


class _Crashed(Exception):
    """Raised out of a handler when the in-process server simulates a crash."""


class SimServer:
    """The aiohttp application around one Engine and its driver; create with :func:`start_server`."""

    def __init__(self, cfg: SimConfig) -> None:
        if not cfg.time_scale > 0:
            raise UsageError(f"--time-scale {cfg.time_scale!r}; expected a positive number")
        self.cfg = cfg
        self.profile = cfg.profile
        self.engine = Engine(cfg.profile, seed=cfg.seed)
        self.driver = EngineDriver(cfg, self.engine, on_death=self._on_engine_death)
        self.model = cfg.model_name
        # like vLLM, a context never exceeds what the KV cache holds (prompt + output + k lookahead)
        self.max_model_len = max(1, min(cfg.max_model_len, cfg.profile.kv_tokens - cfg.profile.k))
        self.tokenizer = BuiltinTokenizer()
        self._spec = cfg.profile.k > 0
        self.fault_drawer = FaultDrawer(cfg.faults, cfg.seed)  # per-request fault draws (tests stage them)
        self._rng = random.Random(f"sampling:{cfg.seed}")
        self._accepted = 0
        self.started_epoch = time.time()
        self.crashed = False
        self._crash_cb: Callable[[], None] = cfg.on_crash or self._default_crash
        self.app = self._make_app()

    @property
    def failure(self) -> BaseException | None:
        """The engine driver's exception, if it died."""
        return self.driver.failure

    @property
    def dead(self) -> asyncio.Event | None:
        """Set when the engine driver dies (created on startup)."""
        return self.driver.dead

    def flush_truth(self) -> None:
        """Write the truth lines of finished requests now (before a simulated crash exits)."""
        self.driver.flush_truth()

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
        self.driver.start()
        self.started_epoch = time.time()

    def _on_engine_death(self) -> None:
        self.crashed = True

    async def _on_shutdown(self, app: web.Application) -> None:
        await self.driver.stop()

    def _ready(self) -> bool:
        return self.driver.elapsed_s() >= self.cfg.faults.slow_start_s

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
    ) -> LiveRequest:
        """Validate and create a request (its text seeded); the driver's ``submit`` hands it to the engine.

        ``transport``: the request's connection; its arrival time (``arrival_mono_ns``, in the truth
        file) is the kernel's receive stamp of the request's last bytes where the server listens on a
        stamped socket (Linux), so a burst of requests parsed one after another keeps true arrivals.

        Raises BadRequest before anything is sent, so a stream's headers go out only for a request
        the engine will take.
        """
        loop = self.driver.loop
        assert loop is not None
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
        req = LiveRequest(rid, kind, endpoint, stream, prompt_tokens, n)
        req.category = category  # the X-Specsweep-Category header: picks the acceptance curve
        arrived = kstamp.arrival_ns(transport, req.arrival_mono_ns)
        req.arrival_epoch_ns -= req.arrival_mono_ns - arrived
        req.arrival_mono_ns = arrived
        req.finish_reason = finish
        req.words = WordStream(key, diverge_at)
        req.faults = rf
        req.faulty = rf.any
        req.done = loop.create_future()
        if self.driver.records_truth:
            req.truth = []
        if not self.engine.fits(prompt_tokens, n):
            raise BadRequest(
                400,
                f"request needs {self.engine.kv_need(prompt_tokens, n)} KV tokens (prompt {prompt_tokens} + "
                f"max_tokens {n} + k {self.profile.k}); the simulated KV cache holds {self.profile.kv_tokens}",
                param="max_tokens",
            )
        return req

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
        rf = self.fault_drawer.draw(stream=stream)
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
        self.driver.cancel()
        self.driver.abort_all()
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
        return await self._generation(request, "cmpl")

    async def _h_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generation(request, "chat")

    async def _h_generate(self, request: web.Request) -> web.StreamResponse:
        return await self._generation(request, "gen")

    async def _generation(self, request: web.Request, kind: str) -> web.StreamResponse:
        """Every generation endpoint: parse -> gate -> admit -> answer (one body, or the stream).

        Nothing is sent before admission: a bad request or a fault gets its error status, and a
        stream's headers go out only for a request the engine takes."""
        count = self.tokenizer.count
        try:
            body = await self._read_json(request)
            if kind == "gen":
                gen = reqparse.sglang_generation(body, count)
            else:
                self._check_model(body)
                gen = reqparse.openai_generation(body, kind == "chat", count)
            rf, err = self._gate(gen.stream)
            if err is not None:
                return err
            req = self._admit(
                gen.kind,
                request.path,
                prompt=gen.prompt,
                prompt_tokens=gen.prompt_tokens,
                max_tokens=gen.max_tokens,
                ignore_eos=gen.ignore_eos,
                temperature=gen.temperature,
                stream=gen.stream,
                rf=rf,
                transport=request.transport,
                category=request.headers.get(CATEGORY_HEADER),
            )
        except BadRequest as e:
            return _error(e.status, str(e), e.etype, e.param)
        created = int(time.time())
        rid = {"chat": "chatcmpl-", "cmpl": "cmpl-"}.get(kind, "") + req.rid
        if not gen.stream:
            self.driver.submit(req)
            assert req.done is not None
            await req.done
            return _json(self._reply(req, rid, created))
        if kind == "gen":
            req.enc = GenerateEncoder(rid, req.prompt_tokens, self._spec)
        else:
            enc_cls = ChatEncoder if kind == "chat" else CompletionsEncoder
            req.enc = enc_cls(
                rid, created, self.model, req.prompt_tokens, gen.include_usage, gen.continuous_usage
            )
        return await self._stream(request, req)

    def _reply(self, req: LiveRequest, rid: str, created: int) -> dict[str, Any]:
        """The non-stream body of a finished request, as its endpoint writes it."""
        words = self.driver.words
        text = b"".join([words[i] for i in req.ids]).decode("ascii")
        if req.kind != "gen":
            body_fn = responses.chat_body if req.kind == "chat" else responses.completion_body
            return body_fn(rid, created, self.model, text, req.finish_reason, req.prompt_tokens, req.n_out)
        e2e = (time.monotonic_ns() - req.arrival_mono_ns) / 1e9
        ids = [self.driver.word_ids[i] for i in req.ids]
        verify_ct = req.verify_ct if self._spec else None
        return responses.generate_body(rid, text, ids, req.finish_reason, req.prompt_tokens, verify_ct, e2e)

    async def _stream(self, request: web.Request, req: LiveRequest) -> web.StreamResponse:
        """Headers first (as vLLM/SGLang send them on arrival), then the engine writes the chunks."""
        resp = web.StreamResponse(headers=_SSE_HEADERS)
        try:
            await resp.prepare(request)
        except (ConnectionError, RuntimeError):
            return resp
        req.transport = request.transport
        sock = request.transport.get_extra_info("socket") if request.transport is not None else None
        req.fd = sock.fileno() if sock is not None else -1
        self.driver.submit(req)
        assert req.done is not None
        await req.done
        if not req.disconnected and request.transport is not None and not request.transport.is_closing():
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write_eof()
        else:
            resp.force_close()
        return resp

    # ---- probes and info ---------------------------------------------------------------------------
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
        self.driver.submit(req)
        assert req.done is not None
        try:
            await asyncio.wait_for(asyncio.shield(req.done), timeout=20.0)
        except asyncio.TimeoutError:
            return web.Response(status=503)
        return web.Response(status=200)

    async def _h_models(self, request: web.Request) -> web.Response:
        return _json(responses.models_body(self.model, int(self.started_epoch), self.max_model_len))

    async def _h_model_info(self, request: web.Request) -> web.Response:
        return _json(responses.model_info_body(self.model))

    def _info(self) -> dict[str, Any]:
        return responses.sim_info(
            self.profile, float(self.cfg.time_scale), self.cfg.seed, self.cfg.faults.spec()
        )

    async def _h_server_info(self, request: web.Request) -> web.Response:
        cfg = self.cfg
        body = responses.server_info_body(
            self.profile, self.engine.counters, model=self.model, host=cfg.host, port=cfg.port,
            max_model_len=self.max_model_len, info=self._info(),
        )  # fmt: skip
        return _json(body)

    async def _h_version(self, request: web.Request) -> web.Response:
        return _json(responses.version_body(self._info()))

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
        text = responses.metrics_text(self.engine.counters, self.model, self._spec, self.started_epoch)
        return web.Response(
            body=text.encode(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
        )


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
        profile=prof, host=host, port=port, seed=seed, time_scale=time_scale, truth=truth, faults=flt,
        served_model_name=served_model_name, max_model_len=max_model_len, spin_s=spin_s,
        on_crash=on_crash, writer_threads=writer_threads,
    )  # fmt: skip
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
