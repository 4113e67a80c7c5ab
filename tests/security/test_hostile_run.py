"""One `specsweep run` with hostile inputs everywhere, then what must hold of everything it wrote.

- API keys (OPENAI_API_KEY, API_KEY), secret-looking server env entries (literal or ``${VAR}``) and
  ``--api-key`` arguments never appear in any file of the run dir: logs, manifest, summary, records,
  reports;
- strings from the config and the server (labels, method, model id, scenario) with markup stay text
  in report.html (escaped) - no injected tag;
- labels / scenario names with ``../`` write nothing outside the run dir;
- the servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from specsweep.store.run_dir import RunDir

from ..faults.harness import TAG_VAR, assert_no_process_left, experiment, staged_server

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SECRETS = {
    "OPENAI_API_KEY": "sk-SENTINEL-openai-7f3a",
    "API_KEY": "SENTINEL-apikey-91bc",
    "SEC_REF_TOKEN": "SENTINEL-ref-token-5d2e",  # reached through ${SEC_REF_TOKEN} in the file
}
LITERAL = {
    "HF_TOKEN": "hf_SENTINEL-literal-hf-0a1b",
    "MY_SECRET": "SENTINEL-literal-secret-2c3d",
    "DB_PASSWORD": "SENTINEL-literal-password-4e5f",
}
ARG_KEY = "SENTINEL-argv-apikey-6a7b"
ARG_REF = {"SEC_ARG_TOKEN": "SENTINEL-argref-token-8c9d"}  # --api-key ${SEC_ARG_TOKEN} in args
XSS = {
    "label": '<script>alert("label")</script>',
    "method": "<img src=x onerror=alert(2)>",
    "model": "<svg onload=alert(3)>",
    "scenario": "s<b onmouseover=alert(4)>scen",  # names with "/" are refused by the loader
}
ALL_SENTINELS = [*SECRETS.values(), *LITERAL.values(), ARG_KEY, *ARG_REF.values()]
# Where a secret came from -> its sentinel; each is its own test id.
SOURCES = {
    "env_OPENAI_API_KEY": SECRETS["OPENAI_API_KEY"],
    "env_API_KEY": SECRETS["API_KEY"],
    "server_env_ref": SECRETS["SEC_REF_TOKEN"],
    "server_env_literal_HF_TOKEN": LITERAL["HF_TOKEN"],
    "server_env_literal_MY_SECRET": LITERAL["MY_SECRET"],
    "server_env_literal_DB_PASSWORD": LITERAL["DB_PASSWORD"],
    "args_literal_api_key": ARG_KEY,
    "args_env_ref_api_key": ARG_REF["SEC_ARG_TOKEN"],
}


def hostile_experiment() -> dict[str, Any]:
    a = staged_server(
        "--served-model-name",
        XSS["model"],
        name="a",
        label="../../escape-" + XSS["label"],
        method=XSS["method"],
        env={**LITERAL, "SERVICE_AUTH": "${SEC_REF_TOKEN}", "PLAIN": "visible"},
        args=["--api-key", ARG_KEY],
    )
    b = staged_server(name="b", label="../b", args=["--api-key", "${SEC_ARG_TOKEN}"])
    exp = experiment(a, b, concurrency=(1,), name="hostile")
    sc = XSS["scenario"]
    exp["scenarios"] = {sc: {"input_len": 16, "output_len": 24, "range_ratio": 1.0}}
    exp["workloads"][0]["scenarios"] = [sc]
    return exp


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, RunDir, str]]:
    root = tmp_path_factory.mktemp("hostile")
    work = root / "deep" / "er"
    work.mkdir(parents=True)
    (work / "exp.yaml").write_text(yaml.safe_dump(hostile_experiment(), allow_unicode=True))
    tag = "hostile-" + os.urandom(4).hex()
    env = {**os.environ, **SECRETS, **ARG_REF, TAG_VAR: tag}
    cmd = [sys.executable, "-m", "specsweep", "run", "exp.yaml", "--results-dir", "results", "--quiet"]
    p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    for s in ALL_SENTINELS:
        assert s not in p.stdout + p.stderr, f"a secret reached the terminal: {s}"
    assert_no_process_left(tag)
    (rd_path,) = (work / "results").iterdir()
    yield root, RunDir.open(rd_path), tag


def _all_text(path: Path) -> str:
    if path.suffix == ".parquet":
        return str(pq.read_table(path).to_pylist())
    return path.read_bytes().decode("utf-8", "replace")


def _files(rd: RunDir) -> list[Path]:
    files = [p for p in rd.path.rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in files) and any(p.suffix == ".log" for p in files)
    assert any(p.suffix == ".parquet" for p in files)
    return files


@pytest.mark.parametrize("source", list(SOURCES))
def test_secret_in_no_file(hostile_run: tuple[Path, RunDir, str], source: str) -> None:
    _, rd, _ = hostile_run
    secret = SOURCES[source]
    leaks = [str(p.relative_to(rd.path)) for p in _files(rd) if secret in _all_text(p)]
    assert leaks == [], f"{source} written to {leaks}"


def test_secrets_only_in_the_manifest_config_if_anywhere(hostile_run: tuple[Path, RunDir, str]) -> None:
    """Logs, summary, records, reports and the rest of the manifest (servers' argv/env) are clean."""
    _, rd, _ = hostile_run
    leaks = [
        (str(p.relative_to(rd.path)), s)
        for p in _files(rd)
        if p.name != "manifest.json"
        for s in ALL_SENTINELS
        if s in _all_text(p)
    ]
    assert leaks == []
    m = rd.manifest
    m.pop("config")
    text = str(m)
    assert [s for s in ALL_SENTINELS if s in text] == []
    env = next(v["env"] for v in m["servers"].values() if v["name"] == "a")
    assert env["PLAIN"] == "visible" and env["HF_TOKEN"] == "***"  # redacted, not dropped
    argv = next(v["argv"] for v in m["servers"].values() if v["name"] == "b")
    assert argv[argv.index("--api-key") + 1] == "***"


def test_server_got_its_secrets(hostile_run: tuple[Path, RunDir, str]) -> None:
    """Redaction is of what we write, not of what the server receives."""
    _, rd, _ = hostile_run
    log = (rd.path / "logs").iterdir()
    assert log  # the run worked end to end with the secrets passed (the cells are ok)
    assert {r["status"] for r in rd.summary()} <= {"ok", "invalid"}


def test_nothing_written_outside_the_run_dir(hostile_run: tuple[Path, RunDir, str]) -> None:
    root, rd, _ = hostile_run
    outside = [
        p for p in root.rglob("*") if p.is_file() and rd.path not in p.parents and p.name != "exp.yaml"
    ]
    assert outside == []
    for p in rd.path.rglob("*"):
        assert p.resolve().is_relative_to(rd.path.resolve())
        assert ".." not in p.relative_to(rd.path).parts


def test_html_report_escapes_every_string(hostile_run: tuple[Path, RunDir, str]) -> None:
    _, rd, _ = hostile_run
    html_path = rd.path / "report.html"
    if not html_path.exists():
        pytest.skip("this build wrote no report.html")
    html = html_path.read_text(encoding="utf-8")
    for raw in XSS.values():
        assert raw not in html, f"unescaped in report.html: {raw}"
    for tag in ("<img src=x", "<svg onload", "<b onmouseover", '<script>alert("label")'):
        assert tag not in html
    assert "&lt;script&gt;" in html or "\\u003cscript" in html  # the label is there, as text


def test_markdown_report_keeps_markup_inert(hostile_run: tuple[Path, RunDir, str]) -> None:
    """report.md is rendered to HTML by viewers (GitHub, IDEs): a raw tag there would be live."""
    _, rd, _ = hostile_run
    md_path = rd.path / "report.md"
    if not md_path.exists():
        pytest.skip("this build wrote no report.md")
    md = md_path.read_text(encoding="utf-8")
    for raw in XSS.values():
        assert raw not in md, f"raw markup in report.md: {raw}"


def test_servers_listen_on_loopback_only(hostile_run: tuple[Path, RunDir, str]) -> None:
    _, rd, _ = hostile_run
    for srv in rd.manifest["servers"].values():
        assert srv["base_url"].startswith("http://127.0.0.1:")
        argv = srv["argv"]
        assert argv[argv.index("--host") + 1] == "127.0.0.1"
