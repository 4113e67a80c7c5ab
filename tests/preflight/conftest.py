from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from specsweep.experiment.config import Plan, plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.preflight import Host

DATA = Path(__file__).with_name("data")


def make_plan(servers: list[dict[str, Any]], concurrency: list[int] | None = None, **top: Any) -> Plan:
    exp = parse_experiment({
        "name": "pf", "servers": servers,
        "workloads": [{"scenarios": ["chat_short"], "concurrency": concurrency or [1, 8]}], **top,
    })  # fmt: skip
    return plan_experiment(exp)


def host(**kw: Any) -> Host:
    """A quiet 16-core host without GPUs, every executable on PATH found (a path: if it is there),
    unless told otherwise."""
    base: dict[str, Any] = {"cpus": 16, "load_1m": 0.2, "governors": ["performance"],
                            "which": lambda exe: shutil.which(exe) if os.sep in exe else f"/usr/bin/{exe}", "run": lambda argv: "1.0.0", "env": {"HOME": "/nonexistent"}}  # fmt: skip
    base.update(kw)
    return Host(**base)


@pytest.fixture
def data() -> Path:
    return DATA
