"""A report that cannot be written is a failure, never a silent success (issue 24): a report library
that cannot be imported, or a module it needs that is missing (scipy, as on a plain `pip install`
when it sat in the test extra), makes the report phase fail with the reason; `specsweep run` exits
with EXIT_REPORT_FAILED, prints the command that writes the reports later, and keeps every cell."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from specsweep.errors import EXIT_REPORT_FAILED
from specsweep.experiment.loader import parse_experiment, plan_of
from specsweep.orchestrate import ReportsFailed, create_run_dir, write_reports
from tests.patched_run import run_patched


def test_broken_report_import_fails_the_report_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_of(parse_experiment({
        "name": "r", "servers": [{"name": "sim", "kind": "sim", "profile": "toy"}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}],
    }))  # fmt: skip
    rd = create_run_dir(plan, tmp_path)
    monkeypatch.setitem(sys.modules, "specsweep.report", None)  # import specsweep.report -> ImportError
    with pytest.raises(ReportsFailed, match=r"specsweep\.report") as e:
        write_reports(rd, plan)
    assert e.value.exit_code == EXIT_REPORT_FAILED and e.value.written == []
    assert f"specsweep report {rd.path}" in str(e.value)
    assert not list(rd.path.glob("report.*"))


# The real CLI in a child process in which scipy cannot be imported (as in a venv without it). The
# benchmark is a stand-in with fixed, valid measurements (two configs 2x apart: the report compares
# them, which needs scipy's t distribution), so no timing on a loaded host can change the outcome.
SCRIPT = """
import sys
sys.modules["scipy"] = None
from specsweep.client.bench_types import BenchOutcome
from specsweep.executors import job
from specsweep.measure.records import RequestRecord

def stand_in():
    async def bench(cfg):
        tput = 100.0 if cfg.tag.startswith("A.") else 200.0
        rec = RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=3, output_len=2, scheduled_ns=1)
        return BenchOutcome(result={"completed": cfg.num_prompts, "total_throughput": tput}, records=[rec])
    return bench

job.default_bench_fn = stand_in
from specsweep.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _exp(name: str, **more: Any) -> dict[str, Any]:
    """Two sim configs of different methods on one cell, measured by the stand-in."""
    return {
        "name": name,
        "servers": [
            {"name": "A", "kind": "sim", "profile": "toy", "method": "m"},
            {"name": "B", "kind": "sim", "profile": "toy", "method": "m2"},
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 3},
        **more,
    }


@pytest.mark.slow
def test_run_without_a_module_the_report_needs_exits_non_zero(tmp_path: Path) -> None:
    p, results = run_patched(tmp_path, _exp("noscipy"), SCRIPT, timeout=120)
    assert p.returncode == EXIT_REPORT_FAILED, (p.returncode, p.stderr[-2000:])
    (run,) = results.iterdir()
    assert "scipy" in p.stderr and f"specsweep report {run}" in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert not list(run.glob("report.*"))
    assert len((run / "summary.jsonl").read_text().splitlines()) == 2  # the measured cells are kept


@pytest.mark.slow
def test_a_design_that_meets_a_missing_module_keeps_its_runs_and_says_how_to_resume(tmp_path: Path) -> None:
    """The adaptive design's looks need scipy after the first pass: a broken install fails there
    with one line naming the module and the resume command, exit 2, and the first pass stays."""
    p, results = run_patched(
        tmp_path, _exp("noscipy-design", adaptive={"max_repeats": 3}), SCRIPT, timeout=120
    )
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    (run,) = results.iterdir()
    assert "'scipy'" in p.stderr and f"specsweep run --resume {run}" in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert len((run / "summary.jsonl").read_text().splitlines()) == 2  # the first pass is kept
