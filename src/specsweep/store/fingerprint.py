"""Which files a run used, recorded without writing a secret: the server binaries, model files and
tokenizers an experiment names, by content hash.

An experiment names them as literal paths or as ``${VAR}`` (``binary: ${LLAMA_SERVER}``). The manifest
keeps a ``${VAR}`` value unwritten (it may be a secret: specsweep.store.redact), so without this record a run
dir could not tell which llama-server or which model file produced it. ``used_files`` records, per
path the experiment names (``where``: its place in the config; ``ref``: the literal path or the
``${VAR}`` as written), the file's name, size and SHA-256 - of the whole file up to FULL_HASH_BYTES,
else of its size and first and last SAMPLE_BYTES (``sha256_sampled``: a 100 GB model is not read at
every start) - or, for a directory (a Hugging Face model), its config.json's SHA-256 and its file count.
A ``${VAR}`` whose name looks secret (``looks_secret``) or that sits under a secret-looking key is skipped.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specsweep.store.redact import looks_secret

FULL_HASH_BYTES = 256 << 20
SAMPLE_BYTES = 8 << 20
FILE_KEYS = frozenset({"binary", "model", "python", "tokenizer", "draft_model", "venv"})
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def config_json_sha256(directory: str | Path) -> str | None:
    """A model directory's config.json SHA-256 (the same weights under two names match)."""
    try:
        return hashlib.sha256((Path(directory) / "config.json").read_bytes()).hexdigest()
    except OSError:
        return None


def identity(path: str | Path) -> dict[str, Any] | None:
    """Name, size and content hash of a file, or a directory's config.json hash and file count;
    None when nothing is there."""
    p = Path(os.path.expanduser(str(path)))
    try:
        if p.is_file():
            size = p.stat().st_size
            out: dict[str, Any] = {"kind": "file", "name": p.name, "bytes": size}
            h = hashlib.sha256()
            with p.open("rb") as f:
                if size <= FULL_HASH_BYTES:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                    out["sha256"] = h.hexdigest()
                else:
                    h.update(str(size).encode())
                    h.update(f.read(SAMPLE_BYTES))
                    f.seek(size - SAMPLE_BYTES)
                    h.update(f.read(SAMPLE_BYTES))
                    out["sha256_sampled"] = h.hexdigest()
            return out
        if p.is_dir():
            files = sum(len(fs) for _r, _d, fs in os.walk(p))
            return {
                "kind": "dir",
                "name": p.name,
                "files": files,
                "config_json_sha256": config_json_sha256(p),
            }
    except OSError:
        return None
    return None


def _pairs(written: Any, resolved: Any, where: str) -> Iterator[tuple[str, str, str, str]]:
    """(place, key, as written, resolved) of every string of the config."""
    if isinstance(written, dict) and isinstance(resolved, dict):
        for k, v in written.items():
            yield from _pairs(v, resolved.get(k), f"{where}.{k}" if where else str(k))
    elif isinstance(written, list) and isinstance(resolved, list):
        for i, (a, b) in enumerate(zip(written, resolved, strict=False)):
            yield from _pairs(a, b, f"{where}[{i}]")
    elif isinstance(written, str) and isinstance(resolved, str):
        yield where, where.rsplit(".", 1)[-1].split("[", 1)[0], written, resolved


def used_files(written: dict[str, Any], resolved: dict[str, Any]) -> list[dict[str, Any]]:
    """The files a config names (``written``: as the manifest keeps it, ``${VAR}`` unresolved;
    ``resolved``: with the values), each identified as the module docstring says."""
    out = []
    seen: dict[str, dict[str, Any] | None] = {}  # each file read once, however many configs name it
    for where, key, as_written, value in _pairs(written, resolved, ""):
        refs = _REF.findall(as_written)
        if refs:
            if any(looks_secret(r) for r in refs) or looks_secret(key):
                continue
        elif key not in FILE_KEYS or as_written != value:
            continue
        if value not in seen:
            seen[value] = identity(value)
        if (ident := seen[value]) is not None:
            out.append({"where": where, "ref": as_written, **ident})
    return out
