"""The client's one seam on aiohttp's private surface (client/transport.py) holds on the installed
aiohttp: a version inside the declared range, and a real request through it gets StampingHandler
arrival times (kernel stamps on Linux). An aiohttp upgrade that moves ``TCPConnector._factory`` or
``ResponseHandler`` fails here instead of silently turning stamps into wake-up times."""

from __future__ import annotations

import asyncio
import logging
import re
import types
from pathlib import Path

import aiohttp
import pytest

from specsweep.client import transport

from .scripted_server import Script, ScriptedServer


def _major_minor(v: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", v)
    assert m, v
    return int(m.group(1)), int(m.group(2))


def test_installed_aiohttp_is_in_the_supported_range_pyproject_declares() -> None:
    lo, hi = transport.AIOHTTP_SUPPORTED
    assert lo <= _major_minor(aiohttp.__version__) < hi
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert f'"aiohttp>={lo[0]}.{lo[1]},<{hi[0]}"' in pyproject  # one declared range, kept in step


def test_a_real_request_is_stamped_through_the_seam() -> None:
    async def run() -> tuple[bool, bool, int]:
        srv = ScriptedServer(Script(ttft_s=0.01, gaps_s=[0.005], tokens=[1, 1]))
        url = await srv.start()
        try:
            async with transport.make_session(url) as session:
                body = {"text": "hi", "sampling_params": {"max_new_tokens": 2}, "stream": True}
                async with session.post(url + "/generate", json=body) as resp:
                    clock = transport.take_arrivals(resp)
                    await resp.read()
                    # the headers' read was seen through ResponseHandler._payload, and the body's
                    stamped = clock is not None and clock.hdr_ns > 0 and bool(clock.marks)
                    return stamped, clock is not None and clock.kernel, resp.status
        finally:
            await srv.close()

    stamped, kernel, status = asyncio.run(run())
    assert status == 200
    assert stamped, "the response's protocol is not StampingHandler: the aiohttp seam is gone"
    assert kernel == transport._SOCKET_FACTORY  # kernel stamps wherever aiohttp takes a socket_factory


def test_without_the_seam_the_connector_says_so(caplog: pytest.LogCaptureFixture) -> None:
    class NoSeam:  # stands for an aiohttp whose connector no longer has the private factory
        pass

    with caplog.at_level(logging.WARNING, logger=transport.__name__):
        assert transport.install_stamping_protocol(NoSeam()) is False  # type: ignore[arg-type]
    assert "wake-up times" in caplog.text and aiohttp.__version__ in caplog.text


def test_uncollected_arrival_records_age_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Responses nobody collects (connection prewarming, server probes) do not pile up: their
    records go once older than the TTL, the newest stay, and one collected is handed over once."""
    clock = [0]
    monkeypatch.setattr(transport, "_now", lambda: clock[0])
    monkeypatch.setattr(transport, "_ARRIVALS", {})
    bodies = [object() for _ in range(5)]
    for i, b in enumerate(bodies):
        clock[0] = i * transport._ARRIVALS_TTL_NS // 2  # 0, ttl/2, ttl, 1.5 ttl, 2 ttl
        transport._remember(b, transport.Arrivals(clock[0], None))
    assert [e[0] for e in transport._ARRIVALS.values()] == bodies[3:]  # within one TTL of the newest
    resp = types.SimpleNamespace(content=bodies[4])
    got = transport.take_arrivals(resp)  # type: ignore[arg-type]
    assert got is not None and got.hdr_ns == clock[0]
    assert transport.take_arrivals(resp) is None  # type: ignore[arg-type]  # handed over once
