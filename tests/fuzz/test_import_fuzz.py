"""Fuzzing the importers: mutated sglang.bench_serving JSONL and vllm bench serve JSON files.

Property: `import_results` either raises DataError naming the file (and the line / field where it
knows them) with nothing written into the results dir, or imports - a run dir whose summary and
manifest reload, one row per result object. Never another exception, never a hang, never a
half-written folder.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specsweep.errors import DataError
from specsweep.importers import ImportOptions, import_results
from specsweep.importers.common import LATENCY_KEYS
from specsweep.store.run_dir import RunDir

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
N_JSON = 300
N_BYTES = 300

SGLANG = {
    "backend": "vllm", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": 8,
    "tag": "chat_short", "duration": 10.0, "completed": 100, "total_input_tokens": 20000,
    "total_output_tokens": 10000, "request_throughput": 10.0, "input_throughput": 2000.0,
    "output_throughput": 1000.0, "total_throughput": 3000.0, "mean_e2e_latency_ms": 800.0,
    "median_e2e_latency_ms": 700.0, "p99_e2e_latency_ms": 1500.0, "mean_ttft_ms": 50.0, "p99_ttft_ms": 90.0,
    "mean_tpot_ms": 7.0, "p99_tpot_ms": 12.0, "concurrency": 8.0, "accept_length": 2.4,
}  # fmt: skip
SGLANG_OLD = {
    "backend": "sglang", "request_rate": 4.0, "total_input_tokens": 5000, "total_output_tokens": 2500,
    "mean_e2e_latency_ms": 500.0, "median_e2e_latency_ms": 450.0, "median_ttft_ms": 30.0,
    "output_throughput": 250.0, "duration": 10.0, "completed": 40,
}  # fmt: skip
VLLM = {
    "date": "20250101-000000", "backend": "vllm", "model_id": "meta/llama", "num_prompts": 50,
    "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4, "duration": 5.0, "completed": 48,
    "total_input_tokens": 9600, "total_output_tokens": 4800, "request_throughput": 9.6,
    "request_goodput": None, "output_throughput": 960.0, "total_token_throughput": 2880.0,
    "mean_ttft_ms": 40.0, "p99_ttft_ms": 60.0, "mean_e2el_ms": 420.0, "p99_e2el_ms": 600.0,
    "errors": [""] * 3 + ["timeout"], "metadata": {"tag": "chat_short"},
}  # fmt: skip

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats()
    | st.text(max_size=8) | st.sampled_from(["inf", "Infinity", "nan", "", "\ud800", "../x"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=5,
)  # fmt: skip
KEYS = sorted({*SGLANG, *SGLANG_OLD, *VLLM, "errors", "failed", "tag", "max_concurrency"})


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    obj = dict(base)
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["set", "set", "drop", "add"]))
        if op == "drop" and obj:
            obj.pop(draw(st.sampled_from(sorted(obj))))
        else:
            key = draw(st.sampled_from(KEYS)) if op == "set" else draw(st.text(max_size=10))
            obj[key] = draw(JSON)
    return obj


def _opts(data: st.DataObject) -> ImportOptions:
    return ImportOptions(
        label="A(k=3)",
        method="eagle",
        params={"k": 3},
        scenario=data.draw(st.sampled_from([None, "chat_short"])),
        concurrency=data.draw(st.sampled_from([None, 4])),
    )


def check(kind: str, path: Path, results: Path, opts: ImportOptions, n_objects: int | None) -> None:
    before = set(results.iterdir()) if results.exists() else set()
    t0 = time.monotonic()
    try:
        rd = import_results(kind, [path], results, opts)
    except DataError as e:
        assert e.file and path.name in str(e.file), str(e)
        after = set(results.iterdir()) if results.exists() else set()
        assert after == before, f"a failed import left {after - before}"
        return
    finally:
        assert time.monotonic() - t0 < 10, "an import took over 10 s"
    rd2 = RunDir.open(rd.path)
    rows = rd2.summary()
    if n_objects is not None:
        assert len(rows) == n_objects
    assert rd2.manifest["source"] == "import"
    for r in rows:
        assert any(r.get(k) is not None for k in ("total_throughput", "output_throughput", *LATENCY_KEYS))
        assert r["status"] in ("ok", "failed", "invalid")
        assert r["status"] != "invalid" or r.get("invalid_reason")  # a contradicted rate, said why
        for k, v in r.items():
            if k.endswith(("_ms", "_throughput")) and isinstance(v, float):
                assert not math.isnan(v)
    assert not [p for p in results.iterdir() if p.name.startswith(".import-")]


def fuzz(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@fuzz(N_JSON)
@given(data=st.data())
def test_sglang_mutated_objects(tmp_path: Path, data: st.DataObject) -> None:
    objs = data.draw(st.lists(st.sampled_from([SGLANG, SGLANG_OLD]).flatmap(mutated), min_size=1, max_size=3))
    d = Path(tmp_path) / f"ex{time.monotonic_ns()}"
    d.mkdir()
    f = d / "sg.jsonl"
    f.write_text("\n".join(json.dumps(o) for o in objs) + "\n")  # Python json: Infinity, NaN, \ud800
    distinct = {json.dumps(o, sort_keys=True) for o in objs}  # identical results are imported once
    check("sglang", f, d / "res", _opts(data), len(distinct))


@fuzz(N_JSON)
@given(data=st.data())
def test_vllm_mutated_object(tmp_path: Path, data: st.DataObject) -> None:
    obj = data.draw(mutated(VLLM))
    d = Path(tmp_path) / f"ex{time.monotonic_ns()}"
    d.mkdir()
    f = d / "v.json"
    f.write_text(json.dumps(obj))
    check("vllm", f, d / "res", _opts(data), 1)


@st.composite
def corrupt(draw: st.DrawFn, raw: bytes) -> bytes:
    buf = bytearray(raw)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, max(0, len(buf) - 1)))
        op = draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        if op == "flip" and buf:
            buf[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del buf[i : i + draw(st.integers(1, 20))]
        elif op == "insert":
            buf[i:i] = draw(
                st.sampled_from([b"\n", b"{", b"}", b",", b'"', b"\xff", b"1e999", b"NaN", b"[]"])
            )
        else:
            del buf[i:]
    return bytes(buf)


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
@fuzz(N_BYTES)
@given(data=st.data())
def test_corrupted_bytes(kind: str, tmp_path: Path, data: st.DataObject) -> None:
    base = (
        (json.dumps(SGLANG) + "\n" + json.dumps(SGLANG_OLD) + "\n") if kind == "sglang" else json.dumps(VLLM)
    )
    raw = data.draw(corrupt(base.encode()))
    d = Path(tmp_path) / f"ex{time.monotonic_ns()}"
    d.mkdir()
    f = d / "in.json"
    f.write_bytes(raw)
    check(kind, f, d / "res", _opts(data), None)
