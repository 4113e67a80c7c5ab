"""Plan.todo: the one list of runs still to do, used by the run loop, run_config and the Ray executor."""

from __future__ import annotations

from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment


def test_todo_skips_finished_runs_in_run_order() -> None:
    plan = plan_experiment(parse_experiment({
        "name": "t", "repeats": 2,
        "servers": [{"name": "a", "kind": "sim", "profile": "toy"}, {"name": "b", "kind": "sim", "profile": "toy"}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 4]}],
    }))  # fmt: skip
    a1, a4 = plan.cells["a"]
    b1, b4 = plan.cells["b"]
    assert plan.todo(set()) == [(a1, 0), (a1, 1), (a4, 0), (a4, 1), (b1, 0), (b1, 1), (b4, 0), (b4, 1)]
    done = {(a1.cell_id, 1), (a4.cell_id, 0), (a4.cell_id, 1), (b4.cell_id, 0)}
    assert plan.todo(done) == [(a1, 0), (b1, 0), (b1, 1), (b4, 1)]
    assert plan.todo(done, "a") == [(a1, 0)]
    assert plan.todo(done, "b") == [(b1, 0), (b1, 1), (b4, 1)]
    every = {(c.cell_id, r) for c, r in plan.todo(set())}
    assert plan.todo(every) == []
