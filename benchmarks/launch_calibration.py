"""Issue 35's calibration: how often `specsweep report` names a false winner, how much it finds, and
whether its recommendation's gain interval covers, when each server launch (and each session) has
its own level, the host steps or drifts, and results are imported apart.

Every grid is a Dataset of summary rows, as `specsweep run` (native) or `specsweep import`
(imported) leaves them, with the ids the report reads (label, scenario, max_concurrency, repeat,
round, seq, run dir, run order), and goes through the functions `specsweep report` calls:
``analysis.core.build_sweep`` and ``measure_noise``, ``analysis.verdicts.report_verdicts`` (the
noise model with launches, sessions, drift and steps; the pair tests; Benjamini-Hochberg; the
verdict rule) and ``analysis.recommend.decide_group`` (the recommendation's gain interval). So this
measures the product, not a copy of it.

A grid: 18 cells x 2 configs, each run ``true * exp(noise)`` with a run noise of 2% (sd of the log).

- *native*: one run dir in interleaved rounds (``run_order.kind: interleaved``), each round one
  launch per config (the order alternating), each launch running every cell; ``repeats`` rounds.
  *native, blocked*: one launch per config, its cells with their repeats back to back, A then B.
- *imported*: one file per config (A's, then B's), each its own run dir: its own session, one
  launch, no common clock, rows in file order (every cell, then the next repeat).

Shapes: plain noise (the control); each launch its own level (sd 1%, 3%); the host 5% slower from
half the run order on (imported: for the second file); the same step at a random point (20-80% of
the run order); one launch per config (blocked) with launch sd 3%; a 2% linear drift over the run
order. Columns: the share of all-equal (A/A) grids naming any winner (target: at most 5% + 2 SE);
the share of cells decided for the better config at true gaps of 5, 10, 15 and 25% (every cell);
the share of recommendations whose gain interval (95%) covers the true gain (over every grid of the
row; target 95% +- 2 SE). Imported files of two configs are never linked by a config measured in
both sessions: there the target is that no winner is named below the between-session allowance
(``unanchored``: the share of A/A winners whose gap is below 1.96 x the allowance is given) and that
every verdict says why.

    python3 benchmarks/launch_calibration.py --grids 200 --power-grids 25 --procs 2 --write docs/statistics.md
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # a sibling helper, also when loaded by path
from doc_section import emit
from specsweep.analysis.core import PRIMARY, build_sweep, measure_noise
from specsweep.analysis.data import CellData, ConfigMeta, Dataset
from specsweep.analysis.recommend import decide_group
from specsweep.analysis.verdicts import report_verdicts
from specsweep.store import launch_noise
from specsweep.store.run_dir import RunDir

LEVEL = 0.05
RUN_NOISE = 0.02
CELLS = [(s, c) for s in ("chat_short", "rag_medium", "decode_heavy") for c in (1, 2, 4, 8, 16, 32)]
GAPS = (0.05, 0.10, 0.15, 0.25)
REPEATS = (1, 3, 5)
LABELS = (("DSpark(st=3)", 3), ("DSpark(st=5)", 5))  # a (the better one at a gap) and b
BEGIN, END = "<!-- launch-calibration:begin -->", "<!-- launch-calibration:end -->"


@dataclass(frozen=True)
class Shape:
    """How a grid's runs are drawn: ``launch_sd`` (log sd of each launch's level), a host step of
    ``step`` (log, the host slower) from ``step_at`` of the run order (-1: at a random point in
    20-80%), a linear ``drift`` (log, over the run order), the path and the native order."""

    name: str
    path: str = "native"  # native | imported
    launch_sd: float = 0.0
    step: float = 0.0
    step_at: float = 0.5
    drift: float = 0.0
    blocked: bool = False
    calibrated: int = 0  # launches of a stored calibration (calibrate-noise) of the true launch sd


def shapes() -> list[Shape]:
    step = math.log(1.05)
    out = []
    for path in ("native", "imported"):
        half = "host 5% slower for the second file" if path == "imported" else "host 5% slower from half way"
        out += [
            Shape("plain noise (control)", path),
            Shape("each launch its own level, sd 1%", path, launch_sd=0.01),
            Shape("each launch its own level, sd 3%", path, launch_sd=0.03),
            Shape(half, path, step=step),
            Shape("the same step at a random point (20-80%)", path, step=step, step_at=-1.0),
            Shape("2% linear drift", path, drift=0.02),
        ]
    blocked = "one launch per config (blocked), launch sd 3%"
    out.insert(6, Shape(blocked, "native", launch_sd=0.03, blocked=True))
    out.insert(
        7,
        Shape(f"{blocked}, calibrated (10 launches)", "native", launch_sd=0.03, blocked=True, calibrated=10),
    )
    # the launch noise below the assumed floor (2%), calibrated: what makes the uncalibrated rows' gain
    # intervals wider than 95% is the assumption, not the model
    out.insert(8, Shape("plain noise (control), calibrated (10 launches)", "native", calibrated=10))
    out.insert(9, Shape("each launch its own level, sd 1%, calibrated (10 launches)", "native", launch_sd=0.01,
                        calibrated=10))  # fmt: skip
    out.append(
        Shape(
            f"{half}, launch sd 3%, calibrated (10 launches)",
            "imported",
            launch_sd=0.03,
            step=step,
            calibrated=10,
        )
    )
    return out


class _Dir(RunDir):
    """A run dir that lives only in memory (the report reads its path and manifest)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)


def runs_of(rng: np.random.Generator, sh: Shape, repeats: int, gap: float) -> list[dict[str, Any]]:
    """The grid's summary rows in run order, each with its run dir (``_run_dir``) and file line."""
    order: list[tuple[str, int, str, tuple[str, int]]] = []
    if sh.path == "imported":
        for k, (label, _spec) in enumerate(LABELS):
            order += [(label, r, f"bench/import-{k}", cell) for r in range(repeats) for cell in CELLS]
    elif sh.blocked:
        for label, _spec in LABELS:
            order += [(label, r, "bench/native", cell) for cell in CELLS for r in range(repeats)]
    else:
        for r in range(repeats):
            pair = LABELS if r % 2 == 0 else LABELS[::-1]
            order += [(label, r, "bench/native", cell) for label, _s in pair for cell in CELLS]
    n = len(order)
    at = sh.step_at if sh.step_at >= 0 else rng.uniform(0.2, 0.8)
    levels: dict[tuple[str, int | str], float] = {}
    rows: list[dict[str, Any]] = []
    lines: dict[str, int] = {}
    spec_of = dict(LABELS)
    for i, (label, r, d, (s, c)) in enumerate(order):
        launch: tuple[str, int | str] = (label, r) if sh.path == "native" and not sh.blocked else (label, d)
        if launch not in levels:
            levels[launch] = rng.normal(0.0, sh.launch_sd) if sh.launch_sd > 0 else 0.0
        y = 7.0 + math.log(c) + levels[launch] + rng.normal(0.0, RUN_NOISE)
        y += math.log1p(gap) if label == LABELS[0][0] else 0.0
        y -= sh.step if i >= at * n else 0.0
        y += sh.drift * i / max(n - 1, 1)
        thr = math.exp(y)
        lines[d] = lines.get(d, 0) + 1
        row: dict[str, Any] = {"label": label, "method": "dspark", "params": {"spec_tokens": spec_of[label]},
                               "server": label, "scenario": s, "max_concurrency": c, "repeat": r, "status": "ok",
                               "completed": 100, "total_throughput": thr, "cell_id": f"{label}/{s}/c{c}",
                               "_run_dir": d, "_line": lines[d]}  # fmt: skip
        if sh.path == "native":
            row.update(seq=i, round=r)
        rows.append(row)
    return rows


def dataset(rows: list[dict[str, Any]], sh: Shape) -> Dataset:
    """The rows as `report.data.load` would hold them (ok rows per cell, one manifest per run dir)."""
    dirs = list(dict.fromkeys(str(r["_run_dir"]) for r in rows))
    kind = "blocked" if sh.blocked else "interleaved"
    mans = [{"source": "import"} if sh.path == "imported" else {"run_order": {"kind": kind}} for _d in dirs]
    configs = {label: ConfigMeta(label, "dspark", {"spec_tokens": spec}, label, order=i)
               for i, (label, spec) in enumerate(LABELS)}  # fmt: skip
    cells: dict[tuple[str, str, int], CellData] = {}
    for r in rows:
        key = (r["label"], r["scenario"], r["max_concurrency"])
        cd = cells.setdefault(key, CellData(*key))
        cd.ok.append(r)
        if r["_run_dir"] not in cd.run_dirs:
            cd.run_dirs.append(r["_run_dir"])
    for label in configs:
        configs[label].run_dirs = sorted({r["_run_dir"] for r in rows if r["label"] == label})
    return Dataset([_Dir(d) for d in dirs], mans, configs, cells)


@dataclass(frozen=True)
class Outcome:
    """One grid through the report: winners named, cells decided for a, the recommendation's interval
    covering the truth, and (A/A) winners whose gap lies below 1.96 x the between-session allowance."""

    winners: int
    right: int
    cells: int
    covered: bool
    below_allowance: int
    unanchored: int


def one_grid(sh: Shape, repeats: int, gap: float, seed: int) -> Outcome:
    rng = np.random.default_rng(seed)
    ds = dataset(runs_of(rng, sh, repeats, gap), sh)
    t = build_sweep(ds, "dspark")
    if sh.calibrated:  # K launches: the true sd measured with K - 1 df, stored as the CLI stores it
        df = sh.calibrated - 1
        sd = sh.launch_sd * math.sqrt(rng.chisquare(df) / df)
        with tempfile.TemporaryDirectory() as tmp:
            os.environ[launch_noise.ENV] = str(Path(tmp) / launch_noise.FILE)
            try:
                launch_noise.store(tmp, launch_noise.key_of(None, None), {"sd": sd, "df": df})
                vs = report_verdicts(t, measure_noise(ds), PRIMARY)[PRIMARY]
            finally:
                os.environ.pop(launch_noise.ENV, None)
    else:
        vs = report_verdicts(t, measure_noise(ds), PRIMARY)[PRIMARY]
    a = LABELS[0][0]
    won = [v for v in vs if v.winner]
    below = sum(1 for v in won if v.se_session > 0 and abs(math.log1p(v.effect)) < 1.96 * v.se_session)
    d = decide_group(t, vs, t.points, None, ("all", 1, None))
    covered = False
    if d is not None:
        best = d.config or (d.alternatives[0] if d.alternatives else a)
        true = gap if best == a else 1.0 / (1.0 + gap) - 1.0
        assert d.ci_low is not None and d.ci_high is not None
        covered = d.ci_low - 1e-12 <= true <= d.ci_high + 1e-12
    return Outcome(len(won), sum(1 for v in won if v.winner == a), len(vs), covered, below,
                   sum(1 for v in vs if v.unanchored))  # fmt: skip


def _job(args: tuple[Shape, int, float, int]) -> Outcome:
    return one_grid(*args)


@dataclass(frozen=True)
class Row:
    shape: Shape
    repeats: int
    aa_grids: int
    any_winner: float
    power: dict[float, float]
    power_grids: int
    cover: float
    cover_n: int
    below: int  # A/A winners below the between-session allowance
    unanchored: float  # share of verdicts that say the sessions cannot be told apart


def jobs(sh: Shape, repeats: int, aa: int, pw: int, seed: int) -> Iterator[tuple[Shape, int, float, int]]:
    base = seed * 1_000_003 + zlib.crc32(f"{sh.path}|{sh.name}|{repeats}".encode()) % 100_000 * 1000
    for k in range(aa):
        yield sh, repeats, 0.0, base + k
    for j, gap in enumerate(GAPS):
        for k in range(pw):
            yield sh, repeats, gap, base + 100_000 * (j + 1) + k


def summarise(sh: Shape, repeats: int, aa: int, pw: int, outs: list[Outcome]) -> Row:
    null = outs[:aa]
    power = {}
    for j, gap in enumerate(GAPS):
        o = outs[aa + j * pw : aa + (j + 1) * pw]
        power[gap] = sum(x.right for x in o) / max(sum(x.cells for x in o), 1)
    return Row(sh, repeats, aa, sum(x.winners > 0 for x in null) / max(aa, 1), power, pw,
               sum(x.covered for x in outs) / len(outs), len(outs), sum(x.below_allowance for x in null),
               sum(x.unanchored for x in null) / max(sum(x.cells for x in null), 1))  # fmt: skip


def grids_for(repeats: int, grids: int) -> int:
    """A/A grids of a row: ``grids`` at 3 and 5 repeats (the issue's targets), a quarter at 1."""
    return grids if repeats >= 3 else max(1, grids // 4)


def run(grids: int, power_grids: int, seed: int, procs: int,
        which: list[Shape] | None = None, repeats: tuple[int, ...] = REPEATS) -> list[Row]:  # fmt: skip
    os.environ.pop(launch_noise.ENV, None)  # never a stored calibration of this machine
    plan = [(sh, r, grids_for(r, grids), power_grids) for sh in which or shapes() for r in repeats]
    work = [j for sh, r, aa, pw in plan for j in jobs(sh, r, aa, pw, seed)]
    if procs > 1:
        with ProcessPoolExecutor(procs) as ex:
            outs = list(ex.map(_job, work, chunksize=8))
    else:
        outs = [_job(j) for j in work]
    rows, i = [], 0
    for sh, r, aa, pw in plan:
        k = aa + len(GAPS) * pw
        rows.append(summarise(sh, r, aa, pw, outs[i : i + k]))
        i += k
    return rows


def se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / max(n, 1))


def pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def level_met(r: Row) -> str:
    if r.shape.path == "imported" and r.unanchored > 0:
        return "yes (unanchored)" if r.below == 0 else f"**no** ({r.below} below the allowance)"
    return "yes" if r.any_winner <= LEVEL + 2 * se(LEVEL, r.aa_grids) else "**no**"


def cover_met(r: Row) -> str:
    """Within 95% +- 2 SE; above it the intervals are wider than they need be (conservative, shown as
    such); below it they claim more than they hold."""
    tol = 2 * se(0.95, r.cover_n)
    return "yes" if abs(r.cover - 0.95) <= tol else ("over (wider)" if r.cover > 0.95 else "**no** (under)")


def markdown(rows: list[Row], command: str) -> str:
    pw = rows[0].power_grids if rows else 0
    out = [
        f"Generated by `{command}` ({len(rows)} rows). Each grid: {len(CELLS)} cells x 2 configs, run noise "
        f"{pct(RUN_NOISE)}, through `build_sweep`, `measure_noise`, `report_verdicts` and `decide_group` (the "
        f"functions `specsweep report` calls). A/A grids per row in the grids column; power from {pw} grids a "
        "gap (every cell of them); the gain interval over every grid of the row. Level target: at most 5% + 2 SE "
        "of A/A grids name a winner; imported files of two configs (two sessions nothing links) instead: no "
        "A/A winner whose gap is below 1.96 x the between-session allowance, and every verdict marked "
        "unanchored. Gain interval target: 95% +- 2 SE.",
        "",
        "| path | shape | repeats | A/A grids naming a winner | grids | power 5% / 10% / 15% / 25% | "
        "gain interval covers | level met | coverage met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p = " / ".join(pct(r.power[g]) for g in GAPS)
        aa = f"{pct(r.any_winner)} +- {pct(se(r.any_winner, r.aa_grids))}"
        if r.shape.path == "imported" and r.unanchored > 0:
            aa += f" (unanchored {pct(r.unanchored)} of verdicts)"
        out.append(f"| {r.shape.path} | {r.shape.name} | {r.repeats} | {aa} | {r.aa_grids} | {p} | "
                   f"{pct(r.cover)} | {level_met(r)} | {cover_met(r)} |")  # fmt: skip
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument(
        "--grids", type=int, default=200, help="A/A grids per row at 3 and 5 repeats (1: a quarter)"
    )
    p.add_argument("--power-grids", type=int, default=25, help="grids per true gap and row")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--procs", type=int, default=2, help="worker processes (the shared machine: at most 2)")
    p.add_argument("--write", metavar="FILE", help="replace the generated section of this Markdown file")
    p.add_argument(
        "--only", metavar="TEXT", help="only the shapes whose 'path | name' holds TEXT (iterating)"
    )
    p.add_argument(
        "--repeats", type=int, nargs="+", choices=REPEATS, default=list(REPEATS), help="repeats rows"
    )
    a = p.parse_args(argv)
    if a.grids < 1 or a.power_grids < 1 or a.procs < 1:
        p.error(f"--grids, --power-grids and --procs must be >= 1, got {a.grids}, {a.power_grids}, {a.procs}")
    which = [sh for sh in shapes() if a.only is None or a.only in f"{sh.path} | {sh.name}"]
    if not which:
        p.error(
            f"--only {a.only!r} matches no shape; shapes: "
            + "; ".join(f"{s.path} | {s.name}" for s in shapes())
        )
    rows = run(a.grids, a.power_grids, a.seed, a.procs, which, tuple(a.repeats))
    cmd = (f"python3 benchmarks/launch_calibration.py --grids {a.grids} --power-grids {a.power_grids} "
           f"--seed {a.seed}")  # fmt: skip
    if a.only is not None or tuple(a.repeats) != REPEATS:
        cmd += "".join(
            [f" --only '{a.only}'" if a.only else "", " --repeats " + " ".join(map(str, a.repeats))]
        )
    emit(markdown(rows, cmd), a.write, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
