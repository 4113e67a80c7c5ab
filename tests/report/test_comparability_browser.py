"""What a reader sees in headless Chromium when configs are not comparable as they stand: the header
says the workloads differ and the clients differ (with the docs section to read), and the winner
cell says why no winner is named."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_html_browser import browser, open_page  # noqa: F401  (browser: a fixture)
from tests.importers.realformats import SG_2025, VLLM_2024, document, jsonl

from specsweep.importers import ImportOptions, run_import
from specsweep.report import build_view, render

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

WINNER = "document.querySelector('#winners-table tbody tr td.winner').textContent"


@pytest.mark.parametrize(("lang", "words"), [("en", "different workloads"), ("zh", "负载不同")])
def test_header_and_winner_cell_say_why(browser: str, tmp_path: Path, lang: str, words: str) -> None:  # noqa: F811
    sg = {**SG_2025, "tag": "in1024", "random_input_len": 1024, "random_range_ratio": 0.0, "completed": 100,
          "total_input_tokens": 50600, "total_output_tokens": 12800}  # fmt: skip
    vl = {k: v for k, v in VLLM_2024.items() if not isinstance(v, list)}
    vl.update(completed=100, total_input_tokens=102400, total_output_tokens=12800, max_concurrency=8)
    res = tmp_path / "res"
    run_import("sglang", [jsonl(tmp_path / "s.jsonl", sg)], res, ImportOptions(label="sglang", method="a"))
    run_import(
        "vllm",
        [document(tmp_path / "v.json", vl)],
        res,
        ImportOptions(label="vLLM", method="b", scenario="in1024"),
    )
    path = tmp_path / "report.html"
    path.write_text(render(build_view([res], "compare", now="T"), "html", lang), encoding="utf-8")

    async def go() -> None:
        async with open_page(browser) as page:
            await page.load(path.as_uri())
            text = await page.js("document.body.innerText")
            head = text[: text.index(words) + 200] if words in text else ""
            assert words in head and "docs/metrics.md#metrics-of-other-clients" in text
            assert words in await page.js(WINNER)
            assert page.errors() == []

    asyncio.run(go())
