"""`specsweep calibrate-noise EXPERIMENT.yaml`: measure an engine's launch noise on this host, once."""

from __future__ import annotations

import argparse
import sys

from specsweep.analysis.calibrate import DEFAULT_CELLS, DEFAULT_LAUNCHES


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser(
        "calibrate-noise",
        help="measure the launch noise of an engine on this host (one config, k launches) and store it",
        description="Run one config of the experiment in K launches (interleaved rounds, a few of its cells "
        "in each) into a run dir of its own, fit the launch-to-launch noise with the verdicts' model "
        "(statsmodels MixedLM: cells fixed, the launch a random intercept) and store it in launch-noise.json "
        "in the results dir (or $SPECSWEEP_LAUNCH_NOISE), keyed by engine@host. Later reports of that engine "
        "and host use it where their own launches cannot measure it; so does the adaptive design. "
        "See docs/statistics.md, 'Launches and sessions'.",
    )
    p.add_argument("experiment", nargs="?", help="experiment file (YAML)")
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="finish an interrupted calibration, then fit and store it"
    )
    p.add_argument("--config", metavar="LABEL", help="the config to launch (default: the experiment's first)")
    p.add_argument("--launches", type=int, default=DEFAULT_LAUNCHES,
                   help=f"server launches (default {DEFAULT_LAUNCHES}; df = launches - 1)")  # fmt: skip
    p.add_argument("--cells", type=int, default=DEFAULT_CELLS,
                   help=f"the config's first N cells, run in every launch (default {DEFAULT_CELLS})")  # fmt: skip
    p.add_argument("--results-dir", help="where the run dir and the calibration go (default: the file's results_dir, else ./results)")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="plain log lines instead of the live display")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from specsweep import orchestrate
    from specsweep.analysis import calibrate
    from specsweep.commands.run import execute_run
    from specsweep.errors import UsageError
    from specsweep.experiment.loader import load_experiment
    from specsweep.servers import reap
    from specsweep.store.paths import output_dir
    from specsweep.store.run_dir import RunDir

    if bool(args.experiment) == bool(args.resume):
        raise UsageError("give an experiment file, or --resume RUN_DIR (one of them)")
    with orchestrate.sigterm_as_interrupt():
        if args.resume:
            run_dir = RunDir.open(args.resume)
            reap.reap_run_dir(run_dir.path)
            plan = orchestrate.load_run_plan(run_dir)
        else:
            _, full = load_experiment(args.experiment)
            plan = calibrate.calibration_plan(full, args.config, args.launches, args.cells)
            orchestrate.refuse_unrunnable(plan, "local", file=args.experiment)
            results = output_dir(
                args.results_dir or plan.experiment.results_dir or "results", "--results-dir"
            )
            reap.reap_results_dir(results)
            run_dir = orchestrate.create_run_dir(plan, results, args.experiment)
        print(f"run dir: {run_dir.path}", file=sys.stderr)
        run = argparse.Namespace(quiet=args.quiet, executor="local", ray_address=None)
        code = execute_run(run, plan, run_dir)
        if code not in (0, 1):
            return code
    cal = calibrate.measure(run_dir.path)
    print(f"launch noise of {cal.key} ({cal.metric}, config {cal.config}): "
          f"launch sd {cal.launch_sd:.2%} per launch, run sd {cal.run_sd:.2%} within a launch, "
          f"{cal.df:.0f} df ({cal.launches} launches x {cal.cells} cell(s))")  # fmt: skip
    if cal.path is None:
        print("specsweep: error: the launch noise's model did not converge; nothing was stored "
              f"(run more launches: specsweep calibrate-noise ... --launches {cal.launches + 2})",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"stored in {cal.path} under {cal.key}")
    return code
