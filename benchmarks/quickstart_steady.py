"""Does the quickstart measure the steady state? Its figures and verdicts against ``sim predict`` at the
reference reports' prompt counts (docs/metrics.md, "Steady state").

    python3 benchmarks/quickstart_steady.py --run            # run examples/quickstart.yaml, then check it
    python3 benchmarks/quickstart_steady.py RUN_DIR          # check a finished run of it

For every cell and config: ``sim predict`` of the config's profile at the reference's num_prompts for
that concurrency (``default_num_prompts``: 8-32 waves), mean over ``--seeds`` seeds, against the run's
figures (mean over its runs): the steady-window figures (``steady_*``) where every run of the cell was at
steady state, else the full-span ones, and then the cell must be one the report names as not steady.
Checks, each printed with what failed:

1. every verdict the run decided on total throughput agrees in sign with the predicted gap wherever that
   gap is at least 3%;
2. every figure (total tok/s, mean TTFT, TPOT, E2E) is within 25% of the prediction, or its cell is named
   as not at steady state;
3. the wall time of the run (``--run``).

Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from specsweep.analysis.data import load  # noqa: E402
from specsweep.measure import steady  # noqa: E402
from specsweep.report.build import build_view  # noqa: E402
from specsweep.sim.predict import predict_repeated  # noqa: E402
from specsweep.sim.profile import load_profile  # noqa: E402
from specsweep.workload.scenarios import default_num_prompts, get_scenario  # noqa: E402

FIGURES = (
    ("total_throughput", "steady_total_throughput", "tok/s"),
    ("mean_ttft_ms", "steady_mean_ttft_ms", "TTFT"),
    ("mean_tpot_ms", "steady_mean_tpot_ms", "TPOT"),
    ("mean_e2e_latency_ms", "steady_mean_e2e_latency_ms", "E2E"),
)
TOLERANCE = 0.25
MIN_GAP = 0.03


def run_quickstart(results: Path) -> tuple[Path, float]:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "specsweep", "run", str(ROOT / "examples/quickstart.yaml"),
           "--results-dir", str(results), "--quiet"]  # fmt: skip
    subprocess.run(cmd, check=True, cwd=ROOT)
    wall = time.monotonic() - t0
    runs = sorted(p for p in results.iterdir() if (p / "manifest.json").exists())
    return runs[-1], wall


def profiles_of(run_dir: Path) -> dict[str, str]:
    """Config label -> the sim profile its server ran (``--profile`` of its argv in the manifest)."""
    servers = json.loads((run_dir / "manifest.json").read_text())["servers"]
    out = {}
    for label, s in servers.items():
        argv = s.get("argv") or []
        if "--profile" not in argv:
            raise SystemExit(f"{label}: not a simulated server (no --profile in its argv)")
        out[label] = argv[argv.index("--profile") + 1]
    return out


def mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def check(run_dir: Path, seeds: int) -> tuple[list[str], list[str]]:
    """(the report's lines, the failures)."""
    ds = load([run_dir])
    lines = [
        f"run: {run_dir.name}; predictions: sim predict at the reference's num_prompts, {seeds} seeds",
        "",
    ]
    fails: list[str] = []
    pred: dict[tuple[str, str, int], dict[str, Any]] = {}
    profiles = profiles_of(run_dir)
    lines += ["| cell | config | runs | waves | at target | steady | "
              + " | ".join(f"{n} run / predicted" for _, _, n in FIGURES) + " |",
              "|" + "---|" * (6 + len(FIGURES))]  # fmt: skip
    for (label, scenario, c), cell in sorted(ds.cells.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        if not cell.ok:
            why = "; ".join(sorted({str(r.get("invalid_reason") or r.get("error")) for r in cell.bad}))
            fails.append(f"{scenario} c={c} {label}: no valid run ({why[:200]})")
            continue
        prof = profiles[label]
        p = predict_repeated(load_profile(prof), get_scenario(scenario), c, repeats=seeds)
        pred[(label, scenario, c)] = p
        states = [steady.is_steady(r.get("waves"), r.get("at_target_share")) for r in cell.ok]
        at_steady = all(s is True for s in states)
        cols = []
        for full, win, name in FIGURES:
            got = mean(cell.values(win if at_steady else full))
            want = float(p[full])
            if got is None:
                cols.append("-")
                fails.append(f"{scenario} c={c} {label}: no {name} figure")
                continue
            dev = got / want - 1
            ok = abs(dev) <= TOLERANCE or not at_steady
            cols.append(f"{got:,.1f} / {want:,.1f} ({dev:+.0%}){'' if ok else ' **FAIL**'}")
            if not ok:
                fails.append(
                    f"{scenario} c={c} {label}: {name} {got:.1f} vs predicted {want:.1f} ({dev:+.0%})"
                )
        lines.append(
            f"| {scenario} c={c} | {label} (`{prof}`) | {len(cell.ok)} | {mean(cell.values('waves')) or 0:.3g} | "
            f"{min(cell.values('at_target_share') or [0]):.0%} | {'yes' if at_steady else 'no (named)'} | "
            + " | ".join(cols)
            + " |"
        )
    lines += ["", f"reference prompt counts: {{c: num_prompts}} = "
              f"{ {c: default_num_prompts(c) for c in sorted({k[2] for k in pred})} }", "",
              "| cell | verdict (total tok/s) | run | predicted gap | agrees |", "|---|---|---|---|---|"]  # fmt: skip
    for kind in ("sweep", "compare"):  # inside a method (st=3 vs st=5), then between methods
        view = build_view([run_dir], kind)
        picked = {(c.config, c.scenario, c.concurrency): c.picked or c.config for c in view.cells}
        for v in view.verdicts:
            a = picked.get((v.a, v.scenario, v.concurrency), v.a)
            b = picked.get((v.b, v.scenario, v.concurrency), v.b)
            pa, pb = pred.get((a, v.scenario, v.concurrency)), pred.get((b, v.scenario, v.concurrency))
            if pa is None or pb is None:
                continue
            gap = pa["total_throughput"] / pb["total_throughput"] - 1  # a over b, as the verdict's effect
            decided = v.verdict != "tie"
            run_sign = (1 if v.verdict == "a" else -1) if decided else 0
            if not decided or abs(gap) < MIN_GAP:
                agrees = (
                    "n/a (" + ("undecided" if not decided else f"predicted gap under {MIN_GAP:.0%}") + ")"
                )
            elif run_sign == (1 if gap > 0 else -1):
                agrees = "yes"
            else:
                agrees = "**NO**"
                fails.append(f"{v.scenario} c={v.concurrency}: {a} vs {b} decided {v.effect:+.1%}, "
                             f"predicted {gap:+.1%}")  # fmt: skip
            lines.append(f"| {v.scenario} c={v.concurrency} | {a} vs {b} | "
                         f"{'tie' if not decided else (a if v.verdict == 'a' else b)} ({v.effect:+.1%}) | "
                         f"{gap:+.1%} | {agrees} |")  # fmt: skip
    return lines, fails


SIM_CELLS = (("chat_short", 16), ("chat_short", 64), ("rag_medium", 8), ("rag_medium", 32),
             ("stress_standard", 64), ("stress_standard", 96), ("stress_standard", 128))  # fmt: skip
SIM_PROFILES = ("v4flash-dspark-st3", "v4flash-dspark-st5", "v4flash-eagle")


def sim_table(waves_list: list[float], seeds: int) -> list[str]:
    """In virtual time (sim predict): at each number of waves, the full-span figures and the steady
    window's against the full span at the reference's num_prompts, per cell and profile."""
    from specsweep.sim.predict import predict_cell

    def at(prof: Any, sc: Any, c: int, n: int | None) -> dict[str, float]:
        rows = [predict_cell(prof, sc, c, num_prompts=n, seed=s) for s in range(seeds)]
        keys = [k for f in FIGURES for k in f[:2]] + ["at_target_share"]
        return {k: float(np.mean([np.nan if r[k] is None else r[k] for r in rows])) for k in keys}

    head = "| cell | profile | " + " | ".join(
        f"{w:g} wave(s): at target; tok/s, TTFT, TPOT: full span / window" for w in waves_list
    )
    out = [head + " |", "|" + "---|" * (2 + len(waves_list))]
    for scenario, c in SIM_CELLS:
        sc = get_scenario(scenario)
        for name in SIM_PROFILES:
            prof = load_profile(name)
            ref = at(prof, sc, c, None)
            cols = []
            for w in waves_list:
                f = at(prof, sc, c, round(w * c))

                def dev(key: str, base: str, f: dict[str, float] = f, ref: dict[str, float] = ref) -> str:
                    return f"{f[key] / ref[base] - 1:+.0%}" if f[key] == f[key] else "-"

                full = ", ".join(dev(k, k) for k, _, _ in FIGURES[:3])
                win = ", ".join(dev(wk, k) for k, wk, _ in FIGURES[:3])
                cols.append(f"{f['at_target_share']:.0%}; {full} / {win}")
            out.append(f"| {scenario} c={c} | {name} | " + " | ".join(cols) + " |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", nargs="?", help="a finished run dir of examples/quickstart.yaml")
    ap.add_argument("--run", action="store_true", help="run the quickstart first (in a temporary folder)")
    ap.add_argument("--seeds", type=int, default=3, help="sim predict seeds per cell (default 3)")
    ap.add_argument(
        "--sim-table", metavar="WAVES", help="instead: in virtual time, the figures at these waves (e.g. 1,3) "
        "against the reference's num_prompts, full span and steady window",
    )  # fmt: skip
    args = ap.parse_args()
    if args.sim_table:
        print("\n".join(sim_table([float(x) for x in args.sim_table.split(",")], args.seeds)))
        return 0
    if bool(args.run) == bool(args.run_dir):
        ap.error("give a RUN_DIR or --run")
    wall = None
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(args.run_dir) if args.run_dir else None
        if args.run:
            run_dir, wall = run_quickstart(Path(tmp))
        assert run_dir is not None
        lines, fails = check(run_dir, args.seeds)
    print("\n".join(lines))
    if wall is not None:
        print(
            f"\nwall time of `specsweep run examples/quickstart.yaml`: {wall / 60:.0f} min {wall % 60:02.0f} s"
        )
    print("\n" + ("all checks pass" if not fails else "FAILED:\n- " + "\n- ".join(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
