"""The CLI side: `--executor ray` without Ray names the extra; client.workers in an experiment."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir, execute

pytestmark = pytest.mark.slow


def test_executor_ray_without_ray_names_the_extra(tmp_path: Path, specsweep_cmd: list[str]) -> None:
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray (test)')\n")
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "servers": [{"name": "s", "kind": "sim", "profile": "toy"}],
                                   "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]}))  # fmt: skip
    r = subprocess.run([*specsweep_cmd, "run", str(exp), "--executor", "ray", "--results-dir", str(tmp_path / "r")],
                       capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(fake.parent),
                       "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "--executor ray needs an optional dependency: pip install 'specsweep[ray]'" in r.stderr


def test_experiment_client_workers_split_each_cell(tmp_path: Path) -> None:
    plan = plan_experiment(parse_experiment({
        "name": "w",
        "servers": [{"name": "sim", "kind": "sim", "profile": "toy", "time_scale": 0.25}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [4], "num_prompts": 16}],
        "client": {"workers": 2, "warmup_requests": 2, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 60, "stop_s": 5},
    }))  # fmt: skip
    rd = create_run_dir(plan, tmp_path)
    out = execute(plan, rd, reports=False)
    (row,) = out.rows
    assert row["status"] in ("ok", "invalid") and row["completed"] == 16 and row["workers"] == 2
    recs = [r for r in rd.read_records(row["cell_id"], 0) if not r.is_warmup]
    assert sorted(r.index for r in recs) == list(range(16)) and {r.worker for r in recs} == {0, 1}
