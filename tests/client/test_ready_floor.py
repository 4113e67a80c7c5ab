"""The ready floor: a read's older bytes arrived after the last selector call that found none began,
which on a busy loop bounds them to about one loop iteration, not to the last draining read."""

from __future__ import annotations

import asyncio
import selectors
import threading
import time
from collections.abc import Callable

import pytest

from specsweep.client import kstamp

from .stamped import stamped_pair

pytestmark = [
    pytest.mark.skipif(kstamp.SO_TIMESTAMPNS is None, reason="kernel receive stamps are Linux-only"),
    pytest.mark.timing,  # a loop held for milliseconds, bounds in milliseconds: runs alone
]


def test_the_floor_is_the_start_of_the_last_call_that_found_nothing() -> None:
    srv, c, s = stamped_pair()
    sel = kstamp.ReadyFloorSelector()
    with c, s, srv, sel:
        c.setblocking(False)
        sel.register(c, selectors.EVENT_READ)
        fd = c.fileno()
        t0 = time.monotonic_ns()
        assert sel.select(0) == []  # watched, nothing queued: bytes from now on came after t0
        t1 = time.monotonic_ns()
        s.send(b"a")
        sent = time.monotonic_ns()
        assert [k.fd for k, _ in sel.select(1)] == [fd]
        floor = kstamp._READY_FLOOR[fd]
        assert t0 <= floor <= t1
        assert c.recv(100) == b"a"
        assert c.rx_floor_ns == floor and floor <= sent  # the drained floor is older (never read before)
        # Bytes queued again before the next call: reported by consecutive calls, the floor stays.
        s.send(b"b")
        time.sleep(0.01)
        assert sel.select(1) and kstamp._READY_FLOOR[fd] == floor
        sel.select(1)  # still unread: still the first call's floor
        assert kstamp._READY_FLOOR[fd] == floor
        assert c.recv(100) == b"b"
        # No longer watched: the floor goes (a descriptor reused by a new socket must not inherit it).
        sel.unregister(c)
        assert fd not in kstamp._READY_FLOOR


def test_a_socket_reported_by_its_first_call_gets_no_floor() -> None:
    """Registered with bytes already queued: no call has seen it empty, so nothing bounds them."""
    srv, c, s = stamped_pair()
    sel = kstamp.ReadyFloorSelector()
    with c, s, srv, sel:
        c.setblocking(False)
        s.send(b"early")
        time.sleep(0.01)
        sel.select(0)  # a call before the socket is watched says nothing about it
        sel.register(c, selectors.EVENT_READ)
        assert [k.fd for k, _ in sel.select(1)] == [c.fileno()]
        assert kstamp._READY_FLOOR[c.fileno()] == 0
        # Watched for writing only: not a reader, no floor kept.
        sel.modify(c, selectors.EVENT_WRITE)
        assert c.fileno() not in kstamp._READY_FLOOR


def _late_pair_bound(loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> tuple[int, int, int]:
    """A server sends a header, and 500 ms later two events 5 ms apart while the client's loop is busy
    (a callback holds it until both are sent), so the client reads both together. The loop cycles meanwhile (a
    2 ms ticker, like a client with many streams). Returns (A's send time, the read's floor, the read's
    stamp), monotonic ns."""
    srv, c, s = stamped_pair()
    go, both = threading.Event(), threading.Event()
    sent_a: list[int] = []

    def server() -> None:
        s.sendall(b"hdr")
        go.wait(5)
        sent_a.append(time.monotonic_ns())
        s.sendall(b"A")
        time.sleep(0.005)
        s.sendall(b"B")
        both.set()

    reads: list[tuple[bytes, int, int]] = []

    class Reader(asyncio.Protocol):
        def data_received(self, data: bytes) -> None:
            reads.append((data, c.rx_ns, c.rx_floor_ns))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        c.setblocking(False)
        await loop.create_connection(Reader, sock=c)
        stop = loop.time() + 0.8

        def tick() -> None:
            if loop.time() < stop:
                loop.call_later(0.002, tick)

        def busy() -> None:
            go.set()
            both.wait(5)  # A and B arrive while the loop cannot read
            time.sleep(0.005)

        tick()
        loop.call_later(0.5, busy)
        await asyncio.sleep(0.9)

    t = threading.Thread(target=server)
    t.start()
    with s, srv:
        loop = loop_factory()
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()
            t.join()
    together = [(t_, lo) for data, t_, lo in reads if data.endswith(b"AB")]
    assert together, reads  # the two events were read together
    stamp, floor = together[0]
    return sent_a[0], floor, stamp


def test_events_read_together_on_a_busy_loop_are_bounded_by_one_iteration() -> None:
    sent, floor, stamp = _late_pair_bound(kstamp.new_event_loop)
    assert floor <= sent  # sound: A cannot have arrived before its floor
    # Tight: about the time the loop was held (5-7 ms alone), not the 500 ms since the header was read.
    assert stamp - floor < 250_000_000, (stamp - floor) / 1e6


def test_a_plain_loop_bounds_them_only_by_the_last_draining_read() -> None:
    """What the floor replaces: without the selector's floor, the bound reaches back to the header."""
    sent, floor, stamp = _late_pair_bound(asyncio.SelectorEventLoop)
    assert floor <= sent and stamp - floor >= 490_000_000
