"""The report view model: every number and every verdict a report shows, computed once.

Renderers (Markdown, JSON, terminal table, HTML + plots) read this and nothing else. It is
language-neutral: every sentence is a :class:`Msg` (an i18n key plus arguments); the strings of both
languages are rendered by :mod:`specsweep.report.i18n` (``i18n.text(msg, lang)``, ``i18n.label(key, lang)``).
What a table shows for a config, a winner or a concurrency band is decided here too (``short``,
``config_name``, ``winner_name``, :func:`band_range`), so Markdown, HTML and plots cannot disagree.
The model is in three modules, all importable from here: the building blocks (:mod:`view_base`),
the reading of the verdicts - findings, recommendations, compare summary (:mod:`view_advice`) - and
the cells, verdicts and report (this module).

One model serves both report kinds:

- ``kind="sweep"``: one method, one parameter varied (e.g. DSpark ``spec_tokens`` 3 vs 5);
  ``configs`` are that method's configurations.
- ``kind="compare"``: methods against each other, each method at its best config per cell;
  ``configs`` are the methods (``ConfigInfo.label`` is the method's display name) and each cell
  says which config it was picked from (``CellView.picked``).

Conventions
- Metric keys are sglang.bench_serving's (``total_throughput``, ``mean_e2e_latency_ms``, ...);
  ``metrics`` says per key its unit, direction and decimals.
- Ratios and effects are fractions (0.092 means 9.2%).
- A pairwise comparison of configs ``a`` and ``b`` on a metric is a :class:`Verdict`:
  ``effect = a/b - 1`` for higher-is-better metrics and ``b/a - 1`` for lower-is-better ones, so a
  positive effect always favours ``a``; ``verdict`` is "a", "b" or "tie"; ``gain`` is
  winner/loser - 1 of the numeric leader (what the "Gain"/"提升" column shows, even for a tie).
- Missing cells are present with ``status="missing"`` and ``values`` all None; never invented.
- Rendering a sentence: ``i18n.text(msg, lang)``; a label: ``i18n.label(key, lang)``; numbers:
  ``i18n.fmt_num`` / ``i18n.fmt_pct``. ``Msg.text`` and ``ReportView.lang`` are filled only in the
  ``--format json`` output (for consumers without the i18n module); renderers ignore them.

Sections (all lists may be empty): ``cells`` (core table), ``winners`` (throughput winner table),
``verdicts`` / ``latency_verdicts`` (every pairwise comparison), ``findings`` (by concurrency band),
``class_best`` (per workload class), ``gaps`` (gap as concurrency rises), ``anomalies``,
``crossovers``, ``recommendations`` (+ ``flags``), ``schedule``, ``checks`` (domain checks),
``compare`` (win counts, latency ratios, conclusion; compare only), ``next_steps``, ``notes``,
``lossless``.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from pydantic import Field

from specsweep.report.build.domains import DomainRow, DomainsView
from specsweep.report.build.view_advice import AdviceBasis as AdviceBasis
from specsweep.report.build.view_advice import CellAdvice as CellAdvice
from specsweep.report.build.view_advice import ClassBest as ClassBest
from specsweep.report.build.view_advice import CompareSummary as CompareSummary
from specsweep.report.build.view_advice import DomainCheck as DomainCheck
from specsweep.report.build.view_advice import EngineFlags as EngineFlags
from specsweep.report.build.view_advice import Finding as Finding
from specsweep.report.build.view_advice import Pick as Pick
from specsweep.report.build.view_advice import RatioRow as RatioRow
from specsweep.report.build.view_advice import Recommendation as Recommendation
from specsweep.report.build.view_advice import ScheduleEntry as ScheduleEntry
from specsweep.report.build.view_advice import SetAside as SetAside
from specsweep.report.build.view_base import ArgValue as ArgValue
from specsweep.report.build.view_base import Frozen as _Frozen
from specsweep.report.build.view_base import Msg as Msg
from specsweep.report.build.view_base import Number as Number
from specsweep.report.build.view_base import band_range as band_range
from specsweep.report.build.view_base import cells_text as cells_text
from specsweep.report.build.view_base import level_text as level_text
from specsweep.report.build.view_base import reason_msgs as reason_msgs
from specsweep.report.build.view_design import DesignView

VIEW_SCHEMA = "specsweep.report.build.view/1"


class WinnerName(NamedTuple):
    """Who a winner-table row names (:meth:`ReportView.winner_name`), before it is put in words.

    ``kind``: "none" (no verdict: fewer than two configs measured), "tie" or "config";
    ``names``: the winner's display name ("config"), or the two even leaders ("tie" among more than
    two configs, so a reader knows which two; empty with two configs, where it is plain).
    """

    kind: Literal["none", "tie", "config"]
    names: tuple[str, ...] = ()


class PlotLine(NamedTuple):
    """One line of a plot (:meth:`ReportView.plot_lines`): ``label`` names it in the legend,
    ``column`` is the config column it belongs to (its colour), ``style`` its place among that
    column's lines (line style and marker), ``member``: drawn from ``member_cells``."""

    label: str
    column: str
    style: int
    member: bool


class MetricSpec(_Frozen):
    key: str  # e.g. "total_throughput", "p99_ttft_ms"
    unit: str  # "s", "req/s", "tok/s", "ms"
    higher_is_better: bool
    decimals: int = 2


class ServerInfo(_Frozen):
    name: str  # config/server name in the manifest
    label: str  # config label, e.g. "DSpark(st=3)"
    method: str
    params: dict[str, ArgValue] = Field(default_factory=dict)
    backend: str | None = None  # e.g. "vllm-dspark", "sglang", "sim"
    model: str | None = None
    argv: list[str] = Field(default_factory=list)
    version: str | None = None
    run_dirs: list[str] = Field(default_factory=list)  # where this config's results are
    column: str | None = None  # the ConfigInfo label it belongs to (compare: its method)
    clients: list[str] = Field(default_factory=list)  # the benchmark clients that measured it


class LengthInfo(_Frozen):
    """How a scenario's request lengths were drawn: uniform integers in [lo, hi] (inclusive)."""

    scenario: str
    input_lo: int
    input_hi: int
    output_lo: int
    output_hi: int
    ratio: float
    mode: str  # "sglang" | "vllm" range-ratio meaning


class Provenance(_Frozen):
    run_dirs: list[str]
    experiments: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)  # "run" | "import" | "sim", one per kind present
    servers: list[ServerInfo] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    backends: list[str] = Field(default_factory=list)
    clients: list[str] = Field(default_factory=list)  # e.g. "sglang.bench_serving --backend vllm"
    warmup: list[int] = Field(default_factory=list)  # distinct warmup request counts
    ignore_eos: bool | None = None
    datasets: list[str] = Field(default_factory=list)
    lengths: list[LengthInfo] = Field(default_factory=list)  # --random-*-len rule per scenario
    simulated: bool = False
    time_scale: float | None = None
    tool_versions: list[str] = Field(default_factory=list)
    generated_at: str = ""  # ISO 8601 UTC
    # what makes configs not comparable as they stand: different clients, different workloads in a cell
    comparability: list[Msg] = Field(default_factory=list)


class ConfigInfo(_Frozen):
    """A column of the comparison: a config (sweep) or a method at its best config (compare)."""

    label: str  # "DSpark(st=3)" (sweep) / "DSpark" (compare)
    short: str  # "st=3" (sweep) / "DSpark" (compare): what table headers show
    method: str
    params: dict[str, ArgValue] = Field(default_factory=dict)
    members: list[str] = Field(default_factory=list)  # compare: the config labels of this method
    is_baseline: bool = False


class CellView(_Frozen):
    """One config at one (scenario, concurrency): means over repeats, with intervals when known."""

    scenario: str
    concurrency: int
    config: str  # ConfigInfo.label
    picked: str | None = None  # compare: the config label chosen as the method's best in this cell
    workload_class: str
    status: Literal["ok", "missing", "failed", "invalid"]
    repeats: int = 0
    values: dict[str, Number] = Field(default_factory=dict)  # metric key -> value
    ci: dict[str, list[float]] = Field(default_factory=dict)  # metric key -> [low, high]
    ci_basis: str | None = None  # "requests" | "repeats" | None
    completed: int | None = None
    failed: int | None = None
    accept_length: Number = None
    error: str | None = None


class Verdict(_Frozen):
    scenario: str
    concurrency: int
    metric: str
    a: str
    b: str
    verdict: Literal["a", "b", "tie"]
    effect: float  # a/b - 1 (higher is better) or b/a - 1 (lower is better): > 0 favours a
    ci_low: float
    ci_high: float
    basis: str  # "repeats" | "requests+floor" | "noise_floor" | "aa+floor" ...
    noise_floor: float
    min_effect: float
    a_value: float
    b_value: float
    winner: str | None  # label of the winner; None for a tie
    leader: str  # label with the better number, even in a tie
    gain: float  # leader/other - 1 (for lower-is-better: other/leader - 1)
    # the rule (docs/statistics.md): a t test on log values, p values adjusted over the grid
    method: str = ""  # "welch_t" (repeats) | "z_assumed_noise" | "t_measured_noise" (single runs)
    n_a: int = 1  # runs behind each side
    n_b: int = 1
    level: float = 0.05  # false-winner rate the rule is held to
    detectable_effect: float = 0.0  # smallest difference this comparison could have decided
    p_value: float = 1.0
    p_adjusted: float = 1.0
    adjustment: str = "bh"  # "bh" (Benjamini-Hochberg) | "holm" | "none", over n_compared comparisons
    n_compared: int = 1
    noise_sd: float = 0.0  # one run's run-to-run noise sd (log scale) the test used
    target_effect: float = 0.05  # the planning aid's target difference
    repeats_needed: int | None = None  # runs per config to decide target_effect with 80% power
    se_log: float = 0.0  # standard error of log(1 + effect)
    df: float | None = None  # the t reference's degrees of freedom (None: normal, an assumed noise)
    noise_a: float = 0.0  # each config's run-to-run noise sd (log scale): never one for both
    noise_b: float = 0.0
    gated: bool = False  # a secondary metric's family not opened: the primary metric named no winner
    equivalent: bool = False  # the adaptive design showed a and b within its margin
    looks: int = 1  # looks at the data the verdict rests on (rounds of the adaptive design)
    se_shared: float = 0.0  # the part of se_log every cell shares (the drift estimate's)
    sequential: bool = False  # decided by the adaptive design's sequential rule
    launch_noise: float = 0.0  # sd (log) of one server launch's level the test used
    launch_source: str = ""  # measured | measured+calibrated | calibrated | assumed
    se_launch: float = 0.0  # the part of se_log from the configs' launch levels
    se_session: float = 0.0  # the between-session allowance
    unanchored: bool = False  # measured only in sessions no config links: a host change looks alike
    df_shared: float | None = None  # df of se_shared, counted in launches (None: known)


class WinnerRow(_Frozen):
    """One row of the throughput winner table: every config's value, the leader vs the runner-up."""

    scenario: str
    concurrency: int
    metric: str
    values: dict[str, Number]  # config label -> value (None: missing)
    winner: str | None  # None: tie or not comparable
    leader: str | None
    runner_up: str | None
    gain: Number  # leader/runner_up - 1
    verdict: Verdict | None
    missing: list[str] = Field(default_factory=list)
    note: Msg | None = None  # why no winner is named (the configs ran different workloads)


class NoiseInfo(_Frozen):
    floor: float  # relative, e.g. 0.05
    source: Literal["aa", "repeats", "default"]
    n: int = 0  # number of A/A pairs or repeat groups it was measured from
    min_effect: float = 0.0
    detail: Msg | None = None
    sigma: float = 0.10  # one run's run-to-run noise sd (log) single-run verdicts rest on
    sigma_measured: bool = False  # False: assumed, not measured
    rule: Msg | None = None  # how verdicts were decided: test, level, multiplicity adjustment, runs
    rule_within: Msg | None = None  # compare: how each method's own configs were decided against each other
    ties: Msg | None = None  # for ties: the detectable difference and the runs a target would take
    ties_min: Msg | None = None  # ties only because the gap is under --min-effect


class GapRow(_Frozen):
    concurrency: int
    a_value: Number
    b_value: Number
    verdict: Verdict | None
    text: Msg


class GapTable(_Frozen):
    scenario: str
    metric: str
    a: str
    b: str
    rows: list[GapRow]
    summary: Msg | None = None


class Anomaly(_Frozen):
    scenario: str
    concurrency: int
    kind: Literal["trend_outlier", "prefix_cache", "invalid_run", "error_burst"]
    configs: list[str] = Field(default_factory=list)
    evidence: Msg
    data: dict[str, ArgValue] = Field(default_factory=dict)


class Crossover(_Frozen):
    scenario: str
    a: str
    b: str
    metric: str
    concurrency: float  # interpolated in log-concurrency
    low: float  # interval: the two measured levels that bracket the change
    high: float
    kind: Literal["pair", "baseline"] = "pair"
    before: str  # verdict below the crossover: "a" | "b" | "tie"
    after: str
    text: Msg | None = None


class Divergence(_Frozen):
    index: int  # prompt index
    token_index: int
    a_context: str
    b_context: str


class LosslessView(_Frozen):
    base_urls: list[str]
    n_prompts: int
    identical: int
    share_identical: float
    divergences: list[Divergence] = Field(default_factory=list)
    errors: int = 0


class ReportView(_Frozen):
    schema_version: str = VIEW_SCHEMA
    kind: Literal["sweep", "compare"]
    lang_neutral: bool = True
    lang: str | None = None  # set only in ``--format json`` output, where every Msg also has its ``text``
    title: Msg
    provenance: Provenance
    primary_metric: str = "total_throughput"
    metrics: list[MetricSpec]
    core_columns: list[str]  # metric keys in the core table's order
    config_column: str  # i18n label key of the config column ("col.param.spec_tokens", "col.method")
    varied_param: str | None = None  # sweep: the parameter that varies
    configs: list[ConfigInfo]
    scenarios: list[str]
    concurrencies: list[int]
    cells: list[CellView]  # every (scenario, concurrency, config) present in any config, incl. missing
    # compare: every config of a method with several, per cell, as its own cell (the plots' lines)
    member_cells: list[CellView] = Field(default_factory=list)
    noise: NoiseInfo
    verdicts: list[Verdict]  # every pairwise comparison on the primary metric, per cell
    latency_verdicts: list[Verdict] = Field(default_factory=list)  # mean E2E / TPOT / TTFT
    winners: list[WinnerRow]
    findings: list[Finding] = Field(default_factory=list)
    class_best: list[ClassBest] = Field(default_factory=list)
    gaps: list[GapTable] = Field(default_factory=list)
    anomalies: list[Anomaly] = Field(default_factory=list)
    crossovers: list[Crossover] = Field(default_factory=list)
    recommendations: list[Recommendation] = Field(default_factory=list)
    schedule: list[ScheduleEntry] = Field(default_factory=list)
    advice: list[CellAdvice] = Field(default_factory=list)  # per cell: what the verdicts advise
    checks: list[DomainCheck] = Field(default_factory=list)
    compare: CompareSummary | None = None
    next_steps: list[Msg] = Field(default_factory=list)
    notes: list[Msg] = Field(default_factory=list)
    lossless: LosslessView | None = None
    # per-domain section (report.build.domains): one row per category x cell x config, and its verdicts
    domains: list[DomainRow] = Field(default_factory=list)
    domain_summary: DomainsView | None = None
    # a run made with the adaptive design: how each cell was decided, its cost (report.build.view_design)
    design: DesignView | None = None

    def to_json(self, *, indent: bool = True) -> str:
        return self.model_dump_json(indent=2 if indent else None)

    @classmethod
    def from_json(cls, text: str | bytes) -> ReportView:
        return cls.model_validate_json(text)

    # ---- lookups renderers need ----------------------------------------------------------------
    def cell(self, scenario: str, concurrency: int, config: str) -> CellView | None:
        for c in self.cells:
            if c.scenario == scenario and c.concurrency == concurrency and c.config == config:
                return c
        return None

    def metric(self, key: str) -> MetricSpec:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(key)

    # ---- display decisions: made here once, so every renderer says the same ----------------------
    def short(self, config: str | None) -> str:
        """A config's name in tables and sentences (``ConfigInfo.short``); an unknown label as it is."""
        for c in self.configs:
            if c.label == config:
                return c.short
        return config or ""

    def config_name(self, cell: CellView) -> str:
        """What the config column shows: the picked config (compare), the varied parameter's value
        (sweep), else the config's short name."""
        if self.kind == "compare":
            return cell.picked or cell.config
        if self.varied_param:
            for c in self.configs:
                if c.label == cell.config and self.varied_param in c.params:
                    return str(c.params[self.varied_param])
        return self.short(cell.config)

    def winner_name(self, row: WinnerRow) -> WinnerName:
        """Who the winner column names for ``row`` (see :class:`WinnerName`); compare: the config
        picked as the winning method's best in that cell."""
        v = row.verdict
        if v is None:
            return WinnerName("none")
        if row.winner is None:
            even = (self.short(v.a), self.short(v.b)) if len(self.configs) > 2 else ()
            return WinnerName("tie", even)
        if self.kind == "compare":
            mine = self.advised(row.scenario, row.concurrency, row.winner)
            if mine:  # the cell advice: the method's one config, or the set it leaves even or undecided
                return WinnerName("config", (" / ".join(mine),))
            cell = self.cell(row.scenario, row.concurrency, row.winner)
            if cell is not None and cell.picked:
                return WinnerName("config", (cell.picked,))
        return WinnerName("config", (self.short(row.winner),))

    def gain_interval(self, row: WinnerRow) -> tuple[float, float] | None:
        """The interval shown beside a row's gain (the gain of its two values, leader over runner-up):
        the row's verdict interval - the one interval of that comparison, in every table - turned to
        the leader's side. None without a verdict."""
        v = row.verdict
        if v is None or row.leader is None:
            return None
        if row.leader == v.a:
            return v.ci_low, v.ci_high
        return 1 / (1 + v.ci_high) - 1, 1 / (1 + v.ci_low) - 1

    def cell_advice(self, scenario: str, concurrency: int) -> CellAdvice | None:
        return next((a for a in self.advice if a.scenario == scenario and a.concurrency == concurrency), None)

    def advised(self, scenario: str, concurrency: int, column: str) -> list[str]:
        """The configs of ``column`` the cell advice keeps in the cell (compare: the method's one config,
        or the set its verdicts leave even or undecided); [] when it advises none of them."""
        a = self.cell_advice(scenario, concurrency)
        if a is None or column not in a.columns:
            return []
        members = next((c.members for c in self.configs if c.label == column), []) or [column]
        return [x for x in a.configs if x in members]

    def plot_lines(self) -> list[PlotLine]:
        """The lines a plot draws: one per config (issue 34 item 9: a compare plot drew one line per
        method that switched between its configs from cell to cell). A method with several configs
        gives each its own line, in its method's colour (``column``) with its own style (``style``);
        a method with one config, or a sweep's config, one line of its own."""
        out = []
        for col in self.configs:
            members = [m for m in col.members if any(c.config == m for c in self.member_cells)]
            if self.kind == "compare" and len(members) > 1:
                out += [
                    PlotLine(label=m, column=col.label, style=i, member=True) for i, m in enumerate(members)
                ]
            else:
                name = col.members[0] if self.kind == "compare" and len(col.members) == 1 else col.label
                out.append(PlotLine(label=name, column=col.label, style=0, member=False))
        return out

    def line_cells(self, line: PlotLine) -> list[CellView]:
        """The cells of one plot line (:meth:`plot_lines`)."""
        if line.member:
            return [c for c in self.member_cells if c.config == line.label]
        return [c for c in self.cells if c.config == line.column]

    def points(self) -> list[tuple[str, int]]:
        """(scenario, concurrency) pairs in table order (scenario, then concurrency)."""
        seen = sorted(
            {(c.scenario, c.concurrency) for c in self.cells},
            key=lambda p: (self.scenarios.index(p[0]), p[1]),
        )
        return seen
