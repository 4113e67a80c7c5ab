"""Markdown and HTML name the same winner in every cell: the decision is the view model's
(``ReportView.winner_name``), worded once (``report.display``). Three configs with the top two tied
(Markdown named the even leaders, HTML said only "tie"), and a level only one config measured (no
verdict: Markdown said "-", HTML said "tie" and counted it among the ties)."""

from __future__ import annotations

import html
import json
import re

import pytest

from specsweep.cli import main
from specsweep.report import build_view, render
from specsweep.report.build.view import ReportView

# total throughput per config and level: st=3 and st=4 within 0.5% (a tie under any noise rule),
# st=5 far behind; only st=3 ran c=16
TPUT = {3: {1: 1000.0, 8: 6000.0, 16: 9000.0}, 4: {1: 1005.0, 8: 6020.0}, 5: {1: 600.0, 8: 3000.0}}


def _line(c: int, tput: float) -> str:
    return json.dumps({
        "backend": "sglang", "dataset_name": "random", "tag": "chat_short", "max_concurrency": c,
        "request_rate": "inf", "completed": 64, "duration": 12800 / tput, "request_throughput": tput / 200,
        "output_throughput": tput / 2, "total_throughput": tput, "mean_e2e_latency_ms": 900.0,
        "p99_e2e_latency_ms": 1500.0, "mean_ttft_ms": 80.0, "p99_ttft_ms": 200.0, "mean_tpot_ms": 9.0,
        "p99_tpot_ms": 20.0, "total_input_tokens": 6400, "total_output_tokens": 6400,
    })  # fmt: skip


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> ReportView:
    base = tmp_path_factory.mktemp("three")
    res = base / "results"
    for k, levels in TPUT.items():
        f = base / f"st{k}.jsonl"
        f.write_text("".join(_line(c, t) + "\n" for c, t in levels.items()), encoding="utf-8")
        args = ["import", "sglang", str(f), "--label", f"DSpark(st={k})", "--method", "dspark"]
        assert main([*args, "--param", f"spec_tokens={k}", "-o", str(res)]) == 0
    return build_view([res], "sweep", method="dspark", now="T")


def _md_winners(md: str) -> dict[int, str]:
    """Concurrency -> winner column of the Markdown winner table (one scenario here)."""
    lines = html.unescape(md).splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("| Scenario") and "Winner" in line)
    out = {}
    for line in lines[i + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[int(cells[1])] = cells[2]
    return out


def _html_winners(page: str) -> dict[int, str]:
    table = page[page.index('id="winners-table"') :]
    table = table[: table.index("</table>")]
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        if cells:
            out[int(cells[1])] = html.unescape(cells[2])
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_and_html_name_the_same_winner(view: ReportView, lang: str) -> None:
    tie = {"en": "tie", "zh": "持平"}[lang]
    md = _md_winners(render(view, "md", lang))
    page = render(view, "html", lang)
    assert md == _html_winners(page)
    # the two even leaders are named, the third config is not; each config was imported on its own
    # (its own session, nothing links them): the cell says a host change cannot be told apart there
    assert md[1] == md[8] and md[1].startswith(
        f"{tie} (st=3, st=4; " if lang == "en" else f"{tie}（st=3, st=4；"
    )
    assert md[16] == "-"  # one config measured: no verdict, not a tie
    assert page.count('class="winner tie"') == 2  # the class follows the same decision
    ties = {"en": "Ties", "zh": "持平"}[lang]  # the win counts: c=16 is no tie either
    assert re.search(rf'<td>{ties}</td><td class="num" data-sort="2">2</td>', page), "ties counted: not 2"
