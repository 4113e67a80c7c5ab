"""The adaptive design's dry-run figures: its first pass and its worst case, before anything runs.

From the same guesses as specsweep.experiment.estimate (``cell_guess_s``, ``startup_guess_s``; its
assumptions are printed beside it):

    pass_s      every config launched once, every cell once: the first pass (racing: short runs)
    baseline_s  the same grid with ``repeats: 3`` in interleaved rounds: 3 x pass_s
    ceiling_s   every (config, cell) up to ``max_repeats`` runs, a launch per config per round (racing:
                the short pass and one relaunch of every config holding max_repeats full runs a cell)
    worst_s     min(ceiling_s, the budget): what the design may spend at most (the budget counts
                launches and warmups; the rules stop a round that would overrun it)
"""

from __future__ import annotations

from dataclasses import dataclass

from specsweep.design.race import run_prompts
from specsweep.experiment.config import Plan
from specsweep.experiment.estimate import cell_guess_s, startup_guess_s

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
    used = [cfg for cfg in plan.configs if plan.cells[cfg.label]]
    starts = sum(startup_guess_s(cfg) for cfg in used)
    runs_s = sum(cell_guess_s(plan, cfg, c) for cfg in used for c in plan.cells[cfg.label])
    full_pass = starts + runs_s
    baseline = BASELINE_REPEATS * full_pass
    if s.race:  # short first looks, then relaunches holding at most max_repeats full runs a cell each
        pass_s = starts + sum(
            cell_guess_s(plan, cfg, c)
            * run_prompts(s.short_fraction, c.num_prompts, c.max_concurrency, s.min_waves) / c.num_prompts
            for cfg in used for c in plan.cells[cfg.label]
        )  # fmt: skip
        ceiling = pass_s + (s.launches - 1) * (starts + s.max_repeats * runs_s)
    else:
        pass_s, ceiling = full_pass, s.max_repeats * full_pass
    limits = [x for x in (s.budget_s, s.budget_fraction * baseline if s.budget_fraction else None) if x]
    return DesignEstimate(
        runs=len(plan.all_cells()), launches=len(used),
        pass_s=pass_s, baseline_s=baseline, ceiling_s=ceiling,
        budget_s=min(limits) if limits else None, max_repeats=s.max_repeats,
    )  # fmt: skip
