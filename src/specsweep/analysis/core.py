"""The comparison table: columns (configs for a sweep, methods at their best config for a compare),
points (scenario, concurrency), per-point values, the noise floor and pairwise verdicts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from specsweep.analysis.data import CellData, Dataset
from specsweep.analysis.requests import request_cell_ci as request_cell_ci
from specsweep.errors import UsageError, one_of
from specsweep.stats import basic as stats


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str
    higher_is_better: bool
    decimals: int = 2


METRICS: dict[str, Metric] = {
    m.key: m
    for m in [
        Metric("duration", "s", False),
        Metric("request_throughput", "req/s", True),
        Metric("output_throughput", "tok/s", True),
        Metric("total_throughput", "tok/s", True),
        Metric("input_throughput", "tok/s", True),
        Metric("mean_e2e_latency_ms", "ms", False),
        Metric("median_e2e_latency_ms", "ms", False),
        Metric("p90_e2e_latency_ms", "ms", False),
        Metric("p95_e2e_latency_ms", "ms", False),
        Metric("p99_e2e_latency_ms", "ms", False),
        Metric("mean_ttft_ms", "ms", False),
        Metric("median_ttft_ms", "ms", False),
        Metric("p95_ttft_ms", "ms", False),
        Metric("p99_ttft_ms", "ms", False),
        Metric("mean_tpot_ms", "ms", False),
        Metric("median_tpot_ms", "ms", False),
        Metric("p95_tpot_ms", "ms", False),
        Metric("p99_tpot_ms", "ms", False),
        Metric("mean_itl_ms", "ms", False),
        Metric("p99_itl_ms", "ms", False),
        Metric("accept_length", "tok/step", True),
    ]
}

SWEEP_COLUMNS = [
    "duration", "request_throughput", "output_throughput", "total_throughput", "mean_e2e_latency_ms",
    "p95_e2e_latency_ms", "p99_e2e_latency_ms", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
]  # fmt: skip
COMPARE_COLUMNS = [
    "total_throughput", "output_throughput", "request_throughput", "mean_e2e_latency_ms",
    "p95_e2e_latency_ms", "p99_e2e_latency_ms", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
]  # fmt: skip
LATENCY_VERDICT_METRICS = ["mean_e2e_latency_ms", "mean_tpot_ms", "mean_ttft_ms"]
PRIMARY = "total_throughput"

Point = tuple[str, int]


@dataclass
class Column:
    label: str
    short: str
    method: str
    params: dict[str, Any]
    members: list[str] = field(default_factory=list)
    is_baseline: bool = False


@dataclass
class Entry:
    column: str
    scenario: str
    concurrency: int
    picked: str | None  # config label whose data this is
    data: CellData | None

    @property
    def ok(self) -> bool:
        return self.data is not None and bool(self.data.ok)

    def mean(self, key: str) -> float | None:
        return self.data.mean(key) if self.data is not None else None


@dataclass(frozen=True)
class Noise:
    """The noise floor (largest A/A difference: anomalies, crossovers) and one run's run-to-run noise
    sd on a log scale (``sigma``, measured with ``sigma_df`` degrees of freedom; inf: assumed) that
    verdicts between single runs rest on."""

    floor: float
    source: Literal["aa", "repeats", "default"]
    n: int
    min_effect: float
    sigma: float = stats.DEFAULT_RUN_NOISE
    sigma_df: float = math.inf


@dataclass(frozen=True)
class PairVerdict:
    scenario: str
    concurrency: int
    metric: str
    a: str
    b: str
    verdict: Literal["a", "b", "tie"]
    effect: float
    ci_low: float
    ci_high: float
    basis: str
    noise_floor: float
    min_effect: float
    a_value: float
    b_value: float
    winner: str | None
    leader: str
    gain: float
    method: str = ""  # the test: welch_t | z_assumed_noise | t_measured_noise
    n_a: int = 1  # runs on each side
    n_b: int = 1
    level: float = stats.DEFAULT_LEVEL  # the false-winner rate the rule is held to
    detectable_effect: float = 0.0  # smallest difference this test could have decided here
    p_value: float = 1.0
    p_adjusted: float = 1.0  # after the best-of selection factor (compare) and the adjustment
    adjustment: str = "bh"  # bh | holm | none, over n_compared comparisons
    n_compared: int = 1
    noise_sd: float = stats.DEFAULT_RUN_NOISE  # one run's noise sd (log) the test used
    target_effect: float = stats.DEFAULT_TARGET
    repeats_needed: int | None = None  # runs per config to decide target_effect (80% power, in the grid)
    se_log: float = 0.0  # standard error of log(1 + effect)
    df: float | None = None  # degrees of freedom of the t reference (None: normal, an assumed noise)
    noise_a: float = stats.DEFAULT_RUN_NOISE  # each config's run-to-run noise sd (log) the test used
    noise_b: float = stats.DEFAULT_RUN_NOISE
    gated: bool = False  # a secondary metric whose family was not opened (the primary named no winner)
    equivalent: bool = False  # the adaptive design showed the two within +-margin (a tie)
    looks: int = 1  # looks at the data behind the verdict (the adaptive design's rounds)
    se_shared: float = 0.0  # the part of se_log every cell shares (the drift estimate's)
    sequential: bool = False  # decided by the adaptive design's sequential rule (stats_seq)
    launch_noise: float = 0.0  # sd (log) of one server launch's level the test used (stats_launch)
    launch_source: str = ""  # measured | measured+calibrated | calibrated | assumed
    se_launch: float = 0.0  # the part of se_log from the two configs' launch levels
    se_session: float = 0.0  # the between-session allowance (unanchored: measured in unlinked sessions)
    unanchored: bool = False  # a and b measured only in sessions no config links: a host change looks alike
    df_shared: float | None = None  # df of se_shared (counted in launches); None: known


@dataclass
class Table:
    kind: Literal["sweep", "compare"]
    columns: list[Column]
    points: list[Point]
    entries: dict[tuple[str, str, int], Entry]
    varied_param: str | None
    dataset: Dataset

    def entry(self, col: str, s: str, c: int) -> Entry | None:
        return self.entries.get((col, s, c))

    def value(self, col: str, s: str, c: int, key: str) -> float | None:
        e = self.entry(col, s, c)
        return e.mean(key) if e is not None and e.ok else None

    def scenarios(self) -> list[str]:
        seen: dict[str, None] = {}
        for s, _c in self.points:
            seen.setdefault(s, None)
        return list(seen)

    def levels(self, scenario: str) -> list[int]:
        return [c for s, c in self.points if s == scenario]

    def labels(self) -> list[str]:
        return [c.label for c in self.columns]


# ---- building the table -----------------------------------------------------------------------
def label_head(label: str) -> str:
    """A config label before its parameters: "DSpark" of "DSpark(st=3)", "llmd" of the imported
    "llmd[deployment=base]" (importers.grouping suffixes recorded server parameters in brackets)."""
    return re.split(r"[(\[]", label, maxsplit=1)[0].strip()


def method_display(ds: Dataset, method: str, labels: Sequence[str] | None = None) -> str:
    """A method's display name: its configs' common label head (:func:`label_head`, e.g. "DSpark");
    where the heads differ, the configs' labels ("A vs B"); else the method."""
    mine = [
        m.label for m in ds.configs.values() if m.method == method and (labels is None or m.label in labels)
    ]
    heads = list(dict.fromkeys(label_head(x) for x in mine))
    if len(heads) == 1 and heads[0]:
        return heads[0]
    return " vs ".join(mine) if labels is not None and len(mine) > 1 else method


def _short(label: str, params: dict[str, Any], varied: str | None) -> str:
    if "(" in label and label.endswith(")"):
        return label[label.index("(") + 1 : -1]
    if varied and varied in params:
        return f"{varied}={params[varied]}"
    return label


def _points(ds: Dataset, labels: list[str]) -> list[Point]:
    pts = sorted({(s, c) for (lab, s, c) in ds.cells if lab in labels})
    return pts


def _param_sort_key(v: Any) -> tuple[int, float | str]:
    return (0, float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, str(v))


def build_sweep(ds: Dataset, method: str | None = None, baseline: str | None = None) -> Table:
    methods = ds.methods()
    if baseline is not None and baseline not in ds.configs:
        raise UsageError(f"--baseline: {one_of(baseline, ds.configs)}")
    if method is None:
        multi = [m for m in methods if sum(1 for c in ds.configs.values() if c.method == m) > 1]
        cand = [m for m in methods if baseline is None or ds.configs[baseline].method != m]
        if len(methods) == 1:
            method = methods[0]
        elif len(multi) == 1:
            method = multi[0]
        elif len(cand) == 1:
            method = cand[0]
        else:
            raise UsageError(
                f"the results hold several methods; choose one with --method: {', '.join(methods)}"
            )
    if method not in methods:
        raise UsageError(f"--method: {one_of(method, methods)}")
    metas = [m for m in ds.configs.values() if m.method == method and m.label != baseline]
    keys = sorted({k for m in metas for k in m.params})
    varied = [k for k in keys if len({repr(m.params.get(k)) for m in metas}) > 1]
    vp = varied[0] if len(varied) == 1 else None
    if vp is not None:
        metas.sort(key=lambda m: _param_sort_key(m.params.get(vp)))
    else:
        metas.sort(key=lambda m: m.order)
    cols = [Column(m.label, _short(m.label, m.params, vp), m.method, m.params, [m.label]) for m in metas]
    if baseline is not None:
        b = ds.configs[baseline]
        cols.append(Column(b.label, b.label, b.method, b.params, [b.label], is_baseline=True))
    labels = [c.label for c in cols]
    pts = _points(ds, labels)
    entries = {}
    for col in cols:
        for s, c in pts:
            entries[(col.label, s, c)] = Entry(col.label, s, c, col.label, ds.get(col.label, s, c))
    return Table("sweep", cols, pts, entries, vp, ds)


def build_compare(ds: Dataset, baseline: str | None = None, primary: str = PRIMARY) -> Table:
    if baseline is not None and baseline not in ds.configs:
        raise UsageError(f"--baseline: {one_of(baseline, ds.configs)}")
    methods = ds.methods()
    cols: list[Column] = []
    for m in methods:
        members = [
            c.label
            for c in sorted(ds.configs.values(), key=lambda x: x.order)
            if c.method == m and c.label != baseline
        ]
        if not members:
            continue
        disp = method_display(ds, m)
        params = ds.configs[members[0]].params if len(members) == 1 else {}
        cols.append(Column(disp, disp, m, params, members))
    if len({c.label for c in cols}) < len(cols):  # display names collide: use the method names
        for col in cols:
            col.label = col.short = col.method
    if baseline is not None:
        b = ds.configs[baseline]
        cols.append(Column(b.label, b.label, b.method, b.params, [b.label], is_baseline=True))
    if len(cols) < 2:
        raise UsageError(
            f"--kind compare needs at least two methods; the results hold: {', '.join(methods)} "
            "(use --kind sweep for one method)"
        )
    labels = [m for c in cols for m in c.members]
    pts = _points(ds, labels)
    entries = {}
    for col in cols:
        for s, c in pts:
            best: CellData | None = None
            best_v = -math.inf
            any_cell: CellData | None = None
            for lab in col.members:
                cell = ds.get(lab, s, c)
                if cell is None:
                    continue
                any_cell = any_cell or cell
                v = cell.mean(primary)
                if cell.ok and v is not None and v > best_v:
                    best, best_v = cell, v
            chosen = best or any_cell
            entries[(col.label, s, c)] = Entry(col.label, s, c, chosen.label if chosen else None, chosen)
    return Table("compare", cols, pts, entries, None, ds)


# ---- noise floor -------------------------------------------------------------------------------
def measure_noise(ds: Dataset, min_effect: float = 0.0, metric: str = PRIMARY) -> Noise:
    """A/A pairs (the same config and cell in two run dirs) first, then repeats, else the default."""
    aa_pairs: list[tuple[float, float]] = []
    groups: list[list[float]] = []
    for cell in ds.cells.values():
        by_dir: dict[str, list[float]] = {}
        for r in cell.ok:
            v = r.get(metric)
            if isinstance(v, (int, float)) and v > 0:
                by_dir.setdefault(str(r.get("_run_dir", "")), []).append(float(v))
        vals = [v for vs in by_dir.values() for v in vs]
        if len(by_dir) >= 2:
            dirs = list(by_dir.values())
            aa_pairs.extend(
                (x, y)
                for i in range(len(dirs))
                for j in range(i + 1, len(dirs))
                for x in dirs[i]
                for y in dirs[j]
            )
        if len(vals) >= 2:
            groups.append(vals)
    f = stats.noise_floor_from_pairs(aa_pairs)
    sd = stats.sigma_from_pairs(aa_pairs)
    if f is not None and sd is not None:
        return Noise(f, "aa", len(aa_pairs), min_effect, *sd)
    f = stats.noise_floor_from_repeats(groups)
    sd = stats.sigma_from_groups(groups)
    if f is not None and sd is not None:
        return Noise(f, "repeats", len(groups), min_effect, *sd)
    return Noise(stats.DEFAULT_NOISE_FLOOR, "default", 0, min_effect)


# ---- verdicts (decided in specsweep.analysis.verdicts) -------------------------------------------
class VerdictList(list[PairVerdict]):
    """Verdicts with a lookup by (scenario, concurrency, pair), built on first use (never mutated after)."""

    _index: dict[tuple[str, int, str, str], PairVerdict] | None = None

    def lookup(self, s: str, c: int, x: str, y: str) -> PairVerdict | None:
        if self._index is None or len(self._index) != len(self):
            self._index = {(v.scenario, v.concurrency, v.a, v.b): v for v in self}
        return self._index.get((s, c, x, y)) or self._index.get((s, c, y, x))

    def without(self, skip: set[tuple[str, int]]) -> VerdictList:
        return VerdictList(v for v in self if (v.scenario, v.concurrency) not in skip)


def find_verdict(vs: list[PairVerdict], s: str, c: int, x: str, y: str) -> PairVerdict | None:
    if isinstance(vs, VerdictList):
        return vs.lookup(s, c, x, y)
    for v in vs:
        if v.scenario == s and v.concurrency == c and {v.a, v.b} == {x, y}:
            return v
    return None


def oriented(v: PairVerdict, first: str) -> tuple[float, float, float, str]:
    """(effect, ci_low, ci_high, verdict) with ``first`` as a."""
    if v.a == first:
        return v.effect, v.ci_low, v.ci_high, v.verdict
    inv = {"a": "b", "b": "a", "tie": "tie"}[v.verdict]
    return 1 / (1 + v.effect) - 1, 1 / (1 + v.ci_high) - 1, 1 / (1 + v.ci_low) - 1, inv


@dataclass(frozen=True)
class Winner:
    scenario: str
    concurrency: int
    values: dict[str, float | None]
    leader: str | None
    runner_up: str | None
    winner: str | None
    gain: float | None
    verdict: PairVerdict | None
    missing: list[str]


def winners(t: Table, vs: list[PairVerdict], metric: str = PRIMARY) -> list[Winner]:
    m = METRICS[metric]
    out = []
    for s, c in t.points:
        vals = {lab: t.value(lab, s, c, metric) for lab in t.labels()}
        present = [(lab, v) for lab, v in vals.items() if v is not None and v > 0]
        missing = [lab for lab, v in vals.items() if v is None]
        present.sort(key=lambda x: x[1], reverse=m.higher_is_better)
        if len(present) < 2:
            out.append(
                Winner(s, c, vals, present[0][0] if present else None, None, None, None, None, missing)
            )
            continue
        (l1, v1), (l2, v2) = present[0], present[1]
        v = find_verdict(vs, s, c, l1, l2)
        gain = v1 / v2 - 1 if m.higher_is_better else v2 / v1 - 1
        win = v.winner if v is not None else None
        out.append(Winner(s, c, vals, l1, l2, win, gain, v, missing))
    return out
