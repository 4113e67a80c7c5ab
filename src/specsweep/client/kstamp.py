"""Kernel timestamps for the client's sockets: when bytes really arrived and left.

A client that stamps a chunk when its event loop gets round to reading the socket charges its own
queue to the server: with hundreds of streams made ready by one server tick, the last socket is read
milliseconds after its bytes came in. On Linux the kernel stamps every received packet
(``SO_TIMESTAMPNS``); reading with ``recvmsg`` returns the stamp of the newest bytes of the read, so a
chunk's arrival time no longer depends on how busy the client is. When bytes that arrived at
different times are read together, only the newest have an exact stamp; ``rx_floor_ns`` bounds how
early the others can have come (see :class:`StampedSocket`), tightened by the event loop's selector
where the client runs on :func:`new_event_loop` (:class:`ReadyFloorSelector`). A client's sends are stamped by the
kernel too (``SO_TIMESTAMPING``, software transmit stamps read back from the socket's error queue):
the time the last byte of a send went to the network device, which on loopback is the time a packet
capture sees it. Where the kernel gives no transmit stamp, a send is stamped as the ``send`` call
begins (the client's own preparation excluded, but not a preemption inside the call).

:class:`StampedSocket` is a ``socket.socket`` that the event loop's transport uses like any other
(asyncio's selector transport calls ``recv``/``send`` on it); after each ``recv`` its ``rx_ns`` holds
the arrival time of the bytes just returned on ``time.monotonic_ns()``'s clock (the kernel stamps
``CLOCK_REALTIME``; the conversion uses both clocks read together at the ``recv``, so a later
step of the wall clock does not matter). Where the kernel gives no stamp (another OS, or an event loop
that does not read through the Python socket, such as uvloop), ``rx_ns`` is the time of the ``recv``;
``StampedSocket.kernel`` says which one a socket got (a run's result says it as ``arrival_stamps``).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import os
import selectors
import socket
import struct
import sys
import time
from typing import Any

_mono = time.monotonic_ns
_real = time.time_ns
# SO_TIMESTAMPNS (= SCM_TIMESTAMPNS) is 35 on every Linux architecture with 64-bit time_t that Python
# runs on; the socket module does not export it.
SO_TIMESTAMPNS: int | None = getattr(
    socket, "SO_TIMESTAMPNS", 35 if sys.platform.startswith("linux") else None
)
_TIMESPEC = struct.Struct("@qq")
_unpack = _TIMESPEC.unpack_from
# TCP congestion control without pacing for our sockets (see StampedSocket); reno is allowed for every
# user by default. Set SPECSWEEP_TCP_CONGESTION= (empty) to keep the system default.
_cc = os.environ.get("SPECSWEEP_TCP_CONGESTION", "reno")
_UNPACED: bytes | None = _cc.encode() if _cc and hasattr(socket, "TCP_CONGESTION") else None
# Set SPECSWEEP_SEND_STAMPS=call to stamp sends at the call instead of the kernel's transmit stamp
# (to compare the two against a packet capture: benchmarks/wire_truth.py).
_TX_KERNEL = os.environ.get("SPECSWEEP_SEND_STAMPS", "kernel") != "call"
# Transmit stamps (linux/net_tstamp.h, linux/errqueue.h): the software stamp of each send's last byte,
# keyed by its byte offset (OPT_ID), the stamp alone without the packet's bytes (OPT_TSONLY).
SO_TIMESTAMPING = 37 if sys.platform.startswith("linux") else None  # = SCM_TIMESTAMPING
_TX_FLAGS = (1 << 1) | (1 << 4) | (1 << 7) | (1 << 11)  # TX_SOFTWARE | SOFTWARE | OPT_ID | OPT_TSONLY
_RECVERR = {(socket.IPPROTO_IP, 11), (getattr(socket, "IPPROTO_IPV6", 41), 25)}  # IP(V6)_RECVERR
_EXTERR = struct.Struct("=IBBBBII")  # struct sock_extended_err: errno, origin, type, code, pad, info, data
_EE_ORIGIN_TIMESTAMPING = 4
_MSG_ERRQUEUE = getattr(socket, "MSG_ERRQUEUE", 0x2000)
# Room for every control message a read can carry: SCM_TIMESTAMPNS, and SCM_TIMESTAMPING (three
# timespecs) once transmit stamps are on (the kernel then reports receive stamps that way too).
_ANC = (
    socket.CMSG_SPACE(_TIMESPEC.size) + socket.CMSG_SPACE(3 * _TIMESPEC.size)
    if hasattr(socket, "CMSG_SPACE")
    else 0
)
# An error-queue message: the stamps, and sock_extended_err followed by the offender's address (a
# sockaddr_in6 at most: 28 bytes).
_ERR_ANC = 2 * _ANC + socket.CMSG_SPACE(_EXTERR.size + 28) if _ANC else 0


# While a client measures, the age of its reads (ns from the kernel's arrival stamp to the read): how
# late the client got to its sockets. Bounded: past _AGES_CAP samples, every other one is dropped and
# from then on only every 2nd (4th, ...) read is kept, so a long run keeps an even sample in <= 8 MB.
_AGES_CAP = 1 << 20
READ_AGES: array.array[int] | None = None
_stride = 1
_tick = 0


def read_ages_start() -> None:
    global READ_AGES, _stride, _tick
    READ_AGES, _stride, _tick = array.array("q"), 1, 0


def read_ages_stop() -> list[int]:
    global READ_AGES
    ages, READ_AGES = READ_AGES, None
    return ages.tolist() if ages is not None else []


def _note_age(age: int) -> None:
    global READ_AGES, _stride, _tick
    tick, _tick = _tick, _tick + 1
    if READ_AGES is None or tick % _stride:
        return
    READ_AGES.append(age)  # the sample holds reads 0, s, 2s, ... (s = the stride): even after thinning
    if len(READ_AGES) >= _AGES_CAP:
        READ_AGES = READ_AGES[::2]
        _stride *= 2


_CLOCK_TRIES = 5
_CLOCK_GAP_NS = 20_000


def _clocks() -> tuple[int, int]:
    """The wall clock and, right after it, the monotonic clock, to put a kernel stamp (wall clock) on
    the monotonic one: ``now - (real - stamp)`` is late by the time between the two reads, never early.
    A preemption between them would make it late by a whole time slice (on a host with three busy
    processes per core, about once per 16,384 chunks read, by 8-16 ms), so a monotonic read before
    them catches it, and the pair is read again (up to ``_CLOCK_TRIES`` times, while more than
    ``_CLOCK_GAP_NS`` apart)."""
    for _ in range(_CLOCK_TRIES):
        before = _mono()
        real = _real()
        now = _mono()
        if now - before <= _CLOCK_GAP_NS:
            break
    return real, now


# fd -> the latest time its bytes cannot have been queued before (see ReadyFloorSelector); 0: unknown
_READY_FLOOR: dict[int, int] = {}


class ReadyFloorSelector(selectors.DefaultSelector):
    """The event loop's selector, which also says since when each socket's queued bytes can have
    waited: a tighter floor for a read's older bytes than the last read that drained the socket.

    The loop's selector is level-triggered: a call reports every socket with bytes queued when it
    collected its ready list, which it does after the call began. So when a socket, watched for
    reading, is reported by a call but was not by the call before, nothing was queued when that call
    began, and the bytes now queued arrived after it. On a busy loop, calls are a loop iteration
    apart, so a read's older bytes are known to within one iteration, not since the socket was last
    drained (which, for the first chunk of a reply, is before the whole prefill). A socket reported
    by consecutive calls keeps the floor of the first; one newly watched (a new connection, reading
    resumed) gets none until a call has not reported it. Floors are kept per file descriptor and
    dropped when it is no longer watched, so a reused descriptor never inherits one."""

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0  # calls so far (the current one's index once it returns)
        self._last_start = 0  # when the previous call began
        self._watched_from: dict[int, int] = {}  # fd -> index of the first call watching it for reading
        self._reported: dict[int, int] = {}  # fd -> index of the last call that reported it readable

    def _watch(self, fd: int, events: int) -> None:
        if events & selectors.EVENT_READ:
            self._watched_from.setdefault(fd, self._calls + 1)
        else:
            self._forget(fd)

    def _forget(self, fd: int) -> None:
        self._watched_from.pop(fd, None)
        self._reported.pop(fd, None)
        _READY_FLOOR.pop(fd, None)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = super().register(fileobj, events, data)
        self._forget(key.fd)
        self._watch(key.fd, events)
        return key

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = super().modify(fileobj, events, data)
        self._watch(key.fd, events)
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        key = super().unregister(fileobj)
        self._forget(key.fd)
        return key

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        start = _mono()
        ready = super().select(timeout)
        n = self._calls = self._calls + 1
        prev, self._last_start = self._last_start, start
        for key, events in ready:
            if events & selectors.EVENT_READ:
                fd = key.fd
                if self._reported.get(fd) != n - 1:  # the call before did not report it
                    watched = self._watched_from.get(fd, n) <= n - 1
                    _READY_FLOOR[fd] = prev if watched else 0
                self._reported[fd] = n
        return ready


def _drop_lost_interrupts(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) that lands while a task runs leaves that task done with
    the KeyboardInterrupt, which also leaves the loop: the command stops and says so (exit 130).
    asyncio would then print the task's traceback as "Task exception was never retrieved" when the
    task is collected, a traceback under a clean stop. Only those are dropped; the rest is asyncio's."""
    if isinstance(context.get("exception"), (KeyboardInterrupt, SystemExit)):
        return
    loop.default_exception_handler(context)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose selector gives stamped sockets their ready floor (see
    :class:`ReadyFloorSelector`); for ``asyncio.Runner(loop_factory=...)``. A stop signal inside one
    of its tasks stops the loop without a traceback (:func:`_drop_lost_interrupts`)."""
    loop = asyncio.SelectorEventLoop(ReadyFloorSelector())
    loop.set_exception_handler(_drop_lost_interrupts)
    return loop


def run(coro: Any) -> Any:
    """``asyncio.run`` on :func:`new_event_loop`: how the client measures (Python >= 3.11; on 3.10,
    plain ``asyncio.run``: the bounds then fall back to the last draining read, sound but looser)."""
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            return runner.run(coro)
    return asyncio.run(coro)  # pragma: no cover - Python 3.10


class StampedSocket(socket.socket):
    """A TCP socket whose reads carry the kernel's arrival time (``rx_ns``) and whose last send is
    stamped (``tx_ns``), both on the monotonic clock in ns. ``kernel`` is True once a read carried a
    kernel stamp; ``tx_kernel`` says whether the last send's stamp is the kernel's (after
    :meth:`stamp_sends`).

    ``rx_ns`` is the arrival of the *newest* bytes of the read: the kernel keeps one stamp per socket
    buffer and, when a reader is late, merges a newly arrived segment into the queued one, keeping the
    newer stamp (``tcp_try_coalesce``; reading with a bounded size does not bring the older stamp
    back). So the older bytes of a read arrived at some time in ``[rx_floor_ns, rx_ns]``:
    ``rx_floor_ns`` is when the last read that drained the socket (returned less than asked, or
    found it empty) began, or, if later, when the last selector call that found the socket empty
    began (:class:`ReadyFloorSelector`); nothing in this read can have arrived before that."""

    __slots__ = ("_drained_ns", "_tx_bytes", "_tx_key", "_tx_misses", "_tx_on", "kernel", "rx_floor_ns", "rx_ns",
                 "tx_kernel", "tx_ns")  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rx_ns = 0
        self.rx_floor_ns = 0
        self._drained_ns = 0
        self.tx_ns = 0
        self.kernel = False
        self.tx_kernel = False
        self._tx_on = False
        self._tx_bytes = 0
        self._tx_key: int | None = None  # OPT_ID of the last send's last byte, until its stamp is read
        self._tx_misses = (
            0  # replies in a row that came before their request's stamp (a device that gives none)
        )
        if SO_TIMESTAMPNS is not None and _ANC:
            with contextlib.suppress(OSError):
                self.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        if _UNPACED is not None:
            with contextlib.suppress(OSError):
                self.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, _UNPACED)

    def stamp_sends(self) -> bool:
        """Ask the kernel for a transmit stamp of every send from now on. Call it on a connected
        socket before any byte is sent (the stamps' keys count bytes from here; Linux refuses byte
        keys on an unconnected TCP socket). False where it gives none: sends are then stamped at the
        call."""
        if SO_TIMESTAMPING is None or not _ERR_ANC or not _TX_KERNEL:
            return False
        try:
            self.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, _TX_FLAGS)
        except OSError:
            return False
        self._tx_on = True
        return True

    def _sent(self, n: int, start: int) -> None:
        """After a send of ``n`` bytes that began at ``start``: its stamp is ``start`` until the
        kernel's transmit stamp of its last byte is read (now, usually: on loopback and on an idle
        device the byte leaves inside the call; else at a later send or read)."""
        self.tx_ns = start
        self.tx_kernel = False
        if self._tx_on and n > 0:
            self._tx_bytes += n
            self._tx_key = (self._tx_bytes - 1) & 0xFFFFFFFF
            self._read_tx_stamps()

    def _read_tx_stamps(self) -> None:
        """Drain the error queue of transmit stamps; the last send's own stamp sets ``tx_ns``. (A
        queued stamp also keeps the socket signalled, so it must not be left there.)"""
        while True:
            try:
                _data, anc, _flags, _addr = self.recvmsg(1, _ERR_ANC, _MSG_ERRQUEUE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # not this socket's kind: stop asking
                self._tx_on = False
                return
            real, now = _clocks()
            stamp = key = None
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPING and len(raw) >= _TIMESPEC.size:
                    sec, nsec = _unpack(raw)  # [0]: the software stamp
                    stamp = sec * 1_000_000_000 + nsec
                elif (level, kind) in _RECVERR and len(raw) >= _EXTERR.size:
                    err = _EXTERR.unpack_from(raw)
                    key = err[6] if err[1] == _EE_ORIGIN_TIMESTAMPING else None
            if stamp and key is not None and key == self._tx_key:
                # on the monotonic clock, never before the send call began nor after now
                self.tx_ns = max(self.tx_ns, min(now - (real - stamp), now))
                self.tx_kernel = True
                self._tx_key = None
                self._tx_misses = 0

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        pending = self._tx_key is not None
        if pending:  # the last send's stamp came after its call: it is queued by now
            self._read_tx_stamps()
            pending = self._tx_key is not None
        start = _mono()
        try:
            if not _ANC:
                data = super().recv(bufsize, flags)
                self.rx_ns = _mono()
            else:
                data = self._recv_stamped(bufsize, flags)
        except BlockingIOError:  # nothing queued at ``start``: later bytes arrived after it
            self._drained_ns = start
            raise
        # The bytes just read arrived after the last read that left nothing behind began, and after
        # the last selector call that found nothing queued began (ReadyFloorSelector).
        self.rx_floor_ns = max(self._drained_ns, _READY_FLOOR.get(self.fileno(), 0))
        if len(data) < bufsize:
            self._drained_ns = start
        if pending and data:  # a reply came, so the request left, and still no stamp for it
            self._tx_misses += 1
            if self._tx_misses >= 3:  # a device that stamps nothing: stop asking (and looking on reads)
                self._tx_on, self._tx_key = False, None
        return data

    def _recv_stamped(self, bufsize: int, flags: int) -> bytes:
        data, anc, _flags, _addr = self.recvmsg(bufsize, _ANC, flags)
        real, now = _clocks()
        for level, kind, raw in anc:  # SCM_TIMESTAMPNS (and SCM_TIMESTAMPING, same stamp, if stamping sends)
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= _TIMESPEC.size:
                sec, nsec = _unpack(raw)
                age = real - (sec * 1_000_000_000 + nsec)  # how long the bytes waited to be read
                self.rx_ns = now - age if age > 0 else now
                self.kernel = True
                if READ_AGES is not None:
                    _note_age(age)
                return data
        self.rx_ns = now
        return data

    def send(self, data: Any, flags: int = 0) -> int:
        start = _mono()
        n = super().send(data, flags)
        self._sent(n, start)
        return n

    def sendmsg(self, buffers: Any, *args: Any) -> int:  # asyncio >= 3.12 writes several buffers at once
        start = _mono()
        n = super().sendmsg(buffers, *args)
        self._sent(n, start)
        return n


class StampedListener(socket.socket):
    """A listening socket whose accepted connections are :class:`StampedSocket`s (for servers that
    want the kernel's arrival time of each request: the sim's ``--truth``, the benchmark servers)."""

    def accept(self) -> tuple[socket.socket, Any]:
        fd, addr = self._accept()  # type: ignore[attr-defined]
        return StampedSocket(self.family, self.type, self.proto, fileno=fd), addr


def listen(host: str, port: int, backlog: int = 4096) -> StampedListener:
    """A bound, listening, non-blocking :class:`StampedListener` (address reuse on, as servers do)."""
    family, type_, proto, _, addr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = StampedListener(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def arrival_ns(transport: Any, now: int | None = None) -> int:
    """When the newest bytes read on ``transport`` arrived (monotonic ns): the kernel's stamp where
    the socket is stamped, else ``now`` (default: the current time). For a server, called once a
    request has been read, it is the request's arrival."""
    now = _mono() if now is None else now
    sock = stamped(transport)
    return min(sock.rx_ns, now) if sock is not None and sock.rx_ns else now


def socket_factory(addr_info: tuple[Any, ...]) -> socket.socket:
    """For aiohttp's ``TCPConnector(socket_factory=...)`` (aiohappyeyeballs' address-info tuple)."""
    family, type_, proto = addr_info[0], addr_info[1], addr_info[2]
    return StampedSocket(family, type_, proto)


def stamped(transport: Any) -> StampedSocket | None:
    """The :class:`StampedSocket` under an asyncio transport, if it has one."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    sock = getattr(sock, "_sock", sock)  # asyncio wraps it in a TransportSocket
    return sock if isinstance(sock, StampedSocket) else None
