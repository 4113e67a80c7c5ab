"""Issue 38, defect 8: a FIFO planted in a run dir (``logs/X.log``, ``launches.jsonl``) made
``run --resume`` hang forever, or fail the remaining cells one by one. Every file the run dir
should hold is checked first: regular files only, else one clear error naming it, at once. A real
FIFO and the real CLI in a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir
from specsweep.store.run_dir import LAUNCHES, log_file_name

from ..orchestrate.helpers import fake_argv

pytestmark = [pytest.mark.timeout(60), pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")]


def _run_dir(tmp_path: Path) -> Path:
    data: dict[str, Any] = {
        "name": "fifo",
        "servers": [{"name": "s", "label": "s", "kind": "command", "argv": fake_argv()}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 10, "stop_s": 2},
        "report": {"enabled": False},
    }
    return create_run_dir(plan_experiment(parse_experiment(data)), tmp_path / "results", None).path


@pytest.mark.parametrize("planted", ["log", "launches"])
def test_resume_refuses_a_fifo_up_front(planted: str, tmp_path: Path) -> None:
    rd = _run_dir(tmp_path)
    (rd / "logs").mkdir(exist_ok=True)
    target = rd / "logs" / log_file_name("s") if planted == "log" else rd / LAUNCHES
    os.mkfifo(target)
    cmd = [sys.executable, "-m", "specsweep", "run", "--resume", str(rd), "--quiet"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("run --resume hung on a FIFO")
    assert p.returncode != 0, p.stderr[-2000:]
    lines = [x for x in p.stderr.splitlines() if x.startswith("specsweep: error:")]
    assert len(lines) == 1 and "cannot resume" in lines[0] and "a FIFO" in lines[0], p.stderr[-2000:]
    assert target.name in lines[0]
    assert "Traceback" not in p.stderr
    assert not (rd / "summary.jsonl").exists(), "no cell may have run"
