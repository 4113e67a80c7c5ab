"""SIGTERM during the report phase: exit 130 like anywhere else in a run, no half set of reports,
and `specsweep report RUN_DIR` writes them later."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specsweep.store.run_dir import RunDir
from tests.patched_run import run_patched

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

# Runs `specsweep run` through cli.main, with write_report wrapped to SIGTERM this process right
# after report.md is written (deterministic: the signal lands between the two reports).
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import specsweep.report as rep
    from specsweep.cli import main

    real = rep.write_report

    def write_report(view, path, fmt="md", lang="en"):
        out = real(view, path, fmt, lang)
        if fmt == "md":
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    rep.write_report = write_report
    sys.exit(main(sys.argv[1:]))
    """
)


def test_sigterm_while_writing_reports_exits_130(tmp_path: Path) -> None:
    exp = {
        "name": "reportsig",
        "servers": [{"name": "A", "kind": "sim", "profile": "toy", "time_scale": 20}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 3},
        "report": {"formats": ["md", "html"]},
    }
    p, results = run_patched(tmp_path, exp, SCRIPT, timeout=100)
    assert p.returncode == 130, (p.returncode, p.stderr[-2000:])
    (run,) = results.iterdir()
    rd = RunDir.open(run)
    assert rd.manifest["status"] == "finished"  # every cell is stored; only the reports are missing
    # stored (a 20x time-scaled sim's sub-ms chunks may be ruled invalid by the client's self-check on
    # a busy host: a measured row all the same; validity is not what this test is about)
    assert [r["status"] for r in rd.summary()] in (["ok"], ["invalid"])
    # cleanly absent: not report.md without report.html, no temporary file
    left = sorted(x.name for x in run.iterdir() if x.name.startswith(("report", ".report")))
    assert left == [], left
    assert "reports" in p.stderr and f"specsweep report {run}" in p.stderr, p.stderr[-2000:]
    # ... and they can be written afterwards
    out = run / "report.md"
    q = subprocess.run(
        [sys.executable, "-m", "specsweep", "report", str(run), "-o", str(out)],
        capture_output=True, text=True, timeout=100, check=False,
    )  # fmt: skip
    assert q.returncode == 0, q.stderr[-2000:]
    assert out.read_text().startswith("#")
