"""kstamp: the read-age sample stays bounded and even; sends carry the kernel's transmit stamps."""

from __future__ import annotations

import contextlib
import itertools
import socket
import time

import pytest

from specsweep.client import kstamp

from .stamped import stamped_pair

pytestmark = pytest.mark.timing  # kernel stamps against the clock reads around them: runs alone


def test_read_age_sample_is_bounded_and_even(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kstamp, "_AGES_CAP", 64)
    kstamp.read_ages_start()
    for age in range(1000):
        kstamp._note_age(age)
    ages = kstamp.read_ages_stop()
    assert 32 <= len(ages) < 64
    assert ages == sorted(ages) and ages[0] == 0 and ages[-1] >= 900  # spread over the whole run
    gaps = {b - a for a, b in itertools.pairwise(ages)}
    assert gaps == {16}  # every 16th read once the sample was thinned four times
    kstamp._note_age(5)  # after stop nothing is kept
    assert kstamp.read_ages_stop() == []


@pytest.mark.skipif(kstamp.SO_TIMESTAMPING is None, reason="kernel transmit stamps are Linux-only")
def test_a_send_carries_the_kernels_transmit_stamp() -> None:
    """On loopback the bytes leave inside the send call: the stamp is the kernel's and lies within it."""
    srv, c, s = stamped_pair()
    with c, s, srv:
        assert c.stamp_sends()
        for _ in range(3):
            t0 = time.monotonic_ns()
            assert c.send(b"x" * 300) == 300
            t1 = time.monotonic_ns()
            assert c.tx_kernel
            assert t0 <= c.tx_ns <= t1
            s.recv(1000)


@pytest.mark.skipif(kstamp.SO_TIMESTAMPING is None, reason="kernel transmit stamps are Linux-only")
def test_bytes_that_leave_after_the_send_call_are_stamped_when_they_leave() -> None:
    """The peer's receive window is full, so a send's last bytes wait in the kernel and leave only
    once the peer reads, 50 ms later: their stamp (read at the next read) is then, not the call."""
    srv, c, s = stamped_pair()
    with c, s, srv:
        assert c.stamp_sends()
        c.setblocking(False)
        filled = 0
        with contextlib.suppress(BlockingIOError):
            while filled < 64 << 20:  # until the peer's window and our send buffer are full
                filled += c.send(b"y" * 65536)
        assert 0 < filled < 64 << 20
        call = c.tx_ns
        assert not c.tx_kernel  # the last send's bytes are queued, not sent
        time.sleep(0.05)
        t_read = time.monotonic_ns()
        got = 0
        s.settimeout(5)
        while got < filled:
            got += len(s.recv(1 << 20))
        s.send(b"z")
        time.sleep(0.01)
        assert c.recv(10) == b"z"  # a read collects the stamp queued meanwhile
        assert c.tx_kernel
        assert c.tx_ns >= t_read > call + 40_000_000


def test_transmit_stamps_are_refused_on_an_unconnected_socket_and_sends_fall_back_to_the_call() -> None:
    c = kstamp.socket_factory((socket.AF_INET, socket.SOCK_STREAM, 0, "", ()))
    assert isinstance(c, kstamp.StampedSocket)
    with c:
        assert c.stamp_sends() is False  # Linux keys stamps by byte only once connected
        assert not c.tx_kernel


def test_a_socket_whose_device_gives_no_transmit_stamps_stops_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three replies in a row without their request's stamp (a device that stamps nothing): the
    socket stops asking and stops looking for stamps on every read; sends are stamped at the call."""
    srv, c, s = stamped_pair()
    with c, s, srv:
        assert c.stamp_sends()
        monkeypatch.setattr(kstamp.StampedSocket, "_read_tx_stamps", lambda self: None)
        for i in range(4):
            t0 = time.monotonic_ns()
            c.send(b"x")
            assert not c.tx_kernel and t0 <= c.tx_ns <= time.monotonic_ns()
            assert s.recv(10) == b"x"
            s.send(b"y")
            time.sleep(0.005)
            assert c.recv(10) == b"y"
            assert c._tx_on == (i < 2), i


@pytest.mark.skipif(kstamp.SO_TIMESTAMPNS is None, reason="kernel receive stamps are Linux-only")
def test_a_preemption_between_the_clock_reads_does_not_make_a_stamp_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kernel stamp goes onto the monotonic clock with a wall-clock and a monotonic read taken
    together; if the thread loses its CPU between them, the pair is read again, so the stamp is not
    late by the lost time (before the retry: 20 ms late here)."""
    srv, c, s = stamped_pair()
    with c, s, srv:
        before = time.monotonic_ns()
        s.send(b"x")
        time.sleep(0.01)
        arrived_by = time.monotonic_ns()
        real, lost = kstamp._real, []

        def preempted() -> int:
            t = real()
            if not lost:  # once: 20 ms pass between the wall-clock read and the monotonic one
                lost.append(1)
                time.sleep(0.02)
            return t

        monkeypatch.setattr(kstamp, "_real", preempted)
        assert c.recv(10) == b"x"
        assert lost and c.kernel
        assert before <= c.rx_ns <= arrived_by
