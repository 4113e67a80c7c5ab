"""The adaptive design's dry-run figures: its first pass and its worst case, before anything runs.

From the same guesses as specsweep.estimate (``cell_guess_s``, ``startup_guess_s``; its
assumptions are printed beside it):

    pass_s      every config launched once, every cell once: the first pass
    baseline_s  the same grid with ``repeats: 3`` in interleaved rounds: 3 x pass_s
    ceiling_s   every (config, cell) up to ``max_repeats`` runs, a launch per config per round
    worst_s     min(ceiling_s, the budget): what the design may spend at most (the budget counts
                launches and warmups; the rules stop a round that would overrun it)
"""

from __future__ import annotations

from dataclasses import dataclass

from specsweep.config import Plan
from specsweep.estimate import cell_guess_s, startup_guess_s

BASELINE_REPEATS = 3  # what docs/statistics.md recommended before the design: the comparison's base


@dataclass(frozen=True)
class DesignEstimate:
    runs: int  # first pass: one per (config, cell)
    launches: int  # first pass: one per config
    pass_s: float
    baseline_s: float
    ceiling_s: float
    budget_s: float | None  # the budget in seconds (a share: of baseline_s); None: none
    max_repeats: int

    @property
    def worst_s(self) -> float:
        return self.ceiling_s if self.budget_s is None else min(self.ceiling_s, self.budget_s)


def estimate_design(plan: Plan) -> DesignEstimate:
    """The design's figures for ``plan`` (which must have an ``adaptive`` section)."""
    opts = plan.experiment.adaptive
    assert opts is not None, "estimate_design needs an experiment with the adaptive design"
    s = opts.settings()
    pass_s = sum(
        startup_guess_s(cfg) + sum(cell_guess_s(plan, cfg, c) for c in plan.cells[cfg.label])
        for cfg in plan.configs
        if plan.cells[cfg.label]
    )
    baseline = BASELINE_REPEATS * pass_s
    limits = [x for x in (s.budget_s, s.budget_fraction * baseline if s.budget_fraction else None) if x]
    return DesignEstimate(
        runs=len(plan.all_cells()), launches=sum(1 for c in plan.configs if plan.cells[c.label]),
        pass_s=pass_s, baseline_s=baseline, ceiling_s=s.max_repeats * pass_s,
        budget_s=min(limits) if limits else None, max_repeats=s.max_repeats,
    )  # fmt: skip
