"""A pure, incremental Server-Sent Events decoder: bytes in, event payloads out.

Feed it whatever the socket delivered, split anywhere (even inside a CRLF); it returns the ``data``
payloads of every event completed by that feed, in order. Only ``data`` fields matter for LLM streams;
``event``, ``id``, ``retry`` and comment lines are skipped. Multi-line data is joined with ``\\n``
(the SSE spec). ``close()`` returns an event left pending by a stream that ended without the final
blank line (lenient: servers differ; the caller decides whether the stream was complete).

Linear in the bytes fed however they are split: a line still incomplete is kept as a list of pieces
and joined once, when its end arrives. An event (or a line) larger than ``max_event_bytes`` raises
ChunkError kind 'too_large': one 100 MB event is a broken or hostile server, not a token stream.
"""

from __future__ import annotations

from specsweep.client.dialects import ChunkError

MAX_EVENT_BYTES = 16 * 1024 * 1024


class SSEDecoder:
    __slots__ = ("_cr", "_data", "_data_len", "_limit", "_pending", "_pending_len")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._pending: list[bytes] = []  # pieces of the incomplete last line
        self._pending_len = 0
        self._cr = False  # the previous feed ended with '\r' (a CRLF may be split)
        self._data: list[bytes] = []  # data lines of the event being built
        self._data_len = 0
        self._limit = max_event_bytes

    def _too_large(self, size: int) -> ChunkError:
        return ChunkError(
            "too_large", f"an SSE event of more than {size:,} bytes (the limit is {self._limit:,} bytes)"
        )

    def feed(self, chunk: bytes) -> list[bytes]:
        if not chunk:
            return []
        if self._cr:
            self._cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\n" not in chunk and b"\r" not in chunk:  # the line goes on: keep the piece, join later
            self._pending.append(chunk)
            self._pending_len += len(chunk)
            if self._pending_len + self._data_len > self._limit:
                raise self._too_large(self._pending_len + self._data_len)
            return []
        if self._pending:
            self._pending.append(chunk)
            buf = b"".join(self._pending)
        else:
            buf = chunk
        if b"\r" in buf:
            if buf.endswith(b"\r"):
                self._cr = True
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        last = lines.pop()
        self._pending = [last] if last else []
        self._pending_len = len(last)
        events: list[bytes] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = self._data = []
                    self._data_len = 0
            elif line.startswith(b"data:"):
                v = line[5:]
                data.append(v[1:] if v[:1] == b" " else v)
                self._data_len += len(v) + 1
            elif line == b"data":
                data.append(b"")
            # comments (':...') and other fields are ignored
        if self._pending_len + self._data_len > self._limit:
            raise self._too_large(self._pending_len + self._data_len)
        return events

    def close(self) -> list[bytes]:
        """End of stream: flush a last line without newline and any pending event."""
        out: list[bytes] = []
        if self._pending:
            out = self.feed(b"\n")
        if self._data:
            d = self._data
            out.append(d[0] if len(d) == 1 else b"\n".join(d))
            self._data = []
            self._data_len = 0
        self._pending = []
        self._pending_len = 0
        return out
