"""Issue 38, defect 2: secrets in every argv form, end to end through the real CLI.

A secret is found by what a value looks like and where it sits, not by a list of flags:
``-e VLLM_API_KEY=X`` (a ``NAME=VALUE`` argument, docker style), ``--header=X-Api-Key: X`` (the
value of ``--flag=value`` read as a value: a header), a JSON and a YAML document inside an env
value, a ``url:`` with a matrix parameter (``;api_key=X``), and an LLMPerf summary whose ``model``
is a URL with a password, imported (its ``source/`` copy and the summary). The server prints its
argv and environment to its log, so every form is also echoed. None reaches any file of the run
dir, the reports or the terminal (``--dry-run`` included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from specsweep.store import redact_copy
from specsweep.store.run_dir import RunDir

from ..faults.harness import TAG_VAR, assert_no_process_left, kill_tagged

pytestmark = [pytest.mark.timeout(240)]

HOSTILE = str(Path(__file__).with_name("hostile_server.py"))
DOCKER_E = "SENTINEL-docker-e-a1b2c3"
HEADER_EQ = "SENTINEL-header-eq-d4e5f6"
JSON_ENV = "SENTINEL-json-env-g7h8i9"
YAML_ENV = "SENTINEL-yaml-env-j0k1l2"
FLAG_JSON = "SENTINEL-flag-json-m3n4"
MATRIX = "SENTINEL-matrix-o5p6q7"
LLMPERF_PW = "SENTINEL-llmperf-pw-r8s9"
RUN_SECRETS = [DOCKER_E, HEADER_EQ, JSON_ENV, YAML_ENV, FLAG_JSON, MATRIX]
FIXTURE = Path(__file__).parents[1] / "importers" / "fixtures" / "llmperf" / "anyscale_7b_summary.json"


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "specsweep", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=200, check=False)  # fmt: skip


def _files_text(root: Path) -> dict[str, str]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            text = (
                str(pq.read_table(p).to_pylist())
                if p.suffix == ".parquet"
                else p.read_bytes().decode("utf-8", "replace")
            )
            out[str(p.relative_to(root))] = text
    return out


@pytest.mark.slow  # a real server process and a full run (~30 s)
def test_every_argv_form_is_kept_out_of_the_run_dir_the_reports_and_the_terminal(tmp_path: Path) -> None:
    tag = "forms-" + os.urandom(4).hex()
    env = {**os.environ, TAG_VAR: tag}
    argv = [sys.executable, HOSTILE, "--port", "{port}", "--host", "{host}"]
    exp = {
        "name": "forms",
        "scenarios": {"tiny": {"input_len": 16, "output_len": 16, "range_ratio": 1.0}},
        "servers": [
            {"name": "cmd", "kind": "command", "argv": argv,
             "args": ["-e", f"VLLM_API_KEY={DOCKER_E}", f"--header=X-Api-Key: {HEADER_EQ}",
                      f'--engine-config={{"model": "m", "api_key": "{FLAG_JSON}"}}'],
             "env": {"ENGINE_CONFIG": json.dumps({"api_key": JSON_ENV, "workers": 2}),
                     "ENGINE_YAML": f"auth:\n  token: {YAML_ENV}\nworkers: 2\n"}},
            {"name": "byurl", "kind": "url", "url": f"http://127.0.0.1:9/v1;api_key={MATRIX}"},
        ],
        "workloads": [{"scenarios": ["tiny"], "concurrency": [1], "num_prompts": 3}],
        "client": {"warmup_requests": 0, "request_timeout_s": 10},
        "timeouts": {"ready_s": 8, "stop_s": 3, "cell_s": 30},
    }  # fmt: skip
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    run = _cli("run", "exp.yaml", "--results-dir", "results", cwd=tmp_path, env=env)
    kill_tagged(tag) if run.returncode not in (0, 1) else assert_no_process_left(tag)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    dry = _cli("run", "exp.yaml", "--results-dir", "results", "--dry-run", cwd=tmp_path, env=env)
    assert dry.returncode == 0 and "argv" in dry.stdout, dry.stderr[-3000:]
    (rd_path,) = (tmp_path / "results").iterdir()
    md = _cli("report", str(rd_path), "--format", "md", cwd=tmp_path, env=env)
    html = _cli("report", str(rd_path), "-o", str(rd_path / "again.html"), cwd=tmp_path, env=env)
    assert md.returncode == 0 and html.returncode == 0, md.stderr + html.stderr
    terminal = "".join(p.stdout + p.stderr for p in (run, dry, md, html))
    files = _files_text(rd_path)
    assert {Path(f).suffix for f in files} >= {".json", ".log", ".html", ".md"}
    # the server did get them (its log line was written, scrubbed): redaction is of what is written
    logs = "".join(t for f, t in files.items() if f.endswith(".log"))
    assert "VLLM_API_KEY=***" in logs and "X-Api-Key: ***" in logs, logs[-3000:]
    for secret in RUN_SECRETS:
        leaks = [f for f, text in files.items() if secret in text]
        assert leaks == [], f"{secret} written to {leaks}"
        assert secret not in terminal, f"{secret} printed"
    m = RunDir.open(rd_path).manifest
    assert m["servers"]["byurl"]["base_url"].endswith(";api_key=***")
    assert "VLLM_API_KEY=***" in m["config"]["servers"][0]["args"]


def test_an_imported_url_password_is_kept_out_of_the_summary_source_copy_and_report(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text())
    data["model"] = f"http://user:{LLMPERF_PW}@llm.invalid/v1"
    src = tmp_path / "x_summary.json"
    src.write_text(json.dumps(data, indent=2))
    env = dict(os.environ)
    imp = _cli("import", "llmperf", str(src), "--label", "lp", "--method", "none", "-o", "results",
               cwd=tmp_path, env=env)  # fmt: skip
    assert imp.returncode == 0, imp.stderr[-3000:]
    (rd_path,) = (tmp_path / "results").iterdir()
    rep = _cli("report", str(rd_path), "--format", "md", cwd=tmp_path, env=env)
    html = _cli("report", str(rd_path), "-o", str(rd_path / "r.html"), cwd=tmp_path, env=env)
    assert rep.returncode == 0 and html.returncode == 0, rep.stderr + html.stderr
    files = _files_text(rd_path)
    assert any(f.startswith("source/") for f in files) and "summary.jsonl" in files
    leaks = [f for f, text in files.items() if LLMPERF_PW in text]
    assert leaks == [], f"written to {leaks}"
    assert LLMPERF_PW not in imp.stdout + imp.stderr + rep.stdout + rep.stderr + html.stderr
    (copy,) = [t for f, t in files.items() if f.startswith("source/")]
    kept = json.loads(copy)  # still the file, as JSON, only the password replaced
    assert kept["model"] == "http://user:***@llm.invalid/v1"
    assert kept["results_ttft_s_mean"] == data["results_ttft_s_mean"]


def test_copy_scrubbed_never_splits_a_secret_between_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is read in pieces (flat memory for a large file): a secret across a piece's end is
    still replaced whole."""
    monkeypatch.setattr(redact_copy, "_COPY_CHUNK", 64)
    rows = [json.dumps({"i": i, "url": f"http://u:{LLMPERF_PW}{i}@h/", "api_key": f"k-{i}-SENTINELabc"})
            for i in range(40)]  # fmt: skip
    src = tmp_path / "a.jsonl"
    src.write_text("\n".join(rows) + "\n")
    assert redact_copy.copy_scrubbed(src, tmp_path / "b.jsonl")
    out = (tmp_path / "b.jsonl").read_text()
    assert "SENTINEL" not in out and out.count("\n") == 40
    assert [json.loads(line)["i"] for line in out.splitlines()] == list(range(40))
