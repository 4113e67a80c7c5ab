"""A plan's Markdown shows labels from outside as text: no live link, no row split by a newline, no
terminal control byte (issue 27, item 12, for `plan -o plan.md` as for the reports)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from specsweep.cli import main
from specsweep.plan.render import to_markdown
from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

REPO = Path(__file__).resolve().parents[2]
EVIL = "st3[click](http://evil.example)\n| injected | row |\x1b[31m\x07"

pytestmark = pytest.mark.slow  # plans on the reference results (a few seconds)


@pytest.fixture(scope="module")
def plan_view(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("plan")
    csv = find_reference_csv()
    assert csv is not None
    results = write_results_dir(reference_rows(csv), tmp_path / "results")
    out = tmp_path / "plan.json"
    traffic = str(REPO / "examples" / "traffic-small.yaml")
    rc = main(["plan", str(results), "--traffic", traffic, "--format", "json", "-o", str(out)])
    assert rc == 0
    view: dict[str, Any] = json.loads(out.read_text())
    return view


def test_code_spans_in_plan_markdown_show_no_escapes(plan_view: dict[str, Any]) -> None:
    """plan.md's router text shows `"tags": ["long"]` as written: before, the bracket escapes meant for
    prose showed as backslashes inside the code span (issue 34)."""
    md = to_markdown(plan_view)
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    code = [t.content for b in tokens for t in (b.children or []) if t.type == "code_inline"]
    assert '"tags": ["long"]' in code
    assert not [c for c in code if "\\" in c]


def test_labels_in_plan_markdown_are_inert(plan_view: dict[str, Any]) -> None:
    view = plan_view
    text = json.dumps(view)
    label = view["options"][0]["pools"][0]["config"]
    view = json.loads(text.replace(json.dumps(label)[1:-1], json.dumps(EVIL)[1:-1]))
    view.pop("router", None)  # its YAML is yaml.safe_dump's (quoted, escaped) inside a fenced block
    md = to_markdown(view)
    assert EVIL not in md and not re.search(r"(?<!\\)\]\(http://evil", md)  # no live link
    assert "\x1b" not in md and "\x07" not in md
    assert "\\[click\\]" in md and "\\n| injected" in md  # shown, escaped
    table_rows = [line for line in md.splitlines() if line.startswith("|")]
    assert not any(line.startswith("| injected") for line in table_rows)
