"""Progress with rounds: the estimate counts a launch per config per round (interleaved), the
adaptive design's display shows rounds, the cells still undecided and the budget left (its total is
not known up front), and its dry run prints the first pass and the worst case."""

from __future__ import annotations

import io
import logging
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
from specsweep.commands.run import print_plan
from specsweep.design.estimate import estimate_design
from specsweep.design.types import CellStatus, DesignState
from specsweep.experiment.adaptive import DesignSettings
from specsweep.experiment.rounds import rounds
from tests.design.test_loop import P1, P2, design_plan

from .test_run_order import grid_plan


def test_interleaved_estimate_counts_a_launch_per_round() -> None:
    inter, blocked = grid_plan(), grid_plan(run_order="blocked")
    runs = sum(cell_guess_s(inter, k, c) for k in inter.configs for c in inter.cells[k.label]) * 3
    starts = sum(startup_guess_s(k) for k in inter.configs)
    assert estimate_plan(inter).total_s == pytest.approx(runs + 3 * starts)
    assert estimate_plan(blocked).total_s == pytest.approx(runs + starts)


def test_eta_follows_the_schedule_of_launches() -> None:
    plan = grid_plan()
    rs = rounds(plan)
    todo = [run for r in rs for x in r.launches for run in x.runs]
    launches = [x.cfg.label for r in rs for x in r.launches]
    eta = Eta(plan, set(), list(todo), list(launches))
    full = eta.remaining_s()
    a = plan.configs[0]
    eta.server_ready(a.label, startup_guess_s(a))  # round 0's launch of A(st=3): 2 of its 3 launches left
    assert eta.remaining_s() == pytest.approx(full - startup_guess_s(a))
    eta.server_ready(a.label, 99.0, restart=True)  # a restart is not a planned launch
    assert eta.remaining_s() == pytest.approx(full - startup_guess_s(a))


def state(undecided: int = 1) -> DesignState:
    cells = (
        CellStatus(point=P1, status="running", leader=None),
        CellStatus(point=P2, status="decided", leader="B"),
    )
    return DesignState(cells=cells[: undecided] + cells[1:], next=None, spent_s=60.0, worst_case_s=90.0,
                       baseline_s=300.0)  # fmt: skip


def test_quiet_lines_for_rounds_and_the_design(caplog: pytest.LogCaptureFixture) -> None:
    plan = design_plan()
    obs = QuietObserver()
    settings = DesignSettings(budget_fraction=0.5)
    cell = plan.cells["B"][0]
    with caplog.at_level(logging.INFO, logger="specsweep.run"):
        obs("run_start", {"plan": plan, "todo": 0, "finished": 0, "todo_runs": [], "launches": []})
        obs("round_start", {"round": 2, "launches": ["B"], "runs": 2, "reason": "undecided cells",
                            "state": state(), "settings": settings, "todo_runs": [(cell, 1), (cell, 2)]})  # fmt: skip
        obs("design_done", {"state": state(0), "settings": settings, "rounds": 3})
    text = caplog.text
    want = "round 2: 2 run(s) in 1 launch(es) (undecided cells); 1 cell(s) undecided; spent 1m00s of a 2m30s budget"
    assert want in text
    assert (
        "design finished after 3 round(s): 1 decided; spent 1m00s, the same grid with repeats: 3 about 5m00s"
        in text
    )
    assert obs.clock.total == 2 and obs.clock.eta is not None and obs.clock.eta.remaining_s() > 0


def test_live_bar_grows_with_each_round() -> None:
    plan = design_plan()
    con = Console(width=100, file=io.StringIO(), force_terminal=True, record=True)
    obs = LiveObserver(console=con)
    cell = plan.cells["B"][0]
    try:
        obs("run_start", {"plan": plan, "todo": 6, "finished": 0, "todo_runs": [], "launches": []})
        d: dict[str, Any] = {"round": 1, "launches": ["B"], "runs": 3, "state": state(),
                             "settings": DesignSettings(), "todo_runs": [(cell, 1)] * 3}  # fmt: skip
        obs("round_start", d)
        assert obs.progress.tasks[0].total == 9
    finally:
        obs.close()
    assert "round 1: 3 run(s) in 1 launch(es); 1 cell(s) undecided" in con.export_text()


def test_dry_run_prints_the_first_pass_and_the_worst_case(capsys: pytest.CaptureFixture[str]) -> None:
    plan = design_plan(budget="50%")
    print_plan(plan)
    out = capsys.readouterr().out
    est = estimate_design(plan)
    assert "3 configuration(s), 6 cell(s), adaptive design" in out
    assert "adaptive design: equivalence margin +-5%, at most 3 runs per config and cell, budget 50% of the " \
           "same grid with repeats: 3" in out  # fmt: skip
    assert "first pass: 6 run(s) in 3 launch(es)" in out
    assert "then: only the cells still undecided, up to 3 runs each (at most 18 runs" in out
    assert "worst case: about" in out and "the same grid with repeats: 3 would take about" in out
    assert est.worst_s == pytest.approx(min(est.ceiling_s, 0.5 * est.baseline_s))
    assert est.baseline_s == pytest.approx(3 * est.pass_s) and est.ceiling_s == pytest.approx(3 * est.pass_s)
    unlimited = estimate_design(design_plan(budget=None))
    assert unlimited.budget_s is None and unlimited.worst_s == unlimited.ceiling_s


def test_resumed_dry_run_says_what_is_stored_and_what_comes_next(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from specsweep.design import observe
    from specsweep.design.loop import run_design
    from specsweep.orchestrate import create_run_dir
    from tests.design.design_fakes import RepeatRules, VirtualRunner

    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)
    with pytest.raises(KeyboardInterrupt):  # the first pass and one run of round 1
        run_design(plan, rd, VirtualRunner(rd, stop_after=7), plan_next=RepeatRules())
    monkeypatch.setattr(observe, "default_rules", RepeatRules)
    print_plan(plan, rows=rd.summary(), manifest=rd.manifest)
    out = capsys.readouterr().out
    assert "stored: 7 run(s) in 2 round(s)" in out
    assert "the rules on the stored runs: next 6 run(s) in 3 launch(es)" in out


def test_racing_dry_run_costs_its_short_pass_and_its_relaunches() -> None:
    plain, racing = estimate_design(design_plan()), estimate_design(design_plan(race=True, launches=3))
    two = estimate_design(design_plan(race=True))  # launches: 2, the default
    assert racing.baseline_s == pytest.approx(plain.baseline_s)  # the same 3-repeat grid
    starts = sum(startup_guess_s(k) for k in design_plan().configs)
    runs = plain.pass_s - starts
    # the short pass: every launch, and less than a full pass of runs (4 prompts: c=1 runs 2 of them,
    # two waves; c=4's single wave is the whole cell, run in full)
    assert starts < racing.pass_s < plain.pass_s
    # the worst case: every relaunch (two with launches: 3, one by default) holding max_repeats full runs
    assert racing.ceiling_s == pytest.approx(racing.pass_s + 2 * (starts + 3 * runs))
    assert two.ceiling_s == pytest.approx(two.pass_s + starts + 3 * runs)


def test_a_racing_dry_run_names_its_short_look_and_its_launch_cap(capsys: pytest.CaptureFixture[str]) -> None:
    """A racing plan's dry run says look 0's short runs and the relaunches, not the first generation's
    "first pass ... up to N runs each" (which it printed, with max_repeats read as a run count)."""
    print_plan(design_plan(race=True))
    out = capsys.readouterr().out
    assert "adaptive design, racing:" in out and "at most 2 launches per config" in out
    assert "look 0: 6 short run(s) in 3 launch(es)" in out
    assert "relaunched (at most 1 time(s))" in out
    assert "first pass:" not in out and "runs each" not in out
