"""A report library that cannot be imported is a bug: the report phase fails loudly, instead of
ending the run without reports and an INFO line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specsweep.loader import parse_experiment, plan_of
from specsweep.orchestrate import create_run_dir, write_reports


def test_broken_report_import_fails_the_report_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_of(parse_experiment({
        "name": "r", "servers": [{"name": "sim", "kind": "sim", "profile": "toy"}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}],
    }))  # fmt: skip
    rd = create_run_dir(plan, tmp_path)
    monkeypatch.setitem(sys.modules, "specsweep.report", None)  # import specsweep.report -> ImportError
    with pytest.raises(ImportError, match=r"specsweep\.report"):
        write_reports(rd, plan)
    assert not list(rd.path.glob("report.*"))
