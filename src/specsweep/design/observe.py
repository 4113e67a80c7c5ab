"""The design's inputs, read back from a run's summary rows and manifest (pure).

The orchestrator (specsweep.design.loop) hands the rules these after every round; the
report hands them the same to say how each cell was decided, so a run and its report agree.

    rows --observations--> [Observation]       one per stored run (a failed one: value None)
    rows --launch_times--> {label: seconds}     mean start -> ready time of a config's launches
    manifest --grid--> (configs, points)        the plan's labels and (scenario, concurrency) cells
    manifest --settings_of--> DesignSettings    the ``design`` record the run was made with

Row keys read: ``label``, ``scenario``, ``max_concurrency``, ``repeat``, ``round``, ``seq``,
``status``, the design metric, ``length`` (a shorter run's share of its cell's prompts; absent: 1), ``wall_s`` (the run's wall time, warmup included; ``duration`` when
absent) and ``launch_s`` (its launch's start -> ready time).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specsweep.design.types import DesignState, Observation, Point
from specsweep.experiment.adaptive import DesignSettings

# a run's settings back from its manifest: with the file's section (analysis reads them too)
from specsweep.experiment.adaptive import settings_of as settings_of

PlanNext = Callable[
    [Sequence[Observation], Sequence[str], Sequence[Point], DesignSettings, Mapping[str, float]], DesignState
]


def default_rules() -> PlanNext:
    """The design's rules: specsweep.design.schedule.plan_next (imported when first needed)."""
    rules: PlanNext = importlib.import_module("specsweep.design.schedule").plan_next
    return rules


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _num(x: Any) -> float | None:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    return float(x) if ok else None


def observation(row: Mapping[str, Any], metric: str) -> Observation | None:
    """One summary row as the rules see it; None for a row that is not a run of the design (no
    label, cell, repeat or round). ``value``: the metric of an ``ok`` row (positive and finite),
    else None (a failed or invalid run costs time and decides nothing)."""
    label, scenario = row.get("label"), row.get("scenario")
    conc, repeat, rnd = _int(row.get("max_concurrency")), _int(row.get("repeat")), _int(row.get("round"))
    if not isinstance(label, str) or not isinstance(scenario, str) or conc is None or repeat is None:
        return None
    if rnd is None:
        return None
    v = _num(row.get(metric)) if row.get("status") == "ok" else None
    cost = _num(row.get("wall_s"))
    if cost is None:
        cost = _num(row.get("duration")) or 0.0
    seq = _int(row.get("seq"))
    length = _num(row.get("length"))
    return Observation(label=label, point=(scenario, conc), repeat=repeat, round=rnd,
                       seq=-1 if seq is None else seq, value=v if v is not None and v > 0 else None,
                       cost_s=max(cost, 0.0), length=length if length and 0 < length <= 1 else 1.0)  # fmt: skip


def observations(rows: Iterable[Mapping[str, Any]], metric: str) -> list[Observation]:
    """Every run of the design in ``rows``, in run order (``seq``)."""
    out = [o for r in rows if (o := observation(r, metric)) is not None]
    return sorted(out, key=lambda o: (o.seq, o.round))


def launch_times(rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Per config label, the mean start -> ready time of its launches (a launch: the rows of one
    config in one round, which all carry that launch's ``launch_s``)."""
    per: dict[tuple[str, Any], float] = {}
    for r in rows:
        label, s = r.get("label"), _num(r.get("launch_s"))
        if isinstance(label, str) and s is not None and s > 0:
            per[(label, r.get("round"))] = s
    sums: dict[str, list[float]] = {}
    for (label, _rnd), s in per.items():
        sums.setdefault(label, []).append(s)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def grid(plan_rows: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[Point]]:
    """(config labels, points) of a manifest's ``plan`` rows, in plan order."""
    labels: dict[str, None] = {}
    points: dict[Point, None] = {}
    for r in plan_rows:
        conc = _int(r.get("max_concurrency"))
        if isinstance(r.get("label"), str) and isinstance(r.get("scenario"), str) and conc is not None:
            labels[r["label"]] = None
            points[(r["scenario"], conc)] = None
    return list(labels), list(points)


@dataclass(frozen=True)
class DesignInputs:
    """The arguments of the rules' ``plan_next``, in its order."""

    observations: tuple[Observation, ...]
    configs: tuple[str, ...]
    points: tuple[Point, ...]
    settings: DesignSettings
    launch_s: dict[str, float]

    def args(
        self,
    ) -> tuple[Sequence[Observation], Sequence[str], Sequence[Point], DesignSettings, dict[str, float]]:
        return self.observations, self.configs, self.points, self.settings, self.launch_s


def design_inputs(rows: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]) -> DesignInputs | None:
    """Everything ``plan_next`` needs from a run dir's rows and manifest; None when the run was not
    made with the design."""
    settings = settings_of(manifest)
    if settings is None:
        return None
    plan = manifest.get("plan")
    configs, points = grid(plan if isinstance(plan, list) else [])
    return DesignInputs(tuple(observations(rows, settings.metric)), tuple(configs), tuple(points), settings,
                        launch_times(rows))  # fmt: skip


def budget_s(state: DesignState, settings: DesignSettings) -> float | None:
    """The design's limit in seconds: the smaller of ``budget_s`` and ``budget_fraction`` of what the
    same grid with ``repeats: 3`` costs (``state.baseline_s``); None without a budget."""
    limits = [x for x in (settings.budget_s,) if x is not None]
    if settings.budget_fraction is not None and state.baseline_s > 0:
        limits.append(settings.budget_fraction * state.baseline_s)
    return min(limits) if limits else None


def undecided(state: DesignState) -> int:
    """Cells the design is still measuring."""
    return sum(1 for c in state.cells if c.status == "running")
