"""Issue 35's end-to-end check through the real CLI: all-equal configs measured with launch levels and
a step of the host, as native run dirs (interleaved rounds) and as imported sglang.bench_serving
files (one file per config: two sessions), then `specsweep report --format json`. Every config is
equal in truth: no winner may be named, and the report must say why (sessions, launch noise, step)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specsweep.cli import main
from specsweep.store.run_dir import RunDir

pytestmark = pytest.mark.slow

CELLS = [("chat_short", c) for c in (1, 8, 16, 32, 64)] + [("rag_medium", c) for c in (1, 8, 32)]
LABELS = (("DSpark(st=3)", 3), ("DSpark(st=5)", 5))


def _line(scenario: str, c: int, thr: float) -> str:
    return json.dumps({"backend": "vllm", "dataset_name": "random", "tag": scenario, "max_concurrency": c,
                       "request_rate": float("inf"), "completed": 100, "duration": 3e4 / thr, "total_throughput": thr,
                       "output_throughput": thr / 3, "request_throughput": thr / 300, "mean_e2e_latency_ms": 1e6 / thr,
                       "mean_ttft_ms": 1e5 / thr, "mean_tpot_ms": 1e4 / thr})  # fmt: skip


def _report(paths: list[Path], tmp: Path) -> dict[str, Any]:
    dest = tmp / "report.json"
    args = ["report", *map(str, paths), "--kind", "sweep", "--method", "dspark", "--format", "json"]
    assert main([*args, "-o", str(dest)]) == 0
    return json.loads(dest.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _keys(rep: dict[str, Any]) -> set[str]:
    return {str(n["key"]) for n in rep["notes"]}


def test_imports_from_two_sessions_with_a_host_step_name_no_winner(tmp_path: Path) -> None:
    """Each config's file is its own session (imported apart); the host was 5% slower for the second
    file, launch levels 3%. Nothing measured both sessions: a 5% gap between them cannot be told from
    a host change, so no winner is named and the report says so, with the anchor in Next steps."""
    rng = np.random.default_rng(0)
    out = tmp_path / "results"
    for i, (label, spec) in enumerate(LABELS):
        level = rng.normal(0, 0.03) - 0.05 * i  # the file's launch, and the host's step for the second
        lines = [
            _line(s, c, 1000.0 * c * math.exp(level + rng.normal(0, 0.02)))
            for _r in range(3)
            for s, c in CELLS
        ]
        f = tmp_path / f"cfg{i}.jsonl"
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        args = ["import", "sglang", str(f), "--label", label, "--method", "dspark", "-o", str(out)]
        assert main([*args, "--param", f"spec_tokens={spec}"]) == 0
    rep = _report([out], tmp_path)
    vs = rep["verdicts"]
    assert len(vs) == len(CELLS) and all(v["n_a"] == 3 and v["n_b"] == 3 for v in vs)
    assert not [v for v in vs if v["verdict"] != "tie"], [v["effect"] for v in vs]
    assert all(v["unanchored"] for v in vs)
    assert {"note.sessions_unanchored", "next.anchor_sessions"} <= _keys(rep), _keys(rep)


def test_native_rounds_with_launch_levels_and_a_step_name_no_winner(tmp_path: Path) -> None:
    """A `specsweep run` in 5 interleaved rounds (each config launched once a round, the order
    alternating), each launch its own level (sd 1%), and the host 5% slower from inside round 3 on.
    The launch noise is measured from the launches, the change of the host named and taken out: no
    winner."""
    rng = np.random.default_rng(1)
    rounds, rows, seq = 5, [], 0
    total = rounds * len(LABELS) * len(CELLS)
    for r in range(rounds):
        for label, spec in LABELS if r % 2 == 0 else LABELS[::-1]:
            level = rng.normal(0, 0.01)
            for s, c in CELLS:
                thr = 1000.0 * c * math.exp(level + rng.normal(0, 0.02) - 0.05 * (seq >= 0.55 * total))
                rows.append({"duration": 3e4 / thr, "completed": 100, "failed": 0, "total_throughput": thr,
                             "output_throughput": thr / 3, "request_throughput": thr / 300,
                             "mean_e2e_latency_ms": 1e6 / thr, "mean_ttft_ms": 1e5 / thr, "mean_tpot_ms": 1e4 / thr,
                             "cell_id": f"{label}/{s}/c{c}", "label": label, "method": "dspark",
                             "params": {"spec_tokens": spec}, "server": label, "scenario": s, "max_concurrency": c,
                             "repeat": r, "round": r, "seq": seq, "status": "ok"})  # fmt: skip
                seq += 1
    rd = RunDir.create(tmp_path, "native", {"experiment": "native", "run_order": {"kind": "interleaved",
                       "rounds": []}}, "20260101-000000")  # fmt: skip
    for row in rows:
        rd.append_summary(row)
    rep = _report([rd.path], tmp_path)
    vs = rep["verdicts"]
    assert len(vs) == len(CELLS) and not [v for v in vs if v["verdict"] != "tie"], [v["effect"] for v in vs]
    assert {v["launch_source"] for v in vs} <= {"measured", "measured+floor"}
    # the host's change named: as a step, or (the round levels taking out all of it but the part inside
    # one launch, which that launch's level carries) as a drift across rounds
    assert {"note.step_found", "note.drift_rounds"} & _keys(rep), _keys(rep)
    assert {"note.launch_measured", "note.launch_measured_floor"} & _keys(rep), _keys(rep)
    assert not [v for v in vs if v["unanchored"]]  # 5 interleaved rounds link the launches


@pytest.mark.parametrize(("kind", "repeats"), [("blocked", 3), ("interleaved", 1)])
def test_one_launch_per_config_one_after_another_is_unanchored(
    tmp_path: Path, kind: str, repeats: int
) -> None:
    """Each config in its own launch, one after the other: a blocked run (repeats back to back), or a
    single interleaved round (the same data). Launch levels 3% (above the assumed 2%) and the host 4%
    slower for the second launch: nothing measures the launch noise, and nothing can tell a config
    from the host's change between the launches. Every verdict carries the between-launch allowance,
    no winner is named, the cell says why and Next steps suggests interleaved rounds."""
    rng = np.random.default_rng(2)
    rows, seq = [], 0
    for i, (label, spec) in enumerate(LABELS):
        level = rng.normal(0, 0.03) - 0.04 * i
        for s, c in CELLS:
            for r in range(repeats):
                thr = 1000.0 * c * math.exp(level + rng.normal(0, 0.02))
                rows.append({"duration": 3e4 / thr, "completed": 100, "failed": 0, "total_throughput": thr,
                             "output_throughput": thr / 3, "request_throughput": thr / 300,
                             "mean_e2e_latency_ms": 1e6 / thr, "mean_ttft_ms": 1e5 / thr, "mean_tpot_ms": 1e4 / thr,
                             "cell_id": f"{label}/{s}/c{c}", "label": label, "method": "dspark",
                             "params": {"spec_tokens": spec}, "server": label, "scenario": s, "max_concurrency": c,
                             "repeat": r, "round": r if kind == "interleaved" else 0, "seq": seq, "status": "ok"})  # fmt: skip
                seq += 1
    rd = RunDir.create(tmp_path, "native", {"experiment": "native", "run_order": {"kind": kind, "rounds": []}},
                       "20260101-000000")  # fmt: skip
    for row in rows:
        rd.append_summary(row)
    rep = _report([rd.path], tmp_path)
    vs = rep["verdicts"]
    assert len(vs) == len(CELLS) and not [v for v in vs if v["verdict"] != "tie"], [v["effect"] for v in vs]
    assert all(v["unanchored"] for v in vs)
    keys = _keys(rep)
    assert {"note.launches_unanchored", "next.interleave_rounds"} <= keys, keys
    assert "note.sessions_unanchored" not in keys, keys
    assert "winner.launches" in json.dumps(rep), "the cell says why"
