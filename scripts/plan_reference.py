"""The worked examples of docs/planning.md: import the reference data (seed-results.csv, through
specsweep.sim.reference) and plan on it.

    python3 scripts/plan_reference.py WORK_DIR [--validate] [--day]

- always: examples/traffic-reference.yaml on 32 GPUs -> WORK_DIR/plan.md, WORK_DIR/plan.json;
- ``--validate``: examples/traffic-small.yaml on 16 GPUs replayed on sim servers (``--time-scale 1``,
  the default number of requests per option) -> WORK_DIR/replay.json;
- ``--day``: the reference mix under the daily concurrency profile DAY below (peak 256 at 10:00-17:00)
  on 32 GPUs -> WORK_DIR/day.json, WORK_DIR/day.md.

Prints the Markdown tables the doc quotes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from specsweep.cli import main as cli
from specsweep.plan.render import to_markdown
from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

REPO = Path(__file__).resolve().parents[1]
SLO = "ttft_p99_ms=10000,tpot_p99_ms=60"
# requests in flight by hour (each holds until the next listed hour)
DAY = {0: 32, 7: 96, 10: 256, 17: 160, 21: 64}


def _fmt(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def options_table(view: dict) -> str:
    rows = ["| option | GPUs (needed by the cell model) | tok/s | goodput | p99 TTFT ms | p99 TPOT ms | meets SLO | "
            "vs single [interval] | how sure | source |", "|---|---:|---:|---:|---:|---:|---|---|---|---|"]  # fmt: skip
    for o in view["options"]:
        lo, hi = o["gain_interval"]
        name = f"**{o['name']}**" if o["name"] == view["recommended"] else o["name"]
        rows.append(f"| {name} | {o['gpus']} ({o['gpus_needed'] or '-'}) | {_fmt(o['total_throughput'])} | "
                    f"{_fmt(o['goodput'])} | {_fmt(o['p99_ttft_ms'])} | {o['p99_tpot_ms']:.1f} | "
                    f"{'yes' if o['meets_slo'] else 'no'} | {100 * o['gain_vs_single']:+.1f}% "
                    f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%] | {o['confidence']} | {o['source']} |")  # fmt: skip
    return "\n".join(rows)


def replay_table(view: dict) -> str:
    rows = ["| option | predicted tok/s | replayed | predicted p99 TTFT ms | replayed | predicted p99 TPOT ms | "
            "replayed | stated uncertainty (tok/s, TTFT, TPOT) | within |",
            "|---|---:|---:|---:|---:|---:|---:|---|---|"]  # fmt: skip
    for o in view["options"]:
        r = o["replayed"]
        if "skipped" in r:
            continue
        tol = " / ".join(
            f"{100 * r['tolerance'][k]:.0f}%" for k in ("total_throughput", "p99_ttft_ms", "p99_tpot_ms")
        )
        within = "/".join("yes" if r["within_each"].get(k) else "**no**"
                          for k in ("total_throughput", "p99_ttft_ms", "p99_tpot_ms"))  # fmt: skip
        name = f"**{o['name']}**" if o["name"] == view["recommended"] else o["name"]
        rows.append(f"| {name} | {_fmt(o['total_throughput'])} | {_fmt(r['total_throughput'])} | "
                    f"{_fmt(o['p99_ttft_ms'])} | {_fmt(r['p99_ttft_ms'])} | {o['p99_tpot_ms']:.1f} | "
                    f"{r['p99_tpot_ms']:.1f} | {tol} | {within} |")  # fmt: skip
    return "\n".join(rows)


def day_table(view: dict) -> str:
    rows = ["| option | GPUs at peak | GPU-hours, peak fleet all day | GPU-hours, scaled per hour | GPUs by hour (0-23) |",
            "|---|---:|---:|---:|---|"]  # fmt: skip
    for o in view["options"]:
        d = o["day"]
        rows.append(f"| {o['name']} | {o['gpus']} | {d['gpu_hours_fixed']:,} | {d['gpu_hours_scaled']:,} | "
                    f"{' '.join(str(g) for g in d['gpus_by_hour'])} |")  # fmt: skip
    return "\n".join(rows)


def _plan(args: list[str], out: Path, table: Callable[[dict[str, Any]], str], markdown: bool = True) -> int:
    """``specsweep plan ARGS`` as JSON into ``out`` (and, with ``markdown``, its report beside it);
    prints ``table`` of it. The command's exit status."""
    rc = cli(["plan", *args, "--format", "json", "-o", str(out)])
    if rc:
        return rc
    if markdown:
        _markdown(out, out.with_suffix(".md"))
    print(table(json.loads(out.read_text())), "\n" if markdown else "")
    return 0


def _markdown(src: Path, dst: Path) -> None:
    """The Markdown plan of a JSON plan (what ``--format md`` prints, without planning twice)."""
    dst.write_text(to_markdown(json.loads(src.read_text())), encoding="utf-8")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    work = Path(argv[0])
    flags = set(argv[1:])
    unknown = flags - {"--validate", "--day"}
    if unknown:
        print(f"unknown option(s) {sorted(unknown)}; accepted: --validate, --day", file=sys.stderr)
        return 2
    csv = find_reference_csv()
    if csv is None:
        print("reference data (seed-results.csv) not found", file=sys.stderr)
        return 2
    results = write_results_dir(reference_rows(csv), work / "results")
    common = [str(results), "--traffic", str(REPO / "examples" / "traffic-reference.yaml"), "--gpus", "32",
              "--slo", SLO]  # fmt: skip
    rc = _plan(common, work / "plan.json", options_table)
    if rc:
        return rc
    if "--day" in flags:
        ref = yaml.safe_load((REPO / "examples" / "traffic-reference.yaml").read_text())
        ref["load"] = {"concurrency_by_hour": DAY}
        (work / "traffic-day.yaml").write_text(yaml.safe_dump(ref))
        day = [str(results), "--traffic", str(work / "traffic-day.yaml"), "--gpus", "32", "--slo", SLO]
        rc = _plan(day, work / "day.json", day_table)
        if rc:
            return rc
    if "--validate" in flags:
        small = [str(results), "--traffic", str(REPO / "examples" / "traffic-small.yaml"), "--gpus", "16",
                 "--validate", "--time-scale", "1"]  # fmt: skip
        rc = _plan(small, work / "replay.json", replay_table, markdown=False)
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
