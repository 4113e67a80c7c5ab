"""The client's HTTP layer: a keep-alive session whose response protocol hands every read's body
bytes on with their arrival time (kernel stamps, see ``kstamp``), a send pacer, and connection
prewarming. The runner (``client.runner``) drives requests over it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import yarl
from aiohttp.client_proto import ResponseHandler

from specsweep.client import kstamp

log = logging.getLogger(__name__)
_now = time.monotonic_ns
_SOCKET_FACTORY = "socket_factory" in inspect.signature(aiohttp.TCPConnector).parameters


def auth_headers(base_url: str | None = None) -> dict[str, str]:
    """Bearer token from OPENAI_API_KEY or API_KEY. Never logged, never stored. None when
    ``base_url`` carries its own credentials (``http://user:pw@host``): aiohttp sends those as HTTP
    Basic auth and refuses a second Authorization header, so the URL's explicit ones win."""
    if base_url and yarl.URL(base_url).user is not None:
        return {}
    key = os.environ.get("OPENAI_API_KEY") or os.environ.get("API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


class Arrivals:
    """One response's arrival times, kept apart from its connection: a client late enough can find
    a whole stream already read and its connection back in the pool, or already carrying the next
    request, by the time its coroutine resumes. ``hdr_ns``: arrival of the read that completed the
    headers; ``sent_ns``/``send_kernel``/``kernel``: the connection's send stamp and stamp kinds as
    they were then (the request's own); ``marks``: ``(body bytes so far, arrival ns, floor ns)`` of
    each read before ``sink`` was set; ``sink(data, arrival_ns, floor_ns)`` takes later reads' body
    bytes as they are read."""

    __slots__ = ("hdr_ns", "kernel", "marks", "send_kernel", "sent_ns", "sink")

    def __init__(self, hdr_ns: int, ksock: kstamp.StampedSocket | None) -> None:
        self.hdr_ns = hdr_ns
        self.marks: list[tuple[int, int, int]] = []
        self.sink: Callable[[bytes, int, int], None] | None = None
        self.sent_ns = ksock.tx_ns if ksock is not None else 0
        self.send_kernel = ksock is not None and ksock.tx_kernel
        self.kernel = ksock is not None and ksock.kernel


# Each response's Arrivals by its body stream (aiohttp's StreamReader has slots and no weakref), for
# the runner to collect once (``take_arrivals``); the entry keeps the stream, so an id is never
# reused while it is here. Entries nobody collects (connection prewarming, server probes, a
# redirect chain) age out: the runner collects its own as soon as its coroutine runs, seconds later
# at worst on a starved host.
_ARRIVALS: dict[int, tuple[Any, Arrivals, int]] = {}
_ARRIVALS_TTL_NS = 120 * 1_000_000_000
_ARRIVALS_CAP = 1 << 16  # > any concurrency a client process drives


class StampingHandler(ResponseHandler):
    """aiohttp's response protocol, handing each read's body bytes on with their arrival time.

    With hundreds of streams ready at once, reading coroutines wake one after another, all in one
    event-loop pass; a timestamp taken at wake-up would charge that queue to the server, and while
    they run no socket is read. So the body is consumed right here, in the read callback: once the
    runner has set the response's ``Arrivals.sink`` (after the response headers), every read's new
    body bytes go to ``sink(data, arrival_ns, floor_ns)`` at once (SSE decoding, parsing, recording)
    and the runner's coroutine only waits for the end of the body. Bytes that came before the sink
    was set (with the headers, or before the coroutine resumed, up to the whole stream) wait in the
    payload, and the response's ``marks`` note each such read, so the runner splits them at those
    boundaries and every SSE event carries the arrival time of the read that completed it. The
    arrival time is the kernel's receive stamp where the socket is a
    :class:`~specsweep.client.kstamp.StampedSocket` (Linux), else the time of the read."""

    __slots__ = ("_ksock", "_log")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._log: Arrivals | None = None
        self._ksock: kstamp.StampedSocket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._ksock = kstamp.stamped(transport)
        if self._ksock is not None:  # connected, nothing sent yet: the kernel stamps each send from here
            self._ksock.stamp_sends()

    def data_received(self, data: bytes) -> None:
        if not data:  # aiohttp's own nudge after its reader drained a buffer: no bytes, no stamp
            super().data_received(data)
            return
        ks = self._ksock
        if ks is not None:
            t, lo = ks.rx_ns, ks.rx_floor_ns
        else:
            t = lo = _now()
        before = getattr(self, "_payload", None)
        n0 = before.total_bytes if before is not None else 0
        super().data_received(data)
        after: Any = getattr(self, "_payload", None)
        if after is None:
            return
        log = self._log
        if after is not before or log is None:  # a response's headers were parsed in this read
            log = self._log = Arrivals(t, ks)
            _remember(after, log)
            n0 = 0
        n1 = after.total_bytes
        if n1 <= n0:
            return
        sink = log.sink
        if sink is None:
            log.marks.append((n1, t, lo))
            return
        try:
            body = after.read_nowait(-1)
        except Exception:  # the payload failed (truncated stream...): the runner's wait raises it
            return
        if body:
            sink(body, t, lo)


def _remember(payload: Any, log: Arrivals) -> None:
    now = _now()
    while _ARRIVALS:  # oldest first (insertion order)
        key = next(iter(_ARRIVALS))
        if len(_ARRIVALS) < _ARRIVALS_CAP and now - _ARRIVALS[key][2] < _ARRIVALS_TTL_NS:
            break
        del _ARRIVALS[key]
    _ARRIVALS[id(payload)] = (payload, log, now)


def take_arrivals(resp: aiohttp.ClientResponse) -> Arrivals | None:
    """The response's arrival times (once: the entry is handed over); None without the stamping
    protocol (or for a body-less response)."""
    entry = _ARRIVALS.pop(id(resp.content), None)
    return entry[1] if entry is not None and entry[0] is resp.content else None


class SendPacer:
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


# The one seam on aiohttp's private surface. specsweep relies on things aiohttp does not promise:
# ``TCPConnector._factory`` (the per-connection protocol factory, replaced here so every
# connection's protocol is a StampingHandler), ``aiohttp.client_proto.ResponseHandler`` (the
# protocol class StampingHandler extends, fed through ``data_received``) and its ``_payload``
# (the body stream StampingHandler drains with ``read_nowait``). Supported range: the one
# pyproject.toml declares (aiohttp >= 3.9, < 4); kernel stamps need ``socket_factory`` (>= 3.12).
# tests/client/test_aiohttp_seam.py checks the installed version against both, so an upgrade that
# moves them fails a test instead of silently degrading. If the seam is missing at run time,
# arrival times fall back to the reader's wake-up time, and the result says so (``kernel_stamps``
# 0 and a logged warning).
AIOHTTP_SUPPORTED = ((3, 9), (4, 0))  # [lowest, highest) major.minor


def install_stamping_protocol(conn: aiohttp.TCPConnector) -> bool:
    """Make ``conn`` create :class:`StampingHandler` protocols; False if this aiohttp has no seam."""
    factory = getattr(conn, "_factory", None)
    made = getattr(factory, "func", factory)  # aiohttp: partial(ResponseHandler, loop=...)
    if not (isinstance(made, type) and issubclass(made, ResponseHandler)):
        log.warning(
            "aiohttp %s has no TCPConnector._factory: arrival times are wake-up times", aiohttp.__version__
        )
        return False
    conn._factory = functools.partial(StampingHandler, loop=asyncio.get_running_loop())  # type: ignore[assignment]
    return True


def connector(**kw: Any) -> aiohttp.TCPConnector:
    """A pooling connector whose sockets are kernel-stamped and whose protocol is the stamping one."""
    if _SOCKET_FACTORY:  # kernel arrival/send stamps (see kstamp); aiohttp >= 3.12
        kw["socket_factory"] = kstamp.socket_factory
    conn = aiohttp.TCPConnector(limit=0, **kw)
    install_stamping_protocol(conn)
    return conn


def make_session(base_url: str | None = None) -> aiohttp.ClientSession:
    return new_session(connector(ttl_dns_cache=300, keepalive_timeout=4), base_url)  # < servers' 5 s


def new_session(conn: aiohttp.TCPConnector, base_url: str | None = None) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=conn, headers=auth_headers(base_url), read_bufsize=1 << 20, auto_decompress=False,
        timeout=aiohttp.ClientTimeout(total=None, connect=30),
    )  # fmt: skip


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
