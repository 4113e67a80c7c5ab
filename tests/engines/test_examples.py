"""examples/llamacpp-cpu.yaml and examples/vllm-cpu.yaml: they plan with real speculation flags, and
the llama.cpp one runs end to end with `specsweep run` (the vLLM one: three 1-2 min starts, not here).

The examples name their paths as ${VAR}, expanded from the environment when the file loads (users
`source` engines.env first, as docs/engines.md says).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specsweep.experiment.argv import build_argv
from specsweep.experiment.loader import load_experiment
from tests.engines.helpers import Engines

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAKE_ENV = {
    "LLAMA_SERVER": "/opt/x/llama-server",
    "TINY_MODEL_GGUF": "/opt/x/tiny.gguf",
    "TINY_MODEL_HF": "/opt/x/hf",
    "VLLM_PYTHON": "/opt/x/python",
}


def argvs(name: str) -> dict[str, list[str]]:
    _, plan = load_experiment(EXAMPLES / name)
    return {cfg.label: build_argv(cfg, 8000) or [] for cfg in plan.configs}


@pytest.fixture
def fake_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in FAKE_ENV.items():
        monkeypatch.setenv(k, v)


@pytest.mark.usefixtures("fake_paths")
def test_llamacpp_example_plans_off_k3_k5() -> None:
    a = argvs("llamacpp-cpu.yaml")
    assert len(a) == 3
    off = [v for v in a.values() if "--spec-type" not in v]
    assert len(off) == 1 and off[0][:3] == ["/opt/x/llama-server", "-m", "/opt/x/tiny.gguf"]
    ks = sorted(v[v.index("--spec-ngram-simple-size-m") + 1] for v in a.values() if "--spec-type" in v)
    assert ks == ["3", "5"]
    for v in a.values():
        assert "--metrics" in v and "--draft-max" not in v  # removed from this llama.cpp
        # sound on 2 cores (issue 19 item 14): one engine thread, pinned away from the client's core
        assert v[v.index("--threads") + 1] == "1" and v[v.index("--threads-batch") + 1] == "1"
        assert v[v.index("--cpu-range") + 1] == "1-1" and v[v.index("--cpu-strict") + 1] == "1"
    text = (EXAMPLES / "llamacpp-cpu.yaml").read_text(encoding="utf-8")
    assert "taskset -c 0 specsweep run examples/llamacpp-cpu.yaml" in text  # the client's core


@pytest.mark.usefixtures("fake_paths")
def test_vllm_example_plans_off_k3_k5() -> None:
    a = argvs("vllm-cpu.yaml")
    assert len(a) == 3
    specs = []
    for v in a.values():
        assert v[:3] == ["/opt/x/python", "-m", "vllm.entrypoints.openai.api_server"]
        assert "--enforce-eager" in v
        if "--speculative-config" in v:
            specs.append(json.loads(v[v.index("--speculative-config") + 1]))
    assert sorted(s["num_speculative_tokens"] for s in specs) == [3, 5]
    assert all(s["method"] == "ngram" and s["prompt_lookup_min"] == 2 for s in specs)


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_llamacpp_example_runs(engines: Engines, tmp_path: Path) -> None:
    """Off: no drafts; k=3, k=5: accept length near k+1 from the real /metrics counters."""
    env = {**os.environ, **{k: engines.need(k) for k in ("LLAMA_SERVER", "TINY_MODEL_GGUF", "TINY_MODEL_HF")}}
    results = tmp_path / "results"
    exp = EXAMPLES / "llamacpp-cpu.yaml"
    # as the example says: the client on core 0, the engine's one thread on core 1
    cmd = [
        "taskset",
        "-c",
        "0",
        sys.executable,
        "-m",
        "specsweep",
        "run",
        str(exp),
        "--results-dir",
        str(results),
    ]
    cmd.append("--quiet")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=540, check=False, env=env)
    assert p.returncode in (0, 5), f"exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    lines = [json.loads(x) for f in results.rglob("summary.jsonl") for x in f.read_text().splitlines()]
    by_label: dict[str, list[dict]] = {}
    for x in lines:
        by_label.setdefault(x["label"], []).append(x)
    assert sorted(by_label) == ["llamacpp-off", "ngram k=3", "ngram k=5"], sorted(by_label)
    for label, cells in by_label.items():
        assert len(cells) == 2 and all(c["completed"] >= 1 for c in cells), (label, cells)
        for c in cells:
            if label == "llamacpp-off":
                assert not c.get("spec_num_drafts")
                assert c["accept_length"] is None
            else:
                assert c["spec_num_drafts"] > 0
                # a 6-word cycle: k-token drafts are nearly all accepted (~ k + 1 per drafted step);
                # per decode step (docs/metrics.md) less, as the first steps find no n-gram to draft
                k = int(label.rsplit("=", 1)[1])
                assert c["spec_accept_length"] > 0.7 * (k + 1), (label, c["spec_accept_length"])
                assert 1.5 < c["accept_length"] <= c["spec_accept_length"], (label, c)
    failed = {x["label"]: x["errors_by_kind"] for x in lines if x["completed"] != 8}
    assert not failed, failed
    manifest = json.loads(next(results.rglob("manifest.json")).read_text())
    assert manifest["host"]["cpu_affinity"] == [0]  # the pinned client is reported
    # every llama-server thread on core 1, as the example says (not the client's core 0, which
    # `taskset -c 0` gave the launcher): read from /proc once each server was up
    for label, srv in manifest["servers"].items():
        (aff,) = [c for c in srv["preflight"] if c["check"] == "cpu_affinity"]
        assert (
            aff["status"] == "pass" and "may run on CPU(s) 1; the client runs on CPU(s) 0" in aff["message"]
        ), (
            label,
            aff,
        )
        assert all(x["cpus"] == "1" for x in srv["launches"]), srv["launches"]
