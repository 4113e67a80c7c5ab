"""examples/domains-llamacpp.yaml, lean: real llama-server, no-spec baseline vs n-gram k=3, over three
domains (code / math / language prompts from the example's dataset files); the report's per-domain
section has the server's acceptance (per response: llama-server's timings) and the speedup per domain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specsweep.store.run_dir import RunDir
from tests.engines.helpers import Engines

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_domains_example_runs_lean(engines: Engines, tmp_path: Path) -> None:
    env = {**os.environ, **{k: engines.need(k) for k in ("LLAMA_SERVER", "TINY_MODEL_GGUF", "TINY_MODEL_HF")}}
    exp = yaml.safe_load((ROOT / "examples" / "domains-llamacpp.yaml").read_text())
    exp["servers"][1]["grid"] = {"spec_ngram_simple_size_m": [3]}
    exp["workloads"][0].update(concurrency=[1], num_prompts=3)
    exp["scenarios"]["short"]["output_len"] = 32
    path = tmp_path / "domains.yaml"
    path.write_text(yaml.safe_dump(exp))
    results = tmp_path / "results"
    run = [sys.executable, "-m", "specsweep", "run", str(path), "--results-dir", str(results), "--quiet"]
    p = subprocess.run(run, capture_output=True, text=True, timeout=360, check=False, env=env, cwd=ROOT)
    assert p.returncode in (0, 5), f"exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    (rd,) = results.iterdir()
    q = subprocess.run([sys.executable, "-m", "specsweep", "report", str(rd), "--format", "json"],
                       capture_output=True, text=True, timeout=120, check=False, env=env, cwd=ROOT)  # fmt: skip
    assert q.returncode == 0, q.stderr[-3000:]
    view = json.loads(q.stdout)
    assert view["domain_summary"]["baseline"] == "llamacpp-off"
    rows = {(d["category"], d["config"]): d for d in view["domains"]}
    # A cell the client's self-check ruled invalid (a busy 2-core host: the engine beside the client)
    # is left out of every report section; it must say why, and the valid ones must carry the domains.
    summary = [json.loads(line) for line in (rd / "summary.jsonl").read_text().splitlines()]
    for r in summary:
        assert r["status"] in ("ok", "invalid"), r.get("error")
        assert r["status"] == "ok" or r["invalid_reason"], r
    valid = {(r["scenario"].split("@")[-1], r["label"]) for r in summary if r["status"] == "ok"}
    assert {c for c, _ in valid} <= {"coding", "math", "language"}
    assert {c for c, _ in rows} == {c for c, _ in valid}
    # Every cell keeps its records, valid or not: llama-server's per-response drafts are measured in
    # each speculative cell (n-gram drafts on the tiny model's cycling output are mostly accepted).
    store = RunDir(rd)
    for r in summary:
        if r["label"] == "ngram k=3":
            recs = [x for x in store.read_records(r["cell_id"]) if not x.is_warmup and x.ok]
            drafted = sum(x.draft_tokens or 0 for x in recs)
            assert recs and drafted > 0, r["cell_id"]
            assert sum(x.draft_accepted or 0 for x in recs) / drafted > 0.4, r["cell_id"]
    # The report's per-domain rows are the valid cells'. On this 2-core host, with the engine beside
    # the client and a token every ~0.3 ms, a cell can be invalid (events read together while the
    # client was late): then it is left out, with its reason (above).
    spec_ok = [c for c, label in valid if label == "ngram k=3"]
    for cat in spec_ok:
        spec = rows[cat, "ngram k=3"]
        assert spec["accept_length_source"] == "timings", spec  # llama-server's per-response drafts
        assert spec["accept_length"] > 1.5, spec  # the tiny model cycles: n-gram drafts are mostly accepted
        if (cat, "llamacpp-off") in valid:
            assert spec["speedup"] is not None and spec["speedup_ci"] is not None
    md = (rd / "report.md").read_text()
    # Every cell ruled invalid (a loaded CI host): each is named with its reason, and no domain numbers.
    if not valid:
        assert view["domains"] == [] and "## Per-domain results" not in md
        for r in summary:
            assert f"{r['label']}: the client marked this run invalid" in md, r["label"]
        return
    assert "## Per-domain results" in md and "against `llamacpp-off`" in md


def test_domains_example_plans_three_domains_and_a_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    from specsweep.experiment.argv import build_argv
    from specsweep.experiment.loader import load_experiment

    for k in ("LLAMA_SERVER", "TINY_MODEL_GGUF", "TINY_MODEL_HF"):
        monkeypatch.setenv(k, f"/opt/x/{k.lower()}")
    exp, plan = load_experiment(ROOT / "examples" / "domains-llamacpp.yaml")
    assert [s.baseline for s in exp.servers] == [True, False]
    assert sorted({c.scenario for c in plan.all_cells()}) == ["short@coding", "short@language", "short@math"]
    argv = {cfg.label: build_argv(cfg, 8000) or [] for cfg in plan.configs}
    assert "--spec-type" not in argv["llamacpp-off"]
    assert all(v[v.index("--threads") + 1] == "1" for v in argv.values())


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_mixed_cell_gets_acceptance_per_domain_from_llama_server(engines: Engines, tmp_path: Path) -> None:
    """One cell mixing two domains on a real llama-server with n-gram drafts, through a chat endpoint:
    each response's timings give each domain its own acceptance (the /metrics counters cannot be split
    by domain), and over the whole cell they agree with the counters' figure."""
    from specsweep.measure.acceptance import from_requests
    from tests.engines.helpers import llamacpp_spec, running_server

    mix = tmp_path / "mix.jsonl"
    rows = [{"prompt": f"def total_{i}(xs):\n    return sum(xs)", "category": "coding"} for i in range(3)]
    rows += [{"prompt": f"Say hello to person number {i}.", "category": "chat"} for i in range(3)]
    mix.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ngram = {"spec_type": "ngram-simple", "spec_ngram_simple_size_n": 2, "spec_ngram_simple_size_m": 3}
    out, recs_path = tmp_path / "line.jsonl", tmp_path / "records.jsonl"
    with running_server(llamacpp_spec(engines, "ngram", ngram), tmp_path / "server.log") as srv:
        cmd = [sys.executable, "-m", "specsweep", "bench", "--backend", "openai-chat", "--base-url", srv.base_url,
               "--model", srv.model_id or "", "--tokenizer", engines.need("TINY_MODEL_HF"),
               "--dataset-name", "jsonl", "--dataset-path", str(mix), "--random-output-len", "32",
               "--num-prompts", "6", "--max-concurrency", "2", "--warmup-requests", "0",
               "--output-file", str(out), "--records", str(recs_path), "--quiet"]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False, cwd=ROOT)
    assert p.returncode in (0, 5), p.stderr[-3000:]  # 5: the self-check doubts timings, not counts
    res = json.loads(out.read_text())
    per = res["per_category"]
    assert set(per) == {"coding", "chat"}
    for cat in per.values():
        assert cat["accept_length_source"] == "timings" and cat["accept_length"] > 1.0, cat
    recs = [json.loads(x) for x in recs_path.read_text().splitlines() if x.strip()]
    ok = [r for r in recs if not r["is_warmup"] and r["error_kind"] is None]
    assert len(ok) == 6 and all(
        r["draft_accepted"] is not None and r["draft_tokens"] >= r["draft_accepted"] for r in ok
    )
    whole = from_requests(sum(r["output_tokens"] for r in ok), len(ok), sum(r["draft_accepted"] for r in ok))
    assert res["accept_length_basis"] == "metrics_counters"
    assert whole == pytest.approx(res["accept_length"], rel=0.02)
