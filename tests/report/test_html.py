"""The HTML report as text: self-contained, escaped everywhere, both languages, every plot inline.

The browser-side checks (rendering, console, sorting) are in test_html_browser.py.
"""

from __future__ import annotations

import html as htmllib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_html_fixtures import EVIL, EVIL_ALL, hostile_view, install_test_texts, reference_view

from specsweep.errors import UsageError
from specsweep.report import plots
from specsweep.report.build.view import ReportView
from specsweep.report.html.page import json_for_script, md_inline, render_html, script_hash

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _texts(monkeypatch: pytest.MonkeyPatch) -> None:
    install_test_texts(monkeypatch)


@pytest.fixture(scope="module")
def ref_view(reference_dir: Path) -> ReportView:
    return reference_view(reference_dir)


@pytest.fixture(scope="module")
def ref_pages(ref_view: ReportView) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as mp:
        install_test_texts(mp)
        return {lang: render_html(ref_view, lang) for lang in ("en", "zh")}


@pytest.fixture(scope="module")
def evil_pages() -> dict[str, str]:
    with pytest.MonkeyPatch.context() as mp:
        install_test_texts(mp)
        view = hostile_view()
        return {lang: render_html(view, lang) for lang in ("en", "zh")}


class _Tree(HTMLParser):
    """Collects what a browser would build: elements, the text of <script>s, attribute values."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.text: list[str] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            self.attrs.append((tag, k, v or ""))
        if tag == "script":
            self._in_script = dict(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self.scripts.append((self._in_script, data))
        else:
            self.text.append(data)


def _parse(page: str) -> _Tree:
    t = _Tree()
    t.feed(page)
    t.close()
    return t


# ---- the reference view ------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reference_page_is_self_contained(ref_pages: dict[str, str], lang: str) -> None:
    page = ref_pages[lang]
    tree = _parse(page)
    # no external resources: no src/href pointing anywhere but in-page anchors and data: URLs
    for tag, k, v in tree.attrs:
        if k in ("src", "href", "xlink:href") or (k == "content" and tag == "meta" and "url" in v.lower()):
            assert v.startswith(("#", "data:")), (tag, k, v)
    assert '<link rel="stylesheet"' not in page and "@import" not in page and "@font-face" not in page
    assert not re.search(r"https?://(?!www\.w3\.org/)", page)  # SVG namespaces are the only URLs
    assert tree.tags.count("style") == 1
    # exactly our data block and our script; the CSP allows that script by hash and nothing else
    kinds = [a.get("type") for a, _ in tree.scripts]
    assert kinds == ["application/json", None]
    js = tree.scripts[1][1]
    csp = next(v for tag, k, v in tree.attrs if tag == "meta" and k == "content" and "default-src" in v)
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == script_hash(js)  # no 'unsafe-inline' for scripts


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reference_page_has_every_plot_and_number(
    ref_pages: dict[str, str], ref_view: ReportView, lang: str
) -> None:
    page = ref_pages[lang]
    keys = re.findall(r'<figure class="plot" id="fig-[^"]+" data-plot="([^"]+)"', page)
    assert keys == [
        "metric-total_throughput",
        "metric-mean_tpot_ms",
        "metric-mean_ttft_ms",
        "metric-mean_e2e_latency_ms",
        "winmap",
    ]
    for key in keys:
        fig = page[page.index(f'<figure class="plot" id="fig-{key}"') :]
        fig = fig[: fig.index("</figure>")]
        assert fig.count("<svg") == 1 and "viewBox=" in fig and "</svg>" in fig
    # ids stay unique although five matplotlib SVGs share the page
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page))
    assert refs <= set(ids), refs - set(ids)
    # one tooltip per plotted point (scenario, level, config, value), one per win-map cell
    tput = page[page.index('<figure class="plot" id="fig-metric-total_throughput"') :]
    tput = tput[: tput.index("</figure>")]
    assert tput.count("<title>") == len(ref_view.cells)
    assert "<title>chat_short · c=16 · DSpark(st=5): 6282.94 tok/s</title>" in tput
    winmap = page[page.index('<figure class="plot" id="fig-winmap"') :]
    assert winmap[: winmap.index("</figure>")].count("<title>") == len(ref_view.winners)
    # every value of the core table and every gain of the winner table, as the Markdown report prints them
    for cell in ref_view.cells:
        for k in ref_view.core_columns:
            assert f">{cell.values[k]:.2f}</td>" in page
    for w in ref_view.winners:
        assert f">{w.gain * 100:.2f}%</td>" in page


def test_rendering_is_deterministic(ref_pages: dict[str, str], ref_view: ReportView) -> None:
    assert render_html(ref_view, "en") == ref_pages["en"]  # no dates, random ids or hash salts


def test_languages_differ_only_in_words(ref_pages: dict[str, str]) -> None:
    en, zh = ref_pages["en"], ref_pages["zh"]
    assert '<html lang="en">' in en and '<html lang="zh-CN">' in zh
    assert "Core metrics" in en and "核心指标对比" in zh and "核心指标对比" not in en
    assert "图表" in zh and "Plots" in en
    # the tie word: the reference data has ties at c=64 (under 2% in this hand-built view)
    assert '<td class="winner tie">tie</td>' in en
    assert '<td class="winner tie">持平</td>' in zh
    # the same numbers in both
    num = re.compile(r'<td class="num" data-sort="[^"]*">([^<]*)</td>')
    assert num.findall(en) == num.findall(zh)


# ---- hostile strings -----------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_strings_stay_text(evil_pages: dict[str, str], lang: str) -> None:
    page = evil_pages[lang]
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    tree = _parse(page)
    assert "img" not in tree.tags
    assert not [a for a in tree.attrs if a[1].startswith("on")]  # no event-handler attribute anywhere
    assert tree.tags.count("script") == 2
    # the text is there, escaped: in HTML text, in SVG text, in attributes (title=, aria-label=)
    esc = htmllib.escape(EVIL)
    assert page.count(esc) > 20
    texts = "".join(tree.text)
    assert EVIL in texts and EVIL_ALL in texts
    assert any(EVIL in v for _t, k, v in tree.attrs if k == "title")  # tooltips of table cells
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert svgs and any(esc in s for s in svgs)
    assert any("<title>" in s and esc in s for s in svgs)  # win-map tooltips
    # the embedded JSON cannot close its <script>, and parses back to the same view
    data = tree.scripts[0][1]
    assert "</" not in data and "<" not in data
    assert ReportView.model_validate(json.loads(data)) == hostile_view()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_page_has_all_sections(evil_pages: dict[str, str], lang: str) -> None:
    page = evil_pages[lang]
    for sid in (
        "provenance",
        "core",
        "plots",
        "winners",
        "findings",
        "anomalies",
        "crossovers",
        "recommendations",
        "checks",
        "next-steps",
        "notes",
        "lossless",
    ):
        assert f'<section id="{sid}">' in page, sid
    assert 'class="banner sim"' in page  # simulated notice, with the time scale
    assert "0.1" in page[page.index('class="banner sim"') :][:400]
    assert "accept_length" in page  # acceptance-length plot (the hostile view knows it)
    # engine flags are code, escaped
    assert "<pre><code>--speculative-config" in page
    # missing cell shows as such
    assert ("missing" if lang == "en" else "缺失") in page


@settings(max_examples=25, deadline=None)
@given(st.text(max_size=40))
def test_json_for_script_round_trips_and_never_closes_the_tag(s: str) -> None:
    text = json.dumps({"x": s, "y": f"</script>{s}<!--"})
    safe = json_for_script(text)
    assert "<" not in safe and ">" not in safe
    assert json.loads(safe) == json.loads(text)


def test_md_inline_only_makes_bare_tags() -> None:
    assert md_inline("a `b` **c**") == "a <code>b</code> <strong>c</strong>"
    assert md_inline(htmllib.escape("`<x onclick=1>`")) == "<code>&lt;x onclick=1&gt;</code>"


def test_unknown_language_names_the_accepted_ones(ref_view: ReportView) -> None:
    with pytest.raises(UsageError, match="en, zh"):
        render_html(ref_view, "fr")


# ---- plot export -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_export_plots(tmp_path: Path, fmt: str) -> None:
    view = hostile_view()  # small: two scenarios; knows acceptance length
    paths = plots.export_plots(view, tmp_path / "plots", fmt, lang="zh")
    names = [
        "metric-total_throughput",
        "metric-mean_tpot_ms",
        "metric-mean_ttft_ms",
        "metric-mean_e2e_latency_ms",
        "winmap",
        "accept_length",
    ]
    assert [p.name for p in paths] == [f"{k}.{fmt}" for k in names]
    for p in paths:
        head = p.read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n" if fmt == "png" else head.startswith(b"<?xml")
        assert p.stat().st_size > 5000
    with pytest.raises(UsageError, match="png, svg"):
        plots.export_plots(view, tmp_path, "jpg")


def test_sparse_views_render() -> None:
    """No cells at all, or one config (nothing to compare): sections drop out, nothing crashes."""
    h = hostile_view()
    empty = h.model_copy(
        update={
            "cells": [], "winners": [], "verdicts": [], "compare": None, "gaps": [], "anomalies": [],
            "crossovers": [], "recommendations": [], "schedule": [], "checks": [], "findings": [],
            "class_best": [], "lossless": None, "next_steps": [], "notes": [],
        }
    )  # fmt: skip
    page = render_html(empty, "zh")
    assert "<svg" not in page and '<section id="core">' in page and '<section id="winners">' not in page
    one = h.model_copy(
        update={
            "configs": h.configs[:1],
            "cells": [c for c in h.cells if c.config == h.configs[0].label],
            "winners": [],
            "compare": None,
        }
    )
    page = render_html(one, "en")
    keys = re.findall(r'<figure class="plot" id="fig-[^"]+" data-plot="([^"]+)"', page)
    assert "winmap" not in keys and "metric-total_throughput" in keys and "accept_length" in keys
