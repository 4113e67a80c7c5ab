"""`specsweep run EXPERIMENT.yaml` / `specsweep run --resume RUN_DIR`: an experiment grid."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from specsweep.commands.progress import LiveObserver, QuietObserver, assumptions, estimate_plan
from specsweep.console.terminal import ScrubFilter, plain
from specsweep.errors import UsageError, broken_install
from specsweep.store import redact
from specsweep.store.paths import output_dir

__all__ = ["LiveObserver", "QuietObserver", "execute_run", "print_plan", "register"]

if TYPE_CHECKING:
    from specsweep.experiment.config import Plan
    from specsweep.store.run_dir import RunDir

log = logging.getLogger("specsweep.run")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run an experiment grid (servers x scenarios x concurrency) into a run dir",
        description="Launch each server configuration once, run its cells, store every finished cell "
        "at once. Ctrl-C stops cleanly (exit 130); --resume finishes an interrupted run.",
    )
    p.add_argument("experiment", nargs="?", help="experiment file (YAML); see docs/experiments.md")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run (redoes nothing finished)")
    p.add_argument(
        "--results-dir", help="where run dirs go (default: the file's results_dir, else ./results)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan (configs, argv, cells, duration)")
    p.add_argument("--quiet", action="store_true", help="plain log lines instead of the live display")
    p.add_argument(
        "--executor", default="local", choices=["local", "ray"], help="where configs run (default local)"
    )
    p.add_argument("--ray-address", help="--executor ray: cluster address (default RAY_ADDRESS, else local)")
    p.add_argument(
        "--adaptive",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the adaptive design (repeat only what is still undecided; the file's 'adaptive:' "
        "section or its defaults; docs/statistics.md); --no-adaptive: a file's design off, one pass",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from specsweep import orchestrate

    if bool(args.experiment) == bool(args.resume):
        raise UsageError("give an experiment file, or --resume RUN_DIR (one of them)")
    if args.resume and args.adaptive is not None:
        flag = "--adaptive" if args.adaptive else "--no-adaptive"
        raise UsageError(f"{flag} applies to a new run; --resume continues the run as it was started")
    redact.register_environ()  # OPENAI_API_KEY (the client's bearer token), HF_TOKEN, ...
    for h in logging.getLogger().handlers:  # no secret reaches the terminal through a log line
        if not any(isinstance(f, ScrubFilter) for f in h.filters):
            h.addFilter(ScrubFilter())
    with orchestrate.sigterm_as_interrupt():  # a Ctrl-C (exit 130) until the command returns
        found = _run_dir_and_plan(args)
        if found is None:  # --dry-run: printed
            return 0
        run_dir, plan = found
        print(f"run dir: {run_dir.path}", file=sys.stderr)
        return execute_run(args, plan, run_dir)


def _run_dir_and_plan(args: argparse.Namespace) -> tuple[RunDir, Plan] | None:
    """The run dir to fill and its plan, once what killed runs left running is stopped (None after
    printing a --dry-run)."""
    from specsweep import orchestrate
    from specsweep.design.loop import with_calibrated_launch_sd
    from specsweep.experiment.loader import load_experiment, with_design
    from specsweep.servers import reap
    from specsweep.store.run_dir import RunDir

    if args.resume:
        run_dir = RunDir.open(args.resume)
        run_dir.check_files()  # a FIFO planted as a log would block the resume forever
        if not args.dry_run:  # what a killed run left running (workers, stubborn servers)
            reap.reap_run_dir(run_dir.path)
            reap.reap_results_dir(run_dir.path.parent)
        plan = orchestrate.load_run_plan(run_dir)
        if args.dry_run:
            from specsweep.experiment.stored import finished_cells

            print_plan(plan, finished=finished_cells(plan, run_dir.finished()), rows=run_dir.iter_summary(0),
                       manifest=run_dir.manifest)  # fmt: skip
            return None
    else:
        _, plan = load_experiment(args.experiment)
        if args.adaptive is not None:
            plan = with_design(plan, args.adaptive, args.experiment)
        if args.dry_run:
            print_plan(plan)
            return None
        orchestrate.refuse_unrunnable(plan, args.executor, file=args.experiment)  # no run dir made
        results = output_dir(args.results_dir or plan.experiment.results_dir or "results", "--results-dir")
        reap.reap_results_dir(results)
        plan = with_calibrated_launch_sd(plan, results)
        run_dir = orchestrate.create_run_dir(plan, results, args.experiment)
    return run_dir, plan


def execute_run(args: argparse.Namespace, plan: Plan, run_dir: RunDir) -> int:
    from specsweep import orchestrate

    observer = QuietObserver() if args.quiet or not sys.stderr.isatty() else LiveObserver()
    try:
        opts = {"address": args.ray_address} if args.executor == "ray" else None
        try:
            outcome = orchestrate.execute(
                plan, run_dir, observer=observer, executor=args.executor, executor_options=opts
            )
        finally:
            observer.close()  # before any message: the live display owns the terminal until then
    except orchestrate.ReportsInterrupted:
        orchestrate.stopping()
        print(
            f"interrupted while writing the reports: every cell is stored, no report was left; write them "
            f"with: specsweep run --resume {run_dir.path} (or specsweep report {run_dir.path} -o FILE)",
            file=sys.stderr,
        )
        return 130
    except KeyboardInterrupt:
        orchestrate.stopping()  # the servers are stopped: a further Ctrl-C must not change exit 130
        print(
            f"interrupted: finished cells are kept; continue with: specsweep run --resume {run_dir.path}",
            file=sys.stderr,
        )
        return 130
    except ModuleNotFoundError as e:  # a broken install met mid-grid (the design's looks need scipy)
        why = broken_install(e)
        if why is None:
            raise
        print(
            f"specsweep: error: {why}\n"
            f"finished cells are kept; once it is installed, continue with: specsweep run --resume {run_dir.path}",
            file=sys.stderr,
        )
        return 2
    except OSError as e:  # disk full, results dir gone: cells stored before it stay valid
        print(
            f"specsweep: error: cannot write the run dir: {e}\n"
            f"finished cells are kept; fix that, then continue with: specsweep run --resume {run_dir.path}",
            file=sys.stderr,
        )
        return 1
    c = outcome.counts
    print(
        f"done: {c.get('ok', 0)} ok, {c.get('invalid', 0)} invalid, {c.get('failed', 0)} failed -> {run_dir.path}",
        file=sys.stderr,
    )
    for path in outcome.reports:
        print(f"report: {path}", file=sys.stderr)
    if outcome.report_errors:  # measured, but no report to read: never a success (errors.py)
        from specsweep.errors import EXIT_REPORT_FAILED

        for why in outcome.report_errors:
            print(f"specsweep: error: report not written: {why}", file=sys.stderr)
        print(
            f"every cell is stored; once that is fixed, write the reports with: specsweep report {run_dir.path}",
            file=sys.stderr,
        )
        return EXIT_REPORT_FAILED
    return 1 if c.get("failed") else 0


# ---- dry run -----------------------------------------------------------------------------------
def _dur(s: float) -> str:
    n = round(s)
    h, rem = divmod(n, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


def print_plan(
    plan: Plan,
    finished: set[tuple[str, int]] | None = None,
    rows: Iterable[dict[str, Any]] = (),
    manifest: dict[str, Any] | None = None,
) -> None:
    from specsweep import orchestrate

    exp = plan.experiment
    finished = finished or set()
    cells = plan.all_cells()
    out = sys.stdout
    print(plain(f"experiment: {exp.name}"), file=out)
    if exp.description:
        print(plain(f"  {redact.as_written(exp.description)}"), file=out)
    if exp.adaptive is None:
        order = f", {exp.run_order} run order" if exp.repeats > 1 else ""
        print(
            f"{len(plan.configs)} configuration(s), {len(cells)} cell(s) x {exp.repeats} repeat(s) = "
            f"{len(cells) * exp.repeats} benchmark run(s){order}",
            file=out,
        )
    else:
        print(f"{len(plan.configs)} configuration(s), {len(cells)} cell(s), adaptive design", file=out)
    for d in orchestrate.describe_plan(plan):
        cfg = d["config"]
        params = redact.redact_tree(dict(cfg.params))
        print(plain(f"\n[{cfg.label}] kind={cfg.spec.kind} method={cfg.method} params={params}"), file=out)
        if d["argv"] is None:
            print(f"  url: {plain(redact.redact_url(cfg.spec.url or ''))}", file=out)
        else:
            print(f"  argv: {plain(shlex.join(redact.redact_argv(d['argv'])))}", file=out)
            if cfg.spec.env:
                print(f"  env: {plain(redact.redact_env(dict(cfg.spec.env)))}", file=out)
        for c in d["cells"]:
            done = sum((c.cell_id, r) in finished for r in range(exp.repeats))
            mark = f"  [{done}/{exp.repeats} done]" if finished and exp.adaptive is None else ""
            print(
                plain(
                    f"  - {c.cell_id}: {c.scenario} concurrency={c.max_concurrency} num_prompts={c.num_prompts}"
                )
                + mark,
                file=out,
            )
    if exp.adaptive is not None:
        print_design(plan, out)
        if manifest is not None:
            print_design_state(list(rows), manifest, out)
    else:
        est = estimate_plan(plan, finished, rows)
        skip = f"; {est.skipped} finished run(s) skipped" if est.skipped else ""
        learned = (
            f", scaled x{est.scale:.2f} by the finished cells' measured time" if est.scale != 1.0 else ""
        )
        print(
            f"\nestimated duration: about {_dur(est.total_s)} for {est.todo} run(s){skip}{learned}", file=out
        )
    print("  assumes:", file=out)
    for a in assumptions(plan):
        print(plain(f"  - {a}"), file=out)
    for w in orchestrate.preflight(plan):
        print(plain(f"warning: {w}"), file=out)


def print_design(plan: Plan, out: TextIO) -> None:
    """The adaptive design's dry run: its settings, its first pass, and the worst case it may spend."""
    from specsweep.design.estimate import BASELINE_REPEATS, estimate_design

    opts = plan.experiment.adaptive
    assert opts is not None
    est = estimate_design(plan)
    budget = "none (max_repeats only)" if opts.budget is None else str(opts.budget)
    share = " of the same grid with repeats: 3" if isinstance(opts.budget, str) and "%" in opts.budget else ""
    if opts.race:  # racing: short first looks, then at most launches - 1 relaunches of the contenders
        print(
            f"\nadaptive design, racing: equivalence margin +-{opts.margin:.0%}, at most {opts.launches} launches "
            f"per config, a cell's later runs at most {opts.max_repeats} full runs' time, budget {budget}{share}",
            file=out,
        )
        print(
            f"look 0: {est.runs} short run(s) in {est.launches} launch(es), about {_dur(est.pass_s)}",
            file=out,
        )
        print(
            f"then: the configs still in a cell relaunched (at most {opts.launches - 1} time(s)), each holding all "
            f"its pending cells (about {_dur(est.ceiling_s)} at most)",
            file=out,
        )
    else:
        print(
            f"\nadaptive design: equivalence margin +-{opts.margin:.0%}, at most {opts.max_repeats} runs per "
            f"config and cell, budget {budget}{share}",
            file=out,
        )
        print(
            f"first pass: {est.runs} run(s) in {est.launches} launch(es), about {_dur(est.pass_s)}", file=out
        )
        print(
            f"then: only the cells still undecided, up to {est.max_repeats} runs each "
            f"(at most {est.runs * est.max_repeats} runs, about {_dur(est.ceiling_s)})",
            file=out,
        )
    limit = f"; the budget: {_dur(est.budget_s)}" if est.budget_s is not None else ""
    print(
        f"worst case: about {_dur(est.worst_s)} in all{limit}; the same grid with repeats: "
        f"{BASELINE_REPEATS} would take about {_dur(est.baseline_s)}",
        file=out,
    )


def print_design_state(rows: list[dict[str, Any]], manifest: dict[str, Any], out: TextIO) -> None:
    """A resumed design's dry run: what is stored, and what the rules say on it."""
    from specsweep.design import observe

    inputs = observe.design_inputs(rows, manifest)
    if inputs is None or not inputs.observations:
        print("stored: nothing yet; the run starts with the first pass", file=out)
        return
    state = observe.default_rules()(*inputs.args())
    rounds = len({o.round for o in inputs.observations})
    print(
        f"stored: {len(inputs.observations)} run(s) in {rounds} round(s), {_dur(state.spent_s)} spent; "
        f"{observe.undecided(state)} cell(s) still undecided",
        file=out,
    )
    if state.next is None:
        print("the rules on the stored runs: the design is finished (a resume writes the reports)", file=out)
    else:
        runs = sum(len(x.runs) for x in state.next.launches)
        print(
            f"the rules on the stored runs: next {runs} run(s) in {len(state.next.launches)} launch(es); "
            f"worst case {_dur(state.worst_case_s)} in all (a round cut short is finished first)",
            file=out,
        )
