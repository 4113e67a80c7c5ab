"""The adaptive design's loop (``specsweep run --adaptive``): launch, measure, ask the rules, repeat.

    round 0   the first pass: every config launched once (plan order), every cell once
    round r   plan_next(observations of rounds < r) -> a batch: the configs to launch, in order, and
              each one's runs (a config's pending runs in one launch); None: the design is finished

Each run is stored as it finishes (``round`` = r, ``seq`` = its place in the run order, ``repeat``
numbering the runs of a (config, cell) from 0, so (cell_id, repeat) stays the resume key), with its
wall time (``wall_s``) and its launch's start -> ready time (``launch_s``): the rules' costs.

The second generation (``design.race``) makes round 0 from the rules too (short runs), and a
run of a shorter length is the cell with fewer prompts (whole waves): its row records ``length``.
Its launches warm up once (the client's warmup before a launch's first run only; docs/experiments.md
says when that is unsafe).

The rules are pure and deterministic (specsweep.design), so ``--resume`` needs no state of its
own: round r's batch is plan_next of the rows of rounds < r, computed again, and a round cut short
by an interrupt is finished with exactly the runs it lacks before round r + 1 is asked for. The
manifest's ``run_order`` gets each round's launch order as the round starts.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from specsweep.design import observe
from specsweep.design.race import run_prompts
from specsweep.design.types import Batch, DesignState, Launch, Point
from specsweep.errors import SpecsweepError
from specsweep.executors.job import ConfigJob, Observer, no_observer
from specsweep.experiment.config import Cell, Plan
from specsweep.experiment.rounds import RunSchedule, run_schedule
from specsweep.store.run_dir import RunDir

log = logging.getLogger(__name__)

PlanNext = observe.PlanNext
MAX_ROUNDS = 1000  # a guard against rules that never finish; max_repeats bounds a sound design far lower


class RoundRunner(Protocol):
    """What the loop needs of an executor (specsweep.orchestrate.run.Executor)."""

    def run(self, jobs: Sequence[ConfigJob]) -> object: ...


def first_pass(plan: Plan) -> Batch:
    """Round 0: each config launched once, in plan order, running each of its cells once."""
    return Batch(
        round=0,
        launches=tuple(
            Launch(cfg.label, tuple((c.scenario, c.max_concurrency) for c in plan.cells[cfg.label]))
            for cfg in plan.configs
        ),
        reason="first pass: every config and cell once",
    )


class Design:
    """The plan seen as the rules see it: labels, points, and the rows of a run dir as observations.
    ``schedule``: the run's (its design settings and stored ids), worked out once by the caller."""

    def __init__(self, plan: Plan, plan_next: PlanNext, schedule: RunSchedule) -> None:
        if schedule.design is None:
            raise SpecsweepError(
                "the experiment has no adaptive design (add an 'adaptive:' section or --adaptive)"
            )
        self.plan = plan
        self.rules = plan_next
        self.settings = schedule.design
        self.stored_ids = schedule.stored_ids
        self.configs = [c.label for c in plan.configs]
        self.points = list(dict.fromkeys((c.scenario, c.max_concurrency) for c in plan.all_cells()))
        self.cells: dict[tuple[str, Point], Cell] = {
            (c.label, (c.scenario, c.max_concurrency)): c for c in plan.all_cells()
        }
        self._by_stored = {self.stored_ids[c.cell_id]: c for c in plan.all_cells()}

    def rows(self, run_dir: RunDir) -> list[dict[str, Any]]:
        """The run dir's rows of this plan's cells, each under the plan's own label and cell."""
        out = []
        for r in run_dir.iter_summary():
            cell = self._by_stored.get(str(r.get("cell_id")))
            if cell is not None:
                out.append({**r, "label": cell.label, "scenario": cell.scenario,
                            "max_concurrency": cell.max_concurrency})  # fmt: skip
        return out

    def state(self, rows: Sequence[dict[str, Any]]) -> DesignState:
        """The rules' verdict on ``rows``."""
        metric = self.settings.metric
        obs = observe.observations(rows, metric)
        return self.rules(obs, self.configs, self.points, self.settings, observe.launch_times(rows))

    def sized(self, cell: Cell, length: float) -> Cell:
        """``cell`` as a run of ``length`` of its prompts: whole waves of its concurrency, at least
        ``min_waves`` of them (specsweep.design.race.run_prompts); the cell itself at 1."""
        if length >= 1.0:
            return cell
        n = run_prompts(length, cell.num_prompts, cell.max_concurrency, self.settings.min_waves)
        return cell if n == cell.num_prompts else dataclasses.replace(cell, num_prompts=n)

    def jobs(self, batch: Batch, rnd: int, rows: Sequence[dict[str, Any]], run_path: Any) -> list[ConfigJob]:
        """The batch's launches as config jobs, without the runs round ``rnd`` already stored (a
        resumed round). A run's repeat: the rows its (config, cell) has so far, counted on."""
        done = Counter(
            (r["label"], (r["scenario"], r["max_concurrency"])) for r in rows if r.get("round") == rnd
        )
        count = Counter(r["cell_id"] for r in rows)
        by_label = {c.label: c for c in self.plan.configs}
        jobs = []
        for launch in batch.launches:
            cfg = by_label.get(launch.label)
            if cfg is None:
                raise SpecsweepError(f"the design asked for an unknown config {launch.label!r}")
            runs: list[tuple[Cell, int]] = []
            for i, point in enumerate(launch.runs):
                cell = self.cells.get((launch.label, point))
                if cell is None:
                    log.warning("design: %s has no cell %s c=%s; run skipped", launch.label, *point)
                    continue
                if done[(launch.label, point)] > 0:
                    done[(launch.label, point)] -= 1
                    continue
                sid = self.stored_ids[cell.cell_id]
                runs.append((self.sized(cell, launch.length(i)), count[sid]))
                count[sid] += 1
            if runs:
                jobs.append(ConfigJob(cfg, self.plan, run_path, runs=tuple(runs), round=rnd,
                                      warmup_once=self.settings.race))  # fmt: skip
        return jobs


def run_design(
    plan: Plan,
    run_dir: RunDir,
    executor: RoundRunner,
    *,
    observer: Observer = no_observer,
    plan_next: PlanNext | None = None,
    schedule: RunSchedule | None = None,
) -> DesignState:
    """Run the design into ``run_dir`` until the rules say it is finished (or continue it: resume);
    returns the rules' final state. ``schedule``: the run's, when the caller has it (the design
    reads its settings and stored ids there)."""
    d = Design(plan, plan_next or observe.default_rules(), schedule or run_schedule(plan))
    rnd = 0
    state: DesignState | None = None
    while rnd < MAX_ROUNDS:
        rows = d.rows(run_dir)
        if rnd == 0:  # the second generation's first pass is short runs: the rules' own round 0
            batch: Batch | None = d.state([]).next if d.settings.race else first_pass(plan)
        else:
            state = d.state([r for r in rows if isinstance(r.get("round"), int) and r["round"] < rnd])
            batch = state.next
        if batch is None:
            break
        jobs = d.jobs(batch, rnd, rows, run_dir.path)
        if not jobs and not any(r.get("round") == rnd for r in rows):
            log.warning("design: round %d has nothing to run; the design stops here", rnd)
            break
        if jobs:
            _record_round(run_dir, rnd, [j.cfg.label for j in jobs])
            observer("round_start", {"round": rnd, "launches": [j.cfg.label for j in jobs],
                                     "runs": sum(len(j.runs or ()) for j in jobs), "reason": batch.reason,
                                     "state": state, "settings": d.settings,
                                     "todo_runs": [run for j in jobs for run in j.runs or ()]})  # fmt: skip
            executor.run(jobs)
        rnd += 1
    else:
        raise SpecsweepError(f"the design did not finish within {MAX_ROUNDS} rounds (a bug in its rules)")
    final = state if state is not None else d.state(d.rows(run_dir))
    observer("design_done", {"state": final, "settings": d.settings, "rounds": rnd})
    return final


def _record_round(run_dir: RunDir, rnd: int, labels: list[str]) -> None:
    """Round ``rnd``'s launch order into the manifest's ``run_order`` (once; a resumed round keeps
    the order it was first given)."""
    order = dict(run_dir.manifest.get("run_order") or {})
    rounds = [list(x) for x in order.get("rounds") or []]
    if rnd < len(rounds):
        return
    rounds += [[] for _ in range(rnd - len(rounds))] + [labels]
    run_dir.update_manifest(run_order={"kind": "adaptive", "rounds": rounds})


def with_calibrated_launch_sd(plan: Plan, results_dir: str | Path) -> Plan:
    """``plan`` with its design's ``launch_sd`` from the stored launch-noise calibration of this host
    and its servers' kinds (specsweep.store.launch_noise; ``specsweep calibrate-noise``), unless the
    experiment file sets ``launch_sd`` itself or there is no design or no calibration. Done before
    the run dir is made, so its manifest (and a ``--resume``) keeps the value the design used."""
    import socket

    from specsweep.store import launch_noise

    opts = plan.experiment.adaptive
    if opts is None or "launch_sd" in opts.model_fields_set:
        return plan
    prior = launch_noise.prior_in(results_dir, socket.gethostname(), {c.spec.kind for c in plan.configs})
    if prior is None:
        return plan
    log.info("adaptive design: launch_sd %.2f%% from the stored calibration %s", 100 * prior.sd, prior.name)
    df = prior.df if math.isfinite(prior.df) else None  # the calibration's df reach each verdict's
    exp = plan.experiment.model_copy(
        update={"adaptive": opts.model_copy(update={"launch_sd": prior.sd, "launch_df": df})}
    )
    return dataclasses.replace(plan, experiment=exp)
