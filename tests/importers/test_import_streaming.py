"""Issue 38, defect 9 (import): a document or line over ``reader.STREAM_AT`` is streamed (ijson) without
the per-request detail the importers do not use. Streamed or parsed whole, a file gives the same
results, the same rows and the same content hashes; Infinity/NaN, errors and truncation read alike."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from specsweep.errors import DataError
from specsweep.importers import ImportOptions, identity, reader, run_import, stream
from specsweep.importers.reader import TRUNCATED, read_objects
from tests.importers.realformats import SG_2024, SG_2025, VLLM_2024, document, jsonl, sweep_run

FIXTURES = Path(__file__).parent / "fixtures"


def _files(tmp: Path) -> list[tuple[str, Path]]:
    detailed = {
        **VLLM_2024,
        "errors": ["", "boom", "", ""],
        "itls": [[0.007, 0.008], [], [0.009], [0.008, 1]],
    }
    out = [
        ("sglang", jsonl(tmp / "sg.jsonl", SG_2024, SG_2025, {**SG_2025, "duration": 13.0})),
        ("vllm", document(tmp / "v.json", detailed)),
        ("vllm", document(tmp / "v4.json", VLLM_2024, indent=4)),
        ("vllm", document(tmp / "summary.json", [sweep_run(0, 1000.0), sweep_run(1, 1010.0)], indent=4)),
        ("guidellm", FIXTURES / "guidellm" / "benchmarks.json"),
        ("llmperf", FIXTURES / "llmperf" / "anyscale_7b_summary.json"),
    ]
    out += [("aiperf", p) for p in sorted((FIXTURES / "aiperf").rglob("profile_export_aiperf.json"))]
    out += [("genai-perf", p) for p in sorted((FIXTURES / "genai_perf").rglob("*_genai_perf.json"))]
    return out


def _read(path: Path) -> list[tuple[Any, int | None, str]]:
    return [(loc.obj, loc.item, identity.digest(loc.obj).hex()) for loc in read_objects(path)]


def test_streamed_and_whole_give_the_same_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for _kind, path in _files(tmp_path):
        whole = _read(path)
        with monkeypatch.context() as m:
            m.setattr(reader, "STREAM_AT", 1)  # every line and document streamed
            streamed = _read(path)
        assert json.dumps(streamed, default=str) == json.dumps(whole, default=str), path
        assert whole, path


def test_detail_is_dropped_or_folded_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = document(tmp_path / "v.json", {**VLLM_2024, "errors": ["", "x" * 50, "", ""]})
    for at in (reader.STREAM_AT, 1):
        monkeypatch.setattr(reader, "STREAM_AT", at)
        (obj,) = (loc.obj for loc in read_objects(path))
        assert "generated_texts" not in obj
        assert obj["itls"] == [0.015, 0.007, 0.009, 0.008] and obj["errors"] == [False, True, False, False]
        assert obj["ttfts"] == VLLM_2024["ttfts"]
    g = json.loads((FIXTURES / "guidellm" / "benchmarks.json").read_text())
    g["benchmarks"][0]["requests"]["successful"] = [{"prompt": "p" * 100, "output": "o"}] * 50
    gpath = document(tmp_path / "benchmarks.json", g, indent=2)
    (obj,) = (loc.obj for loc in read_objects(gpath))
    assert "requests" not in obj["benchmarks"][0] and "metrics" in obj["benchmarks"][0]


def test_an_import_is_the_same_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def rows(res: Path) -> list[dict[str, Any]]:
        (run,) = list(res.iterdir())
        out = [orjson.loads(x) for x in (run / "summary.jsonl").read_bytes().splitlines()]
        for r in out:
            r.pop("source_line")  # a streamed list's items are at the list's line
        return out

    for i, (kind, path) in enumerate(_files(tmp_path)):
        opts = ImportOptions(label=f"l{i}", method="m")
        run_import(kind, [path], tmp_path / f"whole{i}", opts)
        with monkeypatch.context() as m:
            m.setattr(reader, "STREAM_AT", 1)
            run_import(kind, [path], tmp_path / f"streamed{i}", opts)
        assert rows(tmp_path / f"streamed{i}") == rows(tmp_path / f"whole{i}"), path


TRICKY = (
    b'{"a": Infinity, "s": "Infinity \\" NaN \\\\", "b": [-Infinity, NaN, 1.5, -2],'
    b' "t": "\\\\\\"Infinity", "u": "x\\\\", "c": NaN}'
)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 9, 13, 1 << 20])
def test_literals_survive_every_cut(chunk: int) -> None:
    src = stream.Literals(stream.Source(io.BytesIO(TRICKY), line=False))
    pieces = []
    while piece := src.read(chunk):
        pieces.append(piece)
    got = json.loads(b"".join(pieces))
    want = json.loads(TRICKY)
    for k in ("s", "t", "u"):
        assert got[k] == want[k]
    assert got["a"] == "\x00specsweep:Infinity" and got["c"] == "\x00specsweep:NaN"
    assert got["b"][:2] == ["\x00specsweep:-Infinity", "\x00specsweep:NaN"]


def test_streamed_literals_become_floats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(TRICKY + b"\n")
    monkeypatch.setattr(reader, "STREAM_AT", 1)
    (obj,) = (loc.obj for loc in read_objects(path))
    assert obj["a"] == math.inf and math.isnan(obj["c"]) and obj["b"][0] == -math.inf
    assert obj["s"] == 'Infinity " NaN \\'


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        (b'{"a": 1}\n{"a": 2, "b": [1, 2', rf"x.jsonl:2: {TRUNCATED}"),
        (b'{\n  "a": [1,\n  2', TRUNCATED),
        (b'[\n{"a": 1},\n{"a": 2', rf"x.jsonl item 2: {TRUNCATED}"),
        (b'{\n  "a": 1\n}\n{"b": 2}', "more text after the JSON document"),
        (b'{"a": 1}\n{"a": tru}\n', "x.jsonl:2: not valid JSON: lexical error"),
    ],
)
def test_streamed_errors_name_the_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: bytes, expect: str
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(text)
    monkeypatch.setattr(reader, "STREAM_AT", 1)
    with pytest.raises(DataError, match=re.escape(expect)):
        list(read_objects(path))
