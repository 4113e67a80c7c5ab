"""Issue 29's done-when, through the public interface: sglang.bench_serving JSONL files with known truth
-> `specsweep import` -> `specsweep report --format json`, on a grid whose host drifted and on one whose
configs differ in noise. Every config is equal in truth: any winner is false."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from specsweep.cli import main

pytestmark = pytest.mark.slow

CELLS = [("chat_short", c) for c in (1, 8, 16, 32, 64)] + [("rag_medium", c) for c in (1, 8, 32)]


def _line(scenario: str, c: int, thr: float) -> str:
    return json.dumps({"backend": "vllm", "dataset_name": "random", "tag": scenario, "max_concurrency": c,
                       "request_rate": float("inf"), "completed": 100, "duration": 3e4 / thr, "total_throughput": thr,
                       "output_throughput": thr / 3, "request_throughput": thr / 300, "mean_e2e_latency_ms": 1e6 / thr,
                       "mean_ttft_ms": 1e5 / thr, "mean_tpot_ms": 1e4 / thr})  # fmt: skip


def _import(path: Path, label: str, spec: int, out: Path) -> None:
    args = ["import", "sglang", str(path), "--label", label, "--method", "dspark", "-o", str(out)]
    assert main([*args, "--param", f"spec_tokens={spec}"]) == 0


def _report(out: Path, tmp: Path) -> dict:  # type: ignore[type-arg]
    dest = tmp / "report.json"
    assert (
        main(
            ["report", str(out), "--kind", "sweep", "--method", "dspark", "--format", "json", "-o", str(dest)]
        )
        == 0
    )
    return json.loads(dest.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_a_drift_across_the_run_order_names_no_winner(tmp_path: Path) -> None:
    """Config st=3 ran first, st=5 after it, each cell 4 times (all cells, then all again): the host got
    8% faster over the whole order. Before: st=5 "won" nearly every cell (a 4% drift gap against 0.5%
    noise). Now the drift is found within each run, and comparisons across runs with no common clock
    are widened by what it could make; the report says so."""
    rng = np.random.default_rng(0)
    total = 2 * 4 * len(CELLS)
    pos = 0
    out = tmp_path / "results"
    for i, label in enumerate(("DSpark(st=3)", "DSpark(st=5)")):
        lines = []
        for _rep in range(4):
            for s, c in CELLS:
                lines.append(_line(s, c, 1000.0 * c * math.exp(0.08 * pos / total + rng.normal(0, 0.005))))
                pos += 1
        f = tmp_path / f"cfg{i}.jsonl"
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _import(f, label, 3 + 2 * i, out)
    rep = _report(out, tmp_path)
    vs = rep["verdicts"]
    assert len(vs) == len(CELLS) and all(v["n_a"] == 4 and v["n_b"] == 4 for v in vs)
    assert not [v for v in vs if v["verdict"] != "tie"], [v["effect"] for v in vs]
    assert any(n["key"] == "note.drift_unaligned" for n in rep["notes"])


def test_unequal_noise_never_borrows_the_quieter_configs_floor(tmp_path: Path) -> None:
    """Single runs of two equal configs, st=3 with 1% noise and st=5 with 8%, plus an A/A run of st=3
    only (the quieter config's floor). Before: st=5's single runs were judged against st=3's 1% and
    about half the cells named a false winner. Now st=5's side is not measured (assumed 10%)."""
    rng = np.random.default_rng(1)
    out = tmp_path / "results"
    for name, label, spec, sd in (
        ("a", "DSpark(st=3)", 3, 0.01),
        ("b", "DSpark(st=5)", 5, 0.08),
        ("a2", "DSpark(st=3)", 3, 0.01),
    ):
        f = tmp_path / f"{name}.jsonl"
        f.write_text("\n".join(_line(s, c, 1000.0 * c * math.exp(rng.normal(0, sd))) for s, c in CELLS) + "\n",
                     encoding="utf-8")  # fmt: skip
        _import(f, label, spec, out)
    rep = _report(out, tmp_path)
    vs = rep["verdicts"]
    assert len(vs) == len(CELLS)
    assert not [v for v in vs if v["verdict"] != "tie"], [(v["effect"], v["noise_sd"]) for v in vs]
    by = {(v["a"], v["b"]): v for v in vs}
    v = next(iter(by.values()))
    quiet, loud = ("noise_a", "noise_b") if v["a"] == "DSpark(st=3)" else ("noise_b", "noise_a")
    assert v[quiet] < 0.03 and v[loud] == pytest.approx(0.10)  # each config its own noise, or the assumption
    assert any(n["key"] == "note.noise_unmeasured" for n in rep["notes"])
