"""`specsweep plan`: compare deployments (single config, split by input length into 2-3 pools, load-adaptive) for a
traffic mix, from results (measured cells) and the simulator (the rest)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from specsweep.console import tracking
from specsweep.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="plan a deployment for a traffic mix from results (+ the simulator)")
    p.add_argument("results", nargs="+", help="run dirs or folders holding run dirs")
    p.add_argument("--traffic", required=True, help="TRAFFIC.yaml: mix (shares) and load")
    p.add_argument("--gpus", type=int, help="GPUs available (default: the fewest meeting the SLO)")
    p.add_argument("--slo", help="ttft_p99_ms=MS,tpot_p99_ms=MS")
    p.add_argument("--format", default="md", choices=["md", "html", "json"])
    p.add_argument("-o", "--output", help="write here instead of stdout")
    p.add_argument("--validate", action="store_true",
                   help="replay the mix against each planned fleet on simulated servers (localhost HTTP)")  # fmt: skip
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="replay: virtual seconds per wall second (above 1 only on a quiet host)")  # fmt: skip
    p.add_argument("--replay-requests", type=int,
                   help="replay: requests per option (default: as many as the prediction's runs, max(1500, 10 x in "
                        "flight); fewer widens the stated uncertainty by the computed short-run term)")  # fmt: skip
    p.add_argument("--router", default="litellm", choices=["litellm", "none"], help="router config to emit")
    p.set_defaults(func=_run)


# requests per option a replay sends: ~28 min at 60 requests/s; more was a numpy MemoryError traceback
MAX_REPLAY_REQUESTS = 100_000


def _run(args: argparse.Namespace) -> int:
    from specsweep.commands.progress import StageProgress
    from specsweep.plan.planner import make_plan, to_json
    from specsweep.plan.render import to_html, to_markdown
    from specsweep.plan.traffic import load_traffic, parse_slo
    from specsweep.store.paths import output_file, write_failed
    from specsweep.store.run_dir import atomic_write_bytes

    if args.gpus is not None and args.gpus < 1:
        raise UsageError(f"--gpus {args.gpus}; expected a positive integer")
    if args.replay_requests is not None and not 1 <= args.replay_requests <= MAX_REPLAY_REQUESTS:
        raise UsageError(
            f"--replay-requests {args.replay_requests:,}; expected a positive integer up to "
            f"{MAX_REPLAY_REQUESTS:,} (the replay sends them in real time to simulated servers, and keeps "
            "each request's timings)"
        )
    if not args.time_scale > 0:
        raise UsageError(f"--time-scale {args.time_scale}; expected a positive number")
    if args.output:  # before the planning (minutes with --validate): a bad path is one line, at once
        output_file(args.output, "-o")
    traffic = load_traffic(args.traffic)
    # a live display of the stages (with ETAs) on a terminal; nothing otherwise
    display = StageProgress() if sys.stderr.isatty() else None
    with display or contextlib.nullcontext(), tracking.listening(display):
        plan = make_plan(args.results, traffic, gpus=args.gpus, slo=parse_slo(args.slo))
        view = to_json(plan)
        if args.validate:
            from specsweep.plan.fleetsim import predict_requests
            from specsweep.plan.replay import validate_plan

            n_req = args.replay_requests or predict_requests(max(1, round(plan.in_flight)))
            validate_plan(plan, view, time_scale=args.time_scale, n_requests=n_req)
    if args.router != "none":
        from specsweep.plan.router import router_config

        view["router"] = router_config(plan.option(view["recommended"]), view)
    if args.format == "json":
        text = json.dumps(view, indent=2) + "\n"
    elif args.format == "html":
        text = to_html(view)
    else:
        text = to_markdown(view)
    if args.output:
        try:
            atomic_write_bytes(Path(args.output), text.encode("utf-8"))
        except OSError as e:
            raise write_failed(e, args.output, "the plan") from e
        sys.stderr.write(f"plan written to {args.output}\n")
    else:
        sys.stdout.write(text)
    return 0
