"""The adaptive design in real time: an example experiment run four ways, on the wall clock.

    design    specsweep run EXP --adaptive        the sequential design (the file's section or the defaults)
    race      the same with `race: true`          the second generation: racing on short first looks
    gen1      the same with `race: false`         the first generation (a first pass of full runs)
    single    specsweep run EXP --no-adaptive     one pass: every config and cell once
    repeats3  the same grid with repeats: 3       interleaved rounds; what docs/statistics.md recommended

For each way: the wall time of the whole command (launches, warmups and the report included), and
its conclusions: every pairwise verdict its report states (the compare report's methods, and each
method's configs against each other: `specsweep report --kind sweep --method M`), per cell; for the
design, its own decision on each pair of one method's configs (the report's "how each cell was
decided" section) stands for the sweep's (the racing design's too). The
conclusions of `design`, `race` and `single` are compared with those of `repeats3`, pair by pair:

    agree        the same winner, or both name none
    decided      this way names a winner where repeats3 names none (or the reverse: `missed`)
    contradict   opposite winners

    python3 benchmarks/adaptive_realtime.py examples/quickstart.yaml --write docs/statistics.md
    source ~/.cache/specsweep/engines.env
    python3 benchmarks/adaptive_realtime.py examples/llamacpp-cpu.yaml --taskset 0 --write docs/statistics.md

prints a Markdown table (--again: judge the run dirs an earlier measurement kept in --results-dir
again, without running anything); with --write, the experiment's rows replace its earlier ones in the section
between the markers (other experiments' rows stay). Runs go to --results-dir (default: a temporary
folder, removed). Each row names the host's condition when it ran (cores, load average).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BEGIN, END = "<!-- adaptive-realtime:begin -->", "<!-- adaptive-realtime:end -->"
WALLS = "wall_times.json"  # in --results-dir: each way's measured wall time (for --again)
WAYS = ("design", "race", "gen1", "single", "repeats3")
DEFAULT_WAYS = "design,race,single,repeats3"
CMD = [sys.executable, "-m", "specsweep"]


@dataclass
class Way:
    name: str
    run_dir: Path
    wall_s: float
    conclusions: dict[tuple[str, str, int, str, str], str]  # (kind, scenario, c, a, b) -> winner | "tie"
    runs: int
    spent_s: float | None = None  # the design's own account (report), for `design`
    unsteady: int = 0  # cells the report names as not at steady state (too few waves: docs/metrics.md)


def experiment_for(way: str, exp: Path, work: Path) -> tuple[Path, list[str]]:
    """The experiment file and flags of one way (race and repeats3: a copy of the file, changed)."""
    if way == "design":
        return exp, ["--adaptive"]
    if way == "single":
        return exp, ["--no-adaptive"]
    data = yaml.safe_load(exp.read_text(encoding="utf-8"))
    if way in ("race", "gen1"):  # the file's adaptive section (or the defaults), racing on or off
        data["adaptive"] = {**(data.get("adaptive") or {}), "race": way == "race"}
        flags = ["--adaptive"]
    else:
        data.pop("adaptive", None)
        data.update(repeats=3, run_order="interleaved")
        flags = []
    data["name"] = f"{data.get('name', exp.stem)}-{way}"
    out = work / f"{exp.stem}-{way}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out, flags


def run_way(way: str, exp: Path, work: Path, taskset: str | None) -> tuple[Path, float]:
    path, flags = experiment_for(way, exp, work)
    results = work / way
    argv = [*CMD, "run", str(path), "--results-dir", str(results), "--quiet", *flags]
    if taskset:
        argv = ["taskset", "-c", taskset, *argv]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):  # 1: some cell failed (data); anything else: the way failed
        raise SystemExit(f"{way}: exit {p.returncode}\n{p.stderr[-3000:]}")
    (run_dir,) = [d for d in results.iterdir() if d.is_dir()]
    return run_dir, wall


def conclusions(run_dir: Path) -> tuple[dict[tuple[str, str, int, str, str], str], Any]:
    """Every pairwise verdict on the primary metric the run's reports state; the compare view."""
    from specsweep.analysis.data import load
    from specsweep.report import build_view

    ds = load([run_dir])
    by_method: dict[str, list[str]] = {}
    for m in ds.configs.values():
        by_method.setdefault(m.method, []).append(m.label)
    views = []
    if len(by_method) > 1:
        views.append(("compare", build_view([run_dir], "compare")))
    for method, labels in by_method.items():
        if len(labels) > 1:
            views.append((f"sweep:{method}", build_view([run_dir], "sweep", method=method)))
    out: dict[tuple[str, str, int, str, str], str] = {}
    for kind, view in views:
        for v in view.verdicts:
            a, b = sorted((v.a, v.b))
            out[(kind, v.scenario, v.concurrency, a, b)] = v.winner or "tie"
    first = views[0][1] if views else None
    if first is not None and first.design is not None:  # a design run: its own decisions within a method
        method_of = {m.label: m.method for m in ds.configs.values()}
        for cell in first.design.cells:
            for p in cell.pairs:
                if method_of.get(p.a) == method_of.get(p.b):
                    a, b = sorted((p.a, p.b))
                    key = (f"sweep:{method_of.get(p.a)}", cell.scenario, cell.concurrency, a, b)
                    out[key] = p.winner if p.status == "decided" and p.winner else "tie"
    return out, first


def agreement(mine: dict[Any, str], base: dict[Any, str]) -> dict[str, int]:
    counts = {"agree": 0, "decided": 0, "missed": 0, "contradict": 0, "winners": 0}
    for key, b in base.items():
        m = mine.get(key)
        if m is None:
            continue
        counts["winners"] += m != "tie"
        if m == b:
            counts["agree"] += 1
        elif b == "tie":
            counts["decided"] += 1
        elif m == "tie":
            counts["missed"] += 1
        else:
            counts["contradict"] += 1
    return counts


def fmt_s(s: float) -> str:
    m, sec = divmod(round(s), 60)
    return f"{m}m{sec:02d}s"


def rows(exp: Path, ways: dict[str, Way], taskset: str | None, loads: list[float]) -> list[str]:
    base = ways["repeats3"]
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "?"
    cond = f"{os.cpu_count()} cores, load {load}" + (f", client on CPU {taskset}" if taskset else "")
    out = []
    for name in (n for n in WAYS if n in ways):
        w = ways[name]
        share = w.wall_s / base.wall_s
        if name == "repeats3":
            agree = "(the reference)"
        else:
            a = agreement(w.conclusions, base.conclusions)
            agree = (f"{a['agree']} of {len(base.conclusions)} agree, {a['decided']} decided where repeats: 3 "
                     f"is not, {a['missed']} missed, {a['contradict']} contradict")  # fmt: skip
        winners = sum(1 for x in w.conclusions.values() if x != "tie")
        spent = f" (its own account: {fmt_s(w.spent_s)})" if w.spent_s is not None else ""
        out.append(f"| `{exp.as_posix()}` | {name} | {w.runs} | {fmt_s(w.wall_s)}{spent} | {share:.0%} | "
                   f"{winners} of {len(w.conclusions)} | {agree} | {w.unsteady} | {cond} |")  # fmt: skip
    return out


HEAD = [
    "| experiment | way | runs | wall time | of repeats: 3 | pairs with a winner | conclusions against repeats: 3 "
    "| cells not at steady state | host |",
    "|---|---|---:|---:|---:|---:|---|---:|---|",
]


def write(path: Path, exp: Path, new_rows: list[str], command: str) -> None:
    text = path.read_text(encoding="utf-8")
    old: list[str] = []
    if BEGIN in text and END in text:
        block = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
        old = [ln for ln in block.splitlines() if ln.startswith("| `") and f"`{exp.as_posix()}`" not in ln]
        cmds = [ln for ln in block.splitlines() if ln.startswith("- `python3 ") and exp.as_posix() not in ln]
    else:
        cmds = []
    body = "\n".join([*HEAD, *old, *new_rows, "", "Measured with:", "", *cmds, f"- `{command}`"])
    section = f"{BEGIN}\n{body}\n{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", type=Path)
    ap.add_argument(
        "--taskset", help="run specsweep pinned to these CPUs (taskset -c), e.g. 0 for llamacpp-cpu"
    )
    ap.add_argument("--results-dir", type=Path, help="keep the run dirs here (default: a temporary folder)")
    ap.add_argument(
        "--write", type=Path, help="replace this experiment's rows between the markers of this file"
    )
    ap.add_argument(
        "--ways",
        default=DEFAULT_WAYS,
        help=f"comma-separated, of {', '.join(WAYS)} (repeats3 always runs: the reference)",
    )
    ap.add_argument("--again", action="store_true",
                    help="no new runs: judge the run dirs (and wall times) an earlier run left in --results-dir")  # fmt: skip
    args = ap.parse_args(list(argv) if argv is not None else None)
    chosen = {w.strip() for w in args.ways.split(",") if w.strip()} | {"repeats3"}
    if chosen - set(WAYS):
        ap.error(f"--ways: unknown {', '.join(sorted(chosen - set(WAYS)))}; accepted: {', '.join(WAYS)}")
    todo = [w for w in WAYS if w in chosen]
    if args.again and args.results_dir is None:
        ap.error("--again needs --results-dir: the folder an earlier measurement kept")
    work = args.results_dir or Path(tempfile.mkdtemp(prefix="adaptive-realtime-"))
    work.mkdir(parents=True, exist_ok=True)
    ways: dict[str, Way] = {}
    try:
        walls = json.loads((work / WALLS).read_text()) if args.again else {"load": []}
        for name in todo:
            if args.again:  # an earlier measurement's run dirs and wall times, judged again
                (run_dir,) = [d for d in (work / name).iterdir() if d.is_dir()]
                wall = float(walls[name])
            else:
                run_dir, wall = run_way(name, args.experiment, work, args.taskset)
                walls[name] = wall
                walls["load"].append(os.getloadavg()[0])  # the host's load while it ran (1-min average)
                (work / WALLS).write_text(json.dumps(walls))
            concl, view = conclusions(run_dir)
            n = sum(1 for ln in (run_dir / "summary.jsonl").read_text().splitlines() if ln.strip())
            spent = view.design.spent_s if view is not None and view.design is not None else None
            unsteady = sum(1 for x in view.notes if x.key == "steady.not_steady") if view is not None else 0
            ways[name] = Way(name, run_dir, wall, concl, n, spent, unsteady)
            print(f"{name}: {fmt_s(wall)}, {n} runs, {run_dir}", file=sys.stderr)
    finally:
        if args.results_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    new = rows(args.experiment, ways, args.taskset, walls["load"])
    print("\n".join([*HEAD, *new]))
    if args.write:
        cmd = f"python3 benchmarks/adaptive_realtime.py {args.experiment.as_posix()}"
        cmd += f" --taskset {args.taskset}" if args.taskset else ""
        cmd += f" --ways {args.ways}" if args.ways != DEFAULT_WAYS else ""
        write(args.write, args.experiment, new, cmd + f" --write {args.write.as_posix()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
