"""Markdown with strings from outside, as a CommonMark + GFM-table renderer (markdown-it) builds it
(issue 34): no live HTML and no link however the string is made, wherever the renderer puts it (in a
code span, outside one, in a table cell); and no escape that shows (`&gt;`, a backslash in a code
span) where the text needs none."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from specsweep.console.md_inert import inert
from specsweep.console.terminal import md_inline

MD = MarkdownIt("commonmark").enable("table")
HOSTILE = st.text(alphabet="<>[]()`\\|&;#!/:@=x 1\n", max_size=24)


def _page(a: str, b: str) -> str:
    """Two outside strings where the report puts them: in code spans, in prose, in table cells."""
    a, b = md_inline(a), md_inline(b)
    return "\n".join([
        f"# {a} report", "", f"- Compared: `{a}` vs `{b}`", "",
        "| Scenario | Config | Gain |", "|---|---|---:|", f"| {a.replace('|', chr(92) + '|')} | `{b}` | 3% |",
        "", f"1. Deploy `{a}` for {b} c=1, 2", f"2. Re-run `{b}` (c > 3, ratio < 1)", "",
        f"> A ratio < 1 means {a} is faster", "",
    ])  # fmt: skip


def _inline(md: str) -> list[object]:
    tokens = MD.parse(md)
    return [*tokens, *(t for b in tokens for t in (b.children or []))]


@settings(max_examples=200, deadline=None)
@given(HOSTILE, HOSTILE)
@example("", "\\<x")  # a backslash before "<": not every renderer reads it as CommonMark does
def test_no_outside_string_becomes_html_or_a_link(a: str, b: str) -> None:
    md = inert(_page(a, b))
    kinds = {t.type for t in _inline(md)}  # type: ignore[attr-defined]
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}, md
    assert "<" + "x" not in md and "</" not in md and "<!" not in md and "<@" not in md


def test_what_needs_no_escape_shows_as_written() -> None:
    md = inert(_page("llmd[deployment=base]", "a->b & c"))
    assert "&gt;" not in md and "&amp;" not in md and "&lt;" not in md
    assert "(c > 3, ratio < 1)" in md and "> A ratio < 1 means" in md
    code = [t.content for t in _inline(md) if t.type == "code_inline"]  # type: ignore[attr-defined]
    assert "llmd[deployment=base]" in code and "a->b & c" in code  # no backslash shows in a code span
    assert "\\[deployment=base\\]" in md  # outside a code span the escape stays (no link forms)


def test_markup_and_entities_from_outside_show_as_text() -> None:
    md = inert(_page("<script>alert(1)</script>", "&lt;b&gt;"))
    rendered = MD.render(md)
    assert "<script>" not in rendered and "&lt;script&gt;alert(1)" in rendered
    assert "&amp;lt;b&amp;gt;" in rendered  # the entity as typed, not the tag it names


def test_an_unclosed_backtick_opens_no_code_span_across_lines() -> None:
    # line 1 leaves a backtick open; a renderer would close it on line 2 and read "<img" outside a span
    md = inert("- x `" + md_inline("a") + "\n  b` <img src=x onerror=1> `c`")
    assert "html_inline" not in {t.type for t in _inline(md)}  # type: ignore[attr-defined]
    assert "\\`" in md
