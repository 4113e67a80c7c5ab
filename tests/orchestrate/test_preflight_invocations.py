"""Each invocation keeps its own pre-flight, and the reports show the ones of the invocations that
measured (issue 28 defect 9): a ``--resume`` with nothing left to run does not replace the host load
seen while measuring."""

from __future__ import annotations

from pathlib import Path

import pytest

from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir, execute
from specsweep.preflight import Host
from specsweep.preflight.checks import of_measurements

EXP = {
    "name": "pfinv",
    "scenarios": {"tiny": {"input_len": 16, "output_len": 8}},
    "servers": [{"name": "toy", "kind": "sim", "profile": "toy", "time_scale": 50.0, "method": "dspark"}],
    "workloads": [{"scenarios": ["tiny"], "concurrency": [1], "num_prompts": 2}],
    "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
    "timeouts": {"ready_s": 60, "stop_s": 10},
    "report": {"formats": ["md"]},
}


def loaded(load: float) -> Host:
    return Host(cpus=2, load_1m=load, governors=["performance"])


def host_loads(checks: list[dict]) -> list[str]:
    return [c["message"].split(" on ")[0] for c in checks if c["check"] == "host_load"]


@pytest.mark.slow
def test_resume_with_nothing_to_run_keeps_the_measuring_preflight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = plan_experiment(parse_experiment(EXP))
    rd = create_run_dir(plan, tmp_path)
    monkeypatch.setattr(Host, "probe", classmethod(lambda cls: loaded(3.4)))
    assert execute(plan, rd).counts  # measured: one cell
    monkeypatch.setattr(Host, "probe", classmethod(lambda cls: loaded(8.2)))
    again = execute(plan, rd)  # --resume: nothing left to run
    assert not again.counts
    m = rd.manifest
    first, second = m["invocations"]
    assert host_loads(first["preflight"]) == ["load average 3.4"] and first["cells_stored"] == 1
    assert host_loads(second["preflight"]) == ["load average 8.2"] and second["cells_stored"] == 0
    assert host_loads(m["preflight"]) == ["load average 3.4"]
    report = (rd.path / "report.md").read_text()
    assert "load average 3.4" in report and "load average 8.2" not in report


def test_measuring_invocations_are_shown_folded() -> None:
    warn = {"check": "host_load", "config": None, "status": "warn", "message": "load average 3.4", "fix": "x"}
    note = {"check": "cpu_threads", "status": "warn", "message": "m", "fix": "f"}
    manifest = {
        "invocations": [
            {"cells_stored": 3, "preflight": [warn, {**note, "config": "A"}, {**note, "config": "B"}]},
            {"cells_stored": 0, "preflight": [{**warn, "message": "load average 8.2"}]},
            {"cells_to_run": 2, "preflight": [warn]},  # running now: it measures
        ],
        "servers": {"A": {"preflight": [{**note, "check": "cpu_affinity", "config": "A", "status": "pass",
                                          "message": "1 thread"}]}},
    }  # fmt: skip
    out = of_measurements(manifest)
    assert [(c["check"], c["config"], c["message"]) for c in out] == [
        ("host_load", None, "load average 3.4"),  # the same finding of two invocations: once
        ("cpu_threads", "A, B", "m"),  # the same finding of two configs: one line naming them
        ("cpu_affinity", "A", "1 thread"),
    ]
    legacy = {"preflight": [warn], "invocations": [{"started_at": "x"}]}
    assert of_measurements(legacy) == [warn]
