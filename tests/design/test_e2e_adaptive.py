"""The adaptive design end to end on the simulated engine (issue 25): `specsweep run` with an
`adaptive:` section, Ctrl-C in the middle of the design, `--resume` to the end, the report saying
how each cell was decided. Lean: two toy-profile configs that differ by their speed on the wall
clock (time_scale 0.1 against 0.125: B is 25% faster; steps of ~10 ms, so the timing is valid on a
busy host), two cells of a 32-token scenario, a few prompts each."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsweep.design import observe
from specsweep.store.run_dir import RunDir

pytestmark = pytest.mark.slow

CMD = [sys.executable, "-m", "specsweep"]


def experiment() -> dict[str, Any]:
    sim = {"kind": "sim", "profile": "toy", "method": "dspark"}
    return {
        "name": "design-e2e",
        "scenarios": {"tiny": {"input_len": 32, "output_len": 32, "range_ratio": 1.0}},
        "servers": [{**sim, "name": "A", "time_scale": 0.1}, {**sim, "name": "B", "time_scale": 0.125}],
        "workloads": [{"scenarios": ["tiny"], "concurrency": [1, 2], "num_prompts": 4}],
        "client": {"warmup_requests": 2, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 60, "stop_s": 5},
        "adaptive": {"max_repeats": 3, "margin": 0.05, "budget": None},
        "report": {"formats": ["md"]},
    }


def rows_of(path: Path) -> list[dict[str, Any]]:
    p = path / "summary.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def test_design_interrupted_and_resumed(tmp_path: Path) -> None:
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(experiment()))
    res = tmp_path / "res"
    p = subprocess.Popen([*CMD, "run", str(f), "--results-dir", str(res), "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        run: Path | None = None
        while time.monotonic() < deadline:  # Ctrl-C once round 1 has stored a run
            if res.exists() and any(res.iterdir()):
                run = next(res.iterdir())
                if any(r.get("round", 0) >= 1 for r in rows_of(run)) or p.poll() is not None:
                    break
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert run is not None
    rd = RunDir.open(run)
    before = rows_of(run)
    if p.returncode == 130:  # interrupted inside the design (the usual case)
        assert "specsweep run --resume" in err and rd.manifest["status"] == "interrupted"
        assert [i["status"] for i in rd.manifest["invocations"]] == ["interrupted"]
        assert len({(r["label"], r["max_concurrency"]) for r in before if r["round"] == 0}) == 4
    else:  # the design finished before the signal landed (a very fast host): resume must do nothing
        assert p.returncode in (0, 1), err
    dry = subprocess.run([*CMD, "run", "--resume", str(run), "--dry-run"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert dry.returncode == 0 and "adaptive design" in dry.stdout, dry.stderr
    r = subprocess.run(
        [*CMD, "run", "--resume", str(run), "--quiet"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode in (0, 1), r.stderr
    after = rows_of(run)
    assert after[: len(before)] == before  # nothing finished was redone or rewritten
    assert rd.manifest["status"] == "finished"
    keys = Counter((x["cell_id"], x["repeat"]) for x in after)
    assert set(keys.values()) == {1}  # the resume key stays unique
    assert [x["seq"] for x in after] == list(range(len(after)))
    per = Counter((x["label"], x["max_concurrency"]) for x in after)
    valid = Counter((x["label"], x["max_concurrency"]) for x in after if x["status"] == "ok")
    assert min(per.values()) >= 1  # the first pass
    assert max(valid.values(), default=0) <= 3  # at most max_repeats measured runs (an invalid one is redone)
    order = rd.manifest["run_order"]
    assert order["kind"] == "adaptive" and order["rounds"][0] == ["A", "B"]
    assert len(order["rounds"]) == 1 + max(x["round"] for x in after)
    # the rules, asked again on the stored rows, say the design is finished
    inputs = observe.design_inputs(after, rd.manifest)
    assert inputs is not None
    assert observe.default_rules()(*inputs.args()).next is None
    report = (run / "report.md").read_text()
    assert "How each cell was decided (adaptive design)" in report
    assert "the same grid with `repeats: 3` would have cost about" in report
