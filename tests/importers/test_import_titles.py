"""The title of a report of imported results names what was compared (issue 34 item 9): the real
llm-d file read "# none `deployment` comparison report" (the method given to import, not the label)."""

from __future__ import annotations

from pathlib import Path

from specsweep.importers import ImportOptions, run_import
from specsweep.report import build_view, render
from tests.importers.realformats import SG_2025, jsonl

FIX = Path(__file__).parent / "fixtures"


def test_imported_configs_of_one_label_are_titled_by_it(tmp_path: Path) -> None:
    src = FIX / "vllm/llmd-deployments/results.json"
    run_import("vllm", [src], tmp_path / "res", ImportOptions(label="llmd", method="none"))
    view = build_view([tmp_path / "res"], "auto")
    assert render(view, "md", "en").splitlines()[0] == "# llmd `deployment` comparison report"
    assert render(view, "md", "zh").splitlines()[0] == "# llmd `deployment` 对比报告"
    assert " c=0" not in render(view, "md", "en")  # open-loop cells are c=∞ in the advice too


def test_imported_configs_of_different_labels_are_titled_by_them(tmp_path: Path) -> None:
    for label, tput in (("base-a", 1000.0), ("base-b", 1100.0)):
        src = jsonl(tmp_path / f"{label}.jsonl", {**SG_2025, "output_throughput": tput})
        run_import("sglang", [src], tmp_path / "res", ImportOptions(label=label, method="none"))
    view = build_view([tmp_path / "res"], "auto")
    assert view.kind == "sweep"
    assert render(view, "md", "en").splitlines()[0] == "# base-a vs base-b configuration comparison report"
