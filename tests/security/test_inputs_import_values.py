"""Imported values that no run can produce are refused, naming the field (issue 27, item 6).

Before: a file claiming 1e300 tok/s and a 1e-300 ms TTFT was imported, and the report said
"Serve `absurd` by default" with a 300-digit gain; p99 below the median was accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specsweep.cli import main

from ..importers.realformats import SG_2025, VLLM_2024, document, jsonl


def _import(
    tmp_path: Path, obj: dict[str, Any], capsys: pytest.CaptureFixture[str], kind: str = "sglang"
) -> tuple[int, str]:
    src = jsonl(tmp_path / "r.jsonl", obj) if kind == "sglang" else document(tmp_path / "r.json", obj)
    args = [
        "import",
        kind,
        str(src),
        "--label",
        "absurd",
        "--method",
        "x",
        "--scenario",
        "s",
        "-o",
        str(tmp_path / "res"),
    ]
    code = main(args)
    return code, capsys.readouterr().err


CASES = {
    "1e300 tok/s": ({"output_throughput": 1e300}, "output_throughput", "tokens/s cannot be"),
    "1e300 total tok/s": ({"total_throughput": 1e300}, "total_throughput", "tokens/s cannot be"),
    "1e12 req/s": ({"request_throughput": 1e12}, "request_throughput", "requests/s cannot be"),
    "1e-300 ms TTFT": ({"mean_ttft_ms": 1e-300}, "mean_ttft_ms", "a ttft is at least"),
    "1e-300 ms median E2E": ({"median_e2e_latency_ms": 1e-300}, "median_e2e_latency_ms", "at least"),
    "1e-300 ms TPOT": ({"mean_tpot_ms": 1e-300}, "mean_tpot_ms", "a tpot is at least"),
    "p99 below the median": ({"p99_ttft_ms": 30.0}, "p99_ttft_ms", "below median_ttft_ms"),
    "p90 above p99": ({"p90_e2e_latency_ms": 5000.0}, "p99_e2e_latency_ms", "below p90_e2e_latency_ms"),
    "mean above max": ({"mean_itl_ms": 99.0}, "mean_itl_ms", "outside min..max"),
    "latency longer than the run": ({"p99_e2e_latency_ms": 1e8}, "p99_e2e_latency_ms", "longer than the whole run"),
    "std 1e300": ({"std_ttft_ms": 1e300}, "std_ttft_ms", "at most"),
    "zero duration": ({"duration": 0.0}, "duration", "cannot be the duration"),
    "1e300 s duration": ({"duration": 1e300}, "duration", "cannot be the duration"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_impossible_values_are_refused_naming_the_field(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    over, field, why = CASES[case]
    code, err = _import(tmp_path, {**SG_2025, **over}, capsys)
    assert code == 2, err
    assert f"r.jsonl:1, field '{field}'" in err and why in err, err
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())  # nothing written


def test_vllm_custom_percentiles_are_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--metric-percentiles 25,50,75``: a p75 below the median cannot be."""
    obj = {**VLLM_2024, "p25_ttft_ms": 40.0, "p75_ttft_ms": 45.0}
    code, err = _import(tmp_path, obj, capsys, kind="vllm")
    assert code == 2 and "field 'p75_ttft_ms'" in err and "below median_ttft_ms" in err, err


@pytest.mark.parametrize("obj", [SG_2025, VLLM_2024, {**SG_2025, "mean_tpot_ms": 0.0, "median_itl_ms": 0.0}])
def test_real_results_still_import(
    obj: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real key sets and values pass; a 0 TPOT / ITL (one output token; chunks read together) is real."""
    kind = "vllm" if obj is VLLM_2024 else "sglang"
    code, err = _import(tmp_path, obj, capsys, kind=kind)
    assert code == 0, err


def test_the_bounds_leave_room_for_real_deployments() -> None:
    """A cluster of 1,000 GPUs at 50k tok/s prefill each is 5e7 tok/s: well inside the bound."""
    from specsweep.importers import plausible

    assert plausible.MAX_TOKENS_PER_S >= 1e8 and plausible.MIN_RESPONSE_MS <= 0.01
