"""The run dir records which server binary and model file it used (issue 28 defect 11): a ``${VAR}``
path stays unwritten in the manifest's config (it may be a secret), so its file's name, size and
content hash are recorded instead - never for a secret-looking variable."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from specsweep.experiment.loader import load_experiment
from specsweep.orchestrate import create_run_dir
from specsweep.store.fingerprint import FULL_HASH_BYTES, identity


def test_manifest_records_the_files_behind_the_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "engines-here"
    (where / "hf").mkdir(parents=True)
    (where / "hf" / "config.json").write_text('{"model_type": "llama"}')
    binary, model, key = where / "llama-server", where / "tiny.gguf", where / "key.pem"
    binary.write_bytes(b"\x7fELF binary")
    model.write_bytes(b"GGUF weights" * 100)
    key.write_text("-----BEGIN PRIVATE KEY-----")
    monkeypatch.setenv("LLAMA_SERVER", str(binary))
    monkeypatch.setenv("TINY_MODEL_GGUF", str(model))
    monkeypatch.setenv("TINY_MODEL_HF", str(where / "hf"))
    monkeypatch.setenv("TLS_PRIVATE_KEY", str(key))
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "files",
        "servers": [{"name": "l", "kind": "llamacpp", "binary": "${LLAMA_SERVER}", "model": "${TINY_MODEL_GGUF}",
                     "args": ["--ssl-key-file", "${TLS_PRIVATE_KEY}"]}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}],
        "client": {"tokenizer": "${TINY_MODEL_HF}"},
    }))  # fmt: skip
    _, plan = load_experiment(exp)
    rd = create_run_dir(plan, tmp_path / "res", str(exp))
    files = {f["ref"]: f for f in rd.manifest["files"]}
    assert set(files) == {"${LLAMA_SERVER}", "${TINY_MODEL_GGUF}", "${TINY_MODEL_HF}"}  # no TLS_PRIVATE_KEY
    assert files["${LLAMA_SERVER}"]["sha256"] == hashlib.sha256(binary.read_bytes()).hexdigest()
    assert files["${LLAMA_SERVER}"]["where"] == "servers[0].binary"
    assert files["${TINY_MODEL_GGUF}"] == {"where": "servers[0].model", "ref": "${TINY_MODEL_GGUF}", "kind": "file",
                                           "name": "tiny.gguf", "bytes": 1200,
                                           "sha256": hashlib.sha256(model.read_bytes()).hexdigest()}  # fmt: skip
    hf = files["${TINY_MODEL_HF}"]
    assert (
        hf["kind"] == "dir"
        and hf["config_json_sha256"] == hashlib.sha256(b'{"model_type": "llama"}').hexdigest()
    )
    raw = (rd.path / "manifest.json").read_text()
    assert "engines-here" not in raw  # the values themselves stay unwritten


def test_large_files_are_hashed_by_a_sample(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as f:
        f.truncate(FULL_HASH_BYTES + 1)
    ident = identity(big)
    assert ident is not None and "sha256" not in ident and len(ident["sha256_sampled"]) == 64
