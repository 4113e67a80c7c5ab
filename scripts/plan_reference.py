"""The worked example of docs/planning.md: import the reference data (seed-results.csv, through
specsweep.sim.reference) and plan examples/traffic-reference.yaml on 32 GPUs.

    python3 scripts/plan_reference.py WORK_DIR [--validate]

writes WORK_DIR/plan.md and WORK_DIR/plan.json (the figures the doc quotes).
"""

from __future__ import annotations

import sys
from pathlib import Path

from specsweep.cli import main as cli
from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    work = Path(argv[0])
    csv = find_reference_csv()
    if csv is None:
        print("reference data (seed-results.csv) not found", file=sys.stderr)
        return 2
    results = write_results_dir(reference_rows(csv), work / "results")
    common = [str(results), "--traffic", str(REPO / "examples" / "traffic-reference.yaml"), "--gpus", "32",
              "--slo", "ttft_p99_ms=10000,tpot_p99_ms=60", *argv[1:]]  # fmt: skip
    rc = cli(["plan", *common, "--format", "json", "-o", str(work / "plan.json")])
    return rc or cli(["plan", *common, "--format", "md", "-o", str(work / "plan.md")])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
