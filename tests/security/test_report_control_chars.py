"""Reports of imported results with hostile tags and labels (issue 27, item 12).

Before: ``report --format table`` printed raw ESC bytes of an imported tag, Markdown to stdout
printed a BEL; a label with a newline split its report.md table row; ``[x](http://...)`` in a label
became a live link; ``report -o X.html`` without ``--format`` wrote Markdown into the .html file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from specsweep.cli import main

from ..importers.realformats import SG_2025, consistent, jsonl

TAG = "chat\x1b[31mred\x07bell\x00nul"
LABELS = ["line\nbreak", "[click](http://evil.invalid)", "rtl\u202eexe.txt\u2066iso"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-report")
    for i, label in enumerate(LABELS):
        src = jsonl(root / f"r{i}.jsonl", consistent(SG_2025, tag=TAG, total_throughput=5000.0 + 500 * i))
        argv = ["import", "sglang", str(src), "--label", label, "--method", f"m{i}", "-o", str(root / "res")]
        assert main(argv) == 0
    return root / "res"


def _report(results: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    assert main(["report", str(results), "--kind", "compare", *flags]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_no_control_character_reaches_stdout(
    results: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    out = _report(results, capsys, "--format", fmt)
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b" in out and "\\x07" in out  # shown, escaped


def test_no_bidi_control_reaches_markdown_on_stdout(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38, defect 13: U+202E came out raw (the label read "rtlexe.txt" reversed)."""
    out = _report(results, capsys, "--format", "md")
    assert "\u202e" not in out and "\u2066" not in out
    assert "rtl\\u202eexe.txt\\u2066iso" in out  # shown, escaped


@pytest.mark.slow  # the HTML report draws its plots (~10 s)
def test_no_raw_control_character_in_report_html(results: Path, tmp_path: Path) -> None:
    """Issue 38, defect 13: report.html held raw ESC, BEL and NUL (and bidi controls) of a tag."""
    out = tmp_path / "r.html"
    assert main(["report", str(results), "--kind", "compare", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert not [c for c in ("\x1b", "\x07", "\x00", "\u202e", "\u2066") if c in text]
    assert "\\x1b" in text and "\\u202e" in text


def test_a_newline_in_a_label_does_not_split_a_table_row(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _report(results, capsys)
    assert "line\\nbreak" in out
    assert not any(line.rstrip().endswith("line") or line.startswith("break") for line in out.splitlines())
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert all(line.rstrip().endswith("|") for line in rows), [
        x for x in rows if not x.rstrip().endswith("|")
    ]


def test_markdown_link_syntax_in_a_label_is_escaped(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No link in what a Markdown renderer builds (GFM tables included); outside code spans the label
    is shown escaped, inside them (shown verbatim, where no link forms) as written, without the
    backslashes (issue 34)."""
    out = _report(results, capsys)
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    inline = [t for b in tokens for t in (b.children or [])]
    assert not [t for t in inline if t.type == "link_open"]
    assert not [t for t in [*tokens, *inline] if t.type in ("html_inline", "html_block")]
    assert "\\[click\\](http://evil.invalid)" in out
    assert "`[click](http://evil.invalid)`" in out
    code = [t.content for t in inline if t.type == "code_inline"]
    assert "[click](http://evil.invalid)" in code
    assert not [c for c in code if "\\[" in c or "\\]" in c]  # no escape shows inside a code span


@pytest.mark.parametrize(
    ("suffix", "start"),
    [pytest.param(".html", "<!doctype html", marks=pytest.mark.slow), (".json", "{"), (".md", "# ")],
)
def test_the_output_suffix_picks_the_format(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, start: str
) -> None:
    out = tmp_path / f"report{suffix}"
    assert main(["report", str(results), "--kind", "compare", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").lstrip().lower().startswith(start)


def test_an_explicit_format_still_wins(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(results), "--kind", "compare", "--format", "md", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("# ")
