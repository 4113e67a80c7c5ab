"""`specsweep preflight` on real executables (the simulator's, llama-server when built), its JSON
contract and exit code, the first-requests probe on records, and the checks in a run's manifest."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from specsweep.cli import main
from specsweep.measure.records import RequestRecord
from specsweep.preflight.warmup import first_requests_probe

pytestmark = pytest.mark.slow

SIM = {"name": "sim", "kind": "sim", "profile": "toy", "method": "dspark", "params": {"spec_tokens": 3},
       "time_scale": 50.0}  # fmt: skip


def write(tmp_path: Path, servers: list[dict], **top: object) -> Path:
    p = tmp_path / "exp.yaml"
    p.write_text(yaml.safe_dump({"name": "pf", "servers": servers,
                                 "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 4}],
                                 **top}))  # fmt: skip
    return p


def test_json_contract_and_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["preflight", str(write(tmp_path, [SIM])), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"checks"}
    for c in out["checks"]:
        assert set(c) == {"check", "config", "status", "message", "fix"} and c["status"] in (
            "pass",
            "warn",
            "fail",
        )
    exe = next(c for c in out["checks"] if c["check"] == "executable")
    assert exe["status"] == "pass" and "specsweep" in exe["message"]  # the real version command ran
    assert rc == (1 if any(c["status"] == "fail" for c in out["checks"]) else 0)
    bad = {"name": "l", "kind": "llamacpp", "binary": str(tmp_path / "no-llama-server"), "model": "m.gguf"}
    assert main(["preflight", str(write(tmp_path, [SIM, bad])), "--format", "json"]) == 1
    capsys.readouterr()


@pytest.mark.engine
def test_real_llama_server_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.engines.helpers import engines_env_path, read_env_file

    env = read_env_file(engines_env_path()) if engines_env_path().is_file() else {}
    exe = env.get("LLAMA_SERVER") or os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    if not exe:
        pytest.skip("llama-server not built (scripts/setup_engines.sh)")
    srv = {
        "name": "l",
        "kind": "llamacpp",
        "binary": exe,
        "model": "m.gguf",
        "params": {"threads": os.cpu_count() or 1},
    }
    main(["preflight", str(write(tmp_path, [srv])), "--format", "json"])
    checks = json.loads(capsys.readouterr().out)["checks"]
    exe_c = next(c for c in checks if c["check"] == "executable")
    assert exe_c["status"] == "pass" and "version" in exe_c["message"]
    cpu = next(c for c in checks if c["check"] == "cpu_threads")
    assert cpu["status"] == "fail"  # all cores to the engine + the client


def _rec(i: int, ttft_ms: float, warm: bool = False) -> RequestRecord:
    r = RequestRecord(index=i, is_warmup=warm, worker=0, prompt_len=8, output_len=4, scheduled_ns=0)
    r.send_ns = i * 1_000_000
    r.chunk_ns = [r.send_ns + int(ttft_ms * 1e6), r.send_ns + int(ttft_ms * 1e6) + 1_000_000]
    r.chunk_tokens = [1, 3]
    r.output_tokens = 4
    r.end_ns = r.chunk_ns[-1]
    return r


def test_first_requests_probe_flags_a_stall() -> None:
    warm = [_rec(i, 50, True) for i in range(4)]
    stalled = warm + [_rec(10 + i, 900 if i < 4 else 50) for i in range(12)]
    c = first_requests_probe(stalled, "cfg", "cell")
    assert c.status == "warn" and "compile_deep_gemm" in c.fix and "900 ms" in c.message
    smooth = warm + [_rec(10 + i, 50) for i in range(12)]
    assert first_requests_probe(smooth, "cfg", "cell").status == "pass"


# the simulator started as any engine would be: no warmup is a finding for it (a simulated engine,
# kind sim, has nothing to warm and passes)
SIM_AS_COMMAND = {"name": "cmd", "kind": "command", "method": "dspark", "backend": "vllm",
                  "argv": [sys.executable, "-m", "specsweep", "sim", "serve", "--profile", "toy", "--host",
                           "127.0.0.1", "--port", "{port}", "--time-scale", "50"]}  # fmt: skip


def test_run_records_preflight_in_manifest(tmp_path: Path) -> None:
    exp = write(tmp_path, [SIM_AS_COMMAND], client={"warmup_requests": 0}, report={"formats": ["md"]})
    assert main(["run", str(exp), "--results-dir", str(tmp_path / "res")]) == 0
    (man,) = list((tmp_path / "res").glob("*/manifest.json"))
    checks = json.loads(man.read_text())["preflight"]
    warm = next(c for c in checks if c["check"] == "warmup")
    assert warm["status"] == "warn" and "warmup_requests" in warm["fix"]
    report = next(man.parent.glob("report*.md")).read_text()
    assert "pre-flight warn: warmup" in report


def test_unknown_sim_profile_fails_preflight_and_run_before_any_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 item 5: pre-flight fails it, and `run` stops before a run dir exists."""
    exp = write(tmp_path, [{**SIM, "profile": "no-such-profile"}])
    assert main(["preflight", str(exp), "--format", "json"]) == 1
    (c,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "sim_profile"]
    assert c["status"] == "fail" and "no-such-profile" in c["message"] and "toy" in c["message"]
    res = tmp_path / "res"
    assert main(["run", str(exp), "--results-dir", str(res)]) == 2
    err = capsys.readouterr().err
    assert "config sim: unknown simulator profile" in err and "no-such-profile" in err
    assert not res.exists() or not any(res.iterdir())


def test_executor_ray_without_ray_leaves_no_run_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28 defect 11: the missing extra is named before the run dir is made."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    res = tmp_path / "res"
    assert main(["run", str(write(tmp_path, [SIM])), "--executor", "ray", "--results-dir", str(res)]) == 2
    err = capsys.readouterr().err
    assert "ray" in err and "pip install" in err
    assert not res.exists() or not any(res.iterdir())
