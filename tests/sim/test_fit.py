"""sim fit: recovers known cost parameters from synthetic results; CLI end to end; acceptance handling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specsweep.cli import main
from specsweep.errors import UsageError
from specsweep.sim.fit import fit
from specsweep.sim.observed import const_rate_for, rows_to_cells, survival_for
from specsweep.sim.predict import predict_cell
from specsweep.sim.profile import COST_PARAMS, Profile, load_profile, parse_acceptance
from specsweep.store.run_dir import RunDir
from specsweep.workload.scenarios import get_scenario

TRUE = {
    "t0_ms": 2.0, "c_tok_ms": 0.05, "c_kv_ms": 0.02, "prefill_ms_per_tok": 0.004,
    "prefill_ms_per_tok2": 0.002, "admit_ms": 6.0, "cliff_ms": 3.0, "moe_ms": 1.5,
}  # fmt: skip
CELLS = [("chat_short", 1), ("chat_short", 4), ("chat_short", 12), ("rag_medium", 1), ("rag_medium", 6),
         ("decode_heavy", 8), ("long_context_probe", 2)]  # fmt: skip


def _truth(k: int = 2) -> Profile:
    surv = [0.7, 0.45, 0.25][:k]
    return Profile(name="truth", k=k, survival=surv, max_batch=16, kv_tokens=400_000, prefill_chunk=3000,
                   graph_cap=30, moe_n0=8.0, admit_delay_steps=1, **TRUE)  # fmt: skip


def _rows(
    prof: Profile, cells: list[tuple[str, int]], n: int = 24, spec_metrics: bool = False, **extra: Any
) -> list[dict[str, Any]]:
    rows = []
    for sc, c in cells:
        r = predict_cell(prof, get_scenario(sc), c, num_prompts=n)
        if not spec_metrics:  # the fit then takes the acceptance prior (the truth)
            for key in ("accept_length", "spec_accept_rate", "spec_accept_per_pos", "spec_num_drafts"):
                r.pop(key, None)
        rows.append({**r, "scenario": sc, "max_concurrency": c, "method": "dspark",
                     "params": {"spec_tokens": prof.k}, "label": f"st{prof.k}", "status": "ok", **extra})  # fmt: skip
    return rows


def _base() -> Profile:
    # the truth's structure, wrong cost parameters
    return _truth().model_copy(update={n: 1.0 for n in TRUE})


def test_fit_recovers_known_parameters() -> None:
    rows = _rows(_truth(2), CELLS) + _rows(_truth(3), CELLS[:4])
    cells = rows_to_cells(rows)
    res = fit(cells, _base(), k=2, acceptance="0.7,0.45,0.25", loss="linear")
    for name, want in TRUE.items():
        assert getattr(res.profile, name) == pytest.approx(want, rel=0.02), name
    med = res.profile.fit["train_median_abs_err_pct"]
    assert all(v < 0.2 for v in med.values()), med
    assert res.profile.k == 2 and res.profile.survival == pytest.approx([0.7, 0.45])


def test_fit_scans_structure_and_finds_the_true_delay() -> None:
    rows = _rows(_truth(2), CELLS[:5])
    res = fit(rows_to_cells(rows), _base(), k=2, acceptance="0.7,0.45", loss="linear",
              scan={"admit_delay_steps": [0, 1, 3]})  # fmt: skip
    assert res.profile.admit_delay_steps == 1
    costs = {s["admit_delay_steps"]: s["cost"] for s in res.profile.fit["scan"]}
    assert costs[1] < costs[0] and costs[1] < costs[3]


def test_unidentified_parameter_keeps_its_given_value() -> None:
    truth = _truth(2).model_copy(update={"graph_cap": 10_000})  # the cliff never triggers
    rows = _rows(truth, CELLS[:4])
    base = _base().model_copy(update={"graph_cap": 10_000, "cliff_ms": 4.25})
    res = fit(rows_to_cells(rows), base, k=2, acceptance="0.7,0.45")
    assert res.profile.cliff_ms == 4.25
    assert "cliff_ms" not in res.profile.fit["free"]


def test_holdout_errors_are_reported() -> None:
    train = rows_to_cells(_rows(_truth(2), CELLS[:4]))
    hold = rows_to_cells(_rows(_truth(3), CELLS[:2]))
    res = fit(train, _base(), k=2, acceptance="0.7,0.45,0.25", holdout=hold, loss="linear")
    assert len(res.holdout) == 2
    assert all(abs(r["total_throughput"]["err"]) < 0.01 for r in res.holdout)


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rd = RunDir.create(tmp_path / "results", "synthetic", {"note": "test"}, stamp="x")
    for r in _rows(_truth(2), CELLS[:3], n=16):
        rd.append_summary(r)
    out = tmp_path / "fitted.yaml"
    base = tmp_path / "base.yaml"
    base.write_text(_base().to_yaml(), encoding="utf-8")
    rc = main(["sim", "fit", str(tmp_path / "results"), "-o", str(out), "--base", str(base),
               "--acceptance", "0.7,0.45", "--fix", "moe_ms=1.5"])  # fmt: skip
    assert rc == 0
    text = capsys.readouterr().out
    assert "train (3 rows)" in text and "wrote" in text
    prof = load_profile(str(out))
    assert prof.name == "fitted" and prof.k == 2 and prof.moe_ms == 1.5
    assert prof.provenance["command"].startswith("specsweep sim fit ")
    assert "--fix moe_ms=1.5" in prof.provenance["command"]
    assert prof.provenance["date"] and prof.provenance["data"]
    assert set(prof.fit["train_median_abs_err_pct"]) == {"total_throughput", "mean_tpot_ms", "mean_ttft_ms"}


def test_replicates_pool_seeded_simulations_of_the_real_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--replicates R: the fit's prediction for a cell is the mean TTFT / TPOT of the engine's runs with
    seeds seed..seed+R-1 and their total tokens over their total duration."""
    from specsweep.sim.calibration import predict_for_cell
    from specsweep.sim.fit import predict_from_design, prepare

    truth = _truth(2)
    rows = _rows(truth, [("chat_short", 4), ("rag_medium", 2)], n=12)
    theta = np.asarray(truth.cost_vector())
    pooled = rows_to_cells(rows)
    prepare(pooled, truth, "0.7,0.45", seed=5, replicates=3)
    for cell in pooled:
        runs = [predict_for_cell(truth, cell, replay=True, seed=s) for s in (5, 6, 7)]
        assert len({r["mean_tpot_ms"] for r in runs}) == 3  # the seeds really differ
        pred = predict_from_design(cell, theta)
        assert pred["mean_ttft_ms"] == pytest.approx(np.mean([r["mean_ttft_ms"] for r in runs]), rel=1e-6)
        assert pred["mean_tpot_ms"] == pytest.approx(np.mean([r["mean_tpot_ms"] for r in runs]), rel=1e-6)
        tokens = sum(r["total_input_tokens"] + r["total_output_tokens"] for r in runs)
        assert pred["total_throughput"] == pytest.approx(tokens / sum(r["duration"] for r in runs), rel=1e-6)
    # the CLI records it (profile and command) and refuses a count below 1 with one clear line
    rd = RunDir.create(tmp_path / "results", "synthetic", {}, stamp="x")
    for r in rows:
        rd.append_summary(r)
    out = tmp_path / "p.yaml"
    base = tmp_path / "base.yaml"
    base.write_text(_base().to_yaml(), encoding="utf-8")
    argv = ["sim", "fit", str(tmp_path / "results"), "-o", str(out), "--base", str(base),
            "--acceptance", "0.7,0.45"]  # fmt: skip
    assert main([*argv, "--replicates", "2"]) == 0
    prof = load_profile(str(out))
    assert prof.fit["replicates"] == 2 and "--replicates 2" in prof.provenance["command"]
    capsys.readouterr()
    assert main([*argv, "--replicates", "0"]) == 2
    assert "--replicates 0" in capsys.readouterr().err


def test_cli_needs_acceptance_without_spec_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rd = RunDir.create(tmp_path, "r", {}, stamp="x")
    for r in _rows(_truth(2), CELLS[:1], n=8):
        rd.append_summary(r)
    assert main(["sim", "fit", str(tmp_path), "-o", str(tmp_path / "p.yaml")]) == 2
    assert "--acceptance" in capsys.readouterr().err


def test_acceptance_from_results_spec_metrics() -> None:
    rows = _rows(_truth(2), CELLS[2:3], n=48, spec_metrics=True)
    cell = rows_to_cells(rows)[0]
    assert survival_for(cell, prior=None) == pytest.approx([0.7, 0.45], abs=0.05)  # per-position counters
    rows[0].pop("spec_accept_per_pos")
    cell = rows_to_cells([{**rows[0], "accept_length": 2.2}])[0]
    a = const_rate_for(2.2, 2)
    assert 1 + a + a * a == pytest.approx(2.2)
    assert survival_for(cell, prior=None) == pytest.approx([a, a * a])


def test_parse_acceptance() -> None:
    assert parse_acceptance("const:0.5", 3) == pytest.approx([0.5, 0.25, 0.125])
    assert parse_acceptance("0.58,0.45,0.32,0.24,0.16", 3) == [0.58, 0.45, 0.32]
    assert parse_acceptance("0.8,0.4", 3) == pytest.approx([0.8, 0.4, 0.2])
    assert parse_acceptance("0.5", 0) == []
    for bad in ("const:2", "0.3,0.5", "x", "const:x"):
        with pytest.raises(UsageError, match="acceptance"):
            parse_acceptance(bad, 3)


def test_cost_vector_order_matches_engine_features() -> None:
    from specsweep.sim.engine import FEATURES

    assert len(FEATURES) == len(COST_PARAMS)


def test_load_cells_reads_user_scenarios_and_sglang_params(tmp_path: Path) -> None:
    from specsweep.sim.observed import load_cells

    manifest = {"config": {"scenarios": {"mine": {"input_len": 64, "output_len": 32}}}}
    rd = RunDir.create(tmp_path, "r", manifest, stamp="x")
    rd.append_summary({"scenario": "mine", "max_concurrency": 4, "method": "eagle", "status": "ok",
                       "params": {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
                       "total_throughput": 1000.0, "mean_tpot_ms": 5.0, "mean_ttft_ms": 50.0})  # fmt: skip
    rd.append_summary({"scenario": "mine", "max_concurrency": 4, "method": "eagle", "status": "failed"})
    (cell,) = load_cells([tmp_path])
    assert cell.scenario.input_len == 64 and cell.k == 3 and cell.concurrency == 4
    assert cell.obs == {"total_throughput": 1000.0, "mean_tpot_ms": 5.0, "mean_ttft_ms": 50.0}


def test_scan_takes_moe_n0_and_mixed_prefill() -> None:
    from specsweep.sim.fit_cli import parse_scan

    scan = parse_scan(["moe_n0=8,32", "mixed_prefill=0,1"])
    assert scan == {"moe_n0": [8, 32], "mixed_prefill": [0, 1]}
    with pytest.raises(UsageError, match="mixed_prefill"):
        parse_scan(["mixed_prefill=2"])
    truth = _truth(2).model_copy(update={"mixed_prefill": False})
    rows = _rows(truth, CELLS[:5])
    res = fit(rows_to_cells(rows), _base(), k=2, acceptance="0.7,0.45", loss="linear",
              scan={"mixed_prefill": [0, 1]})  # fmt: skip
    assert res.profile.mixed_prefill is False
    costs = {s["mixed_prefill"]: s["cost"] for s in res.profile.fit["scan"]}
    assert costs[False] < costs[True]


def test_scan_recovers_graph_counts_prefill() -> None:
    """Rows made by an engine whose mixed steps over the graph cap pay the cliff: the scan picks that."""
    from specsweep.sim.fit_cli import parse_scan

    assert parse_scan(["graph_counts_prefill=0,1"]) == {"graph_counts_prefill": [0, 1]}
    truth = _truth(2).model_copy(update={"graph_counts_prefill": True, "cliff_ms": 6.0, "graph_cap": 64})
    rows = _rows(truth, CELLS[:5])
    base = _base().model_copy(update={"graph_cap": 64})
    res = fit(rows_to_cells(rows), base, k=2, acceptance="0.7,0.45", loss="linear",
              scan={"graph_counts_prefill": [0, 1]})  # fmt: skip
    assert res.profile.graph_counts_prefill is True
    assert res.profile.cliff_ms == pytest.approx(6.0, rel=0.05)
    costs = {s["graph_counts_prefill"]: s["cost"] for s in res.profile.fit["scan"]}
    assert costs[True] < costs[False]


def test_cli_refuses_rows_of_several_methods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28 defect 6: the quickstart's kind of run (DSpark st=3 / st=5 and EAGLE rows) made one
    'dspark' profile of all of them under --k 5; mixed methods are refused as mixed k are, and each
    method fits on its own rows."""
    rd = RunDir.create(tmp_path / "results", "quickstart", {}, stamp="x")
    for r in _rows(_truth(2), CELLS[:2], n=8) + _rows(_truth(3), CELLS[:2], n=8):
        rd.append_summary(r)  # DSpark, k = 2 and 3
    eagle = _rows(_truth(2), CELLS[:2], n=8)
    for r in eagle:
        r.update(
            method="eagle", label="EAGLE", params={"num_steps": 2, "eagle_topk": 1, "num_draft_tokens": 3}
        )
        rd.append_summary(r)
    out = tmp_path / "p.yaml"
    argv = ["sim", "fit", str(tmp_path / "results"), "-o", str(out), "--acceptance", "0.7,0.45,0.25"]
    assert main([*argv, "--k", "3"]) == 2
    err = capsys.readouterr().err
    assert "mix methods: dspark (4 rows), eagle (2 rows)" in err and "--method dspark" in err
    assert not out.exists()
    assert main([*argv, "--method", "eagle"]) == 0
    assert "train (2 rows)" in capsys.readouterr().out
    prof = load_profile(str(out))
    assert prof.spec_method == "eagle" and prof.k == 2
