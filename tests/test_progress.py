"""Progress of a grid (issue 19 item 16): an honest dry-run estimate that skips finished cells, an
ETA that learns from finished cells, and config labels that survive an 80-column terminal."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from specsweep.commands.progress import (
    Eta,
    LiveObserver,
    QuietObserver,
    cell_guess_s,
    estimate_plan,
    startup_guess_s,
)
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llamacpp-cpu.yaml"


@pytest.fixture
def tiny_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example's paths; the model file as big as the tiny model (5 MB)."""
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"\0" * 5_000_000)
    for k, v in {
        "LLAMA_SERVER": "/opt/x/llama-server",
        "TINY_MODEL_GGUF": str(gguf),
        "TINY_MODEL_HF": "/opt/x/hf",
    }.items():
        monkeypatch.setenv(k, v)
    return gguf


@pytest.mark.usefixtures("tiny_llama")
def test_dry_run_estimate_of_the_llamacpp_example_is_honest() -> None:
    # measured: the example (3 configs x 2 cells) took 11-23 s end to end (issue 19); old guess 3m24s
    _, plan = load_experiment(EXAMPLE)
    est = estimate_plan(plan)
    assert est.todo == 6 and est.skipped == 0
    assert 5 < est.total_s < 60, est.total_s


@pytest.mark.usefixtures("tiny_llama")
def test_resume_estimate_skips_finished_cells_and_learns_from_them() -> None:
    _, plan = load_experiment(EXAMPLE)
    cfg = plan.configs[0]
    cells = plan.cells[cfg.label]
    finished = {(c.cell_id, 0) for c in cells}
    rows = [{"cell_id": c.cell_id, "status": "ok", "duration": 3 * cell_guess_s(plan, cfg, c)} for c in cells]
    full, part = estimate_plan(plan), estimate_plan(plan, finished, rows)
    assert part.skipped == len(cells) and part.todo == full.todo - len(cells)
    assert part.scale == pytest.approx(3.0)
    left = [(k, c) for k in plan.configs[1:] for c in plan.cells[k.label]]
    want = sum(startup_guess_s(k) for k in plan.configs[1:]) + 3 * sum(
        cell_guess_s(plan, k, c) for k, c in left
    )
    assert part.total_s == pytest.approx(want)


def _plan(labels: list[str]) -> Any:
    servers = [
        {"name": f"s{i}", "kind": "sim", "profile": "toy", "label": lab} for i, lab in enumerate(labels)
    ]
    work = {"scenarios": ["chat_short"], "concurrency": [1, 8], "num_prompts": 8}
    return plan_experiment(parse_experiment({"name": "p", "servers": servers, "workloads": [work]}))


def test_eta_learns_from_finished_cells() -> None:
    plan = _plan(["a", "b"])
    eta = Eta(plan)
    a, b = plan.configs
    guess_all = sum(cell_guess_s(plan, k, c) + 0 for k in plan.configs for c in plan.cells[k.label])
    assert eta.remaining_s() == pytest.approx(guess_all + startup_guess_s(a) + startup_guess_s(b))
    eta.server_ready("a", 2 * startup_guess_s(a))
    first = plan.cells["a"][0]
    eta.cell_done(first, 0, 0.5 * cell_guess_s(plan, a, first))  # a runs twice as fast as guessed
    rest_a = cell_guess_s(plan, a, plan.cells["a"][1]) * 0.5
    rest_b = sum(cell_guess_s(plan, b, c) for c in plan.cells["b"]) * 0.5  # learned from a
    assert eta.remaining_s() == pytest.approx(rest_a + rest_b + 2 * startup_guess_s(b))


def test_eta_of_each_simulated_config_comes_from_its_own_engine() -> None:
    """Issue 28 defect 7: one fixed guess for every simulated config under-estimated the quickstart's
    EAGLE cells by 58% once DSpark's were done (EAGLE's take about 3x DSpark's). A simulated engine's
    cell takes what its profile's engine takes (sim predict: the engine its server runs on the wall
    clock), so that is the truth here; the ETA after 18 of 27 cells must be within 10% of it."""
    from specsweep.sim.predict import predict_cell
    from specsweep.sim.profile import load_profile

    _, plan = load_experiment(ROOT / "examples" / "quickstart.yaml")
    client = plan.experiment.client

    profiles = {
        name: load_profile(name) for name in ("v4flash-dspark-st3", "v4flash-dspark-st5", "v4flash-eagle")
    }

    def truth(cfg: Any, cell: Any) -> float:
        prof = profiles[cfg.spec.profile.format(**cfg.params)]
        row = predict_cell(prof, plan.scenarios[cell.scenario], cell.max_concurrency,
                           num_prompts=cell.num_prompts, seed=client.seed)  # fmt: skip
        warm = -(-client.warmup_requests // cell.max_concurrency) * 32 * row["mean_tpot_ms"] / 1000
        return row["duration"] + warm + client.warmup_sleep_s  # time scale 1

    ds3, ds5, eagle = plan.configs
    assert eagle.label == "EAGLE"
    eta = Eta(plan)
    for cfg in (ds3, ds5):
        eta.server_ready(cfg.label, startup_guess_s(cfg))
        for cell in plan.cells[cfg.label]:
            eta.cell_done(cell, 0, truth(cfg, cell))
    left = sum(truth(eagle, c) for c in plan.cells["EAGLE"])
    assert eta.remaining_s() - startup_guess_s(eagle) == pytest.approx(left, rel=0.10)
    # each profile its own figure: EAGLE's cell is slower than DSpark's same cell
    for a, b in zip(plan.cells["EAGLE"], plan.cells[ds5.label], strict=True):
        assert cell_guess_s(plan, eagle, a) > 1.5 * cell_guess_s(plan, ds5, b)


def test_eta_learns_each_config_from_its_own_finished_cells() -> None:
    plan = _plan(["a", "b"])
    a, b = plan.configs
    eta = Eta(plan)
    for c in plan.cells["a"]:
        eta.cell_done(c, 0, 2 * cell_guess_s(plan, a, c))  # a: twice its guesses
    first_b, rest_b = plan.cells["b"]
    eta.cell_done(first_b, 0, 0.5 * cell_guess_s(plan, b, first_b))  # b: half of its own
    eta.server_ready("a", startup_guess_s(a))
    eta.server_ready("b", startup_guess_s(b))
    assert eta.remaining_s() == pytest.approx(0.5 * cell_guess_s(plan, b, rest_b))


def test_live_table_keeps_long_labels_at_80_columns() -> None:
    label = "ngram spec_ngram_simple_size_m=5 [bold]x[/bold]"  # long, and markup is text
    con = Console(width=80, file=io.StringIO(), force_terminal=True, record=True)
    obs = LiveObserver(console=con)
    try:
        row = {"label": label, "scenario": "tiny_cycle", "max_concurrency": 2, "repeat": 0, "status": "ok",
               "total_throughput": 1234.5, "mean_tpot_ms": 2.25, "mean_ttft_ms": 30.1, "request_throughput": 4.5}  # fmt: skip
        obs("run_start", {"plan": _plan(["a"]), "todo": 2, "finished": 0})
        obs("cell_done", {"row": row})
    finally:
        obs.close()
    out = Console(width=80, file=io.StringIO(), record=True)
    out.print(obs.table())
    text = out.export_text()
    assert label in text  # whole, not "ngram spec_ngram_s…", and the brackets printed as text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_quiet_lines_carry_the_eta(caplog: pytest.LogCaptureFixture) -> None:
    plan = _plan(["a"])
    obs = QuietObserver()
    cell = plan.cells["a"][0]
    with caplog.at_level(logging.INFO, logger="specsweep.run"):
        obs("run_start", {"plan": plan, "todo": 2, "finished": 0})
        obs("cell_start", {"cell": cell, "repeat": 0})
        row = {"label": "a", "scenario": "chat_short", "max_concurrency": 1, "repeat": 0, "status": "ok"}
        obs("cell_done", {"cell": cell, "repeat": 0, "row": row})
    assert "estimated " in caplog.text and "[1/2] a chat_short c=1 r0: ok" in caplog.text
    assert "; ETA " in caplog.text


def test_bench_progress_line() -> None:
    from specsweep.commands.progress import BenchProgress

    con = Console(width=80, file=io.StringIO(), force_terminal=True)
    with BenchProgress(8, "bench [tiny] c=2", console=con) as bp:  # markup in a name is text
        bp.advance(3)
        task = bp.progress.tasks[0]
        assert (task.completed, task.total, task.description) == (3, 8, "bench \\[tiny] c=2")
