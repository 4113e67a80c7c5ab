"""A grid over domains with a no-speculation baseline, end to end on the simulated engine: datasets ->
categories on the wire -> per-domain acceptance in the engine -> per_category results -> the report's
per-domain section (md en/zh, html heat map, json `domains`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data"
TOY = {
    "model_name": "sim-toy", "t0_ms": 0.5, "c_tok_ms": 0.01, "c_kv_ms": 0.01, "prefill_ms_per_tok": 0.002,
    "admit_ms": 0.2, "max_batch": 8, "kv_tokens": 8192, "prefill_chunk": 256,
}  # fmt: skip


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "specsweep", *args], capture_output=True, text=True, timeout=300,
                          check=False, cwd=cwd)  # fmt: skip


def test_domain_grid_with_baseline_on_the_simulator(tmp_path: Path) -> None:
    off, on = tmp_path / "off.yaml", tmp_path / "on.yaml"
    off.write_text(yaml.safe_dump({"name": "off", "k": 0, **TOY}))
    on.write_text(yaml.safe_dump({"name": "on", "k": 3, "spec_method": "dspark", "survival": [0.3, 0.1, 0.03],
                                  "category_survival": {"code_edit": [0.95, 0.9, 0.85]}, **TOY}))  # fmt: skip
    exp = {
        "name": "domains",
        "servers": [
            {"name": "nospec", "kind": "sim", "profile": str(off), "time_scale": 4, "baseline": True},
            {"name": "dspark", "kind": "sim", "profile": str(on), "time_scale": 4, "method": "dspark"},
        ],
        "scenarios": {"short": {"input_len": 256, "output_len": 48}},
        "workloads": [{"scenarios": ["short"], "concurrency": [2], "num_prompts": 8,
                       "dataset": [{"name": "gsm8k", "path": str(DATA / "gsm8k_test.jsonl")},
                                   {"name": "instructcoder", "path": str(DATA / "instructcoder.jsonl")}]}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 30, "stop_s": 3},
    }  # fmt: skip
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    p = _run("run", str(path), "--results-dir", str(tmp_path / "results"), "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    (run,) = (tmp_path / "results").iterdir()
    rows = [json.loads(x) for x in (run / "summary.jsonl").read_text().splitlines()]
    assert {r["scenario"] for r in rows} == {"short@gsm8k", "short@instructcoder"}
    per = {(r["label"], r["scenario"]): r["per_category"] for r in rows}
    assert set(per["dspark", "short@instructcoder"]) == {"code_edit"}
    assert per["dspark", "short@instructcoder"]["code_edit"]["accept_length_source"] == "server_counters"

    q = _run("report", str(run), "--format", "json", cwd=tmp_path)
    assert q.returncode == 0, q.stderr[-3000:]
    view = json.loads(q.stdout)
    dom = {(d["category"], d["config"]): d for d in view["domains"]}
    # a cell the client's self-check ruled invalid (a short run on a busy host) is left out of the
    # report with its reason; every valid cell is in the domains section
    valid = {(cat, r["label"]) for r in rows if r["status"] == "ok"
             for cat in [{"short@gsm8k": "math", "short@instructcoder": "code_edit"}[r["scenario"]]]}  # fmt: skip
    assert all(r["status"] == "ok" or r["invalid_reason"] for r in rows)
    assert set(dom) == valid
    for d in view["domains"]:
        assert {"category", "scenario", "concurrency", "config", "accept_length", "mean_tpot_ms", "total_throughput",
                "speedup"} <= set(d)  # fmt: skip
    # the server's acceptance per domain follows the profile's curves: E(3) = 3.7 for code, 1.43 otherwise
    if ("code_edit", "dspark") in dom:
        assert dom["code_edit", "dspark"]["accept_length"] > 3.0
    if ("math", "dspark") in dom:
        assert dom["math", "dspark"]["accept_length"] < 1.8
    if ("code_edit", "nospec") in dom:
        assert dom["code_edit", "nospec"]["speedup"] == 1.0
    for cat in ("code_edit", "math"):  # timing on a shared host is noisy: the numbers exist, with intervals
        if (cat, "dspark") not in dom or (cat, "nospec") not in dom:
            continue
        d = dom[cat, "dspark"]
        assert d["speedup"] > 0 and d["speedup_ci"][0] <= d["speedup"] <= d["speedup_ci"][1]
    assert view["domain_summary"]["baseline"] == "nospec"

    md = (run / "report.md").read_text()
    if not valid:  # every cell ruled invalid (a loaded host): the report says so and has no domains
        assert "invalid" in md
        return
    assert "## Per-domain results" in md and "against `nospec`" in md and "Output length: fixed" in md
    if ("code_edit", "dspark") in dom:
        assert "code_edit: " in md
    zh = _run("report", str(run), "--lang", "zh", cwd=tmp_path).stdout
    assert "## 分领域结果" in zh
    page = (run / "report.html").read_text()
    assert 'id="domains"' in page and "domains-heat" in page
