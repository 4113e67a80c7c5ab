"""Run order: which configuration is launched when, and which runs each launch makes; and a run's
schedule, worked out once at its start.

A *round* launches each configuration that has work in it once and makes that configuration's runs
of the round in that one launch. Two orders for a grid with ``repeats: N`` (``run_order``):

- ``interleaved`` (the default): N rounds; in round r every configuration runs each of its cells
  once (repeat r), and the configurations' order alternates from round to round (A B C, C B A,
  A B C, ...). A slow drift of the host (thermal, a neighbour's load) then touches every
  configuration alike instead of posing as a difference between them, and the verdicts can pair
  runs by round. Costs a launch per configuration per round.
- ``blocked``: one round; each configuration launched once, each cell's repeats back to back. One
  launch per configuration (for engines whose launch takes many minutes), but a drift during the
  grid is confounded with the configuration.

The adaptive design (specsweep.design.loop) makes its rounds from the rules' batches.
Rows carry ``round`` (for plain repeats, the repeat: ``round == repeat``) and ``seq`` (the run dir's
storing order, specsweep.executors.job.RunDirSink). The manifest's ``run_order`` records the
kind and the launch order of every round (specsweep.orchestrate.manifest.order_records).

``run_schedule(plan, stored)`` is all of this for one run, from the plan and the (cell_id, repeat)
pairs its run dir has stored: the order, each cell's stored id, the finished runs, the rounds still
to do, the design's settings. The run loop (specsweep.orchestrate.run) works it out once and hands
it down, so that nothing below it goes back to the plan's rounds or the stored ids cell by cell.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Mapping, Sequence
from dataclasses import dataclass, replace

from specsweep.experiment.adaptive import DesignSettings
from specsweep.experiment.config import Cell, Plan, ServerConfig
from specsweep.experiment.stored import as_planned, stored_ids

RUN_ORDERS = ("interleaved", "blocked", "adaptive")


@dataclass(frozen=True)
class RoundLaunch:
    """One launch of a round: a configuration and its runs, in order."""

    cfg: ServerConfig
    runs: tuple[tuple[Cell, int], ...]


@dataclass(frozen=True)
class Round:
    """``index`` numbers the rows' ``round``; None: a blocked launch, whose rows take their repeat."""

    index: int | None
    launches: tuple[RoundLaunch, ...]

    @property
    def runs(self) -> int:
        return sum(len(x.runs) for x in self.launches)


def alternating(configs: Sequence[ServerConfig], r: int) -> list[ServerConfig]:
    """The configurations' launch order in round ``r``: as given in even rounds, reversed in odd ones."""
    return list(configs) if r % 2 == 0 else list(reversed(configs))


def run_order(plan: Plan) -> str:
    """``adaptive`` when the experiment has the design, else its ``run_order``."""
    exp = plan.experiment
    return "adaptive" if exp.adaptive is not None else exp.run_order


def rounds(plan: Plan, finished: Container[tuple[str, int]] = ()) -> list[Round]:
    """The rounds of a plain (not adaptive) grid, without the runs in ``finished`` ((cell_id,
    repeat) pairs): what a resumed run still has to do, in the same order."""
    if run_order(plan) == "blocked":
        launches = [RoundLaunch(cfg, tuple(plan.todo(finished, cfg.label))) for cfg in plan.configs]
        return [Round(None, tuple(x for x in launches if x.runs))]
    out = []
    for r in range(plan.experiment.repeats):
        launches = []
        for cfg in alternating(plan.configs, r):
            runs = tuple((c, r) for c in plan.cells[cfg.label] if (c.cell_id, r) not in finished)
            if runs:
                launches.append(RoundLaunch(cfg, runs))
        if launches:
            out.append(Round(r, tuple(launches)))
    return out


def design_settings(plan: Plan) -> DesignSettings:
    """The experiment's ``adaptive:`` settings, with each config's method as its BH family (the
    pairs within a method, what its sweep report compares, are adjusted apart from the pairs across
    methods: DesignSettings.families)."""
    assert plan.experiment.adaptive is not None
    fams = tuple((c.label, c.method or "none") for c in plan.configs)
    return replace(plan.experiment.adaptive.settings(), families=fams)


@dataclass(frozen=True)
class RunSchedule:
    """What a run needs of its plan, worked out once (``run_schedule``). ``stored_ids``: each cell id of the
    plan -> the id its run dir stores it under (specsweep.experiment.stored.stored_id);
    ``finished``: the (cell_id, repeat) runs stored already, in the plan's ids; ``launch_order``:
    every round's launch order in full (the manifest's ``run_order``; the design's: decided as it
    goes); ``todo``: the plain grid's rounds still to run (the design's: decided as it goes);
    ``cells_to_run``: the runs still to do (the design's: of its first pass); ``design``: the
    adaptive design's settings (``design_settings``), None without the design."""

    order: str
    stored_ids: Mapping[str, str]
    finished: frozenset[tuple[str, int]]
    launch_order: tuple[tuple[str, ...], ...]
    todo: tuple[Round, ...]
    cells_to_run: int
    design: DesignSettings | None

    @property
    def adaptive(self) -> bool:
        return self.order == "adaptive"


def run_schedule(plan: Plan, stored: Collection[tuple[str, int]] = ()) -> RunSchedule:
    """The schedule of ``plan`` in a run dir that has stored ``stored`` ((stored cell id,
    repeat) pairs: RunDir.finished)."""
    order = run_order(plan)
    design = design_settings(plan) if order == "adaptive" else None
    ids = stored_ids(plan)
    finished = frozenset(as_planned(stored, ids))
    if design is not None:  # the rules decide after each round: the first pass, unless stored
        left = sum(1 for c in plan.all_cells() if (c.cell_id, 0) not in finished)
        return RunSchedule(order, ids, finished, (), (), left, design)
    todo = tuple(rounds(plan, finished))
    launch_order = tuple(tuple(x.cfg.label for x in r.launches) for r in rounds(plan))
    return RunSchedule(order, ids, finished, launch_order, todo, sum(r.runs for r in todo), None)
