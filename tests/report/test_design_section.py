"""The report of a run made with the adaptive design (issue 25 item 2): how each cell was decided
(runs per config, the effect and its interval, why it stopped, "undecided: about N more runs ..."),
and at the top the time spent next to the same grid with ``repeats: 3``, in en and zh, Markdown,
JSON and HTML. The run dir is written in virtual time; the rules' state is a fixed stand-in (the
section renders whatever the rules said: their own tests are the rules' business)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.design.design_fakes import RepeatRules, VirtualRunner
from tests.design.test_loop import P1, P2, design_plan
from tests.report.test_html_browser import browser  # noqa: F401 (the fixture)

from specsweep.design import observe
from specsweep.design.loop import run_design
from specsweep.design.types import CellStatus, DesignState, PairStatus
from specsweep.orchestrate import create_run_dir
from specsweep.report import build_view, render

A3, A5, B = "A(st=3)", "A(st=5)", "B"


def fixed_state(*args: Any) -> DesignState:
    def pair(p: Any, a: str, b: str, status: str, **kw: Any) -> PairStatus:
        base = {
            "winner": None,
            "effect": 0.0,
            "ci_low": -0.1,
            "ci_high": 0.1,
            "n_a": 3,
            "n_b": 3,
            "p_value": 0.5,
        }
        return PairStatus(point=p, a=a, b=b, status=status, **{**base, **kw})  # type: ignore[arg-type]

    c1 = CellStatus(point=P1, status="decided", leader=A3, runs={A3: 3, A5: 3, B: 1}, stopped_by="decided", pairs=(
        pair(P1, A3, A5, "decided", winner=A3, effect=0.123, ci_low=0.051, ci_high=0.198, p_value=0.001),
        pair(P1, A3, B, "decided", winner=A3, effect=1.5, ci_low=1.2, ci_high=1.9, n_b=1, p_value=0.0001),
    ))  # fmt: skip
    c2 = CellStatus(point=P2, status="undecided", leader=A5, runs={A3: 4, A5: 4, B: 1}, stopped_by="max_repeats",
                    pairs=(pair(P2, A5, A3, "undecided", effect=0.031, ci_low=-0.012, ci_high=0.074, n_a=4, n_b=4,
                                more_runs=3, gap=0.04),
                           pair(P2, A5, B, "equivalent", effect=0.01, ci_low=-0.03, ci_high=0.04, n_a=4, n_b=1)))  # fmt: skip
    return DesignState(cells=(c1, c2), next=None, spent_s=250.0, worst_case_s=300.0, baseline_s=1000.0,
                       noise={A3: (0.03, 12.0)})  # fmt: skip


@pytest.fixture
def design_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    plan = design_plan(margin=0.05, budget="50%")
    rd = create_run_dir(plan, tmp_path)

    def value(label: str, p: tuple[str, int], r: int) -> float:
        return {A3: 1000.0, A5: 950.0, B: 400.0}[label] * (1 + 0.01 * r) + p[1]

    run_design(
        plan, rd, VirtualRunner(rd, value), plan_next=RepeatRules({(A3, P1): 3, (A5, P1): 3}, per_round=None)
    )
    monkeypatch.setattr(observe, "default_rules", lambda: fixed_state)
    return rd.path


def test_the_view_says_how_each_cell_was_decided(design_run: Path) -> None:
    view = build_view([design_run], "sweep")
    d = view.design
    assert d is not None and d.run_dir == str(design_run)
    assert (d.spent_s, d.baseline_s, d.rounds, d.launches) == (250.0, 1000.0, 2, 5)
    assert d.runs == 10 and d.budget_s == pytest.approx(500.0)  # 50% of the repeats: 3 grid
    (c1, c2) = d.cells
    assert (c1.scenario, c1.concurrency, c1.stopped_by, c1.runs[A3]) == ("chat_short", 1, "decided", 3)
    assert c2.pairs[0].why.key == "design.why.undecided" and c2.pairs[0].why.args == {"more": 3, "gap": 0.04}
    assert c2.pairs[1].why.key == "design.why.equivalent"


def test_markdown_in_both_languages(design_run: Path) -> None:
    view = build_view([design_run], "sweep")
    en, zh = render(view, "md", "en"), render(view, "md", "zh")
    top = en.split("\n## ", 1)[0]  # the provenance part, before the first section
    assert "**Adaptive design**: 4m10s spent (10 runs in 2 rounds, 5 server launches); the same grid with " \
           "`repeats: 3` would have cost about 16m40s (25% of it spent), a single pass about 5m33s " \
           "(75% of it spent)" in top  # fmt: skip
    assert "单次遍历约需 5m33s（本次用时为其 75%）" in zh
    assert "## How each cell was decided (adaptive design)" in en
    assert (
        "| chat_short | 1 | `st=3` vs `st=5` | 3 / 3 | +12.30% [+5.10%, +19.80%] | `st=3` wins | decided |"
        in en
    )
    assert "undecided: about 3 more runs per config would decide a gap of 4.0% | max repeats |" in en
    assert "equivalent within ±5% |" in en
    assert "budget: 50% of the repeats: 3 grid (8m20s)" in en
    assert (
        "## 各测试点如何判定（自适应设计）" in zh and "未判定：每个配置约再运行 3 次可判定 4.0% 的差异" in zh
    )
    assert "**自适应设计**：用时 4m10s" in zh.split("\n## ", 1)[0]


def test_json_carries_the_design(design_run: Path) -> None:
    data = json.loads(render(build_view([design_run], "sweep"), "json", "en"))
    assert data["design"]["cells"][1]["pairs"][0]["more_runs"] == 3
    assert data["design"]["summary"]["key"] == "design.summary"


def test_a_run_without_the_design_has_no_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)
    run_design(plan, rd, VirtualRunner(rd), plan_next=RepeatRules({}))
    m = rd.manifest
    del m["design"]
    rd.write_manifest(m)
    monkeypatch.setattr(
        observe, "default_rules", lambda: pytest.fail("rules asked for a run without the design")
    )
    view = build_view([rd.path], "sweep")
    assert view.design is None
    assert "adaptive design" not in render(view, "md", "en")


def test_html_has_the_banner_and_the_table(design_run: Path) -> None:
    view = build_view([design_run], "sweep")
    page = render(view, "html", "en")
    banner = page.index('class="banner design"')
    assert banner < page.index('<nav class="toc"') < page.index('<section id="design">')
    assert '<a href="#design">How each cell was decided (adaptive design)</a>' in page
    assert "undecided: about 3 more runs per config would decide a gap of 4.0%" in page
    assert "<code>st=3</code> wins" in page  # the templates' marks as tags, the names escaped
    zh = render(view, "html", "zh")
    assert "各测试点如何判定（自适应设计）" in zh and "在 ±5% 以内等效" in zh


@pytest.mark.browser
def test_design_section_in_chromium(browser: str, design_run: Path, tmp_path: Path) -> None:  # noqa: F811
    import asyncio

    from tests.report.test_html_browser import CLICK, COLUMN, open_page

    view = build_view([design_run], "sweep")
    path = tmp_path / "report.html"
    path.write_text(render(view, "html", "en"), encoding="utf-8")

    async def go() -> None:
        async with open_page(browser, width=900) as page:
            await page.load(path.as_uri())
            n = await page.js("document.querySelectorAll('#design-table tbody tr').length")
            assert n == 4
            box = await page.js("(() => { const r = document.querySelector('p.banner.design').getBoundingClientRect();"
                                " return [r.top, r.height]; })()")  # fmt: skip
            assert 0 < box[0] < 900 and box[1] > 0  # visible above the fold
            runs = json.dumps("Runs per config")
            assert await page.js(CLICK.format(table="#design-table", header=runs)) == "ascending"
            col = await page.js(COLUMN.format(table="#design-table", header=json.dumps("Result")))
            assert any(x.startswith("undecided: about 3 more runs") for x in col)
            assert page.errors() == []
            assert all(u.startswith(("file:", "data:")) for u in page.requests()), page.requests()

    asyncio.run(go())


def test_a_racing_run_says_how_racing_decided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with ``race: true`` is not described as the first generation (a first pass of full runs,
    "at most N runs per config"): it names look 0's short runs, the relaunch and what max_repeats
    bounds under racing (time, up to 4x as many shorter runs) and the launches, in en and zh."""
    plan = design_plan(margin=0.05, race=True, launches=2)
    rd = create_run_dir(plan, tmp_path)
    run_design(plan, rd, VirtualRunner(rd, lambda label, p, r: 1000.0 * (1 + 0.01 * r)))  # the racing rules
    monkeypatch.setattr(observe, "default_rules", lambda: fixed_state)
    view = build_view([rd.path], "sweep")
    assert view.design is not None and view.design.intro.key == "design.intro_race"
    en, zh = render(view, "md", "en"), render(view, "md", "zh")
    assert "Racing on short first looks" in en and "Every config ran every cell once" not in en
    assert "at most 3 full runs' time per config (up to 12 shorter runs) in at most 2 server launches" in en
    assert "at most 3 runs per config and cell" not in en
    assert "短首轮竞速" in zh and "每个配置至多启动服务 2 次" in zh


def test_the_first_generation_keeps_its_own_words(design_run: Path) -> None:
    en = render(build_view([design_run], "sweep"), "md", "en")
    assert "Every config ran every cell once (the first pass)" in en and "Racing" not in en
    assert "at most 3 runs per config and cell" in en
