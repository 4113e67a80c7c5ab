"""What a reader sees in headless Chromium when configs are not comparable as they stand: the header
says the workloads differ and the clients differ (with the docs section to read), and the winner
cell says why no winner is named."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_html_browser import browser, open_page  # noqa: F401  (browser: a fixture)
from tests.importers.realformats import half_length_pair

from specsweep.report import build_view, render

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

WINNER = "document.querySelector('#winners-table tbody tr td.winner').textContent"


@pytest.mark.parametrize(("lang", "words"), [("en", "different workloads"), ("zh", "负载不同")])
def test_header_and_winner_cell_say_why(browser: str, tmp_path: Path, lang: str, words: str) -> None:  # noqa: F811
    res = half_length_pair(tmp_path)
    path = tmp_path / "report.html"
    path.write_text(render(build_view([res], "compare", now="T"), "html", lang), encoding="utf-8")

    async def go() -> None:
        async with open_page(browser) as page:
            await page.load(path.as_uri())
            text = await page.js("document.body.innerText")
            head = text[: text.index(words) + 200] if words in text else ""
            assert words in head and "docs/metrics.md" in text  # the link's text; its target:
            assert await page.js(
                "!!document.querySelector('a[href$=\"docs/metrics.md#metrics-of-other-clients\"]')"
            )
            assert words in await page.js(WINNER)
            assert page.errors() == []

    asyncio.run(go())
