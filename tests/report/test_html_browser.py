"""The HTML report in a real headless Chromium, driven over the DevTools protocol (aiohttp websocket).

Checks: no console errors, exceptions or CSP violations; no network request besides the file itself;
every plot is an SVG with a non-zero rendered size (with and without JavaScript); win-map cells carry
tooltips; clicking a header sorts the table (numbers numerically, both directions); a hostile view
runs none of its payloads. Screenshots land in test-artifacts/ (gitignored) for a human to look at.

Needs /usr/bin/chromium (Debian: ``apt-get install -y chromium``; for readable Chinese in the
screenshots also ``fonts-wqy-microhei``); skips with that hint when absent.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from test_html_fixtures import EVIL, hostile_view, install_test_texts, reference_view

from specsweep.report.build.view import ReportView
from specsweep.report.display import deployed_flags
from specsweep.report.html.page import render_html

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]


def _chromium() -> str:
    for cand in (os.environ.get("SPECSWEEP_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if cand and Path(cand).is_file():
            return cand
    pytest.skip("headless Chromium not found at /usr/bin/chromium (Debian: apt-get install -y chromium)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running Chromium; yields its DevTools HTTP endpoint. Killed (by pid) at the end."""
    exe = _chromium()
    profile = tmp_path_factory.mktemp("chromium-profile")
    log = (profile.parent / "chromium.log").open("wb")
    proc = subprocess.Popen(
        [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start (exit {proc.poll()}); log: {log.name}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


class Page:
    """One tab over CDP: send commands, collect events."""

    def __init__(self, ws: Any) -> None:  # aiohttp.ClientWebSocketResponse
        self.ws = ws
        self.n = 0
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.waiters: list[tuple[str, asyncio.Future[dict[str, Any]]]] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data:
                fut = self.pending.pop(data["id"], None)
                if fut and not fut.done():
                    fut.set_result(data)
            else:
                self.events.append(data)
                for name, fut in list(self.waiters):
                    if name == data["method"] and not fut.done():
                        fut.set_result(data)
                        self.waiters.remove((name, fut))

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.n += 1
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[self.n] = fut
        await self.ws.send_str(json.dumps({"id": self.n, "method": method, "params": params}))
        reply = await asyncio.wait_for(fut, 60)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply["result"]

    def event(self, name: str) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiters.append((name, fut))
        return fut

    async def js(self, expr: str) -> Any:
        r = await self.send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"JS error in {expr[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    async def load(self, url: str) -> None:
        """Navigate and wait for the load event; an alert() (a payload that ran) blocks loading, so it is
        dismissed here and stays in the events, where :meth:`errors` reports it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        loaded = self.event("Page.loadEventFired")
        await self.send("Page.navigate", url=url)
        while not loaded.done():
            dialog = self.event("Page.javascriptDialogOpening")
            done, _ = await asyncio.wait(
                {loaded, dialog},
                timeout=max(0.0, deadline - loop.time()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not done:
                raise AssertionError(f"{url} did not finish loading within 60 s")
            if dialog in done:
                await self.send("Page.handleJavaScriptDialog", accept=False)
            else:
                dialog.cancel()

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails']}")
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Page.javascriptDialogOpening":
                out.append(f"dialog: {p.get('message')}")
        return out

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"
        ]


@contextlib.asynccontextmanager
async def open_page(endpoint: str, *, width: int = 1280) -> Any:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
        async with http.put(f"{endpoint}/json/new?about:blank") as r:
            target = await r.json(content_type=None)
        try:
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = Page(ws)
                for domain in ("Runtime", "Log", "Page", "Network"):
                    await page.send(f"{domain}.enable")
                await page.send(
                    "Emulation.setDeviceMetricsOverride",
                    width=width,
                    height=900,
                    deviceScaleFactor=1,
                    mobile=False,
                )
                try:
                    yield page
                finally:
                    page.reader.cancel()
        finally:
            async with http.get(f"{endpoint}/json/close/{target['id']}"):
                pass


async def _screenshot(page: Page, path: Path) -> None:
    m = await page.send("Page.getLayoutMetrics")
    size = m.get("cssContentSize") or m["contentSize"]
    shot = await page.send(
        "Page.captureScreenshot",
        format="png",
        captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000), "scale": 1},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


PLOT_SIZES = """Array.from(document.querySelectorAll('figure.plot')).map(f => {
  const s = f.querySelector('svg'); const r = s ? s.getBoundingClientRect() : {width: 0, height: 0};
  return [f.dataset.plot, r.width, r.height, s ? s.querySelectorAll('text').length : 0];
})"""

COLUMN = """(() => {{
  const t = document.querySelector('{table}');
  const i = Array.from(t.tHead.rows[0].cells).findIndex(th => th.textContent.trim() === {header});
  return Array.from(t.tBodies[0].rows).map(r => r.cells[i].getAttribute('data-sort') ?? r.cells[i].textContent.trim());
}})()"""

CLICK = """(() => {{
  const t = document.querySelector('{table}');
  const th = Array.from(t.tHead.rows[0].cells).find(th => th.textContent.trim() === {header});
  th.click(); return th.getAttribute('aria-sort');
}})()"""


def _write(tmp: Path, name: str, view: ReportView, lang: str) -> tuple[Path, str]:
    text = render_html(view, lang)
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p, text


def _expected_plots(text: str) -> list[str]:
    import re

    return re.findall(r'<figure class="plot" id="fig-[^"]+" data-plot="([^"]+)"', text)


@pytest.fixture(scope="module")
def imported(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The reference data imported as run dirs (None when the importer is not in this build)."""
    try:
        from reference_seed import CONFIGS, import_args, write_jsonl

        from specsweep.cli import main
    except ImportError:
        return None
    tmp = tmp_path_factory.mktemp("imported")
    files = write_jsonl(reference_dir, tmp / "src")
    for lab, _m, _p, _f in CONFIGS:
        assert main(import_args(lab, files[lab], tmp / "results")) == 0
    return tmp / "results"


def _reference(reference_dir: Path, imported: Path | None, kind: str) -> ReportView:
    """The builder's view of the imported reference data; the hand-built sweep if there is no builder."""
    if imported is None:
        if kind != "sweep":
            pytest.skip("no importer/builder in this build for a compare view")
        return reference_view(reference_dir)
    from specsweep.report import build_view

    method = "dspark" if kind == "sweep" else None
    return build_view([imported], kind, method=method, now="2026-12-02T12:00:00Z")


@pytest.mark.parametrize(("kind", "lang"), [("sweep", "en"), ("compare", "zh")])
def test_reference_report_in_chromium(
    browser: str,
    reference_dir: Path,
    imported: Path | None,
    tmp_path: Path,
    kind: str,
    lang: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install_test_texts(monkeypatch)
    view = _reference(reference_dir, imported, kind)
    path, text = _write(tmp_path, f"report.{kind}.{lang}.html", view, lang)
    expected = _expected_plots(text)
    assert {"metric-total_throughput", "metric-mean_tpot_ms", "winmap"} <= set(expected)
    shot = ARTIFACTS / ("report.png" if (kind, lang) == ("sweep", "en") else f"report.{kind}.{lang}.png")

    async def go() -> None:
        async with open_page(browser) as page:
            await page.load(path.as_uri())
            sizes = await page.js(PLOT_SIZES)
            assert [s[0] for s in sizes] == expected
            for key, w, h, n_text in sizes:
                assert w > 300 and h > 100, (key, w, h)
                assert n_text > 5, key  # axis labels, titles: the SVG drew its text
            # win-map cells have tooltips, one per winner row
            n_titles = await page.js("document.querySelectorAll('figure[data-plot=winmap] svg title').length")
            assert n_titles == len([w for w in view.winners if w.metric == view.primary_metric])
            await _screenshot(page, shot)
            # sorting: numeric ascending, then descending; text sorting
            tput = json.dumps("Total tok/s")
            assert await page.js(CLICK.format(table="#core-table", header=tput)) == "ascending"
            col = [float(x) for x in await page.js(COLUMN.format(table="#core-table", header=tput))]
            assert col == sorted(col) and len(col) == len(view.cells)
            assert await page.js(CLICK.format(table="#core-table", header=tput)) == "descending"
            col = [float(x) for x in await page.js(COLUMN.format(table="#core-table", header=tput))]
            assert col == sorted(col, reverse=True)
            conc = json.dumps("Concurrency")
            await page.js(CLICK.format(table="#winners-table", header=conc))
            levels = [int(x) for x in await page.js(COLUMN.format(table="#winners-table", header=conc))]
            assert levels == sorted(levels) and levels != sorted(levels, key=str)  # 8 < 16 numerically
            scen = json.dumps("Scenario")
            await page.js(CLICK.format(table="#core-table", header=scen))
            names = await page.js(COLUMN.format(table="#core-table", header=scen))
            assert names == sorted(names)
            if kind == "compare":  # each full config a recommendation names, under its own heading (issue 28)
                heads = await page.js(
                    "Array.from(document.querySelectorAll('#recommendations h4')).map(h => h.innerText)"
                )
                assert heads == list(deployed_flags(view)) and len(heads) == 2, heads
                recs = await page.js("document.querySelector('#rec-table').innerText")
                assert "DSpark(st=5)" in recs and "DSpark(st=3)" in recs
            assert page.errors() == []
            assert all(u.startswith(("file:", "data:")) for u in page.requests()), page.requests()

    asyncio.run(go())


def test_report_without_javascript(browser: str, reference_dir: Path, tmp_path: Path) -> None:
    view = reference_view(reference_dir)
    with pytest.MonkeyPatch.context() as mp:
        install_test_texts(mp)
        path, text = _write(tmp_path, "report.html", view, "en")

    async def go() -> None:
        async with open_page(browser, width=900) as page:
            await page.send("Emulation.setScriptExecutionDisabled", value=True)
            await page.load(path.as_uri())
            sizes = await page.js(PLOT_SIZES)
            assert [s[0] for s in sizes] == _expected_plots(text)
            assert all(w > 300 and h > 100 for _k, w, h, _n in sizes), sizes
            # the sorter did not run: headers are plain, tables are still all there
            assert await page.js("document.querySelectorAll('table.js-sortable').length") == 0
            n_rows = await page.js("document.querySelectorAll('#core-table tbody tr').length")
            assert n_rows == len(view.cells)
            # printed: no navigation box, plots still drawn
            await page.send("Emulation.setEmulatedMedia", media="print")
            assert await page.js("getComputedStyle(document.querySelector('nav.toc')).display") == "none"
            sizes = await page.js(PLOT_SIZES)
            assert all(w > 300 and h > 100 for _k, w, h, _n in sizes), sizes
            await _screenshot(page, ARTIFACTS / "report-print.png")
            assert page.errors() == []

    asyncio.run(go())


def test_hostile_report_runs_no_payload(
    browser: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_test_texts(monkeypatch)
    view = hostile_view()
    path, _text = _write(tmp_path, "hostile.html", view, "en")

    async def go() -> None:
        async with open_page(browser) as page:
            await page.load(path.as_uri())
            # only our two scripts exist, no injected element became live markup
            assert await page.js("document.scripts.length") == 2
            assert await page.js("document.querySelectorAll('img, iframe, object, embed').length") == 0
            body = await page.js("document.body.innerText")
            assert EVIL in body  # shown as text
            title = await page.js("document.title")
            assert EVIL in title
            data = json.loads(await page.js("document.getElementById('specsweep-view').textContent"))
            assert data["provenance"]["models"][0].startswith("model" + EVIL)
            sizes = await page.js(PLOT_SIZES)
            assert sizes and all(w > 100 and h > 50 for _k, w, h, _n in sizes), sizes
            svg_text = await page.js(
                "Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('|')"
            )
            assert EVIL in svg_text
            await _screenshot(page, ARTIFACTS / "report-hostile.png")
            assert page.errors() == []  # no alert dialog, no CSP violation, no exception

    asyncio.run(go())
