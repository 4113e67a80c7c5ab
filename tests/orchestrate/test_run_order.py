"""Run order (issue 29 item 1): plain repeats run in interleaved rounds (each config launched once a
round, the order alternating), or blocked when the file says so; rows carry ``round`` and ``seq``,
the manifest says which order was used. The executor is a stand-in (no server, no clock)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from specsweep.errors import ConfigError
from specsweep.experiment.adaptive import settings_of
from specsweep.experiment.config import Plan, plan_experiment
from specsweep.experiment.loader import parse_experiment, with_design
from specsweep.experiment.rounds import alternating, rounds
from specsweep.orchestrate import create_run_dir, execute, run
from tests.design.design_fakes import VirtualRunner

LABELS = ["A(st=3)", "A(st=5)", "B"]


def grid_plan(**over: Any) -> Plan:
    data: dict[str, Any] = {
        "name": "order",
        "servers": [
            {"name": "A", "kind": "sim", "profile": "toy", "grid": {"st": [3, 5]}},
            {"name": "B", "kind": "sim", "profile": "toy"},
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 4], "num_prompts": 4}],
        "repeats": 3,
        "report": {"enabled": False},
        **over,
    }
    return plan_experiment(parse_experiment(data))


def test_interleaved_rounds_alternate_and_run_each_cell_once() -> None:
    plan = grid_plan()
    rs = rounds(plan)
    assert [r.index for r in rs] == [0, 1, 2]
    assert [[x.cfg.label for x in r.launches] for r in rs] == [LABELS, LABELS[::-1], LABELS]
    for r in rs:
        for x in r.launches:
            assert [(c.cell_id, rep) for c, rep in x.runs] == [
                (c.cell_id, r.index) for c in plan.cells[x.cfg.label]
            ]
    assert alternating(plan.configs, 3) == plan.configs[::-1]


def test_resumed_rounds_skip_what_is_finished() -> None:
    plan = grid_plan()
    b_cells = plan.cells["B"]
    done = {(c.cell_id, 0) for c in plan.all_cells()} | {(b_cells[0].cell_id, 1)}
    rs = rounds(plan, done)
    assert [r.index for r in rs] == [1, 2]  # round 0 complete: not launched again
    b1 = next(x for x in rs[0].launches if x.cfg.label == "B")
    assert [c.cell_id for c, _ in b1.runs] == [b_cells[1].cell_id]


def test_blocked_order_is_one_launch_per_config_with_repeats_back_to_back() -> None:
    plan = grid_plan(run_order="blocked")
    (r,) = rounds(plan)
    assert r.index is None and [x.cfg.label for x in r.launches] == LABELS
    first = r.launches[0].runs
    assert [rep for _c, rep in first] == [0, 1, 2, 0, 1, 2] and first[0][0] == first[2][0]


class FakeExecutor:
    """EXECUTORS["local"] stand-in: records each round's jobs, stores rows without a server."""

    made: ClassVar[list[FakeExecutor]] = []

    def __init__(self, run_dir: Any, **kw: Any) -> None:
        self.runner = VirtualRunner(run_dir)
        self.closed = False
        FakeExecutor.made.append(self)

    def run(self, jobs: Any) -> None:
        self.runner.run(jobs)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_executor(monkeypatch: pytest.MonkeyPatch) -> type[FakeExecutor]:
    FakeExecutor.made = []
    monkeypatch.setitem(run.EXECUTORS, "local", FakeExecutor)
    return FakeExecutor


@pytest.mark.parametrize("order", ["interleaved", "blocked"])
def test_rows_and_manifest_record_the_run_order(tmp_path: Path, fake_executor: Any, order: str) -> None:
    plan = grid_plan(run_order=order)
    rd = create_run_dir(plan, tmp_path)
    events: list[tuple[str, dict[str, Any]]] = []
    out = execute(plan, rd, observer=lambda e, d: events.append((e, d)))
    assert out.counts == {"ok": 18}
    (ex,) = fake_executor.made
    assert ex.closed
    rows = rd.summary()
    assert [r["seq"] for r in rows] == list(range(18))
    assert all(r["round"] == r["repeat"] for r in rows)  # the contract for plain repeats
    m = rd.manifest["run_order"]
    if order == "interleaved":
        assert len(ex.runner.rounds) == 3 and m == {
            "kind": "interleaved",
            "rounds": [LABELS, LABELS[::-1], LABELS],
        }
        assert [r["label"] for r in rows[:6:2]] == LABELS and rows[6]["label"] == "B"
        assert [d["round"] for e, d in events if e == "round_start"] == [0, 1, 2]
    else:
        assert len(ex.runner.rounds) == 1 and m == {"kind": "blocked", "rounds": [LABELS]}
        assert [r["repeat"] for r in rows[:3]] == [0, 1, 2]
    start = next(d for e, d in events if e == "run_start")
    assert start["todo"] == 18 and len(start["launches"]) == (9 if order == "interleaved" else 3)
    assert "design" not in rd.manifest


def test_adaptive_run_dir_records_its_design(tmp_path: Path) -> None:
    plan = grid_plan(repeats=1, adaptive={"margin": 0.03, "budget": "2h"})
    rd = create_run_dir(plan, tmp_path)
    m = rd.manifest
    assert m["run_order"] == {"kind": "adaptive", "rounds": []}
    s = m["design"]["settings"]
    assert m["design"]["kind"] == "adaptive"
    assert (s["margin"], s["budget_s"], s["budget_fraction"], s["max_repeats"]) == (0.03, 7200.0, None, 4)
    # each config's method is its BH family (the rules and the report read it back)
    assert {tuple(x) for x in s["families"]} == {(c.label, c.method or "none") for c in plan.configs}
    assert settings_of(m) is not None and settings_of(m).families == tuple(map(tuple, s["families"]))  # type: ignore[union-attr]


def test_the_design_and_fixed_repeats_contradict(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'repeats: 3' with the adaptive design") as e:
        grid_plan(adaptive={})
    assert e.value.path == "repeats"
    with pytest.raises(ConfigError, match="run_order") as e:
        grid_plan(repeats=1, run_order="blocked", adaptive={})
    assert e.value.path == "run_order"


def test_the_adaptive_flag_wins_over_the_file(caplog: pytest.LogCaptureFixture) -> None:
    plan = grid_plan(run_order="blocked")
    on = with_design(plan, True)
    exp = on.experiment
    assert exp.adaptive is not None and exp.repeats == 1 and exp.run_order == "interleaved"
    assert "'repeats: 3' is not used" in caplog.text and "'run_order: blocked' is not used" in caplog.text
    assert exp.adaptive.settings().max_repeats == 4  # the documented defaults
    off = with_design(on, False)
    assert off.experiment.adaptive is None
    assert with_design(off, False) is off


def test_the_adaptive_flag_does_not_apply_to_a_resume(capsys: pytest.CaptureFixture[str]) -> None:
    from specsweep.cli import main

    assert main(["run", "--resume", "results/x", "--no-adaptive"]) == 2
    assert (
        "--no-adaptive applies to a new run; --resume continues the run as it was started"
        in capsys.readouterr().err
    )
