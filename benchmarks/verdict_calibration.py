"""How often the verdict rule names a false winner (A/A), how often it finds a real difference (A/B),
and whether its intervals cover, under log-normal noise and under the noise real hosts have.

Every simulated grid goes through the functions `specsweep report` uses: the noise model
(specsweep.stats.noise.fit: each config's own pooled noise, drift in run order), the pair test
(specsweep.stats.compare.compare), Benjamini-Hochberg (specsweep.stats.basic.adjust) and the
recommendation's gain interval (specsweep.stats.planning.gain_interval). A grid is 18 cells x 2 configs,
runs ``true * exp(noise)``; "noise" is one run's run-to-run sd of the log value (its coefficient of
variation). A/A: the configs are equal, every winner is false. +15%: config a is 15% better in
every cell (throughput x1.15, latency /1.15).

Two tables:

- **bases** (log-normal noise): repeats n_a x n_b; single runs with per-request records on the
  assumed 10% noise; single runs on aggregates, assumed; single runs whose configs each have 6 A/A
  pairs elsewhere in the grid (their noise measured). Rates per cell at level 5% (what one cell's
  verdict promises), for a higher-is-better metric (thr) and a lower-is-better one (lat).
- **shapes** (issue 29): drift across the run order (blocked and interleaved orders), unequal noise
  between the configs, one run in ten 30% off, Student-t(3) tails, noise that differs between cells,
  grids where half the cells differ, and the rejected alternative for tails (a robust MAD scale).
  Per cell: false winners (level 5%), 95% intervals covering the truth; per grid (BH over the 18
  cells, as a report's primary family): A/A grids naming any winner, +15% cells found; the gain
  interval of a recommendation (mean over the cells) covering the true mean.

    python3 benchmarks/verdict_calibration.py --cells 2000 --grids 500 --write docs/statistics.md

prints the Markdown tables and, with --write, replaces the generated section of that file.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # a sibling helper, also when loaded by path
from doc_section import emit
from specsweep.analysis.requests import log_se_of_mean
from specsweep.stats import basic as stats
from specsweep.stats.compare import PairTest, compare
from specsweep.stats.noise import fit
from specsweep.stats.planning import gain_interval

LEVEL = stats.DEFAULT_LEVEL
ASSUMED = stats.DEFAULT_RUN_NOISE
EFFECT = 0.15
SIZE = 18  # cells per grid
NOISES = (0.01, 0.03, 0.05, 0.10)
BEYOND = (0.15, 0.20)  # real noise above the assumed one: not covered, and shown as such
REPEATS = ((2, 2), (3, 3), (5, 5), (10, 10), (2, 5), (3, 10), (2, 10))
AA_CELLS = 6  # cells with an A/A pair per config, for single runs with measured noise
BEGIN, END = "<!-- verdict-calibration:begin -->", "<!-- verdict-calibration:end -->"


@dataclass(frozen=True)
class Shape:
    """How runs are drawn: noise sd per config, the noise's law, drift, run order, per-cell factors."""

    noise_a: float
    noise_b: float
    law: str = "normal"  # normal | t3 | outliers
    drift: float = 0.0  # log drift over the whole run order (linear)
    order: str = "interleaved"  # interleaved | blocked
    cell_spread: float = 0.0  # per-cell noise factor exp(U(-s, s)) (noise that differs between cells)
    records: bool = False  # single runs that kept per-request records (their own sampling error)
    aa_cells: int = 0  # extra cells with 2 runs per config (A/A pairs measuring each config's noise)
    robust: bool = False  # the rejected alternative: a MAD scale in place of the measured spread


@dataclass(frozen=True)
class Cells:
    """One simulated grid's compared cells: the tests and their truths (log effects)."""

    tests: list[PairTest]
    truth: np.ndarray


def _noise(rng: np.random.Generator, sd: np.ndarray, law: str) -> np.ndarray:
    if law == "t3":
        return sd * rng.standard_t(3, sd.size) / math.sqrt(3.0)
    e = sd * rng.normal(0.0, 1.0, sd.size)
    if law == "outliers":
        hit = rng.random(sd.size) < 0.1
        e = e + np.where(hit, np.where(rng.random(sd.size) < 0.5, 1.0, -1.0) * math.log(1.3), 0.0)
    return e


def _order(n_a: int, n_b: int, cells: int, order: str) -> list[tuple[str, int, int]]:
    """(config, cell, round) in run order: interleaved rounds (A then B, then B then A, ...) or
    blocked (A's cells with their repeats back to back, then B's)."""
    out = []
    if order == "blocked":
        for c, n in (("a", n_a), ("b", n_b)):
            out += [(c, x, r) for x in range(cells) for r in range(n)]
        return out
    for r in range(max(n_a, n_b)):
        for c, n in (("a", n_a), ("b", n_b)) if r % 2 == 0 else (("b", n_b), ("a", n_a)):
            out += [(c, x, r) for x in range(cells) if r < n]
    return out


def grid(
    rng: np.random.Generator,
    shape: Shape,
    n_a: int,
    n_b: int,
    effects: np.ndarray,
    hib: bool = True,
) -> Cells:
    """One grid of len(effects) compared cells (+ shape.aa_cells A/A cells), through the report's rule."""
    size = effects.size
    cells = size + shape.aa_cells
    runs = _order(n_a, n_b, size, shape.order)
    runs += [(c, size + x, r) for r in range(2) for c in "ab" for x in range(shape.aa_cells)]
    cfg = np.array([c for c, _x, _r in runs])
    cell = np.array([x for _c, x, _r in runs])
    rnd = np.array([r for _c, _x, r in runs])
    pos = np.arange(len(runs), dtype=float)
    spread = (
        np.exp(rng.uniform(-shape.cell_spread, shape.cell_spread, cells))
        if shape.cell_spread
        else np.ones(cells)
    )
    sd = np.where(cfg == "a", shape.noise_a, shape.noise_b) * spread[cell]
    true = np.where(cfg == "a", np.concatenate([effects, np.zeros(shape.aa_cells)])[cell], 0.0) + 7.0
    logv = true + _noise(rng, sd, shape.law) + shape.drift * pos / max(len(runs) - 1, 1)
    values = np.exp(logv if hib else -logv)  # a latency metric: lower is better
    y = np.log(values) if hib else -np.log(values)
    model = fit(list(cfg), list(cell), y, pos=pos, domain=["run"] * y.size, rounds=rnd,
                block_domains=frozenset({"run"}) if shape.order == "interleaved" else frozenset())  # fmt: skip
    if shape.robust:
        model = _robust(model)
    tests = []
    for x in range(size):
        within = None
        if shape.records:  # 200 requests with a per-request CV of 50%: the run's own sampling error
            within = tuple(
                log_se_of_mean(rng.lognormal(0.0, math.sqrt(math.log(1.25)), 200)) or 0.0 for _ in "ab"
            )
        t = compare(model, ("a", x), ("b", x), within=within)  # type: ignore[arg-type]
        assert t is not None
        tests.append(t)
    return Cells(tests, effects)


def _robust(model):  # type: ignore[no-untyped-def]
    """The rejected alternative for tails: each config's noise as 1.4826 MAD of its residuals, with
    the df of a MAD (about 37% of the count), no empirical reference for single runs."""
    out = {}
    for c, n in model.configs.items():
        if n.measured and n.residuals.size:
            s = 1.4826 * float(np.median(np.abs(n.residuals)))
            out[c] = replace(
                n,
                sigma=max(s, 1e-9),
                df_eff=max(0.37 * n.df, 1.0),
                residuals=np.zeros(0),
                pair_diffs=np.zeros(0),
                heterogeneous=False,
            )
        else:
            out[c] = n
    return replace(model, configs=out)


@dataclass(frozen=True)
class Rates:
    """A row's measures (rates are shares; se: their sampling errors)."""

    cells: int
    grids: int
    false_cell: float  # A/A: per-cell level 5%
    false_lat: float  # A/A, lower-is-better metric
    any_grid: float  # A/A grids with any winner after BH
    power: float  # +15% cells decided for a (per cell, level 5%)
    power_lat: float
    power_bh: float  # +15% cells found after BH over the grid
    wrong: float  # +15% decided for b
    cover: float  # 95% per-cell intervals covering the truth (A/A and +15%)
    gain_cover: float  # the gain interval covering the true mean over the grid
    detectable: float  # median smallest decidable difference (A/A cells)
    se_false: float = 0.0  # sampling error of false_cell over grids (cells of a grid share a noise estimate)
    se_cover: float = 0.0  # likewise for cover


def _decided(t: PairTest, level: float) -> int:
    """+1 decided for a, -1 for b, 0 a tie, at ``level``."""
    if t.p_value > level:
        return 0
    return 1 if t.log_effect > 0 else -1


def measure(rng: np.random.Generator, shape: Shape, n_a: int, n_b: int, cells: int, *, latency: bool = True,
            mixed: bool = False, detect: bool = True) -> Rates:  # fmt: skip
    """``cells`` A/A cells and as many +15% ones (grids of SIZE). ``mixed``: the +15% grids have half
    their cells equal (power counted on the others, false winners on the equal ones)."""
    grids = max(1, math.ceil(cells / SIZE))
    false = false_lat = any_g = cover = gain_cov = 0
    hits = hits_lat = hits_bh = wrong = real = 0
    nulls_mixed = false_mixed = 0
    det: list[float] = []
    n_cov = n_gain = 0
    per_grid: list[float] = []
    cover_grid: list[float] = []
    for g in range(grids):
        aa = grid(rng, shape, n_a, n_b, np.zeros(SIZE))
        d = [_decided(t, LEVEL) for t in aa.tests]
        false += sum(x != 0 for x in d)
        per_grid.append(sum(x != 0 for x in d) / SIZE)
        p = [t.p_value for t in aa.tests]
        any_g += bool(np.any(stats.adjust(p, "bh") <= LEVEL))
        covered = sum(t.p_at(t.log_effect) > LEVEL for t in aa.tests)
        cover += covered
        n_cov += SIZE
        if detect and g < 20:
            det += [math.expm1(min(t.half_width(LEVEL), 30.0)) for t in aa.tests]
        if latency:
            lat = grid(rng, shape, n_a, n_b, np.zeros(SIZE), hib=False)
            false_lat += sum(_decided(t, LEVEL) != 0 for t in lat.tests)
        eff = np.full(SIZE, math.log1p(EFFECT))
        if mixed:  # each cell +15% or equal at random: the gain interval's target is the band's mean
            eff = np.where(rng.random(SIZE) < 0.5, math.log1p(EFFECT), 0.0)
        ab = grid(rng, shape, n_a, n_b, eff)
        rej = stats.adjust([t.p_value for t in ab.tests], "bh") <= LEVEL
        for t, e, r in zip(ab.tests, eff, rej, strict=True):
            dd = _decided(t, LEVEL)
            hit = t.p_at(t.log_effect - e) > LEVEL
            cover += hit
            covered += hit
            n_cov += 1
            if e > 0:
                real += 1
                hits += dd > 0
                wrong += dd < 0
                hits_bh += bool(r and t.log_effect > 0)
            else:
                nulls_mixed += 1
                false_mixed += dd != 0
        cover_grid.append(covered / (2 * SIZE))
        if latency:
            lab = grid(rng, shape, n_a, n_b, eff, hib=False)
            hits_lat += sum(_decided(t, LEVEL) > 0 for t, e in zip(lab.tests, eff, strict=True) if e > 0)
        for cs, mean in ((aa, 0.0), (ab, math.log1p(EFFECT) / 2 if mixed else math.log1p(EFFECT))):
            _g, lo, hi = gain_interval([t.log_effect for t in cs.tests], [t.se for t in cs.tests],
                                       [t.df for t in cs.tests], [math.sqrt(t.shared_var) for t in cs.tests])  # fmt: skip
            true = math.expm1(mean)
            gain_cov += lo <= true <= hi
            n_gain += 1
    n = grids * SIZE
    fc = (false + false_mixed) / (n + nulls_mixed)
    return Rates(n, grids, fc, false_lat / n if latency else fc, any_g / grids, hits / max(real, 1),
                 hits_lat / max(real, 1) if latency else hits / max(real, 1), hits_bh / max(real, 1),
                 wrong / max(real, 1), cover / n_cov, gain_cov / n_gain, float(np.median(det)) if det else 0.0,
                 float(np.std(per_grid, ddof=1) / math.sqrt(grids)) if grids > 1 else 1.0,
                 float(np.std(cover_grid, ddof=1) / math.sqrt(grids)) if grids > 1 else 1.0)  # fmt: skip


def sampling_error(rate: float, n: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / max(n, 1))


# ---- the tables ------------------------------------------------------------------------------------
Basis = tuple[str, int, int, Callable[[float], Shape]]


def bases() -> list[Basis]:
    out: list[Basis] = [("repeats (Welch t, each config's pooled noise)", na, nb, lambda s: Shape(s, s))
                        for na, nb in REPEATS]  # fmt: skip
    out += [
        (f"single run, per-request records, assumed {ASSUMED:.0%} noise", 1, 1, lambda s: Shape(s, s, records=True)),
        (f"single run, aggregates, assumed {ASSUMED:.0%} noise", 1, 1, lambda s: Shape(s, s)),
        (f"single run, aggregates, each config's noise from {AA_CELLS} A/A pairs", 1, 1,
         lambda s: Shape(s, s, aa_cells=AA_CELLS)),
    ]  # fmt: skip
    return out


@dataclass(frozen=True)
class ShapeRow:
    name: str
    runs: str
    n_a: int
    n_b: int
    shape: Shape
    mixed: bool = False
    held: bool = True  # expected to hold its level (False: shown as the limit the docs state)


def shapes() -> list[ShapeRow]:
    aa, many = AA_CELLS, 20
    out = [
        ShapeRow("log-normal 3%", "3 x 3", 3, 3, Shape(0.03, 0.03)),
        ShapeRow(
            "mixed grid: each cell +15% or equal (1/2), 3%", "3 x 3", 3, 3, Shape(0.03, 0.03), mixed=True
        ),
        ShapeRow(
            "drift 5% over the run order, 2% noise, interleaved", "5 x 5", 5, 5, Shape(0.02, 0.02, drift=0.05)
        ),
        ShapeRow("drift 5%, 2% noise, interleaved", "3 x 3", 3, 3, Shape(0.02, 0.02, drift=0.05)),
        ShapeRow(
            "drift 5%, 2% noise, blocked (repeats back to back)",
            "5 x 5",
            5,
            5,
            Shape(0.02, 0.02, drift=0.05, order="blocked"),
            held=False,
        ),
        ShapeRow(
            "drift 5%, 2% noise, blocked (repeats back to back)",
            "3 x 3",
            3,
            3,
            Shape(0.02, 0.02, drift=0.05, order="blocked"),
            held=False,
        ),
        ShapeRow("unequal noise 2% vs 8%", "3 x 3", 3, 3, Shape(0.02, 0.08)),
        ShapeRow("unequal noise 2% vs 8%", "2 x 5", 2, 5, Shape(0.02, 0.08)),
        ShapeRow(
            f"unequal noise 2% vs 8%, single runs, {aa} A/A pairs per config",
            "1 x 1",
            1,
            1,
            Shape(0.02, 0.08, aa_cells=aa),
        ),
        ShapeRow("1 run in 10 x1.3, 2%", "3 x 3", 3, 3, Shape(0.02, 0.02, law="outliers")),
        ShapeRow("1 run in 10 x1.3, 5%", "3 x 3", 3, 3, Shape(0.05, 0.05, law="outliers")),
        ShapeRow("Student-t(3), 2%", "3 x 3", 3, 3, Shape(0.02, 0.02, law="t3")),
        ShapeRow("Student-t(3), 5%", "3 x 3", 3, 3, Shape(0.05, 0.05, law="t3")),
        ShapeRow("Student-t(3), 10%", "3 x 3", 3, 3, Shape(0.10, 0.10, law="t3")),
    ]
    for law, name in (("outliers", "1 run in 10 x1.3"), ("t3", "Student-t(3)")):
        for s in (0.02, 0.05):
            for pairs in (aa, many):
                out.append(ShapeRow(f"{name}, {s:.0%}, single runs, {pairs} A/A pairs per config", "1 x 1", 1, 1,
                                    Shape(s, s, law=law, aa_cells=pairs), held=False))  # fmt: skip
    out += [
        ShapeRow("noise differing x0.7-x1.4 between cells, 3%", "3 x 3", 3, 3,
                 Shape(0.03, 0.03, cell_spread=math.log(1.4)), held=False),
        ShapeRow("noise differing x0.5-x2 between cells, 3%", "3 x 3", 3, 3,
                 Shape(0.03, 0.03, cell_spread=math.log(2)), held=False),
        ShapeRow("noise differing x0.5-x2 between cells, 3%", "5 x 5", 5, 5,
                 Shape(0.03, 0.03, cell_spread=math.log(2)), held=False),
        ShapeRow("rejected: a robust (MAD) scale, 1 run in 10 x1.3, 2%", "3 x 3", 3, 3,
                 Shape(0.02, 0.02, law="outliers", robust=True), held=False),
        ShapeRow(f"rejected: a robust (MAD) scale, 1 run in 10 x1.3, 2%, single runs, {many} A/A pairs", "1 x 1", 1, 1,
                 Shape(0.02, 0.02, law="outliers", aa_cells=many, robust=True), held=False),
    ]  # fmt: skip
    return out


def beyond(cells: int, seed: int = 0) -> list[tuple[float, float]]:
    """(real noise, A/A false-winner rate) of single runs on the assumed noise when the real noise is
    larger than assumed (BEYOND): the limit of an assumption, measured rather than claimed."""
    rng = np.random.default_rng(seed + 1)
    return [
        (s, measure(rng, Shape(s, s), 1, 1, cells, latency=False, detect=False).false_cell) for s in BEYOND
    ]


def reference_aa() -> tuple[list[str], float, float] | None:
    """The reference data's own A/A pairs: scenarios with the same definition (input and output
    lengths) measured for the same config at the same concurrency. Returns the pairs' differences
    (text), the run-to-run noise sd (log) they give and its degrees of freedom."""
    import csv

    from specsweep.sim.reference import REFERENCE_DIR
    from specsweep.workload.scenarios import BUILTIN

    with (REFERENCE_DIR / "seed-results.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    vals = {
        (r["scenario"], r["method"], r["spec_tokens"], r["concurrency"]): float(r["total_throughput"])
        for r in rows
    }
    same = [(x, y) for x in BUILTIN.values() for y in BUILTIN.values() if x.name < y.name
            and (x.input_len, x.output_len) == (y.input_len, y.output_len)]  # fmt: skip
    pairs, text = [], []
    for x, y in same:
        for (sc, m, st, c), v in sorted(vals.items()):
            w = vals.get((y.name, m, st, c))
            if sc == x.name and w is not None:
                pairs.append((v, w))
                text.append(f"{m}{'(st=' + st + ')' if st else ''} c={c}: {abs(v / w - 1):.1%}")
    sd = stats.sigma_from_pairs(pairs)
    return (text, *sd) if sd is not None else None


def pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def ok_level(rate: float, n: int, se: float | None = None) -> bool:
    """At most the level plus two sampling errors: ``se`` when given (per-cell rates: their spread over
    grids, whose cells share a noise estimate), else a binomial one at the level."""
    return rate <= LEVEL + 2 * max(se if se is not None else 0.0, sampling_error(LEVEL, n))


def ok_cover(rate: float, n: int, se: float | None = None) -> bool:
    return rate >= 0.95 - 2 * max(se if se is not None else 0.0, sampling_error(0.95, n))


def table_bases(rows: list[tuple[Basis, float, Rates]]) -> list[str]:
    out = [
        "| basis | runs a x b | noise | A/A false winners thr | A/A false winners lat | +15% decided (thr) | "
        "+15% decided (lat) | +15% wrong side | 95% intervals cover | detectable (median) | within level |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, na, nb, _f), s, r in rows:
        ok = "yes" if ok_level(max(r.false_cell, r.false_lat), r.cells, r.se_false) else "**no**"
        out.append(f"| {name} | {na} x {nb} | {pct(s)} | {pct(r.false_cell)} | {pct(r.false_lat)} | {pct(r.power)} | "
                   f"{pct(r.power_lat)} | {pct(r.wrong)} | {pct(r.cover)} | {pct(r.detectable)} | {ok} |")  # fmt: skip
    return out


def table_shapes(rows: list[tuple[ShapeRow, Rates]]) -> list[str]:
    out = [
        "| noise shape | runs a x b | false winners per cell | all-A/A grids naming a winner (BH) | "
        "+15% found per cell / after BH | 95% intervals cover | gain interval covers | targets met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sr, r in rows:
        met = (ok_level(r.false_cell, r.cells, r.se_false) and ok_level(r.any_grid, r.grids)
               and ok_cover(r.cover, 2 * r.cells, r.se_cover)
               and abs(r.gain_cover - 0.95) <= 2 * sampling_error(0.95, 2 * r.grids))  # fmt: skip
        mark = "yes" if met else ("**no**" if sr.held else "no (limit, see text)")
        out.append(f"| {sr.name} | {sr.runs} | {pct(r.false_cell)} | {pct(r.any_grid)} | {pct(r.power)} / "
                   f"{pct(r.power_bh)} | {pct(r.cover)} | {pct(r.gain_cover)} | {mark} |")  # fmt: skip
    return out


def markdown(
    base_rows: list[tuple[Basis, float, Rates]],
    shape_rows: list[tuple[ShapeRow, Rates]],
    command: str,
    over: list[tuple[float, float]] | None = None,
    aa: tuple[list[str], float, float] | None = None,
) -> str:
    cells = base_rows[0][2].cells if base_rows else (shape_rows[0][1].cells if shape_rows else 0)
    grids = shape_rows[0][1].grids if shape_rows else 0
    out = [
        f"Generated by `{command}`. Grids of {SIZE} cells x 2 configs go through the report's own functions. "
        f'Noise is one run\'s run-to-run sd (coefficient of variation); "thr" is a higher-is-better metric, '
        f'"lat" a lower-is-better one. Per-cell rates at level 5% over {cells} cells per row and direction '
        f"(sampling error near 5%: +-{pct(sampling_error(LEVEL, cells))}).",
        "",
        "**Bases** (log-normal noise):",
        "",
        *table_bases(base_rows),
        "",
        f"**Noise shapes** ({grids} grids per row, {grids * SIZE} A/A and as many +15% cells; grid rates' "
        f"sampling error near 5%: +-{pct(sampling_error(LEVEL, grids))}). Targets: false winners per cell and "
        "all-A/A grids naming a winner at most 5% + 2 SE; 95% intervals covering at least 95% - 2 SE; the gain "
        "interval covering 95% +- 2 SE.",
        "",
        *table_shapes(shape_rows),
    ]
    if over:
        worse = "; ".join(f"{pct(n)} real noise: {pct(r)}" for n, r in over)
        out += [
            "",
            f"Beyond the assumption (not covered): single runs on aggregates with the assumed {pct(ASSUMED)} "
            f"noise name false winners (throughput, per cell) at {worse}.",
        ]
    if aa:
        text, sd, df = aa
        out += [
            "",
            f"The reference data's own A/A pairs (chat_standard and stress_standard have the same definition): "
            f"{', '.join(text)} apart; run-to-run noise {pct(sd)} per run ({df:.0f} degrees of freedom).",
        ]
    return "\n".join(out)


def run_bases(cells: int, seed: int, noises: tuple[float, ...] = NOISES,
              which: list[Basis] | None = None) -> list[tuple[Basis, float, Rates]]:  # fmt: skip
    rng = np.random.default_rng(seed)
    return [(b, s, measure(rng, b[3](s), b[1], b[2], cells)) for b in which or bases() for s in noises]


def run_shapes(grids: int, seed: int, which: list[ShapeRow] | None = None) -> list[tuple[ShapeRow, Rates]]:
    rng = np.random.default_rng(seed + 2)
    return [(sr, measure(rng, sr.shape, sr.n_a, sr.n_b, grids * SIZE, latency=False, mixed=sr.mixed, detect=False))
            for sr in which or shapes()]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument(
        "--cells", type=int, default=2000, help="simulated cells per basis row and metric direction"
    )
    p.add_argument("--grids", type=int, default=500, help="simulated grids per noise-shape row")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--write", metavar="FILE", help="replace the generated section of this Markdown file")
    a = p.parse_args(argv)
    if a.cells < 10 or a.grids < 1:
        p.error(f"--cells must be >= 10 and --grids >= 1, got {a.cells} and {a.grids}")
    rows = run_bases(a.cells, a.seed)
    srows = run_shapes(a.grids, a.seed)
    cmd = f"python3 benchmarks/verdict_calibration.py --cells {a.cells} --grids {a.grids} --seed {a.seed}"
    md = markdown(rows, srows, cmd, beyond(a.cells, a.seed), reference_aa())
    emit(md, a.write, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
