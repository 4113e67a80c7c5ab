"""The live display and the quiet log lines render every event of a real (stand-in bench) grid."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from specsweep.commands.run import LiveObserver, QuietObserver
from specsweep.orchestrate import create_run_dir, execute

from .test_grid import StandIn, make_plan


def test_live_display_shows_finished_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = make_plan(fail_second=True)
    obs = LiveObserver()
    try:
        execute(plan, create_run_dir(plan, tmp_path, None), bench_fn=StandIn(), observer=obs)
    finally:
        obs.close()
    assert obs.progress.tasks[0].completed == 6 and obs.progress.tasks[0].total == 6
    err = capsys.readouterr().err
    assert "A(st=3)" in err and "failed" in err and "server failed: B" in err


def test_quiet_lines(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = make_plan(fail_second=True)
    with caplog.at_level(logging.INFO, logger="specsweep.run"):
        execute(plan, create_run_dir(plan, tmp_path, None), bench_fn=StandIn(), observer=QuietObserver())
    text = caplog.text
    assert "6 benchmark run(s) to do (0 already finished)" in text
    assert "[1/6] A(st=3) chat_short c=1 r0: ok total_tok/s=123.0" in text
    assert "B failed to start" in text and "[6/6] B chat_short c=2 r0: failed" in text
