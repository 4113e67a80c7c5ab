"""The view model's reading of the verdicts (:mod:`specsweep.report.build.view`): findings per band and
class, recommendations with the full configs to deploy and their engine flags, the schedule, domain
checks and the compare summary; each group with the cells its counts set aside."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from specsweep.report.build.view_base import ArgValue, Frozen, Msg, Number


class EngineFlags(Frozen):
    vllm: str | None = None  # e.g. --speculative-config '{"method": "dspark", ...}'
    sglang: str | None = None  # e.g. --speculative-algorithm EAGLE --speculative-num-steps 3 ...
    measured: str | None = None  # the argv the measured server was launched with, when known


class AdviceBasis(Frozen):
    """What a piece of advice rests on, as its verdicts were decided (analysis.advice.Basis)."""

    looks: int
    runs_low: int  # runs a side: fewest and most over the verdicts read
    runs_high: int
    noise: Literal["measured", "assumed", "mixed"]


class Pick(Frozen):
    """A full config to deploy (method + parameters: ``config`` is its label, e.g. "DSpark(st=5)"),
    the cells of a recommendation where it is the one (compare: the method's best config there), and
    the engine flags that deploy it."""

    config: str
    method: str
    params: dict[str, ArgValue] = Field(default_factory=dict)
    cells: list[list[str | int]] = Field(default_factory=list)  # [[scenario, concurrency], ...]
    flags: EngineFlags | None = None
    even_with: list[str] = Field(
        default_factory=list
    )  # the configs the cell advice leaves even or undecided with it in ``cells``
    state: Literal["pick", "even", "undecided"] = "pick"  # the cell advice of ``cells`` (analysis.advice)
    band_pick: bool = False  # the band's config, covering ``cells`` by a tie (even or undecided there)
    more_runs: int | None = None  # undecided: about this many more runs a side would decide ``gap``
    gap: Number = None
    even_flags: dict[str, EngineFlags] = Field(default_factory=dict)  # the flags of ``even_with``'s configs


class SetAside(Frozen):
    """A cell of a group that its counts leave out, and why: flagged as an anomaly ("trend_outlier",
    "prefix_cache"), or a compared config has no valid result there ("invalid", "failed", "missing",
    naming ``configs``)."""

    scenario: str
    concurrency: int
    reason: Literal["trend_outlier", "prefix_cache", "invalid", "failed", "missing", "workloads"]
    configs: list[str] = Field(default_factory=list)


class Finding(Frozen):
    band: str | None  # "low" | "mid" | "high" | None
    text: Msg
    data: dict[str, ArgValue] = Field(default_factory=dict)
    extra: list[Msg] = Field(default_factory=list)  # sentences that follow: who trails, why the ties
    set_aside: list[SetAside] = Field(default_factory=list)  # the band's cells its counts leave out


class ClassBest(Frozen):
    workload_class: str
    scenarios: list[str]
    config: str | None  # None: no clear winner
    wins: int
    losses: int
    ties: int
    mean_gain: Number  # geometric mean over cells of config/other - 1
    reason: Msg
    extra: list[Msg] = Field(default_factory=list)  # who trails, why the ties
    set_aside: list[SetAside] = Field(default_factory=list)
    picks: list[Pick] = Field(default_factory=list)  # the full configs behind ``config``, per cell


class Recommendation(Frozen):
    workload_class: str | None  # None: all classes together
    band: str  # "low" | "mid" | "high"
    c_low: int
    c_high: int | None  # None: unbounded
    config: str | None  # None: any (all ties); the column (compare: the method), ``picks`` the configs
    alternatives: list[str] = Field(default_factory=list)  # configs statistically tied with it
    expected_gain: Number  # geometric mean over cells vs the runner-up
    ci_low: Number
    ci_high: Number
    confidence: Literal["high", "medium", "low"]
    basis: str
    n_cells: int  # cells counted (compared); ``set_aside`` the group's others
    wins: int = 0  # of ``config`` (else the leader) against the runner-up, over the counted cells
    losses: int = 0
    ties: int = 0
    picks: list[Pick] = Field(default_factory=list)  # the full configs to deploy, per cell, with flags
    set_aside: list[SetAside] = Field(default_factory=list)
    decided_on: AdviceBasis | None = None  # the basis of every verdict it was read from, cell advice included
    note: Msg
    extra: list[Msg] = Field(default_factory=list)  # who trails, cells set aside


class CellAdvice(Frozen):
    """The one source of advice for a cell (:mod:`specsweep.analysis.advice`): the full configs the
    decided verdicts advise there - one (``pick``), or several left ``even`` or ``undecided`` - the
    columns no other beats, the basis, and for an undecided set the runs that would decide it."""

    scenario: str
    concurrency: int
    columns: list[str]
    configs: list[str]
    state: Literal["pick", "even", "undecided"]
    basis: AdviceBasis | None = None
    more_runs: int | None = None
    gap: Number = None


class ScheduleEntry(Frozen):
    """Per-concurrency schedule: below/at ``c_high`` (and above ``c_low``) the cell advice ``configs``
    (one: run it; several: ``state`` says whether they are even or undecided)."""

    scope: str  # scenario name or workload class
    c_low: int
    c_high: int | None
    config: str | None  # the one config advised, else None
    configs: list[str] = Field(default_factory=list)
    state: Literal["pick", "even", "undecided"] = "pick"
    more_runs: int | None = None  # undecided: the most that any of its cells needs
    gap: Number = None


class DomainCheck(Frozen):
    kind: Literal["cuda_graph_cap", "below_block_size", "random_ids", "ignore_eos", "simulated", "single_run"]
    severity: Literal["info", "warn"]
    configs: list[str] = Field(default_factory=list)
    cells: list[list[str | int]] = Field(default_factory=list)  # [[scenario, concurrency], ...]
    message: Msg


class RatioRow(Frozen):
    metric: str  # "mean_e2e_latency_ms" ...
    numerator: str  # method label
    denominator: str
    mean_ratio: float  # mean over cells of numerator/denominator
    n_cells: int


class CompareSummary(Frozen):
    """Per method over the compared cells, read from every pairwise verdict
    (:mod:`specsweep.analysis.outcomes`): ``win_counts`` (cells where it beats every other method),
    ``behind`` (cells where another method beats it), ``ties`` (cells with no winner in any pair;
    ``ties_min_effect`` of them only because every gap is under ``--min-effect``) and
    ``leaders_even`` (cells where the leading methods are even but ahead of the rest)."""

    methods: list[str]
    n_cells: int
    win_counts: dict[str, int]
    ties: int
    ratios: list[RatioRow]
    conclusion: Msg
    behind: dict[str, int] = Field(default_factory=dict)
    leaders_even: int = 0
    ties_min_effect: int = 0
    min_effect: float = 0.0
    trailing: list[Msg] = Field(default_factory=list)  # sentences after the conclusion
    set_aside: list[SetAside] = Field(default_factory=list)  # cells not compared, and why

    def count_lines(self) -> list[Msg]:
        """The summary's bullets, in order: cells compared, per method its wins (and, with more than
        two methods, the cells it is behind in), the ties (split by reason under --min-effect), the
        cells whose leaders are even."""
        out = [Msg(key="compare.cells", args={"n": self.n_cells})]
        many = len(self.methods) > 2
        for m in self.methods:
            args: dict[str, ArgValue] = {
                "method": m,
                "n": self.win_counts.get(m, 0),
                "behind": self.behind.get(m, 0),
            }
            out.append(Msg(key="compare.wins_behind" if many else "compare.wins", args=args))
        if self.ties and self.ties_min_effect == self.ties:
            out.append(Msg(key="compare.ties_all_min", args={"n": self.ties, "min_effect": self.min_effect}))
        elif self.ties and self.ties_min_effect:
            args = {"n": self.ties, "below": self.ties_min_effect, "noise": self.ties - self.ties_min_effect,
                    "min_effect": self.min_effect}  # fmt: skip
            out.append(Msg(key="compare.ties_min", args=args))
        elif self.ties:
            out.append(Msg(key="compare.ties", args={"n": self.ties}))
        if self.leaders_even:
            out.append(Msg(key="compare.leaders_even_count", args={"n": self.leaders_even}))
        return out
