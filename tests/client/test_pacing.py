"""Request starts are paced per event-loop pass, and the pool is opened before a measured run."""

from __future__ import annotations

import asyncio

from aiohttp import web

from specsweep.client.transport import SendPacer, make_session, prewarm


def test_pacer_releases_at_most_per_pass_starts_per_loop_pass_in_order() -> None:
    async def run() -> list[tuple[int, int]]:
        loop = asyncio.get_running_loop()
        passes = [0]

        def tick() -> None:  # counts loop passes
            passes[0] += 1
            loop.call_soon(tick)

        loop.call_soon(tick)
        pacer = SendPacer(per_pass=2)
        started: list[tuple[int, int]] = []

        async def req(i: int) -> None:
            await pacer.wait()
            started.append((i, passes[0]))

        await asyncio.gather(*(req(i) for i in range(7)))
        return started

    started = asyncio.run(run())
    assert [i for i, _ in started] == list(range(7))  # first come, first started
    per_pass: dict[int, int] = {}
    for _, p in started:
        per_pass[p] = per_pass.get(p, 0) + 1
    assert max(per_pass.values()) <= 2 and len(per_pass) >= 4


def test_prewarm_opens_n_pooled_connections_that_requests_then_reuse() -> None:
    async def run() -> tuple[int, set[object], set[object]]:
        peers: set[object] = set()

        async def models(request: web.Request) -> web.Response:
            peers.add(request.transport.get_extra_info("peername") if request.transport else None)
            return web.json_response({"data": []})

        app = web.Application()
        app.router.add_get("/v1/models", models)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        try:
            async with make_session() as session:
                answered = await prewarm(session, url, 5)
                opened = set(peers)
                peers.clear()

                async def get() -> None:
                    async with session.get(url + "/v1/models") as r:
                        await r.read()

                await asyncio.gather(*(get() for _ in range(5)))
                return answered, opened, set(peers)
        finally:
            await runner.cleanup()

    answered, opened, later = asyncio.run(run())
    assert answered == 5 and len(opened) == 5  # five distinct client connections
    assert later and later <= opened  # the next requests came over those pooled connections
