"""Sentinel test (issue 20, items 1-2): a secret planted in every documented place reaches the
servers, and none reaches any file of the run dir or the terminal.

Places: specsweep's environment (OPENAI_API_KEY: the client's bearer token), server env (literal
AUTHORIZATION, PGPASSWORD, GITHUB_PAT, DATABASE_URL with a password, SESSION_COOKIE, and a
``${VAR}`` entry), args (``--header "Authorization: Bearer ..."``, ``--bearer``, ``--pass``,
``--api-key ${VAR}``, a ``${VAR}`` in a plain position), a template parameter
(``params: {api_key: ${VAR}}`` used as ``{api_key}`` in argv), ``client.extra_request_body.api_key``
and a value nested under ``extra_request_body.auth`` (issue 27),
a ``url:`` with a password, and the server echoing the bearer token and request body in a 401 error
and printing its argv and environment to its log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from specsweep.servers.process import free_port
from specsweep.store.run_dir import RunDir

from ..faults.harness import TAG_VAR, assert_no_process_left, kill_tagged

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

HOSTILE = str(Path(__file__).with_name("hostile_server.py"))
RUNNER_ENV = {  # specsweep's own environment
    "OPENAI_API_KEY": "SENTINEL-openai-bearer-a1",  # no sk- prefix: found by value, not by shape
    "SEC_ENV_REF": "SENTINEL-server-env-ref-b2",
    "SEC_ARG_REF": "SENTINEL-arg-ref-c3",
    "SEC_PLAIN_REF": "SENTINEL-plain-position-ref-d4",
    "SEC_PARAM_REF": "SENTINEL-param-ref-e5",
    "SEC_BODY_REF": "SENTINEL-body-apikey-f6",
}
SERVER_ENV = {
    "AUTHORIZATION": "Bearer SENTINEL-env-authorization-g7",
    "PGPASSWORD": "SENTINEL-pgpassword-h8",
    "GITHUB_PAT": "SENTINEL-github-pat-i9",
    "DATABASE_URL": "postgres://u:SENTINEL-dburl-pw-j0@db.invalid/x",
    "SESSION_COOKIE": "SENTINEL-session-cookie-k1",
    "SERVICE_CRED": "${SEC_ENV_REF}",
    "PLAIN_SETTING": "visible-setting",
}
HEADER = "SENTINEL-header-bearer-l2"
BEARER = "SENTINEL-bearer-flag-m3"
PASSWORD = "SENTINEL-pass-flag-n4"
URL_PW = "SENTINEL-url-pw-o5"
NESTED = "SENTINEL-nested-body-p6"  # issue 27: extra_request_body: {auth: {value: X}}
SENTINELS = {
    **{f"runner_env_{k}": v for k, v in RUNNER_ENV.items()},
    **{f"server_env_{k}": v.split("@")[0].rsplit(":", 1)[-1].split()[-1] for k, v in SERVER_ENV.items()
       if "SENTINEL" in v},
    "header_arg": HEADER,
    "bearer_arg": BEARER,
    "pass_arg": PASSWORD,
    "url_password": URL_PW,
    "nested_body": NESTED,
}  # fmt: skip


def experiment(url_port: int, received: Path) -> dict[str, Any]:
    argv = [sys.executable, HOSTILE, "--port", "{port}", "--host", "{host}", "--received", str(received),
            "--model-key", "{api_key}"]  # fmt: skip
    args = ["--header", f"Authorization: Bearer {HEADER}", "--bearer", BEARER, "--pass", PASSWORD,
            "--api-key", "${SEC_ARG_REF}", "--note", "${SEC_PLAIN_REF}"]  # fmt: skip
    # fmt: off
    return {
        "name": "sentinels",
        "scenarios": {"tiny": {"input_len": 16, "output_len": 24, "range_ratio": 1.0}},
        "servers": [
            {"name": "cmd", "label": "cmd [/INST] \x1b[31mred", "kind": "command", "argv": argv,
             "args": args, "env": SERVER_ENV, "params": {"api_key": "${SEC_PARAM_REF}"}},
            {"name": "byurl", "kind": "url", "url": f"http://user:{URL_PW}@127.0.0.1:{url_port}"},
        ],
        "workloads": [{"scenarios": ["tiny"], "concurrency": [1], "num_prompts": 4}],
        "client": {"warmup_requests": 1, "warmup_sleep_s": 0, "request_timeout_s": 20,
                   "extra_request_body": {"api_key": "${SEC_BODY_REF}", "auth": {"value": NESTED}}},
        "timeouts": {"ready_s": 30, "stop_s": 3, "cell_s": 60},
    }
    # fmt: on


@pytest.fixture(scope="module")
def sentinel_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunDir, str, Path]]:
    root = tmp_path_factory.mktemp("sentinels")
    tag = "sentinel-" + os.urandom(4).hex()
    env = {**os.environ, **RUNNER_ENV, TAG_VAR: tag}
    port = free_port()
    url_server = subprocess.Popen(
        [sys.executable, HOSTILE, "--port", str(port), "--require-basic", f"user:{URL_PW}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        received = root / "received.json"
        (root / "exp.yaml").write_text(yaml.safe_dump(experiment(port, received), allow_unicode=True))
        cmd = [sys.executable, "-m", "specsweep", "run", "exp.yaml", "--results-dir", "results", "--quiet"]
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=200, check=False)
        dry = subprocess.run([*cmd, "--dry-run"], cwd=root, env=env, capture_output=True, text=True,
                             timeout=60, check=False)  # fmt: skip
    finally:
        url_server.terminate()
        url_server.wait(10)
    kill_tagged(tag) if p.returncode not in (0, 1) else assert_no_process_left(tag)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    assert dry.returncode == 0 and "argv:" in dry.stdout, dry.stderr[-3000:]
    (rd_path,) = (root / "results").iterdir()
    yield RunDir.open(rd_path), p.stdout + p.stderr + dry.stdout + dry.stderr, received


def _text(path: Path) -> str:
    if path.suffix == ".parquet":
        return str(pq.read_table(path).to_pylist())
    return path.read_bytes().decode("utf-8", "replace")


@pytest.mark.parametrize("source", list(SENTINELS))
def test_no_sentinel_in_any_file_or_on_the_terminal(
    sentinel_run: tuple[RunDir, str, Path], source: str
) -> None:
    rd, terminal, _ = sentinel_run
    secret = SENTINELS[source]
    files = [p for p in rd.path.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} >= {".json", ".jsonl", ".log", ".parquet"}
    leaks = [str(p.relative_to(rd.path)) for p in files if secret in _text(p)]
    assert leaks == [], f"{source} written to {leaks}"
    assert secret not in terminal, f"{source} printed"


def test_the_secrets_did_reach_the_server_and_were_echoed(sentinel_run: tuple[RunDir, str, Path]) -> None:
    """Redaction is of what specsweep writes, not of what the server gets."""
    rd, _, received = sentinel_run
    got = json.loads(received.read_text())
    for v in (HEADER, BEARER, PASSWORD, RUNNER_ENV["SEC_ARG_REF"], RUNNER_ENV["SEC_PARAM_REF"]):
        assert any(v in a for a in got["argv"]), v
    assert got["env"]["SERVICE_CRED"] == RUNNER_ENV["SEC_ENV_REF"]
    assert got["env"]["PGPASSWORD"] == SERVER_ENV["PGPASSWORD"]
    rows = {r["label"].split()[0]: r for r in rd.summary()}
    # measured (the self-check may rule a fast local stream invalid on a busy host; not the subject here)
    assert rows["cmd"]["status"] in ("ok", "invalid"), rows["cmd"]
    errors = [r.error for r in rd.read_records(rows["cmd"]["cell_id"], 0) if r.error]
    assert any("invalid credentials" in e for e in errors), errors  # the echo happened, scrubbed
    m = rd.manifest
    assert m["secrets"]["count"] >= 8 and len(m["secrets"]["digest"]) == 16
    env = m["servers"][rows["cmd"]["label"]]["env"]
    assert env["PLAIN_SETTING"] == "visible-setting" and env["PGPASSWORD"] == "***"


def test_a_url_with_a_password_gets_ready(sentinel_run: tuple[RunDir, str, Path]) -> None:
    rd, _, _ = sentinel_run
    url_rows = [r for r in rd.summary() if r["server"] == "byurl"]
    assert url_rows and all(
        r.get("failure_kind") not in ("server_start", "readiness_timeout") for r in url_rows
    )
    srv = rd.manifest["servers"]["byurl"]
    assert srv["model_id"] and srv["base_url"].startswith("http://user:***@127.0.0.1:")
    # ... and measures: the URL's own credentials are sent (HTTP Basic), not refused by the client for
    # clashing with the OPENAI_API_KEY bearer token (the URL's explicit credentials win)
    assert all(r["status"] in ("ok", "invalid") for r in url_rows), [r.get("error") for r in url_rows]
