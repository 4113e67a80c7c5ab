"""run_schedule: what a run needs of its plan, worked out once at its start. Its stored ids, finished
runs, rounds and design settings are those the run loop, the manifest and the design loop computed
cell by cell before (stored_id per cell, finished_cells, rounds, design_settings), for a resumed
grid with finished runs and for a resumed adaptive design, with a grid value that is a secret
known only after the plan was made (its cells' ids are stored scrubbed, as ``${VAR}``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsweep.experiment.config import Plan
from specsweep.experiment.loader import load_experiment
from specsweep.experiment.rounds import design_settings, rounds, run_schedule
from specsweep.experiment.stored import finished_cells, stored_id
from specsweep.store import redact

SECRET = "draft-alpha-0042"


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    with redact.isolated():
        yield


def var_plan(tmp_path: Path, **over: Any) -> Plan:
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump({
        "name": "sched",
        "servers": [{"name": "s", "kind": "command", "argv": ["serve", "--port", "{port}", "--draft", "{dm}"],
                     "grid": {"dm": [SECRET, "plain"]}},
                    {"name": "b", "kind": "command", "argv": ["serve", "--port", "{port}"]}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 4], "num_prompts": 2}],
        "report": {"enabled": False},
        **over,
    }))  # fmt: skip
    plan = load_experiment(f)[1]
    redact.register_env_ref("DRAFT_A", SECRET)  # learnt after planning: the run dir scrubs it
    return plan


def per_cell_ids(plan: Plan) -> dict[str, str]:
    return {c.cell_id: stored_id(c.cell_id) for c in plan.all_cells()}


def test_a_resumed_grid_carries_the_stored_ids_finished_runs_and_rounds_left(tmp_path: Path) -> None:
    plan = var_plan(tmp_path, repeats=2)
    cells = plan.all_cells()
    secret = next(c for c in cells if "draft-alpha-0042" in c.cell_id)
    assert stored_id(secret.cell_id) != secret.cell_id  # the run dir keeps it as ${DRAFT_A}
    # what RunDir.finished() gives: stored ids; round 0 done, and one repeat of the ${VAR} cell
    stored = {(stored_id(c.cell_id), 0) for c in cells} | {(stored_id(secret.cell_id), 1)}

    s = run_schedule(plan, stored)

    assert s.order == "interleaved" and not s.adaptive and s.design is None
    assert dict(s.stored_ids) == per_cell_ids(plan)
    assert s.finished == finished_cells(plan, stored)
    assert (secret.cell_id, 1) in s.finished and (stored_id(secret.cell_id), 1) not in s.finished
    assert list(s.todo) == rounds(plan, s.finished)
    assert [r.index for r in s.todo] == [1]
    assert s.cells_to_run == len(cells) - 1 == sum(r.runs for r in s.todo)
    labels = [c.label for c in plan.configs]
    assert s.launch_order == (tuple(labels), tuple(labels[::-1]))  # the full order, as first recorded


def test_a_resumed_adaptive_design_carries_the_stored_ids_and_its_settings(tmp_path: Path) -> None:
    plan = var_plan(tmp_path, adaptive={"max_repeats": 3})
    cells = plan.all_cells()
    first = plan.configs[0].label
    stored = {(stored_id(c.cell_id), 0) for c in plan.cells[first]}  # one config's first pass stored

    s = run_schedule(plan, stored)

    assert s.adaptive and s.todo == () and s.launch_order == ()  # the rules decide as the run goes
    assert dict(s.stored_ids) == per_cell_ids(plan)
    assert s.finished == finished_cells(plan, stored)
    assert s.cells_to_run == len(cells) - len(plan.cells[first])  # the first pass's runs left
    assert s.design == design_settings(plan)
    assert s.design is not None and {lab for lab, _ in s.design.families} == {c.label for c in plan.configs}


def test_a_new_run_has_nothing_finished(tmp_path: Path) -> None:
    plan = var_plan(tmp_path, run_order="blocked", repeats=3)
    s = run_schedule(plan)
    assert s.finished == frozenset() and s.order == "blocked"
    assert list(s.todo) == rounds(plan) and s.cells_to_run == 3 * len(plan.all_cells())
