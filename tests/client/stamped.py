"""A connected pair of sockets whose client end is a kernel-stamped StampedSocket (test helper)."""

from __future__ import annotations

import socket

from specsweep.client import kstamp


def stamped_pair() -> tuple[socket.socket, kstamp.StampedSocket, socket.socket]:
    """A listening socket, a connected client StampedSocket, and the server's end."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    c = kstamp.socket_factory((socket.AF_INET, socket.SOCK_STREAM, 0, "", ()))
    assert isinstance(c, kstamp.StampedSocket)
    c.connect(srv.getsockname())
    s, _ = srv.accept()
    return srv, c, s
