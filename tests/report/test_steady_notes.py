"""The report names every cell whose closed-loop runs were not at steady state (specsweep.measure.steady), in
en and zh, and says what that does to its figures; the quickstart's cells are all at steady state."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.analysis.test_analysis import K3, K5, make_run, row

from specsweep.experiment.loader import load_experiment
from specsweep.measure import steady
from specsweep.report import build_view, render

ROOT = Path(__file__).resolve().parents[2]


def rows(waves: float, share: float, c: int = 96) -> list[dict[str, object]]:
    extra = {"waves": waves, "at_target_share": share, "num_prompts": int(waves * c), "request_rate": None}
    return [row(*K3, "stress_standard", c, 20000, **extra), row(*K5, "stress_standard", c, 17000, **extra)]


@pytest.mark.parametrize(("waves", "share"), [(1.0, 0.1), (8.0, 0.4)])
def test_a_cell_not_at_steady_state_is_named_with_its_consequence(
    tmp_path: Path, waves: float, share: float
) -> None:
    make_run(tmp_path, "x", rows(waves, share))
    v = build_view([tmp_path], "sweep")
    en, zh = render(v, "md", "en"), render(v, "md", "zh")
    assert "stress_standard c=96 (DSpark(st=3), DSpark(st=5)): not at steady state" in en
    assert f"{waves:.3g} wave(s)" in en and f"{share:.0%} of the run at concurrency 96" in en
    assert "throughput reads high and TPOT low" in en
    assert "未达到稳态" in zh and "吞吐量偏高" in zh


def test_steady_cells_get_one_line_and_no_warning(tmp_path: Path) -> None:
    make_run(tmp_path, "x", rows(3.0, 0.85))
    en = render(build_view([tmp_path], "sweep"), "md", "en")
    assert "not at steady state" not in en
    assert "Steady state: every closed-loop cell ran at least 3 waves" in en and "lowest: 85%" in en


def test_runs_that_cannot_say_get_no_note(tmp_path: Path) -> None:
    """Imports and run dirs from before these keys: nothing is claimed either way."""
    make_run(tmp_path, "x", [row(*K3, "chat_short", 8, 1000), row(*K5, "chat_short", 8, 1100)])
    en = render(build_view([tmp_path], "sweep"), "md", "en")
    assert "steady state" not in en.lower()


@pytest.mark.parametrize(
    ("prompts", "full_run", "noted"), [(3, False, True), (12, False, False), (3, True, False)]
)
def test_a_cell_measured_only_by_a_few_prompts_short_runs_is_named(
    tmp_path: Path, prompts: int, full_run: bool, noted: bool
) -> None:
    """A racing run's cell at c=1 whose runs are all short (``length`` < 1) and hold fewer than 12
    requests: its figures are those few prompts' (the quickstart's chat_short c=1: three requests, its
    throughput +24% to +29% against sim predict's 32-prompt run), and the report says so; at 12
    requests, or with a full-length run beside them, it says nothing."""
    extra = {"waves": float(prompts), "at_target_share": 1.0, "num_prompts": prompts, "request_rate": None}
    rs = [row(*k, "chat_short", 1, v, rep, length=prompts / 24, **extra)
          for rep in range(3) for k, v in ((K3, 1000.0 + rep), (K5, 1100.0 + rep))]  # fmt: skip
    if full_run:
        rs += [row(*k, "chat_short", 1, v, 3, length=1.0, **{**extra, "num_prompts": 24})
               for k, v in ((K3, 1000.0), (K5, 1100.0))]  # fmt: skip
    make_run(tmp_path, "x", rs)
    v = build_view([tmp_path], "sweep")
    en, zh = render(v, "md", "en"), render(v, "md", "zh")
    said = "chat_short c=1 (DSpark(st=3), DSpark(st=5)): measured only by the racing design's short runs"
    assert (said in en) is noted
    assert ("仅由竞速设计的短运行测得" in zh) is noted
    if noted:
        assert f"{prompts} request(s) a run (fewer than 12)" in en and "not the scenario's mix" in en


def test_the_quickstart_sends_enough_waves_in_every_cell() -> None:
    """Issue 34 item 8: the quickstart sent one wave per cell (num_prompts = concurrency), a burst."""
    _, plan = load_experiment(ROOT / "examples" / "quickstart.yaml")
    cells = [cell for cs in plan.cells.values() for cell in cs]
    assert cells
    for cell in cells:
        assert cell.num_prompts / cell.max_concurrency >= steady.MIN_WAVES, cell


def test_the_quickstarts_racing_runs_are_at_steady_state_too() -> None:
    """Issue 36: the quickstart races (short first looks); its shortest runs are whole waves of at
    least the steady-state minimum, and shorter than its cells (racing saves time on them). On the
    three-wave cells it had, racing's runs were two waves: the report named every cell as not at
    steady state."""
    from specsweep.design.race import run_prompts

    exp, plan = load_experiment(ROOT / "examples" / "quickstart.yaml")
    assert exp.adaptive is not None
    s = exp.adaptive.settings()
    assert s.race
    for cs in plan.cells.values():
        for cell in cs:
            n = run_prompts(s.short_fraction, cell.num_prompts, cell.max_concurrency, s.min_waves)
            assert n % cell.max_concurrency == 0 and n / cell.max_concurrency >= steady.MIN_WAVES, cell
            assert n < cell.num_prompts, cell
