"""Starting a server process so that neither a signal nor specsweep's death can go astray.

- ``held_stop_signals``: SIGINT/SIGTERM are blocked and only recorded while the process is forked.
  A Python signal handler that raises inside ``Popen``'s fork (its ``preexec_fn`` and fork
  handlers run there) becomes "Exception ignored" and the Ctrl-C is lost; held, the signal is
  delivered once the caller has the process in hand, so it is stopped, and the run stops.
- the child starts in its own session (its own process group, which teardown signals whole), with
  the stop signals unblocked again, and on Linux with ``PR_SET_PDEATHSIG`` SIGTERM: if specsweep
  is killed, the kernel signals the server (only the server: what it started is reaped by the next
  run, ``servers.reap``).
- ``cpus``: the child's CPU affinity, set before exec so that every thread and process the server
  starts inherits it (``servers.affinity``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

# SIGHUP too: a closed terminal or SSH session stops a run the way SIGTERM does
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextlib.contextmanager
def held_stop_signals() -> Iterator[None]:
    """Within: SIGINT/SIGTERM/SIGHUP recorded, not acted on. After: the first one recorded is raised again
    (so the caller's usual handling, KeyboardInterrupt, happens outside the critical section)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    # a signal the process ignores (``nohup``: SIGHUP) stays ignored
    old = {
        s: signal.signal(s, lambda signum, frame: held.append(signum))
        for s in STOP_SIGNALS
        if signal.getsignal(s) is not signal.SIG_IGN
    }
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending one runs the recorder now
        for s, h in old.items():
            signal.signal(s, h)
        if held:  # also when the block raised: a stop must stop
            signal.raise_signal(held[0])


def popen(
    argv: list[str], *, stdout: int | IO[Any], env: dict[str, str], cpus: frozenset[int] | None = None
) -> subprocess.Popen[bytes]:
    """``Popen`` of a server: no shell, stdin closed, stderr with stdout, own session, pinned to
    ``cpus`` when given."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        preexec_fn=_child_setup(os.getpid(), cpus),
    )


def _child_setup(parent: int, cpus: frozenset[int] | None = None) -> Callable[[], None]:
    """Runs in the child between fork and exec: unblock the stop signals (the mask survives exec),
    pin it to ``cpus`` and ask for SIGTERM when specsweep dies."""
    prctl = _prctl()

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        if prctl is not None:
            prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # specsweep died before the prctl: do not run orphaned
                os._exit(1)

    return setup


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
