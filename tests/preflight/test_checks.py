"""Each pre-flight check flags its seeded misconfiguration with a fix, and passes the clean setup."""

from __future__ import annotations

from pathlib import Path

from specsweep.preflight import run_checks
from specsweep.preflight.model import Check

from .conftest import DATA, host, make_plan

VLLM = {"name": "v", "kind": "vllm", "model": "org/m", "method": "mtp", "params": {"spec_tokens": 3}}


def only(checks: list[Check], name: str) -> list[Check]:
    return [c for c in checks if c.check == name]


def test_missing_executable_fails_with_fix() -> None:
    plan = make_plan(
        [{"name": "l", "kind": "llamacpp", "binary": "/opt/none/llama-server", "model": "m.gguf"}]
    )
    (c,) = only(run_checks(plan, host()), "executable")
    assert c.status == "fail" and "/opt/none/llama-server" in c.message and "binary" in c.fix


def test_version_reported_when_found() -> None:
    plan = make_plan([VLLM])
    (c,) = only(run_checks(plan, host(run=lambda argv: "0.11.2")), "executable")
    assert c.status == "pass" and "0.11.2" in c.message


def test_gpus_busy_from_recorded_nvidia_smi() -> None:
    plan = make_plan([{**VLLM, "tp": 2}])
    h = host(nvidia_smi_gpus=(DATA / "nvidia-smi-gpus-busy.csv").read_text(),
             nvidia_smi_apps=(DATA / "nvidia-smi-apps-busy.csv").read_text())  # fmt: skip
    (c,) = only(run_checks(plan, h), "gpus")
    assert c.status == "fail" and "pid 48213" in c.message and "CUDA_VISIBLE_DEVICES" in c.fix
    # one GPU is enough: the busy one is a warning only
    (c1,) = only(run_checks(make_plan([VLLM]), h), "gpus")
    assert c1.status == "warn"


def test_gpus_idle_and_too_few() -> None:
    idle = (DATA / "nvidia-smi-gpus-idle.csv").read_text()
    (ok,) = only(
        run_checks(make_plan([{**VLLM, "tp": 2}]), host(nvidia_smi_gpus=idle, nvidia_smi_apps="")), "gpus"
    )
    assert ok.status == "pass" and "H200" in ok.message
    (few,) = only(
        run_checks(make_plan([{**VLLM, "tp": 8}]), host(nvidia_smi_gpus=idle, nvidia_smi_apps="")), "gpus"
    )
    assert few.status == "fail" and "needs 8" in few.message
    (none,) = only(run_checks(make_plan([VLLM]), host()), "gpus")
    assert none.status == "warn" and "nvidia-smi" in none.message


def test_model_identity(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for d, cfg in ((a, '{"layers": 61}'), (b, '{"layers": 60}')):
        d.mkdir()
        (d / "config.json").write_text(cfg)
    same = make_plan([{**VLLM, "model": str(a)}, {**VLLM, "name": "w", "model": str(a)}])
    assert only(run_checks(same, host()), "model_identity")[0].status == "pass"
    diff = make_plan([{**VLLM, "model": str(a)}, {**VLLM, "name": "w", "model": str(b)}])
    (c,) = only(run_checks(diff, host()), "model_identity")
    assert c.status == "warn" and "revision" in c.fix
    rev = make_plan(
        [{**VLLM, "model": str(a)}, {**VLLM, "name": "w", "model": str(a), "args": ["--revision", "v2"]}]
    )
    assert only(run_checks(rev, host()), "model_identity")[0].status == "warn"


def test_cuda_graph_capture_vs_concurrency_times_k_plus_1() -> None:
    plan = make_plan([{**VLLM, "params": {"spec_tokens": 5}}], concurrency=[64, 128])
    (c,) = only(run_checks(plan, host()), "cuda_graph")
    assert c.status == "warn" and "768" in c.message and "--max-cudagraph-capture-size 768" in c.fix
    raised = make_plan([{**VLLM, "params": {"spec_tokens": 5}, "args": ["--max-cudagraph-capture-size", "1024"]}],
                       concurrency=[128])  # fmt: skip
    assert only(run_checks(raised, host()), "cuda_graph")[0].status == "pass"


def test_deep_gemm_cache(tmp_path: Path) -> None:
    sg = {"name": "s", "kind": "sglang", "model": "org/m", "method": "eagle", "tp": 8,
          "params": {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}}  # fmt: skip
    plan = make_plan([sg])
    (c,) = only(run_checks(plan, host(env={"HOME": str(tmp_path)})), "deep_gemm")
    assert c.status == "warn" and "sglang.compile_deep_gemm" in c.fix and "--tp 8" in c.fix
    cache = tmp_path / ".cache" / "sglang" / "deep_gemm"
    cache.mkdir(parents=True)
    (cache / "kernel.so").write_bytes(b"x")
    assert only(run_checks(plan, host(env={"HOME": str(tmp_path)})), "deep_gemm")[0].status == "pass"


def test_prefix_caching_differs_fails() -> None:
    plan = make_plan([VLLM, {**VLLM, "name": "w", "args": ["--no-enable-prefix-caching"]}])
    (c,) = only(run_checks(plan, host()), "prefix_caching")
    assert c.status == "fail" and "--no-enable-prefix-caching" in c.fix
    assert only(run_checks(make_plan([VLLM]), host()), "prefix_caching")[0].status == "pass"


def test_warmup_shorter_than_the_largest_batch() -> None:
    plan = make_plan([VLLM], concurrency=[1, 64], client={"warmup_requests": 10})
    (c,) = only(run_checks(plan, host()), "warmup")
    assert c.status == "warn" and "warmup_requests: 64" in c.fix
    ok = make_plan([VLLM], concurrency=[1, 64], client={"warmup_requests": 100})
    assert only(run_checks(ok, host()), "warmup")[0].status == "pass"


def test_llamacpp_threads_on_a_two_core_host() -> None:
    """The shipped example's mistake: threads 2 on a 2-core host beside the client."""
    plan = make_plan([{"name": "l", "kind": "llamacpp", "binary": "llama-server", "model": "m.gguf",
                       "params": {"threads": 2}}])  # fmt: skip
    (c,) = only(run_checks(plan, host(cpus=2, load_1m=0.1)), "cpu_threads")
    assert c.status == "fail" and "3 on 2 core" in c.message and "at most 1 thread" in c.fix
    (ok,) = only(run_checks(plan, host(cpus=8, load_1m=0.1)), "cpu_threads")
    assert ok.status == "pass"
    # what other processes take is the host's finding, once, naming the configs that need the cores
    busy = run_checks(plan, host(cpus=4, load_1m=2.5))
    assert only(busy, "cpu_threads")[0].status == "pass"
    (load,) = only(busy, "host_load")
    assert load.status == "warn" and "l: engine and client need 3 core(s), 1.5 free" in load.message


def test_busy_host_and_frequency_scaling() -> None:
    plan = make_plan([VLLM])
    checks = run_checks(plan, host(cpus=2, load_1m=3.0, governors=["powersave", "powersave"]))
    assert only(checks, "host_load")[0].status == "warn"
    (g,) = only(checks, "cpu_frequency")
    assert g.status == "warn" and "performance" in g.fix
    quiet = run_checks(plan, host())
    assert only(quiet, "host_load")[0].status == only(quiet, "cpu_frequency")[0].status == "pass"
