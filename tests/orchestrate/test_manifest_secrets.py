"""The manifest keeps secrets redacted; resume gets them back from the unchanged experiment file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specsweep.config import load_experiment
from specsweep.errors import ConfigError
from specsweep.orchestrate import create_run_dir, load_run_plan


def _write(path: Path, token: str, conc: int = 1) -> None:
    path.write_text(yaml.safe_dump({
        "name": "sec",
        "servers": [{"name": "s", "kind": "sim", "profile": "toy", "env": {"HF_TOKEN": token},
                     "args": ["--api-key", token]}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [conc]}],
    }))  # fmt: skip


def test_manifest_redacted_and_resume_reads_the_file(tmp_path: Path) -> None:
    f = tmp_path / "exp.yaml"
    _write(f, "sk-very-secret")
    _, plan = load_experiment(f)
    rd = create_run_dir(plan, tmp_path / "res", str(f))
    raw = (rd.path / "manifest.json").read_text()
    assert "sk-very-secret" not in raw and "***" in raw
    resumed = load_run_plan(rd)
    assert resumed.configs[0].spec.env["HF_TOKEN"] == "sk-very-secret"
    _write(f, "sk-rotated")  # a rotated key is fine: only the secret differs
    assert load_run_plan(rd).configs[0].spec.env["HF_TOKEN"] == "sk-rotated"
    _write(f, "sk-rotated", conc=8)  # another experiment: a resume must not guess
    with pytest.raises(ConfigError, match="changed since the run started"):
        load_run_plan(rd)
    f.unlink()
    with pytest.raises(ConfigError, match="missing"):
        load_run_plan(rd)
