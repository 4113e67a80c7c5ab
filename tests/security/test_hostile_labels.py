"""Issue 20, items 7 and 13: labels, errors and log tails are text, never terminal markup or control
sequences; labels that differ only in what a file name cannot hold get log files of their own."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from specsweep.commands.run import LiveObserver, QuietObserver
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir, execute
from specsweep.store.run_dir import log_file_name

from ..orchestrate.helpers import fake_argv
from ..orchestrate.test_grid import StandIn

HOSTILE_LABEL = "cfg [/INST] [bold]x[/bold] \x1b[31mred\x1b[0m"
ROW = {"label": HOSTILE_LABEL, "scenario": "s[/b]", "max_concurrency": 1, "repeat": 0, "status": "failed",
       "error": "server died\n[/INST] <</SYS>> \x1b[2J", "total_throughput": None}  # fmt: skip


def _events(obs: Any) -> None:
    obs("run_start", {"todo": 2, "finished": 0})
    obs("server_start", {"label": HOSTILE_LABEL, "restart": False})
    obs("server_failed", {"label": HOSTILE_LABEL, "error": "exited\n--- tail ---\n[/INST] [red]oops\x1b[0m"})
    obs("server_ready", {"label": HOSTILE_LABEL, "url": "u", "startup_s": 1.0, "version": "[/v]"})
    obs("cell_done", {"row": ROW, "cell": None, "repeat": 0})


def test_live_display_shows_markup_as_text() -> None:
    obs = LiveObserver()
    out = io.StringIO()
    obs.console = Console(file=out, force_terminal=True, width=300, color_system=None)
    try:
        _events(obs)  # a MarkupError here aborted interactive runs
        obs.console.print(obs._render())
    finally:
        obs.close()
    text = out.getvalue()
    assert "[/INST]" in text and "[bold]x[/bold]" in text  # shown as written
    assert "\x1b[31m" not in text and "\x1b[2J" not in text  # no control sequence from a label or log
    assert "\\x1b[31m" in text


def test_quiet_lines_escape_control_characters(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="specsweep.run"):
        obs = QuietObserver()
        _events(obs)
    assert "\x1b" not in caplog.text.replace("\\x1b", "") and "\\x1b[31m" in caplog.text


def test_labels_that_differ_in_punctuation_or_cjk_get_their_own_logs(tmp_path: Path) -> None:
    labels = ["X:1", "X/1", "模型", "测试"]
    assert len({log_file_name(x) for x in labels}) == 4
    assert log_file_name("X:1") == log_file_name("X:1")  # stable across runs and resumes
    data: dict[str, Any] = {
        "name": "labels",
        "servers": [
            {"name": f"s{i}", "label": x, "kind": "command", "argv": [*fake_argv(), "--tag", str(i)]}
            for i, x in enumerate(labels)
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 5},
        "report": {"enabled": False},
    }
    plan = plan_experiment(parse_experiment(data))
    rd = create_run_dir(plan, tmp_path, None)
    execute(plan, rd, bench_fn=StandIn(0.01))
    logs = sorted((rd.path / "logs").iterdir())
    assert len(logs) == 4
    for x in labels:
        text = (rd.path / "logs" / log_file_name(x)).read_text()
        assert text.count("===== specsweep: launch") == 1 and f"launch 1 of {x} at" in text
        assert rd.manifest["servers"][x]["log"] == log_file_name(x)


def test_the_log_header_holds_no_raw_control_character(tmp_path: Path) -> None:
    """Issue 38, defect 13: the launch header wrote a label's ESC, BEL and NUL raw into logs/*.log."""
    label = "lab\x1b[31m\x07\u202e"
    data: dict[str, Any] = {
        "name": "ctl",
        "servers": [{"name": "s", "label": label, "kind": "command", "argv": fake_argv()}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 5},
        "report": {"enabled": False},
    }
    plan = plan_experiment(parse_experiment(data))
    rd = create_run_dir(plan, tmp_path, None)
    execute(plan, rd, bench_fn=StandIn(0.01))
    text = (rd.path / "logs" / log_file_name(label)).read_text()
    header = text[: text.index("===== env")]
    assert not [c for c in ("\x1b", "\x07", "\u202e") if c in header], header
    assert "launch 1 of lab\\x1b[31m\\x07\\u202e at" in header
