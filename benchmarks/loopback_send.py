"""The floor under a sim step's burst: what one small write to a loopback TCP socket costs the sender.

A sim step ends for all of its sequences at once, so the server writes one chunk to each of C sockets
back to back; the C-th chunk leaves about C x (cost of one send) after the first. This measures that
cost without the server: C connections from this process (pinned to one CPU) to a receiver process
(pinned to another), bursts of one ``os.write`` of ``--bytes`` bytes to every socket, every 20 ms.
Receiver modes: ``epoll`` (sleeps in epoll_wait, as a client does: the send may have to wake it),
``spin`` (polls without sleeping: no wake-up), ``noread`` (never reads: no wake-up, no receive work
in user space). Sockets use TCP_NODELAY and the congestion control the sim uses (reno unless
SPECSWEEP_TCP_CONGESTION says otherwise). ``os.write`` to /dev/null gives the Python + syscall share.

    python3 benchmarks/loopback_send.py --streams 512 --bursts 60

Prints one line per mode and a Markdown table (for docs/perf/sim_capacity.md).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import select
import socket
import time
from multiprocessing.synchronize import Event

import numpy as np

MODES = ("epoll", "spin", "noread")


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def _receiver(sock: socket.socket, n: int, mode: str, stop: Event, cpu: int) -> None:
    _pin(cpu)
    conns = [sock.accept()[0] for _ in range(n)]
    ep = select.epoll()
    for c in conns:
        c.setblocking(False)
        ep.register(c.fileno(), select.EPOLLIN)
    by_fd = {c.fileno(): c for c in conns}
    while not stop.is_set():
        if mode == "noread":
            time.sleep(0.01)
            continue
        for fd, _ in ep.poll(0 if mode == "spin" else 0.05):
            with contextlib.suppress(BlockingIOError):
                by_fd[fd].recv(1 << 16)
    for c in conns:
        c.close()


def measure(mode: str, streams: int, bursts: int, size: int, cc: str) -> np.ndarray:
    """Microseconds per send of each burst."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4096)
    stop = mp.Event()
    proc = mp.Process(target=_receiver, args=(lsock, streams, mode, stop, 0))
    proc.start()
    _pin(1)
    socks = []
    try:
        for _ in range(streams):
            s = socket.socket()
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if cc and hasattr(socket, "TCP_CONGESTION"):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
            s.connect(lsock.getsockname())
            socks.append(s)
        fds = [s.fileno() for s in socks]
        msg = b"x" * size
        per = []
        for _ in range(bursts):
            t = time.perf_counter_ns()
            for fd in fds:
                os.write(fd, msg)
            per.append((time.perf_counter_ns() - t) / streams / 1000)
            time.sleep(0.02)
        return np.asarray(per)
    finally:
        stop.set()
        proc.join(10)
        for s in socks:
            s.close()
        lsock.close()


def devnull_cost(size: int, n: int = 100_000) -> float:
    fd = os.open(os.devnull, os.O_WRONLY)
    msg = b"x" * size
    t = time.perf_counter_ns()
    for _ in range(n):
        os.write(fd, msg)
    os.close(fd)
    return (time.perf_counter_ns() - t) / n / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=512)
    ap.add_argument("--bursts", type=int, default=60)
    ap.add_argument("--bytes", type=int, default=180, help="chunk size (an SSE chunk of a few tokens)")
    args = ap.parse_args()
    cc = os.environ.get("SPECSWEEP_TCP_CONGESTION", "reno")
    rows = []
    for mode in MODES:
        per = measure(mode, args.streams, args.bursts, args.bytes, cc)
        p50, p90 = np.percentile(per, [50, 90])
        burst_ms = p50 * args.streams / 1000
        rows.append((mode, p50, p90, burst_ms))
        print(f"{mode}: {p50:.2f} us/send median, {p90:.2f} p90; a {args.streams}-chunk burst {burst_ms:.2f} ms",
              flush=True)  # fmt: skip
    dn = devnull_cost(args.bytes)
    print(f"os.write to {os.devnull}: {dn:.2f} us")
    print()
    print(f"| receiver | us/send p50 | us/send p90 | burst of {args.streams} (p50) |")
    print("|---|---:|---:|---:|")
    for mode, p50, p90, burst_ms in rows:
        print(f"| {mode} | {p50:.2f} | {p90:.2f} | {burst_ms:.2f} ms |")
    print(f"| (`os.write` to {os.devnull}) | {dn:.2f} | | |")


if __name__ == "__main__":
    main()
