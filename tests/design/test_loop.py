"""The adaptive design's loop (issue 25): first pass, batches from the rules in rounds, a config's
pending runs in one launch, rows numbered for resume, an interrupt mid-round resumed to the same
design. Rules and runner are stand-ins in virtual time (tests/design/design_fakes.py)."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.design.design_fakes import RepeatRules, VirtualRunner

from specsweep.design.loop import first_pass, run_design
from specsweep.design.types import Batch, DesignState, Launch
from specsweep.errors import SpecsweepError
from specsweep.experiment.config import Plan, plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir
from specsweep.store.run_dir import RunDir

P1, P2 = ("chat_short", 1), ("chat_short", 4)


def design_plan(**adaptive: Any) -> Plan:
    return plan_experiment(parse_experiment({
        "name": "design",
        "servers": [
            {"name": "A", "kind": "sim", "profile": "toy", "method": "dspark", "grid": {"st": [3, 5]}},
            {"name": "B", "kind": "sim", "profile": "toy", "method": "eagle"},
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 4], "num_prompts": 4}],
        "adaptive": {"max_repeats": 3, **adaptive},
    }))  # fmt: skip


def rows_of(rd: RunDir) -> list[dict[str, Any]]:
    return rd.summary()


def test_first_pass_then_every_round_alternating(tmp_path: Path) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)
    runner, rules = VirtualRunner(rd), RepeatRules()
    events: list[tuple[str, dict[str, Any]]] = []
    state = run_design(plan, rd, runner, observer=lambda e, d: events.append((e, d)), plan_next=rules)
    assert state.next is None
    labels = ["A(st=3)", "A(st=5)", "B"]
    # round 0 is the first pass in plan order; then the configs alternate, each launched once a round
    assert [[lab for lab, _ in r] for r in runner.rounds] == [labels, labels[::-1], labels]
    for r, launches in enumerate(runner.rounds):
        for _lab, runs in launches:
            assert [rep for _cid, rep in runs] == [r, r]  # each cell once, repeat = its runs so far
    rows = rows_of(rd)
    assert len(rows) == 3 * 2 * 3
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    assert all(r["round"] == r["repeat"] for r in rows)
    assert Counter((r["cell_id"], r["repeat"]) for r in rows).most_common(1)[0][1] == 1  # the resume key
    m = rd.manifest
    assert m["run_order"] == {"kind": "adaptive", "rounds": [labels, labels[::-1], labels]}
    assert m["design"]["kind"] == "adaptive" and m["design"]["settings"]["max_repeats"] == 3
    starts = [d for e, d in events if e == "round_start"]
    assert [d["round"] for d in starts] == [0, 1, 2] and starts[0]["state"] is None
    assert starts[1]["runs"] == 6 and starts[1]["launches"] == labels[::-1]
    assert [e for e, _ in events][-1] == "design_done"


def test_pending_runs_of_a_config_share_one_launch(tmp_path: Path) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)
    runner = VirtualRunner(rd)
    run_design(plan, rd, runner, plan_next=RepeatRules({("A(st=5)", P2): 3, ("B", P1): 2}, per_round=None))
    assert len(runner.rounds) == 2
    # round 1 (configs reversed): B once for P1, A(st=5) twice for P2 in one launch; A(st=3) not launched
    r1 = runner.rounds[1]
    assert [lab for lab, _ in r1] == ["B", "A(st=5)"]
    assert [rep for _c, rep in r1[1][1]] == [1, 2] and len(r1[0][1]) == 1
    rows = rows_of(rd)
    a5 = sorted(
        (r["round"], r["repeat"]) for r in rows if r["label"] == "A(st=5)" and r["max_concurrency"] == 4
    )
    assert a5 == [(0, 0), (1, 1), (1, 2)]  # repeat numbers the runs; round says which launch


def test_interrupt_mid_round_resumes_the_same_design(tmp_path: Path) -> None:
    plan = design_plan()

    def value(label: str, p: tuple[str, int], r: int) -> float:
        return {"A(st=3)": 100.0, "A(st=5)": 110.0, "B": 40.0}[label] * (1 + 0.01 * r) + p[1]

    ref_dir = create_run_dir(plan, tmp_path / "ref")
    ref_rules = RepeatRules()
    run_design(plan, ref_dir, VirtualRunner(ref_dir, value), plan_next=ref_rules)

    rd = create_run_dir(plan, tmp_path / "cut")
    first = RepeatRules()
    with pytest.raises(KeyboardInterrupt):  # 6 runs of the first pass, then 2 of round 1
        run_design(plan, rd, VirtualRunner(rd, value, stop_after=8), plan_next=first)
    assert len(rows_of(rd)) == 8
    again, runner = RepeatRules(), VirtualRunner(rd, value)
    run_design(plan, rd, runner, plan_next=again)
    # the resumed run first finishes round 1 with exactly the runs it lacks (B's two were stored) ...
    assert [lab for lab, _ in runner.rounds[0]] == ["A(st=5)", "A(st=3)"]
    # ... then asks the rules what the uninterrupted run asked them, observation for observation
    assert again.calls == ref_rules.calls
    key = lambda r: (r["cell_id"], r["repeat"], r["round"], r["total_throughput"])  # noqa: E731
    assert sorted(map(key, rows_of(rd))) == sorted(map(key, rows_of(ref_dir)))
    assert rd.manifest["run_order"] == ref_dir.manifest["run_order"]


def test_resume_of_a_finished_design_runs_nothing(tmp_path: Path) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)
    run_design(plan, rd, VirtualRunner(rd), plan_next=RepeatRules())
    runner = VirtualRunner(rd)
    state = run_design(plan, rd, runner, plan_next=RepeatRules())
    assert runner.rounds == [] and state.next is None


def test_costs_and_launch_times_reach_the_rules(tmp_path: Path) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)
    rules = RepeatRules({("B", P1): 2})
    run_design(plan, rd, VirtualRunner(rd), plan_next=rules)
    obs, launch_s = rules.calls[0]
    assert launch_s == {"A(st=3)": 5.0, "A(st=5)": 5.0, "B": 5.0}
    assert {o.cost_s for o in obs} == {10.0} and [o.seq for o in obs] == list(range(6))
    assert {o.point for o in obs} == {P1, P2} and {o.round for o in obs} == {0}


def test_rules_naming_an_unknown_config_fail_clearly(tmp_path: Path) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)

    def rules(*args: Any) -> DesignState:
        return DesignState(
            cells=(), next=Batch(1, (Launch("C", (P1,)),)), spent_s=0, worst_case_s=0, baseline_s=0
        )

    with pytest.raises(SpecsweepError, match="unknown config 'C'"):
        run_design(plan, rd, VirtualRunner(rd), plan_next=rules)


def test_a_batch_with_nothing_to_run_stops_the_design(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plan = design_plan()
    rd = create_run_dir(plan, tmp_path)

    def rules(*args: Any) -> DesignState:  # a point the grid does not have
        bad = Batch(1, (Launch("B", (("chat_short", 99),)),))
        return DesignState(cells=(), next=bad, spent_s=0, worst_case_s=0, baseline_s=0)

    with caplog.at_level(logging.WARNING):
        run_design(plan, rd, VirtualRunner(rd), plan_next=rules)
    assert "has no cell chat_short c=99" in caplog.text and "nothing to run" in caplog.text
    assert len(rows_of(rd)) == 6


def test_first_pass_is_every_config_and_cell_once() -> None:
    plan = design_plan()
    b = first_pass(plan)
    assert b.round == 0
    assert [(x.label, x.runs) for x in b.launches] == [(c.label, (P1, P2)) for c in plan.configs]


def test_racing_runs_short_first_looks_then_one_relaunch_of_the_contenders(tmp_path: Path) -> None:
    """The second generation through the loop, with its real rules: round 0 is short runs (whole
    waves, at least the steady state's three), rows record their length, every config is launched at most twice, and a
    launch warms up once."""
    plan = plan_experiment(parse_experiment({
        "name": "race",
        "servers": [
            {"name": "A", "kind": "sim", "profile": "toy", "method": "dspark", "grid": {"st": [3, 5]}},
            {"name": "B", "kind": "sim", "profile": "toy", "method": "eagle"},
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 4], "num_prompts": 32}],
        "adaptive": {"race": True},
    }))  # fmt: skip
    rd = create_run_dir(plan, tmp_path)
    # B at a third of A's throughput: out at look 0; st=3 and st=5 close: relaunched
    runner = VirtualRunner(rd, value=lambda lab, p, r: 30.0 if lab == "B" else 100.0 + (r % 2))
    state = run_design(plan, rd, runner)
    assert state.next is None and rd.manifest["design"]["settings"]["race"] is True
    rows = rows_of(rd)
    r0 = [r for r in rows if r["round"] == 0]
    assert len(r0) == 6 and {(r["max_concurrency"], r["num_prompts"]) for r in r0} == {(1, 4), (4, 12)}
    assert {r["length"] for r in r0 if r["max_concurrency"] == 1} == {0.125}  # an eighth of 32 waves
    assert {r["length"] for r in r0 if r["max_concurrency"] == 4} == {0.375}  # one wave: run as three
    assert not any(r["label"] == "B" for r in rows if r["round"] == 1)
    launches = Counter(lab for lab, _r in {(r["label"], r["round"]) for r in rows})
    assert max(launches.values()) == 2 and len(runner.rounds) == 2
    assert all(j.warmup_once for j in runner.jobs)
