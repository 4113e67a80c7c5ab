"""Run order: which configuration is launched when, and which runs each launch makes.

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
kind and the launch order of every round (``run_order_record``).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from specsweep.design.loop import design_settings
from specsweep.experiment.config import Cell, Plan, ServerConfig

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


def run_order_record(plan: Plan) -> dict[str, Any]:
    """The manifest's ``run_order`` of a plain grid: its kind and every round's launch order. (The
    adaptive design's rounds are appended as they are decided: ``{"kind": "adaptive", "rounds":
    []}`` to start with.)"""
    kind = run_order(plan)
    if kind == "adaptive":
        return {"kind": kind, "rounds": []}
    return {"kind": kind, "rounds": [[x.cfg.label for x in r.launches] for r in rounds(plan)]}


def order_records(plan: Plan) -> dict[str, Any]:
    """The manifest's ``run_order`` and, for the adaptive design, ``design`` (its settings: what the
    report needs to read the design's verdicts back from the rows)."""
    out: dict[str, Any] = {"run_order": run_order_record(plan)}
    if plan.experiment.adaptive is not None:
        out["design"] = {"kind": "adaptive", "settings": asdict(design_settings(plan))}
    return out
