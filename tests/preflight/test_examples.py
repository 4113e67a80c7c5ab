"""Every shipped example passes its own pre-flight (issue 24 item 4): on a quiet 2-core host with the
engines installed (and, for the GPU example, eight idle GPUs), no check warns or fails about the
example's own settings. No network, no GPU, no engine binary: the host is a recorded snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from specsweep.experiment.loader import load_experiment
from specsweep.preflight import Host, run_checks
from specsweep.preflight.model import fold

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPERIMENTS = sorted(p for p in EXAMPLES.glob("*.yaml") if not p.name.startswith("traffic-"))
FAKE_ENV = {"LLAMA_SERVER": "/opt/x/llama-server", "TINY_MODEL_GGUF": "/opt/x/tiny.gguf",
            "TINY_MODEL_HF": "/opt/x/hf", "VLLM_PYTHON": "/opt/x/python"}  # fmt: skip


def idle_gpus(n: int) -> str:
    return "\n".join(f"{i}, GPU-{i:08d}, NVIDIA H200, 0, 143771, 0" for i in range(n))


def quiet_two_cores(tmp_path: Path, client: frozenset[int] | None = None) -> Host:
    dg = tmp_path / "deep_gemm"  # SGLang's DeepGEMM kernels compiled (the host's state, not the example's)
    dg.mkdir(exist_ok=True)
    (dg / "kernel").write_text("")
    return Host(cpus=2, load_1m=0.0, governors=["performance"] * 2, nvidia_smi_gpus=idle_gpus(8),
                nvidia_smi_apps="", which=lambda exe: exe if exe.startswith("/") else f"/usr/bin/{exe}",
                run=lambda argv: "1.0.0", env={"HOME": str(tmp_path), "DG_JIT_CACHE_DIR": str(dg)},
                client_cpus=client)  # fmt: skip


@pytest.fixture(autouse=True)
def engine_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in FAKE_ENV.items():
        monkeypatch.setenv(k, v)


def test_there_are_examples() -> None:
    names = {p.name for p in EXPERIMENTS}
    assert {"quickstart.yaml", "llamacpp-cpu.yaml", "domains-llamacpp.yaml", "vllm-cpu.yaml"} <= names


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
@pytest.mark.parametrize("client", [None, frozenset({0})], ids=["client-unpinned", "taskset-c0"])
def test_example_passes_its_own_preflight(path: Path, client: frozenset[int] | None, tmp_path: Path) -> None:
    _, plan = load_experiment(path)
    checks = run_checks(plan, quiet_two_cores(tmp_path, client), versions=False)
    # "skip": a check that could not look (the GPU example's model directories are not here)
    bad = [c for c in checks if c.status in ("warn", "fail")]
    assert not bad, "\n".join(f"{c.status} {c.check} {c.config}: {c.message} (fix: {c.fix})" for c in bad)
    assert {"warmup", "executable"} <= {c.check for c in checks}


def test_quickstart_notes_fold_into_one_line_naming_the_configs(tmp_path: Path) -> None:
    """On a busy host the quickstart's three simulated configs have the same finding: one line."""
    _, plan = load_experiment(EXAMPLES / "quickstart.yaml")
    busy = Host(cpus=1, load_1m=0.0, governors=["performance"], which=lambda exe: exe, run=lambda a: "1",
                env={"HOME": str(tmp_path)})  # fmt: skip
    raw = [c for c in run_checks(plan, busy, versions=False) if c.check == "cpu_threads"]
    assert len(raw) == 3 and all(c.status == "fail" for c in raw)  # 1 engine thread + the client > 1 core
    (one,) = [c for c in fold(raw) if c.check == "cpu_threads"]
    assert one.config == "DSpark(st=3), DSpark(st=5), EAGLE"
    assert "another host" in one.fix and "at most" not in one.fix  # no advice it already follows
