"""The manifest keeps no secret: placeholders and a salted hash; resume gets the values back from the
unchanged experiment file and tells a rotated secret from a changed experiment."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsweep.errors import ConfigError
from specsweep.experiment.loader import load_experiment
from specsweep.orchestrate import create_run_dir, load_run_plan


def _write(path: Path, token: str, conc: int = 1) -> None:
    path.write_text(yaml.safe_dump({
        "name": "sec",
        "servers": [{"name": "s", "kind": "sim", "profile": "toy", "env": {"HF_TOKEN": token},
                     "args": ["--api-key", token]}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [conc]}],
    }))  # fmt: skip


def test_manifest_redacted_and_resume_reads_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    f = tmp_path / "exp.yaml"
    _write(f, "sk-very-secret")
    _, plan = load_experiment(f)
    rd = create_run_dir(plan, tmp_path / "res", str(f))
    raw = (rd.path / "manifest.json").read_text()
    assert "sk-very-secret" not in raw and "***" in raw
    resumed = load_run_plan(rd)
    assert resumed.configs[0].spec.env["HF_TOKEN"] == "sk-very-secret"
    _write(f, "sk-rotated")  # a rotated key is fine: only the secret differs, and resume says so
    with caplog.at_level(logging.WARNING):
        assert load_run_plan(rd).configs[0].spec.env["HF_TOKEN"] == "sk-rotated"
    assert "changed since the run started" in caplog.text
    _write(f, "sk-rotated", conc=8)  # another experiment: a resume must not guess
    with pytest.raises(ConfigError, match="changed since the run started"):
        load_run_plan(rd)
    f.unlink()
    with pytest.raises(ConfigError, match="missing"):
        load_run_plan(rd)


PLANTED = {
    "AUTHORIZATION": "Bearer PLANT-authorization-01",
    "PGPASSWORD": "PLANT-pgpassword-02",
    "GITHUB_PAT": "PLANT-github-pat-03",
    "DATABASE_URL": "postgres://u:PLANT-dburl-04@h/db",
    "SESSION_COOKIE": "PLANT-cookie-05",
}


def _hostile(tmp_path: Path) -> dict[str, Any]:
    return {
        "name": "sec2",
        "servers": [
            {"name": "c", "kind": "command", "env": PLANTED, "params": {"api_key": "${PLANT_PARAM}"},
             "argv": ["srv", "--port", "{port}", "--key", "{api_key}", "--header", "Authorization: Bearer PLANT-hdr-06",
                      "--bearer", "PLANT-bearer-07", "--pass", "PLANT-pass-08", "--path", "${PLANT_PLAIN}"]},
            {"name": "u", "kind": "url", "url": "http://me:PLANT-urlpw-09@127.0.0.1:9/"},
        ],
        "client": {"extra_request_body": {"api_key": "PLANT-body-10", "nested": {"token": "PLANT-body-11"}}},
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}],
    }  # fmt: skip


def test_no_planted_secret_in_the_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets are found by where they stand (item 1 of issue 20), not only by their names."""
    monkeypatch.setenv("PLANT_PARAM", "PLANT-param-12")
    monkeypatch.setenv("PLANT_PLAIN", "/PLANT/plain-ref-13")
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(_hostile(tmp_path)))
    _, plan = load_experiment(f)
    rd = create_run_dir(plan, tmp_path / "res", str(f))
    raw = (rd.path / "manifest.json").read_text()
    assert [w for w in raw.replace('"', " ").split() if "PLANT-" in w or "/PLANT/" in w] == []
    m = rd.manifest
    srv = m["config"]["servers"][0]
    assert srv["params"]["api_key"] in ("***", "${PLANT_PARAM}")
    assert "${PLANT_PLAIN}" in srv["argv"]  # a ${VAR} value is written as the reference
    assert m["plan"][0]["params"]["api_key"] in ("***", "${PLANT_PARAM}")
    assert m["secrets"]["count"] >= 12
    assert load_run_plan(rd).configs[0].params["api_key"] == "PLANT-param-12"  # resume has the value


def test_a_var_value_in_a_label_resumes_and_redoes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``${VAR}`` grid value ends up in labels and cell ids: stored as ``${VAR}``, yet resume
    matches the stored cells to the plan (nothing redone) and the records are found."""
    from specsweep.orchestrate import execute
    from specsweep.store.run_dir import RunDir

    from .helpers import fake_argv
    from .test_grid import StandIn

    monkeypatch.setenv("DRAFT_A", "/models/draft-alpha")
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump({
        "name": "refs",
        "servers": [{"name": "s", "kind": "command", "argv": [*fake_argv(), "--tag", "{dm}"],
                     "grid": {"dm": ["${DRAFT_A}"]}}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 5},
        "report": {"enabled": False},
    }))  # fmt: skip
    _, plan = load_experiment(f)
    rd = create_run_dir(plan, tmp_path / "res", str(f))
    execute(plan, rd, bench_fn=StandIn(0.01))
    (row,) = rd.summary()
    assert "${DRAFT_A}" in row["label"] and "draft-alpha" not in row["cell_id"]
    assert RunDir(rd.path).read_records(row["cell_id"], 0)  # found from the stored id alone
    bench = StandIn(0.01)
    execute(load_run_plan(rd), rd, bench_fn=bench)  # resume
    assert bench.calls == [] and len(rd.summary()) == 1
