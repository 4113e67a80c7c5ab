"""What a reader sees in a real headless Chromium (issue 19 item 5): the core table has each column
once and no raw label key is on the page, for reports over parameters with no built-in label."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_html_browser import browser, open_page  # noqa: F401  (browser: a fixture)
from test_report_text import RAW_KEY, _render, results  # noqa: F401  (results: a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

HEADERS = (
    "Array.from(document.querySelector('#core-table').tHead.rows[0].cells).map(c => c.textContent.trim())"
)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_core_table_and_page_text(browser: str, results: dict[str, Path], tmp_path: Path, lang: str) -> None:  # noqa: F811
    html = _render(results["spec_ngram_simple_size_m"], tmp_path, "html", lang)
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")

    async def go() -> None:
        async with open_page(browser) as page:
            await page.load(path.as_uri())
            heads = await page.js(HEADERS)
            assert len(heads) == len(set(heads)), heads
            assert heads.count("Accept len" if lang == "en" else heads[-1]) == 1
            assert "spec_ngram_simple_size_m" in heads
            text = await page.js("document.body.innerText")
            assert not RAW_KEY.findall(text), sorted(set(RAW_KEY.findall(text)))
            assert page.errors() == []

    asyncio.run(go())
