"""Terminal tables at 80 columns never cut a number (issue 28 item 8): `report --format table` cut every
cell ("c…", "1…") and `sim predict` its numbers ("17,…"); now columns stack, headers wrap, and a row
that fits nowhere becomes a block of "header: value" lines."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from specsweep.cli import main
from specsweep.console.table import fit
from specsweep.report import build_view
from specsweep.report.display import value_text
from specsweep.report.table import print_table


def _tokens(text: str) -> set[str]:
    """Every cell of a rendered table (box characters and spaces stripped)."""
    return {t.strip() for line in text.splitlines() for t in re.split(r"[│┃|]", line) if t.strip()}


@pytest.fixture(scope="module")
def view_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wide")
    for k, f in ((3, 1.0), (5, 1.31)):
        lines = [json.dumps({
            "backend": "sglang", "dataset_name": "random", "tag": scen, "max_concurrency": c, "request_rate": "inf",
            "completed": 640, "duration": 123.456, "request_throughput": 17.123 * f, "output_throughput": 17654.32 * f,
            "total_throughput": 123456.78 * f, "mean_e2e_latency_ms": 12345.67 / f, "p95_e2e_latency_ms": 23456.78,
            "p99_e2e_latency_ms": 34567.89, "mean_ttft_ms": 1234.56, "p99_ttft_ms": 4567.89, "mean_tpot_ms": 45.67,
            "p99_tpot_ms": 98.76, "accept_length": 2.5,
        }) for scen in ("long_context_probe", "generation_standard") for c in (1, 128)]  # fmt: skip
        src = base / f"st{k}.jsonl"
        src.write_text("\n".join(lines) + "\n", encoding="utf-8")
        args = ["import", "sglang", str(src), "--label", f"DSpark(st={k})", "--method", "dspark"]
        assert main([*args, "--param", f"spec_tokens={k}", "-o", str(base / "res")]) == 0
    return base / "res"


@pytest.mark.parametrize("width", [80, 60])
def test_report_table_fits_the_terminal_and_keeps_every_value(view_dir: Path, width: int) -> None:
    view = build_view([view_dir], "sweep", method="dspark")
    buf = io.StringIO()
    print_table(view, "en", Console(file=buf, width=width, color_system=None))
    out = buf.getvalue()
    assert max(len(line) for line in out.splitlines()) <= width
    assert "…" not in out
    cells = _tokens(out)
    for c in view.cells:
        for k in view.core_columns:
            assert value_text(view, c, k, "en") in cells, (c.scenario, c.concurrency, k)
        assert c.scenario in cells


def test_sim_predict_table_never_cuts_a_number(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specsweep.commands.sim import _print_table

    row = {"max_concurrency": 128, "num_prompts": 2048, "total_throughput": 171234.5, "output_throughput": 17345.6,
           "request_throughput": 123.45, "mean_ttft_ms": 1234.5, "p99_ttft_ms": 4567.8, "mean_tpot_ms": 12.34,
           "mean_itl_ms": 11.22, "mean_e2e_latency_ms": 23456.0, "accept_length": 2.74, "repeats": 3,
           "spread": {"total_throughput": {"sd": 1712.3}, "mean_tpot_ms": {"sd": 0.5}}}  # fmt: skip
    monkeypatch.setenv("COLUMNS", "80")
    _print_table("v4flash-dspark-st5", "stress_standard", [row])
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    cells = _tokens(out)
    for want in (
        "171,234 +-1.0%",
        "17,346",
        "123.45",
        "1234.5",
        "4567.8",
        "12.34 +-4.1%",
        "11.22",
        "23456",
        "2.74",
    ):
        assert want in cells, want


def test_rows_that_fit_no_table_become_blocks() -> None:
    out = io.StringIO()
    Console(file=out, width=24, color_system=None).print(
        fit(
            ["Scenario", "Total tok/s", "P99 TTFT(ms)"],
            [["a_very_long_scenario_name", "123456.78", "4567.89"]],
            24,
        )
    )
    lines = out.getvalue().splitlines()
    assert "Total tok/s: 123456.78" in lines and "P99 TTFT(ms): 4567.89" in lines
    assert max(len(line) for line in lines) <= 25  # only the unbreakable name may pass the width
