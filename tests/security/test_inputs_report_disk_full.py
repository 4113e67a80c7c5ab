"""A disk that fills up while `specsweep run` writes its reports: the run fails (exit 6, errors.py) with a
line that says every cell is stored and how to write the report later; it never ends as a success."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.patched_run import run_patched

pytestmark = pytest.mark.slow

# The real CLI in a child process, with the report writer failing as a full disk does.
SCRIPT = """
import errno, sys
import specsweep.report as rep
def full(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")
rep.write_report = full
from specsweep.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_disk_full_in_the_report_phase_fails_the_run(tmp_path: Path) -> None:
    exp = {
        "name": "diskfull",
        "servers": [{"name": "A", "kind": "sim", "profile": "toy", "time_scale": 20}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 3},
        "report": {"formats": ["md"]},
    }
    p, results = run_patched(tmp_path, exp, SCRIPT, timeout=120)
    assert p.returncode == 6, (p.returncode, p.stderr[-2000:])
    (run,) = results.iterdir()
    assert "disk is full" in p.stderr and f"specsweep report {run}" in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert len((run / "summary.jsonl").read_text().splitlines()) == 1  # the measured cell is kept
