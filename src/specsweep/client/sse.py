"""A pure, incremental Server-Sent Events decoder: bytes in, event payloads out.

Feed it whatever the socket delivered, split anywhere (even inside a CRLF); it returns the ``data``
payloads of every event completed by that feed, in order. Only ``data`` fields matter for LLM streams;
``event``, ``id``, ``retry`` and comment lines are skipped. Multi-line data is joined with ``\\n``
(the SSE spec). ``close()`` returns an event left pending by a stream that ended without the final
blank line (lenient: servers differ; the caller decides whether the stream was complete).
"""

from __future__ import annotations


class SSEDecoder:
    __slots__ = ("_buf", "_cr", "_data")

    def __init__(self) -> None:
        self._buf = b""  # the incomplete last line
        self._cr = False  # the previous feed ended with '\r' (a CRLF may be split)
        self._data: list[bytes] = []  # data lines of the event being built

    def feed(self, chunk: bytes) -> list[bytes]:
        if not chunk:
            return []
        if self._cr:
            self._cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._buf + chunk if self._buf else chunk
        if b"\r" in buf:
            if buf.endswith(b"\r"):
                self._cr = True
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        events: list[bytes] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = self._data = []
            elif line.startswith(b"data:"):
                v = line[5:]
                data.append(v[1:] if v[:1] == b" " else v)
            elif line == b"data":
                data.append(b"")
            # comments (':...') and other fields are ignored
        return events

    def close(self) -> list[bytes]:
        """End of stream: flush a last line without newline and any pending event."""
        out: list[bytes] = []
        if self._buf:
            out = self.feed(b"\n")
        if self._data:
            d = self._data
            out.append(d[0] if len(d) == 1 else b"\n".join(d))
            self._data = []
        self._buf = b""
        return out
