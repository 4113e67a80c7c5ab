"""Stand-ins for the adaptive design's tests: rules that repeat what they are told to, and a runner
that "measures" in virtual time (rows written straight into the run dir, no server, no clock)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from specsweep.design.types import Batch, CellStatus, DesignState, Launch, Observation, Point
from specsweep.executors.job import ConfigJob, RunDirSink
from specsweep.experiment.adaptive import DesignSettings
from specsweep.store.run_dir import RunDir


class RepeatRules:
    """``plan_next`` stand-in: every (config, cell) up to ``settings.max_repeats`` runs, or only the
    pairs ``want`` names (label, point) -> runs; ``per_round`` more runs a round at most (None: all
    that are pending, in one launch). Configs alternate from round to round. Records
    each call's arguments (``calls``) to check that a resumed run asks the same questions."""

    def __init__(
        self, want: Mapping[tuple[str, Point], int] | None = None, per_round: int | None = 1
    ) -> None:
        self.want = want
        self.per_round = per_round
        self.calls: list[tuple[tuple[Observation, ...], dict[str, float]]] = []

    def __call__(
        self,
        obs: Sequence[Observation],
        configs: Sequence[str],
        points: Sequence[Point],
        settings: DesignSettings,
        launch_s: Mapping[str, float],
    ) -> DesignState:
        self.calls.append((tuple(obs), dict(launch_s)))
        runs = Counter((o.label, o.point) for o in obs)
        rnd = max((o.round for o in obs), default=-1) + 1

        def target(label: str, p: Point) -> int:
            return settings.max_repeats if self.want is None else self.want.get((label, p), 1)

        order = list(configs) if rnd % 2 == 0 else list(reversed(configs))
        launches = []
        for label in order:
            pending: list[Point] = []
            for p in points:
                if runs[(label, p)]:
                    n = target(label, p) - runs[(label, p)]
                    pending += [p] * (n if self.per_round is None else min(n, self.per_round))
            if pending:
                launches.append(Launch(label, tuple(pending)))
        cells = tuple(
            CellStatus(point=p, status="running" if any(x.runs.count(p) for x in launches) else "undecided",
                       leader=None, runs={lab: runs[(lab, p)] for lab in configs})
            for p in points
        )  # fmt: skip
        spent = sum(o.cost_s for o in obs) + sum(launch_s.get(o.label, 0.0) for o in obs if o.repeat == 0)
        nxt = Batch(rnd, tuple(launches), reason="stand-in") if launches else None
        return DesignState(cells=cells, next=nxt, spent_s=spent, worst_case_s=2 * spent, baseline_s=3 * spent)


class VirtualRunner:
    """A round runner without servers: each run becomes an ``ok`` row at once (value from
    ``value(label, point, repeat)``), through the run dir's sink like a real launch. ``stop_after``:
    raise KeyboardInterrupt once that many runs are stored (an interrupt mid-round)."""

    def __init__(
        self,
        run_dir: RunDir,
        value: Callable[[str, Point, int], float] | None = None,
        stop_after: int | None = None,
    ) -> None:
        self.sink = RunDirSink(run_dir)
        self.value = value or (lambda label, p, r: 100.0 + r)
        self.stop_after = stop_after
        self.stored = 0
        self.jobs: list[ConfigJob] = []
        self.rounds: list[
            list[tuple[str, list[tuple[str, int]]]]
        ] = []  # per call: (label, [(cell_id, repeat)])

    def run(self, jobs: Sequence[ConfigJob]) -> None:
        self.jobs += jobs
        self.rounds.append([(j.cfg.label, [(c.cell_id, r) for c, r in j.runs or ()]) for j in jobs])
        for j in jobs:
            for cell, repeat in j.runs or ():
                if self.stop_after is not None and self.stored >= self.stop_after:
                    raise KeyboardInterrupt
                row: dict[str, Any] = {
                    **cell.to_dict(), "repeat": repeat, "round": repeat if j.round is None else j.round, "status": "ok", "kind": "command",
                    "total_throughput": self.value(cell.label, (cell.scenario, cell.max_concurrency), repeat),
                    "wall_s": 10.0, "launch_s": 5.0,
                }  # fmt: skip
                if (share := j.length(cell)) is not None:  # as run_config records a shorter run
                    row["length"] = share
                self.sink.cell_done(cell, repeat, row, [])
                self.stored += 1
