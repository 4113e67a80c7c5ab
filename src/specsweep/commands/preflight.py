"""`specsweep preflight EXPERIMENT.yaml`: check engines and host before a run (exit 1 if a check fails)."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check engines, GPUs and the host before a run")
    p.add_argument("experiment", help="experiment YAML")
    p.add_argument("--format", default="table", choices=["table", "json", "md"])
    p.add_argument("--results", action="append", default=[],
                   help="run dir(s) of this experiment: probe their first requests for warmup/JIT stalls")  # fmt: skip
    p.add_argument("--no-versions", action="store_true", help="skip running each engine's version command")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from specsweep.console.terminal import plain
    from specsweep.experiment.loader import load_experiment
    from specsweep.preflight import run_checks
    from specsweep.preflight.model import fold
    from specsweep.store import redact

    _exp, plan = load_experiment(args.experiment)
    checks = fold(run_checks(plan, versions=not args.no_versions, results=args.results))
    out: list[str] = []  # every known secret scrubbed (redact), control characters shown escaped
    if args.format == "json":
        out.append(json.dumps(redact.scrub_obj({"checks": [c.to_dict() for c in checks]}), indent=2))
    else:
        md = args.format == "md"
        if md:
            out += ["| check | config | status | message | fix |", "|---|---|---|---|---|"]
        for c in checks:
            if md:
                cells = [c.check, c.config or "-", c.status, c.message, c.fix]
                out.append(
                    "| " + " | ".join(plain(x).replace("\n", " ").replace("|", "\\|") for x in cells) + " |"
                )
            else:
                out.append(plain(f"[{c.status.upper():4}] {c.check:15} {c.config or '-'}: {c.message}"))
                if c.fix and c.status != "pass":
                    out.append(plain(f"       fix: {c.fix}"))
    sys.stdout.write("".join(line + "\n" for line in out))
    return 1 if any(c.status == "fail" for c in checks) else 0
