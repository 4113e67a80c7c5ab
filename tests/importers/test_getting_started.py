"""docs/getting-started.md's import examples run verbatim, on real result files of each producer
(fixtures/README.md; the sglang lines and the bench sweep folder are real key sets, realformats.py)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from specsweep.cli import main
from tests.importers.realformats import SG_2025, consistent, document, jsonl, sweep_run

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).parent / "fixtures"


def _commands() -> list[str]:
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = text[text.index("## 5. Reports from results you already have") : text.index("## 6.")]
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        lines += [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.startswith("specsweep ")]
    return lines


def _files(d: Path) -> None:
    """The files the examples name, from real files of each producer."""
    jsonl(d / "dspark_st3.jsonl", SG_2025, consistent(SG_2025, max_concurrency=16, total_throughput=6100.0))
    jsonl(
        d / "dspark_st5.jsonl",
        consistent(SG_2025, total_throughput=5600.0),
        {**SG_2025, "max_concurrency": 16},
    )
    shutil.copy(FIX / "vllm/llmd-deployments/results.json", d / "results.json")
    sweep = d / "sweep-results" / "SERVE--max_num_seqs=64-BENCH--max_concurrency=4"
    sweep.mkdir(parents=True)
    runs = [sweep_run(i, 1000.0 + i) for i in range(2)]
    for i, r in enumerate(runs):
        document(sweep / f"run={i}.json", r, indent=4)
    document(sweep / "summary.json", runs, indent=4)
    for name in ("records-2025", "flat-2026-c16"):
        shutil.copytree(FIX / "aiperf" / name, d / "artifacts" / name)
    shutil.copy(FIX / "genai_perf/streaming-c100/profile_export_genai_perf.json", d)
    shutil.copy(FIX / "guidellm/benchmarks.json", d)
    shutil.copytree(FIX / "llmperf", d / "result_outputs")
    shutil.copy(FIX / "aiperf/flat-2026-c16/profile_export_aiperf.json", d)


@pytest.mark.slow  # 9 imports and a report: ~2 s
def test_every_import_example_runs_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cmds = _commands()
    kinds = {shlex.split(c)[2] for c in cmds if shlex.split(c)[1] == "import"}
    assert kinds == {"sglang", "vllm", "aiperf", "genai-perf", "guidellm", "llmperf", "auto"}
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    for cmd in cmds:
        assert main(shlex.split(cmd)[1:]) == 0, cmd
    assert (tmp_path / "clients.md").read_text(encoding="utf-8").count("Comparability") >= 1
