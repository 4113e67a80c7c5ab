"""When the kernel delivered received packets late: a bound for the one lateness kernel stamps hide.

A kernel receive stamp (``kstamp``) is taken when the kernel delivers a packet to the socket, not when
the packet came in. For TCP over loopback (and for a NIC's packets, in its NAPI poll) that delivery
runs in a softirq. Normally the softirq runs at once (in the sender's context, or on leaving the
interrupt); when it has run too long or the CPU is wanted elsewhere the kernel hands the rest to the
CPU's ``ksoftirqd`` thread, an ordinary thread that waits for a CPU like any other. On a starved host
it waits for hundreds of ms, and every packet it then delivers is stamped that late, however early
it was on the wire (a packet capture stamps the transmit). The client cannot see that from the stamp:
the bytes are the newest of their read, so their read-side bound (``rx_floor_ns``) is 0.

What the client can see is the delivering threads themselves: :class:`DeliveryMonitor` samples each
``ksoftirqd/N`` (and ``backlog_napi/N`` / ``napi/...`` threads where the kernel delivers in threads)
from ``/proc``: whether it is runnable and its cumulative CPU and run-queue wait
(``/proc/PID/schedstat``). Between two samples where such a thread was neither runnable nor
accounted any time, no packet waited for it. A maximal run of samples where one was busy is a
*window* ``(start, end]``; a packet delivered by that thread inside the window was on the wire no
earlier than ``start`` (the sample before the thread became busy), so a chunk stamped at ``t`` in a
window gets the bound ``t - start`` (:func:`delivery_bounds`), at most the time the thread accounted
(waiting and running) in the window where it was never seen runnable at a sample. Conservative: the thread may have been
busy with other work (timers, RCU) and the packet delivered on time; a bound that is too large makes
a run invalid, never wrong. Where no delivering thread is visible (not Linux, a container without the
host's PID namespace) nothing is bounded and ``ClientLoad.figures`` says so (no
``kernel_delivery_busy_max_ms``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence

import numpy as np

from specsweep.records import RequestRecord

_now = time.monotonic_ns
_PREFIXES = ("ksoftirqd/", "backlog_napi/", "napi/")

# Per request index: [(chunk position, bound ns), ...] (the same shape as selfcheck.StampBounds).
Bounds = dict[int, list[tuple[int, int]]]


def _delivering_threads(proc: str = "/proc") -> list[tuple[str, int, int]]:
    """(name, fd of /proc/PID/stat, fd of /proc/PID/schedstat) of each packet-delivering kernel
    thread visible here; empty where none is (or /proc is missing)."""
    out: list[tuple[str, int, int]] = []
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            with open(f"{proc}/{pid}/comm", "rb") as f:
                name = f.read().decode(errors="replace").strip()
            if not name.startswith(_PREFIXES):
                continue
            st = os.open(f"{proc}/{pid}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            ss = os.open(f"{proc}/{pid}/schedstat", os.O_RDONLY)
        except OSError:
            os.close(st)
            continue
        out.append((name, st, ss))
    return out


def _read(st: int, ss: int) -> tuple[bool, int]:
    """(runnable now, CPU time + run-queue wait so far in ns) of one thread."""
    stat = os.pread(st, 512, 0)
    runnable = stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] == b"R"
    run, wait = os.pread(ss, 128, 0).split()[:2]
    return runnable, int(run) + int(wait)


Window = tuple[int, int, int]  # (start ns, end ns, cap ns): chunks stamped in (start, end] may be late


class DeliveryMonitor:
    """Samples the packet-delivering kernel threads (module docstring); :meth:`sample` is called on
    the client's event loop (every lag-monitor tick) and once more by :meth:`close`."""

    def __init__(self) -> None:
        self._threads = _delivering_threads()
        self.names = [t[0] for t in self._threads]
        self._last: list[int] = []
        self._last_t = 0
        # Per thread, the open window: [start ns, time it accounted meanwhile ns, seen runnable].
        self._open: list[list[int] | None] = [None] * len(self._threads)
        self.windows: list[Window] = []

    @property
    def available(self) -> bool:
        return bool(self._threads)

    def sample(self) -> None:
        if not self._threads:
            return
        cur: list[int] = []
        busy: list[bool] = []
        for _name, st, ss in self._threads:
            try:
                runnable, used = _read(st, ss)
            except (OSError, ValueError):  # the thread is gone (CPU unplugged): count it as busy
                runnable, used = True, -1
            cur.append(used)
            busy.append(runnable)
        t = _now()  # after the reads: whatever they counted was delivered by now
        if self._last:
            for i, (u0, u1) in enumerate(zip(self._last, cur, strict=True)):
                w = self._open[i]
                if busy[i] or u1 != u0:
                    if w is None:
                        w = self._open[i] = [self._last_t, 0, 0]
                    w[1] += max(0, u1 - u0)
                    w[2] |= busy[i]
                elif w is not None:
                    self._end(i, self._last_t)
        self._last, self._last_t = cur, t

    def _end(self, i: int, end: int) -> None:
        w = self._open[i]
        assert w is not None
        start, used, runnable = w
        # Woken and done between samples: its wait and run time were all accounted, and no packet it
        # delivered waited longer than that. Seen runnable: it may have been waiting all along.
        cap = end - start if runnable else min(used, end - start)
        self.windows.append((start, end, cap))
        self._open[i] = None

    def close(self) -> list[Window]:
        """Take the last sample, end the open windows there and return every window (by start)."""
        self.sample()
        for i, w in enumerate(self._open):
            if w is not None:
                w[2] = 1  # still busy at the end: nothing was accounted for its wait yet
                self._end(i, self._last_t)
        for _name, st, ss in self._threads:
            with contextlib.suppress(OSError):
                os.close(st)
                os.close(ss)
        self._threads = []
        return sorted(self.windows)


def delivery_bounds(records: Sequence[RequestRecord], windows: Sequence[Window]) -> Bounds:
    """Per measured request, the chunks stamped inside a window with their bound: ``stamp - start``,
    at most the window's cap, never more than since the request was sent."""
    out: Bounds = {}
    if not windows:
        return out
    rows = [(t, r.index, j, r.send_ns) for r in records if not r.is_warmup for j, t in enumerate(r.chunk_ns)]
    if not rows:
        return out
    rows.sort()
    arr = np.asarray(rows, dtype=np.int64)
    ts, send = arr[:, 0], arr[:, 3]
    bound = np.zeros(len(ts), dtype=np.int64)
    for start, end, cap in windows:
        lo, hi = np.searchsorted(ts, [start, end], side="right")
        if hi > lo:
            b = np.minimum(ts[lo:hi] - np.maximum(send[lo:hi], start), cap)
            np.maximum(bound[lo:hi], b, out=bound[lo:hi])
    for k in np.flatnonzero(bound > 0):
        out.setdefault(int(arr[k, 1]), []).append((int(arr[k, 2]), int(bound[k])))
    for v in out.values():
        v.sort()
    return out


def max_bounds(
    a: Mapping[int, Sequence[tuple[int, int]]], b: Mapping[int, Sequence[tuple[int, int]]]
) -> Bounds:
    """Per chunk, the larger of two bounds (both hold, so the wider interval does)."""
    out: Bounds = {}
    for idx in a.keys() | b.keys():
        m = dict(a.get(idx, ()))
        for j, v in b.get(idx, ()):
            m[j] = max(m.get(j, 0), v)
        out[idx] = sorted(m.items())
    return out
