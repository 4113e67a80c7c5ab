"""A server's output to its log file, line by line, with every known secret scrubbed on the way.

Engines print their arguments and environment at startup (vLLM's "non-default args" includes
``api_key``), and a server may echo a credential in an error: writing the pipe's lines through
``redact.scrub_text`` keeps those out of ``logs/``. A line that is not finished within ``IDLE_S``
is written as it is so far (a log tail must show a prompt without a newline), and very long lines
in pieces of ``MAX_LINE`` bytes. A piece never ends inside a secret: what may be the start of one
(``redact_pieces.open_tail``: the start of a known secret, ``Bearer``, a token-shaped word) waits for the
rest, so a secret cut at ``MAX_LINE`` or written in two goes is scrubbed whole.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from typing import IO

from specsweep.servers.spawn import STOP_SIGNALS
from specsweep.store import redact, redact_pieces

IDLE_S = 0.2
MAX_LINE = 1 << 16


class LogPump:
    """Reads ``fd`` (the read end of the server's stdout pipe) into ``log`` until EOF or ``stop``."""

    def __init__(self, fd: int, log: IO[bytes]) -> None:
        self.fd = fd
        self.log = log
        self._buf = b""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = 0.0
        self._thread = threading.Thread(target=self._run, name="specsweep-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # Ctrl-C and SIGTERM are the main thread's business (the kernel then delivers them there)
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            while True:
                ready, _, _ = select.select([self.fd], [], [], IDLE_S)
                if self._stop.is_set() and (not ready or time.monotonic() > self._deadline):
                    return
                if not ready:
                    self.flush()
                    continue
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    return
                with self._lock:
                    self._buf += data
                    self._write_lines()
        finally:
            self.flush(final=True)
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def _write_lines(self) -> None:
        cut = self._buf.rfind(b"\n") + 1
        if cut:
            out, self._buf = self._buf[:cut], self._buf[cut:]
            self._emit(out)
        if len(self._buf) >= MAX_LINE:
            self._emit_partial()

    def _emit_partial(self) -> None:
        """Write the unfinished line so far, less an end that may begin a secret."""
        text = self._buf.decode("utf-8", "surrogateescape")
        keep = redact_pieces.open_tail(text)
        head, rest = text[: len(text) - keep], text[len(text) - keep :]
        if head:
            self._buf = rest.encode("utf-8", "surrogateescape")
            self._emit(head.encode("utf-8", "surrogateescape"))

    def _emit(self, data: bytes) -> None:
        text = data.decode("utf-8", "surrogateescape")
        with contextlib.suppress(OSError, ValueError):
            self.log.write(redact.scrub_text(text).encode("utf-8", "surrogateescape"))
            self.log.flush()

    def flush(self, *, final: bool = False) -> None:
        """Write what is buffered (a partial line too, less an end that may begin a secret, unless
        ``final``): before a log tail is read, and at the end."""
        with self._lock:
            if not self._buf:
                return
            if final:
                out, self._buf = self._buf, b""
                self._emit(out)
            else:
                self._emit_partial()

    def close(self, timeout: float = 2.0) -> None:
        """After the process is gone: read to EOF (or give up after ``timeout``: a process that
        escaped the group may hold the pipe open)."""
        self._deadline = time.monotonic() + timeout
        self._stop.set()
        self._thread.join(timeout + IDLE_S)
