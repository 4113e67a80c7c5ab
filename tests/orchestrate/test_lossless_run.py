"""An experiment that asks for the losslessness check: each of the two configs answers the same greedy
prompts after its cells; the run dir keeps lossless.json and the report shows the check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from specsweep.errors import ConfigError
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment

pytestmark = pytest.mark.slow

CMD = [sys.executable, "-m", "specsweep"]


def _exp(diverge: float) -> dict[str, object]:
    sim = {"kind": "sim", "profile": "toy", "time_scale": 5.0, "method": "dspark"}
    return {
        "name": "ll",
        "scenarios": {"tiny": {"input_len": 32, "output_len": 8}},
        "servers": [
            {**sim, "name": "base", "method": "none"},
            {**sim, "name": "spec", "args": ["--faults", f"diverge={diverge}"] if diverge else []},
        ],
        "workloads": [{"scenarios": ["tiny"], "concurrency": [2], "num_prompts": 4}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "lossless": {"reference": "base", "num_prompts": 6, "max_tokens": 24},
        "report": {"formats": ["md"], "kind": "compare"},
    }


@pytest.mark.parametrize(("diverge", "identical"), [(0.0, 6), (1.0, 0)])
def test_experiment_lossless_check_in_report(tmp_path: Path, diverge: float, identical: int) -> None:
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(_exp(diverge)))
    r = subprocess.run([*CMD, "run", str(f), "--results-dir", str(tmp_path / "res"), "--quiet"],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    run = next((tmp_path / "res").iterdir())
    ll = orjson.loads((run / "lossless.json").read_bytes())
    assert ll["base_urls"] == ["base", "spec"] and ll["n_prompts"] == 6 and ll["errors"] == 0
    assert ll["identical"] == identical
    if not identical:
        assert all(d["token_index"] is not None for d in ll["divergences"])
    md = (run / "report.md").read_text()
    assert "Losslessness check" in md and "base" in md


def test_lossless_labels_are_checked() -> None:
    bad = _exp(0.0)
    bad["lossless"] = {"reference": "nope"}
    with pytest.raises(ConfigError, match=r"lossless\.reference.*nope"):
        plan_experiment(parse_experiment(bad))
