"""Issue 38, the importer defects: a rate its own file contradicts (1), duplicated GuideLLM benchmarks
(6), impossible LLMPerf values (7), dropped values said in an import note (13), repeats only of one
recorded server (14), measurements never taken for server settings (15), AIPerf's public datasets
(16), one cell name per workload in every client (17), truncated files alike in every importer (18).
Real files (fixtures/README.md) and real key sets (realformats.py), changed where the defect needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsweep.cli import main
from specsweep.importers import ImportOptions, run_import
from specsweep.store import find_run_dirs
from tests.importers.realformats import SG_2025, consistent, document, jsonl

FIX = Path(__file__).parent / "fixtures"


def _rows(res: Path) -> list[dict[str, Any]]:
    return [r for rd in find_run_dirs([res]) for r in rd.summary()]


def _fixture(rel: str) -> Any:
    return json.loads((FIX / rel).read_text(encoding="utf-8"))


# ---- 1: a rate that the file's own counts and duration contradict -----------------------------------

# 438 output tokens in 2.74 s is 160 tok/s; the line claims 5e8 (and a total to match it)
LIAR = consistent(SG_2025, tag="chat", completed=4, total_input_tokens=2048, total_output_tokens=438,
                  duration=2.74, total_output_tokens_retokenized=438)  # fmt: skip
LIAR.update(output_throughput=5e8, total_throughput=5e8 + 747.4)


def test_a_contradicted_rate_is_flagged_through_import_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "res"
    honest = jsonl(tmp_path / "base.jsonl", {**SG_2025, "tag": "chat"})
    liar = jsonl(tmp_path / "fast.jsonl", LIAR)
    assert main(["import", "sglang", str(honest), "--label", "base", "--method", "none", "-o", str(res)]) == 0
    assert main(["import", "sglang", str(liar), "--label", "fast", "--method", "eagle", "-o", str(res)]) == 0
    err = capsys.readouterr().err
    assert "contradict" in err and "output_throughput 5e+08" in err and "438 / 2.74 s" in err
    out = tmp_path / "r.json"
    assert main(["report", str(res), "--kind", "compare", "--format", "json", "-o", str(out)]) == 0
    rep = json.loads(out.read_text(encoding="utf-8"))
    fast = [c for c in rep["cells"] if c["config"] == "fast"]
    assert [c["status"] for c in fast] == ["invalid"] and fast[0]["values"]["output_throughput"] is None
    assert not [w for w in rep["winners"] if w.get("winner") == "fast"]
    assert "fast" not in json.dumps(rep["recommendations"])
    (why,) = [a for a in rep["anomalies"] if a["kind"] == "invalid_run"]
    assert "output_throughput 5e+08 contradicts" in why["evidence"]["args"]["reason"]
    md = tmp_path / "r.md"
    assert main(["report", str(res), "--kind", "compare", "--format", "md", "-o", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "contradicts the file's own total_output_tokens / duration" in text
    assert "145" not in text.split("## Throughput winners")[1].split("---")[0]  # no absurd gain


def _aiperf_liar() -> dict[str, Any]:
    obj = _fixture("aiperf/flat-2026-c16/profile_export_aiperf.json")
    obj["output_token_throughput"]["avg"] *= 1000
    return obj


def _genai_liar() -> dict[str, Any]:
    obj = _fixture("genai_perf/streaming-c100/profile_export_genai_perf.json")
    obj["output_token_throughput"]["avg"] *= 1000
    return obj


def _guidellm_liar() -> dict[str, Any]:
    obj = _fixture("guidellm/benchmarks.json")
    obj["benchmarks"][0]["metrics"]["output_tokens_per_second"]["successful"]["mean"] *= 1000
    return obj


def _llmperf_liar() -> dict[str, Any]:
    obj = _fixture("llmperf/anyscale_7b_summary.json")
    obj["results_mean_output_throughput_token_per_s"] *= 1000
    return obj


def _vllm_liar() -> dict[str, Any]:
    obj = json.loads((FIX / "vllm/llmd-deployments/results.json").read_text(encoding="utf-8").splitlines()[0])
    obj["request_throughput"] *= 1000
    return obj


@pytest.mark.parametrize(
    ("kind", "name", "make", "field"),
    [
        ("sglang", "s.jsonl", lambda: LIAR, "output_throughput"),
        ("vllm", "v.json", _vllm_liar, "request_throughput"),
        ("aiperf", "profile_export_aiperf.json", _aiperf_liar, "output_throughput"),
        ("genai-perf", "profile_export_genai_perf.json", _genai_liar, "output_throughput"),
        ("guidellm", "benchmarks.json", _guidellm_liar, "output_throughput"),
        ("llmperf", "x_summary.json", _llmperf_liar, "output_throughput"),
    ],
)
def test_every_importer_flags_a_rate_its_file_contradicts(
    tmp_path: Path, kind: str, name: str, make: Any, field: str
) -> None:
    f = document(tmp_path / name, make())
    out = run_import(kind, [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    (row,) = _rows(tmp_path / "res")
    assert row["status"] == "invalid" and row["invalid_reason"].startswith(f"{field} ")
    assert any("contradict" in w for w in out.warnings)


@pytest.mark.parametrize(
    ("kind", "rel"),
    [
        ("aiperf", "aiperf/records-2025/profile_export_aiperf.json"),
        ("aiperf", "aiperf/flat-2026-c16/profile_export_aiperf.json"),
        ("aiperf", "aiperf/flat-2026-errors/profile_export_aiperf.json"),
        ("genai-perf", "genai_perf/streaming-c100/profile_export_genai_perf.json"),
        ("genai-perf", "genai_perf/non-streaming-c100/profile_export_genai_perf.json"),
        ("guidellm", "guidellm/benchmarks.json"),
        ("llmperf", "llmperf/anyscale_7b_summary.json"),
        ("llmperf", "llmperf/fireworks_7b_summary.json"),
        ("vllm", "vllm/llmd-deployments/results.json"),
    ],
)
def test_real_files_agree_with_themselves(tmp_path: Path, kind: str, rel: str) -> None:
    out = run_import(kind, [FIX / rel], tmp_path / "res", ImportOptions(label="A", method="m"))
    assert {r["status"] for r in _rows(tmp_path / "res")} == {"ok"}
    assert not any("contradict" in w for w in out.warnings)
