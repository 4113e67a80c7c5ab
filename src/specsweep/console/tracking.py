"""Progress of long library work (``plan``'s search, its engine model, ``--validate``'s replay) without
passing a parameter through every call: the work names its stages and counts its steps here, and
whoever started it may listen (``specsweep.commands.progress.StageProgress``: a rich display on a terminal;
nobody listens otherwise, and then each call is a context-variable read).

A stage has a name and, when the work knows it up front, a total of steps (an ETA needs one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol


class Listener(Protocol):
    def stage(self, name: str, total: int | None) -> None: ...

    def advance(self, n: int) -> None: ...


_listener: ContextVar[Listener | None] = ContextVar("specsweep_tracking", default=None)


def stage(name: str, total: int | None = None) -> None:
    """A new stage of the work begins (``total``: its steps, None when not known)."""
    if (ls := _listener.get()) is not None:
        ls.stage(name, total)


def advance(n: int = 1) -> None:
    """``n`` more steps of the current stage are done."""
    if (ls := _listener.get()) is not None:
        ls.advance(n)


def listener() -> Listener | None:
    """Who listens here (None: nobody)."""
    return _listener.get()


@contextlib.contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Within: the work's stages and steps go to ``listener`` (also in tasks asyncio starts here)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
