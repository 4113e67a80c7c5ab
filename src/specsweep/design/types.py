"""What the orchestrator and the design's rules exchange: observations in, decisions and the next
batch out. Frozen dataclasses only (picklable for the Ray executor, comparable in tests).

Changes since the lead's first version (for the orchestration side): ``CellStatus.stopped_by`` may
also be "futile" (a pair that max_repeats runs would not resolve even if its estimate were right;
the cell's status is then "undecided"), and "no_data" cells have an empty ``stopped_by``.

Vocabulary:
- a *run* is one (config, cell) measurement, a summary row; its ``repeat`` numbers the runs of
  that (config, cell) from 0, so (cell_id, repeat) stays the store's resume key;
- a *round* is one pass over the configs that have work: each of them is launched once and runs
  its pending runs; round 0 is the first pass (every (config, cell) once). Configs run in
  alternating order from round to round (A B C, then C B A, ...), so a slow drift of the host is
  not confounded with the config;
- ``seq`` is a run's position in the whole run order (all rounds, all configs): drift is judged
  against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# the experiment file's section as the rules read it: it lives with the file (analysis reads it too)
from specsweep.experiment.adaptive import DesignSettings as DesignSettings

Point = tuple[str, int]  # (scenario, concurrency): a cell of the grid, whatever config runs it


@dataclass(frozen=True)
class Observation:
    """One stored run as the rules see it. ``value`` is the design metric; None when the run failed
    or was ruled invalid (it costs time and decides nothing). ``cost_s``: the run's wall seconds,
    its warmup included."""

    label: str
    point: Point
    repeat: int
    round: int
    seq: int
    value: float | None
    cost_s: float
    length: float = 1.0  # the run's share of its cell's reference length (num_prompts)


@dataclass(frozen=True)
class Launch:
    """One server launch in a round: the config and its runs, in order (a point may repeat)."""

    label: str
    runs: tuple[Point, ...]
    lengths: tuple[float, ...] = ()  # per run, its share of the cell's reference length; empty: 1.0 each

    def length(self, i: int) -> float:
        return self.lengths[i] if self.lengths else 1.0


@dataclass(frozen=True)
class Batch:
    """The next round: launches in run order."""

    round: int
    launches: tuple[Launch, ...]
    reason: str = ""  # one line for the log: why these runs (noise, undecided cells, crossover)


PairStatusKind = Literal["decided", "equivalent", "undecided", "budget", "no_data"]


@dataclass(frozen=True)
class PairStatus:
    """Two configs in one cell on the design metric. ``effect`` > 0 favours ``a``; the interval is
    the one the decision rests on (anytime-valid). ``more_runs``: for an undecided pair, about how
    many more runs per config would decide a gap of ``gap`` (the observed one, or the margin)."""

    point: Point
    a: str
    b: str
    status: PairStatusKind
    winner: str | None
    effect: float
    ci_low: float
    ci_high: float
    n_a: int
    n_b: int
    p_value: float
    more_runs: int | None = None
    gap: float | None = None


CellStatusKind = Literal["running", "decided", "equivalent", "undecided", "budget", "no_data"]


@dataclass(frozen=True)
class CellStatus:
    """A cell's state: decided when its leader is decided better than every other contender (or
    equivalent to the rest within the margin); ``stopped_by`` says why no more runs were made."""

    point: Point
    status: CellStatusKind
    leader: str | None
    runs: dict[str, int] = field(default_factory=dict)  # label -> runs with a value
    pairs: tuple[PairStatus, ...] = ()
    stopped_by: Literal["decided", "equivalent", "max_repeats", "budget", "behind", "futile", ""] = ""


@dataclass(frozen=True)
class DesignState:
    """Everything the rules say after the observations so far. ``next`` is None when the design is
    finished. Costs in seconds: ``spent_s`` so far, ``worst_case_s`` if every remaining run up to
    the limits were made, ``baseline_s`` what the same grid with ``repeats: 3`` costs (estimated
    from measured run and launch times)."""

    cells: tuple[CellStatus, ...]
    next: Batch | None
    spent_s: float
    worst_case_s: float
    baseline_s: float
    noise: dict[str, tuple[float, float]] = field(default_factory=dict)  # label -> (sigma, df)
