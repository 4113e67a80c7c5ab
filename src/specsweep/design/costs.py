"""What the adaptive design's runs and launches cost, from what they cost so far: a run's ``cost_s``
(its wall time, warmup included), each config's ``launch_s`` per launch, and the same grid with
``repeats: 3`` the design is measured against. ``Costs`` for the first generation's runs as they ran;
``FullCosts`` for the racing design, whose runs have lengths (a full-length run's cost)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from specsweep.design.types import Observation, Point

BASELINE_REPEATS = 3


def _costs(
    obs: Sequence[Observation], cost_of: Callable[[Observation], float]
) -> tuple[dict[tuple[str, Point], float], dict[str, float], float]:
    per: dict[tuple[str, Point], list[float]] = {}
    for o in obs:
        per.setdefault((o.label, o.point), []).append(cost_of(o))
    cell = {k: sum(v) / len(v) for k, v in per.items()}
    by_label: dict[str, list[float]] = {}
    for (lab, _p), c in cell.items():
        by_label.setdefault(lab, []).append(c)
    label = {k: sum(v) / len(v) for k, v in by_label.items()}
    overall = sum(cell.values()) / len(cell) if cell else 0.0
    return cell, label, overall


class Costs:
    """A run's cost (its measured mean; else its config's mean; else the grid's) and a launch's."""

    def __init__(self, obs: Sequence[Observation], launch_s: Mapping[str, float]) -> None:
        self.cell, self.label, self.overall = _costs(obs, self.cost_of)
        self.launch_s = dict(launch_s)
        self.launch_mean = sum(launch_s.values()) / len(launch_s) if launch_s else 0.0

    @staticmethod
    def cost_of(o: Observation) -> float:
        return o.cost_s

    def run(self, label: str, p: Point) -> float:
        return self.cell.get((label, p), self.label.get(label, self.overall))

    def launch(self, label: str) -> float:
        return self.launch_s.get(label, self.launch_mean)


def spent(obs: Sequence[Observation], costs: Costs) -> float:
    """Runs' costs plus one launch per config per round it ran in."""
    launches = {(o.round, o.label) for o in obs}
    return sum(o.cost_s for o in obs) + sum(costs.launch(lab) for _r, lab in launches)


def baseline(configs: Sequence[str], points: Sequence[Point], costs: Costs) -> float:
    """The same grid with ``repeats: 3``: three interleaved rounds, a launch per config per round."""
    runs = sum(costs.run(lab, p) for lab in configs for p in points if (lab, p) in costs.cell)
    return BASELINE_REPEATS * (runs + sum(costs.launch(lab) for lab in configs))


class FullCosts(Costs):
    """A full-length run's cost per (config, cell): measured cost / length; else the config's mean."""

    @staticmethod
    def cost_of(o: Observation) -> float:
        return o.cost_s / max(o.length, 1e-3)
