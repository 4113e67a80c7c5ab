"""`specsweep run EXPERIMENT.yaml` / `specsweep run --resume RUN_DIR`: an experiment grid."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections import deque
from typing import TYPE_CHECKING, Any

from specsweep import redact
from specsweep.errors import UsageError

if TYPE_CHECKING:
    from specsweep.config import Plan
    from specsweep.store import RunDir

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
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from specsweep import orchestrate
    from specsweep.config import load_experiment
    from specsweep.servers import reap
    from specsweep.store import RunDir

    if bool(args.experiment) == bool(args.resume):
        raise UsageError("give an experiment file, or --resume RUN_DIR (one of them)")
    redact.register_environ()  # OPENAI_API_KEY (the client's bearer token), HF_TOKEN, ...
    for h in logging.getLogger().handlers:  # no secret reaches the terminal through a log line
        if not any(isinstance(f, ScrubFilter) for f in h.filters):
            h.addFilter(ScrubFilter())
    if args.resume:
        run_dir = RunDir.open(args.resume)
        if not args.dry_run:  # what a killed run left running (workers, stubborn servers)
            reap.reap_run_dir(run_dir.path)
            reap.reap_results_dir(run_dir.path.parent)
        plan = orchestrate.load_run_plan(run_dir)
        if args.dry_run:
            from specsweep.run_secrets import finished_cells

            print_plan(plan, finished=finished_cells(plan, run_dir.finished()))
            return 0
    else:
        _, plan = load_experiment(args.experiment)
        if args.dry_run:
            print_plan(plan)
            return 0
        results = args.results_dir or plan.experiment.results_dir or "results"
        reap.reap_results_dir(results)
        run_dir = orchestrate.create_run_dir(plan, results, args.experiment)
    print(f"run dir: {run_dir.path}", file=sys.stderr)
    with orchestrate.sigterm_as_interrupt():  # a Ctrl-C (exit 130) until the command returns
        return _execute(args, plan, run_dir)


def _execute(args: argparse.Namespace, plan: Plan, run_dir: RunDir) -> int:
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
        print(
            f"interrupted while writing the reports: every cell is stored, no report was left; write them "
            f"with: specsweep run --resume {run_dir.path} (or specsweep report {run_dir.path} -o FILE)",
            file=sys.stderr,
        )
        return 130
    except KeyboardInterrupt:
        print(
            f"interrupted: finished cells are kept; continue with: specsweep run --resume {run_dir.path}",
            file=sys.stderr,
        )
        return 130
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
    return 1 if c.get("failed") else 0


# ---- dry run -----------------------------------------------------------------------------------
def _dur(s: float) -> str:
    n = round(s)
    h, rem = divmod(n, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


def print_plan(plan: Plan, finished: set[tuple[str, int]] | None = None) -> None:
    from specsweep import orchestrate

    exp = plan.experiment
    finished = finished or set()
    cells = plan.all_cells()
    out = sys.stdout
    print(f"experiment: {exp.name}", file=out)
    if exp.description:
        print(f"  {exp.description}", file=out)
    print(
        f"{len(plan.configs)} configuration(s), {len(cells)} cell(s) x {exp.repeats} repeat(s) = "
        f"{len(cells) * exp.repeats} benchmark run(s)",
        file=out,
    )
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
            mark = f"  [{done}/{exp.repeats} done]" if finished else ""
            print(
                plain(
                    f"  - {c.cell_id}: {c.scenario} concurrency={c.max_concurrency} num_prompts={c.num_prompts}"
                )
                + mark,
                file=out,
            )
    print(f"\nestimated duration: about {_dur(orchestrate.estimate_s(plan))} (rough)", file=out)
    for w in orchestrate.preflight(plan):
        print(f"warning: {w}", file=out)


# ---- progress ----------------------------------------------------------------------------------
def _fmt(v: Any, nd: int = 1) -> str:
    return f"{v:.{nd}f}" if isinstance(v, (int, float)) else "-"


def plain(v: Any) -> str:
    """External text (labels, errors, log tails) for the terminal: secrets scrubbed, control
    characters (ANSI escapes) shown escaped, never acted on."""
    text = redact.scrub_text(str(v))
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def _text(v: Any, style: str = "") -> Any:
    """A rich Text: shown as it is, never read as markup (``[/INST]`` in a log tail)."""
    from rich.text import Text

    return Text(plain(v), style=style)


class ScrubFilter(logging.Filter):
    """Log records with every known secret scrubbed and control characters escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = plain(record.getMessage()), None
        return True


class QuietObserver:
    """Log lines, one per event: for logs and CI."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0

    def __call__(self, event: str, d: dict[str, Any]) -> None:
        if event == "run_start":
            self.total = d["todo"]
            log.info("%d benchmark run(s) to do (%d already finished)", d["todo"], d["finished"])
        elif event == "server_start":
            log.info("%s server %s", "restarting" if d["restart"] else "starting", d["label"])
        elif event == "server_ready":
            log.info(
                "%s ready at %s in %.1f s (version %s)", d["label"], d["url"], d["startup_s"], d["version"]
            )
        elif event == "server_failed":
            log.error("%s failed to start: %s", d["label"], d["error"])
        elif event == "server_died":
            log.warning("%s died (exit code %s); restarting it", d["label"], d["returncode"])
        elif event == "cell_done":
            self.done += 1
            r = d["row"]
            extra = plain(r.get("error") or r.get("invalid_reason") or "")
            log.info(
                "[%d/%d] %s %s c=%s r%s: %s total_tok/s=%s mean_tpot_ms=%s %s",
                self.done, self.total, plain(r["label"]), plain(r["scenario"]), r["max_concurrency"], r["repeat"],
                r["status"], _fmt(r.get("total_throughput")), _fmt(r.get("mean_tpot_ms"), 2),
                extra.split("\n", 1)[0],
            )  # fmt: skip
        elif event == "reports":
            log.info("writing the reports")
        elif event == "run_end":
            log.info("finished: %s", d["counts"])

    def close(self) -> None:
        pass


class LiveObserver:
    """A rich live display: the grid's progress bar with ETA, the current cell, the finished cells."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task("grid", total=None)
        self.rows: deque[dict[str, Any]] = deque(maxlen=12)
        self.status = ""
        self.live = Live(self._render(), console=self.console, refresh_per_second=4)
        self.live.start()

    def _render(self) -> Any:
        from rich.console import Group
        from rich.table import Table

        t = Table(title="finished cells (latest)", expand=False)
        for col in (
            "config",
            "scenario",
            "conc",
            "rep",
            "status",
            "req/s",
            "total tok/s",
            "TTFT ms",
            "TPOT ms",
        ):
            t.add_column(col, justify="right" if col not in ("config", "scenario", "status") else "left")
        for r in self.rows:
            st = r["status"]
            color = {"ok": "green", "invalid": "yellow"}.get(st, "red")
            t.add_row(
                _text(r["label"]), _text(r["scenario"]), str(r["max_concurrency"]), str(r["repeat"]),
                _text(st, color),
                _fmt(r.get("request_throughput"), 2), _fmt(r.get("total_throughput")),
                _fmt(r.get("mean_ttft_ms")), _fmt(r.get("mean_tpot_ms"), 2),
            )  # fmt: skip
        return Group(self.progress, _text(self.status), t)

    def __call__(self, event: str, d: dict[str, Any]) -> None:
        if event == "run_start":
            self.progress.update(self.task, total=d["todo"])
        elif event == "server_start":
            self.status = f"{'restarting' if d['restart'] else 'starting'} server {d['label']} ..."
        elif event == "server_ready":
            self.status = f"{d['label']} ready in {d['startup_s']:.1f} s (version {d['version']})"
        elif event in ("server_failed", "server_died"):
            msg = _text(f"{event.replace('_', ' ')}: {d['label']}", "red")
            self.console.print(msg.append(" ").append_text(_text(d.get("error", ""))))
        elif event == "cell_start":
            c = d["cell"]
            self.status = (
                f"running {c.label} · {c.scenario} · concurrency {c.max_concurrency} · repeat {d['repeat']}"
            )
        elif event == "cell_done":
            self.rows.append(d["row"])
            self.progress.advance(self.task)
            self.status = ""
        elif event == "reports":
            self.status = "writing the reports ..."
        elif event == "run_end":
            self.status = "finished: " + ", ".join(f"{n} {k}" for k, n in sorted(d["counts"].items()))
        self.live.update(self._render())

    def close(self) -> None:
        self.live.stop()
