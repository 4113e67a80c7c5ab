"""`specsweep calibrate-noise` (issue 35): one config, k launches, a few cells, through the real run
machinery on the simulator; the launch noise stored under engine@host, and a later report on that
engine and host says its launch noise came from the calibration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsweep.analysis.calibrate import calibration_plan
from specsweep.errors import UsageError
from specsweep.experiment.loader import load_experiment
from specsweep.store.run_dir import RunDir

CMD = [sys.executable, "-m", "specsweep"]


def experiment(repeats: int = 1) -> dict[str, Any]:
    sim = {"kind": "sim", "profile": "toy", "method": "dspark", "time_scale": 0.1}
    return {
        "name": "calib",
        "scenarios": {"tiny": {"input_len": 16, "output_len": 8, "range_ratio": 1.0}},
        "servers": [{**sim, "name": "A", "grid": {"st": [3, 5]}}, {**sim, "name": "B"}],
        "workloads": [{"scenarios": ["tiny"], "concurrency": [1, 2, 4], "num_prompts": 4}],
        "client": {"warmup_requests": 1, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 60, "stop_s": 5},
        "repeats": repeats,
        "run_order": "blocked",
        "adaptive": None,
        "report": {"formats": ["md"]},
    }


def write(tmp: Path, exp: dict[str, Any]) -> Path:
    f = tmp / "exp.yaml"
    f.write_text(yaml.safe_dump({k: v for k, v in exp.items() if v is not None}))
    return f


def test_calibration_plan_is_one_config_k_launches_few_cells(tmp_path: Path) -> None:
    _, plan = load_experiment(write(tmp_path, experiment(repeats=3)))
    cal = calibration_plan(plan, "A(st=5)", 5, 2)
    assert [c.label for c in cal.configs] == ["A(st=5)"]
    assert cal.configs[0].params == {"st": 5}
    assert [(c.scenario, c.max_concurrency) for c in cal.all_cells()] == [("tiny", 1), ("tiny", 2)]
    exp = cal.experiment
    assert exp.repeats == 5 and exp.run_order == "interleaved" and exp.name == "calib-calibrate-noise"
    assert calibration_plan(plan, None, 2, 9).configs[0].label == "A(st=3)"  # the first; every cell it has
    assert len(calibration_plan(plan, None, 2, 9).all_cells()) == 3
    with pytest.raises(UsageError, match="--launches 1"):
        calibration_plan(plan, None, 1, 2)
    with pytest.raises(UsageError, match=r"'C'.*A\(st=3\)"):
        calibration_plan(plan, "C", 3, 2)


@pytest.mark.slow
def test_calibrate_then_a_later_report_uses_it(tmp_path: Path) -> None:
    f = write(tmp_path, experiment())
    res = tmp_path / "res"
    p = subprocess.run([*CMD, "calibrate-noise", str(f), "--results-dir", str(res), "--quiet",
                        "--launches", "3", "--cells", "2"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode in (0, 1), p.stderr
    assert "launch sd" in p.stdout and "df" in p.stdout and "stored in" in p.stdout, p.stdout + p.stderr
    stored = json.loads((res / "launch-noise.json").read_text())
    (key, entry), = stored.items()  # fmt: skip
    assert key.startswith("sim@") and entry["config"] == "A(st=3)" and entry["kinds"] == ["sim"]
    assert entry["sd"] >= 0 and entry["df"] >= 1 and entry["launches"] >= 2
    run = res / entry["run_dir"]
    assert RunDir.open(run).manifest["run_order"]["kind"] == "interleaved"
    rows = [json.loads(x) for x in (run / "summary.jsonl").read_text().splitlines()]
    assert {r["label"] for r in rows} == {"A(st=3)"} and len(rows) == 6
    # the experiment itself, one launch per config: its report's launch noise is the calibration's
    p = subprocess.run([*CMD, "run", str(f), "--results-dir", str(res), "--quiet"], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert p.returncode in (0, 1), p.stderr
    exp_run = next(d for d in res.iterdir() if d.is_dir() and "calibrate" not in d.name)
    p = subprocess.run([*CMD, "report", str(exp_run), "--format", "json"], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert _sources(json.loads(p.stdout)) == {"calibrated"}
    p = subprocess.run([*CMD, "report", str(exp_run)], capture_output=True, text=True, timeout=120)
    assert "from the stored calibration" in p.stdout and key in p.stdout, p.stdout


def _sources(doc: Any) -> set[str]:
    """Every ``launch_source`` anywhere in a JSON report."""
    if isinstance(doc, dict):
        here = {str(doc["launch_source"])} if doc.get("launch_source") else set()
        return here.union(*(_sources(v) for v in doc.values()))
    if isinstance(doc, list):
        return set().union(*(_sources(v) for v in doc))
    return set()


def test_the_adaptive_design_takes_launch_sd_from_the_stored_calibration(tmp_path: Path) -> None:
    import socket

    from specsweep.design.loop import with_calibrated_launch_sd
    from specsweep.experiment.rounds import design_settings
    from specsweep.store import launch_noise

    design = {"max_repeats": 3, "budget": None}
    _, plan = load_experiment(write(tmp_path, {**experiment(), "run_order": None, "adaptive": design}))
    res = tmp_path / "res"
    assert with_calibrated_launch_sd(plan, res) is plan  # nothing stored
    host = socket.gethostname()
    launch_noise.store(res, f"vllm@{host}", {"sd": 0.05, "df": 3, "kinds": ["vllm"]})  # another engine
    launch_noise.store(res, f"sim@other-{host}", {"sd": 0.06, "df": 3, "kinds": ["sim"]})  # another host
    assert design_settings(with_calibrated_launch_sd(plan, res)).launch_sd == 0.03
    launch_noise.store(res, f"sim@{host}", {"sd": 0.012, "df": 3, "kinds": ["sim"]})
    calibrated = design_settings(with_calibrated_launch_sd(plan, res))
    assert calibrated.launch_sd == 0.012 and calibrated.launch_df == 3.0  # its df reach the verdicts
    assert design_settings(plan).launch_df is None  # the 3% prior: taken as known
    # the file's own launch_sd wins; no design: nothing to set
    _, own = load_experiment(
        write(tmp_path, {**experiment(), "run_order": None, "adaptive": {**design, "launch_sd": 0.04}})
    )
    assert design_settings(with_calibrated_launch_sd(own, res)).launch_sd == 0.04
    _, plain = load_experiment(write(tmp_path, experiment()))
    assert with_calibrated_launch_sd(plain, res) is plain


def test_a_calibration_stores_what_its_launches_measure_not_the_assumed_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 launches of one config that agree closely (launch sd 0.3%): the calibration stores the launch
    noise they measure (under the assumed 2%, with 3 df), not the floor the verdicts put under a
    measured launch noise when nothing is calibrated (it stored 2% before)."""
    import math

    import numpy as np

    from specsweep.analysis.calibrate import measure
    from specsweep.store import launch_noise

    monkeypatch.setenv(launch_noise.ENV, str(tmp_path / "cal.json"))
    rng = np.random.default_rng(3)
    rd = RunDir.create(tmp_path, "calib", {"experiment": "calib", "run_order": {"kind": "interleaved", "rounds": []}},
                       "20260101-000000")  # fmt: skip
    seq = 0
    for r in range(4):
        level = rng.normal(0, 0.003)
        for c in (1, 2, 4, 8):
            thr = 1000.0 * c * math.exp(level + rng.normal(0, 0.01))
            rd.append_summary({"duration": 3e4 / thr, "completed": 100, "failed": 0, "total_throughput": thr,
                               "output_throughput": thr / 3, "request_throughput": thr / 300,
                               "cell_id": f"A/tiny/c{c}", "label": "A", "method": "dspark", "params": {"st": 3},
                               "server": "A", "scenario": "tiny", "max_concurrency": c, "repeat": r, "round": r,
                               "seq": seq, "status": "ok"})  # fmt: skip
            seq += 1
    cal = measure(rd.path)
    assert cal.df == 3.0 and cal.launch_sd < 0.015, cal
    (entry,) = json.loads((tmp_path / "cal.json").read_text()).values()
    assert entry["sd"] == pytest.approx(cal.launch_sd) and entry["df"] == 3.0
