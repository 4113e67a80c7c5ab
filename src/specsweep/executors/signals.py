"""Signals during a run: SIGTERM stops it the way Ctrl-C does, and teardown is never cut short.

- ``sigterm_as_interrupt``: SIGTERM and SIGHUP (a closed terminal or SSH session) raise
  KeyboardInterrupt, as Ctrl-C does (servers stopped, the manifest says "interrupted", exit 130).
  A SIGHUP the process ignores (``nohup``) stays ignored.
- ``signals_deferred``: a stop signal during a section that must finish (teardown, the manifest's
  last update) is held and delivered after it. A server's own teardown holds them itself
  (``ManagedServer.stop``), whoever calls it.
- ``stopping``: once the command has decided to exit 130, further Ctrl-C / SIGTERM are ignored, so
  an impatient user's next press cannot turn that exit into death by the signal.
- ``raise_if_interrupted``: a stop signal is also recorded, because its KeyboardInterrupt can be
  lost: raised while a weakref callback or ``__del__`` runs, Python prints "Exception ignored" and
  goes on. The grid checks between cells, so such a signal still stops it there.

All are no-ops off the main thread (only it may set signal handlers).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from specsweep.servers.spawn import STOP_SIGNALS

_STOPS = tuple(sorted(STOP_SIGNALS))  # SIGHUP, SIGINT, SIGTERM


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Teardown must finish: hold off SIGINT/SIGTERM meanwhile (main thread only). A signal that
    arrives meanwhile is delivered once it is done, not dropped (a Ctrl-C must stop the grid)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    old = {
        s: signal.signal(s, lambda signum, frame: held.append(signum))
        for s in _STOPS
        if signal.getsignal(s) is not signal.SIG_IGN  # nohup's SIGHUP stays ignored
    }
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if held:
            signal.raise_signal(held[0])


_received: list[int] = []  # stop signals received inside sigterm_as_interrupt, lost or not
_depth = [0]


def _interrupt(signum: int, frame: Any) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a stop signal arrived: its own KeyboardInterrupt may have been
    swallowed (see the module docstring). Called between cells; a no-op outside a run (a run before
    it in the same process may have ended on a signal: that one is not this caller's)."""
    if _received and _depth[0] > 0:
        raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether a stop signal arrived in this run (its KeyboardInterrupt may have become another error:
    an import interrupted inside a C extension fails with an ImportError)."""
    return bool(_received)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a run the way Ctrl-C does (servers killed, finished cells kept, exit 130), and
    both are recorded for ``raise_if_interrupted``. Nests: the outer handlers come back on exit (a
    SIGINT that the process ignores stays ignored).

    A SIGINT handler with a ``noted`` list (the command line's, ``specsweep.cli``) is Python's own
    handler that records each Ctrl-C there. It is replaced for the run like Python's, and a Ctrl-C it
    noted before the run stops the run at once: its KeyboardInterrupt may have been swallowed on the
    way (an import inside a C extension, an optional-import fallback), and the run would go on."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_int = signal.getsignal(signal.SIGINT)
    noted = getattr(old_int, "noted", None)  # the command line's: Python's handler, noting each Ctrl-C
    if _depth[0] == 0:
        _received.clear()
        # a Ctrl-C noted before the run (the command's imports) whose KeyboardInterrupt was swallowed
        _received.extend(noted or ())
    _depth[0] += 1
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    if old_int is signal.default_int_handler or noted is not None:
        signal.signal(signal.SIGINT, _interrupt)
    old_hup = signal.getsignal(signal.SIGHUP)
    if old_hup is signal.SIG_DFL:  # not under nohup (SIG_IGN)
        signal.signal(signal.SIGHUP, _interrupt)
    try:
        if _received:  # it stops the run before anything starts
            raise KeyboardInterrupt
        yield
    finally:
        _depth[0] -= 1
        for s, old in ((signal.SIGTERM, old_term), (signal.SIGINT, old_int), (signal.SIGHUP, old_hup)):
            if signal.getsignal(s) is _interrupt:  # not once ``stopping`` ignores it
                signal.signal(s, old)


def stopping() -> None:
    """The process is ending on an interrupt: ignore SIGINT, SIGTERM and SIGHUP from now on (main
    thread only), so it exits 130 by itself however many more arrive."""
    if threading.current_thread() is threading.main_thread():
        for s in _STOPS:
            signal.signal(s, signal.SIG_IGN)
