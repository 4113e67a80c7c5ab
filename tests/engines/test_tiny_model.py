"""The tiny cycling model made by make_tiny_model.py: its tokenizer and cycles agree (no engine)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engines.helpers import Engines

pytestmark = [pytest.mark.engine]

HERE = Path(__file__).resolve().parent


def test_cycle_words_are_single_tokens_that_round_trip(engines: Engines) -> None:
    from tokenizers import Tokenizer

    info = engines.cycles
    tok = Tokenizer.from_file(str(Path(engines.need("TINY_MODEL_HF")) / "tokenizer.json"))
    assert tok.get_vocab_size() == info["vocab_size"]
    for ids, text in zip(info["cycles"], info["cycle_text"], strict=True):
        assert len(ids) == info["cycle_len"]
        assert tok.encode(text, add_special_tokens=False).ids == ids
        assert tok.decode(ids) == text
    # successor closes each cycle: following it cycle_len times from any word returns to it
    succ = info["successor"]
    for w in succ:
        x = w
        for _ in range(info["cycle_len"]):
            x = succ[x]
        assert x == w


def test_hf_folder_is_complete(engines: Engines) -> None:
    hf = Path(engines.need("TINY_MODEL_HF"))
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "generation_config.json"):  # fmt: skip
        assert (hf / name).is_file(), name
    assert Path(engines.need("TINY_MODEL_GGUF")).read_bytes()[:4] == b"GGUF"


def test_maker_is_reproducible(engines: Engines, tmp_path: Path) -> None:
    """Same script + corpus -> byte-identical weights: the cache key (their hash) is sound."""
    gguf_py = engines.need("GGUF_PY")
    env = {**os.environ, "PYTHONPATH": gguf_py + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = tmp_path / "m"
    subprocess.run(
        [sys.executable, str(HERE / "make_tiny_model.py"), str(out)], env=env, check=True, timeout=120,
        capture_output=True,
    )  # fmt: skip
    cached = Path(engines.need("TINY_MODEL_HF"))
    for rel in ("model.safetensors", "tokenizer.json", "config.json"):
        a = hashlib.sha256((out / "hf" / rel).read_bytes()).hexdigest()
        b = hashlib.sha256((cached / rel).read_bytes()).hexdigest()
        assert a == b, rel
    a = hashlib.sha256((out / "tiny-cycle-llama.gguf").read_bytes()).hexdigest()
    assert a == hashlib.sha256(Path(engines.need("TINY_MODEL_GGUF")).read_bytes()).hexdigest()
