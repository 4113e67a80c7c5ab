"""The report's view of a run made with the adaptive design (``specsweep run --adaptive``): how each
cell was decided, and what the design cost next to the same grid with ``repeats: 3``.

Built by :mod:`specsweep.report.build.design` from the rules' own state (specsweep.design: the run
and its report read the same rules back from the same rows); rendered by
:mod:`specsweep.report.design_render`. Sentences are i18n keys with their arguments
(:class:`DesignMsg`), rendered in either language; numbers stay raw (fractions, seconds).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DesignMsg(_Frozen):
    """A sentence: an i18n key (specsweep.report.i18n.design) and its arguments."""

    key: str
    args: dict[str, Any] = Field(default_factory=dict)


class DesignPair(_Frozen):
    """Two configs in one cell, on the design's metric: ``effect`` > 0 favours ``a``; the interval is
    the one the decision rests on (valid however often the design looked)."""

    a: str
    b: str
    status: str  # decided | equivalent | undecided | budget | no_data
    winner: str | None
    effect: float
    ci_low: float
    ci_high: float
    n_a: int
    n_b: int
    p_value: float = 1.0
    more_runs: int | None = None  # undecided: about this many more runs per config ...
    gap: float | None = None  # ... would decide a gap of this size
    why: DesignMsg


class DesignCell(_Frozen):
    scenario: str
    concurrency: int
    status: str  # decided | equivalent | undecided | budget | no_data | running
    stopped_by: str  # decided | equivalent | max_repeats | budget | behind | ""
    leader: str | None
    runs: dict[str, int] = Field(default_factory=dict)  # config label -> runs with a value
    pairs: list[DesignPair] = Field(default_factory=list)


class DesignView(_Frozen):
    run_dir: str
    metric: str
    margin: float
    max_repeats: int
    level: float
    budget_s: float | None  # the budget in seconds (a share: of baseline_s); None: none
    budget: DesignMsg  # the budget in words ("50% of the repeats: 3 grid (4m10s)", "none", ...)
    spent_s: float
    baseline_s: float  # the same grid with repeats: 3 (interleaved rounds), from measured times
    rounds: int
    runs: int
    launches: int
    noise: dict[str, list[float]] = Field(default_factory=dict)  # label -> [sigma, df]
    cells: list[DesignCell] = Field(default_factory=list)
    summary: DesignMsg
    settings_line: DesignMsg
    intro: DesignMsg = DesignMsg(key="design.intro")  # the racing design has its own (design.intro_race)
