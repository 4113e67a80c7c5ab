"""The whole run: every unfinished cell of a plan into its run dir, then the reports.

One runner per run dir at a time (an flock on RUN_DIR/.lock). What the run needs of its plan (the
rounds, each cell's stored id, the finished runs, the design's settings) is worked out once at its
start (specsweep.experiment.rounds.RunSchedule) and handed down. The run goes in rounds
(interleaved or blocked repeats; the adaptive design's rounds come from specsweep.design.loop);
each round's launches run on an executor chosen from ``EXECUTORS``: ``local`` (here, one after
another) or ``ray`` (specsweep.executors.ray_executor, an optional extra loaded only when chosen).
Either way each cell is written as it finishes, so memory stays flat in the number of cells:
``RunOutcome.rows`` reads them back.

An interrupt (SIGINT/SIGTERM -> KeyboardInterrupt) stops the servers, keeps finished cells, leaves
nothing for the interrupted cell and marks the manifest ``interrupted``, so ``resume`` redoes
exactly what is missing. The report phase is all or nothing (``ReportsInterrupted``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from specsweep.client.ray_support import require_ray
from specsweep.errors import EXIT_REPORT_FAILED, ConfigError, SpecsweepError, UsageError
from specsweep.executors.job import BenchFn, ConfigJob, Observer, RunDirSink, no_observer, run_config
from specsweep.executors.signals import raise_if_interrupted, signals_deferred, sigterm_as_interrupt
from specsweep.experiment.config import Plan, lossless_pair
from specsweep.experiment.rounds import run_schedule
from specsweep.orchestrate.dryrun import preflight
from specsweep.orchestrate.manifest import order_records
from specsweep.preflight import for_manifest as preflight_for_manifest
from specsweep.preflight.checks import of_measurements
from specsweep.servers.process import now_iso
from specsweep.store.paths import write_failed
from specsweep.store.run_dir import RunDir, atomic_write_bytes, dumps

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from specsweep.design.loop import PlanNext


class Executor(Protocol):
    """Runs a round's launches (ConfigJobs, in launch order) into the run dir; one per run."""

    def run(self, jobs: Sequence[ConfigJob]) -> object: ...

    def close(self) -> None: ...


class LocalExecutor:
    """The ``local`` executor: each launch in this process, in turn, straight into the run dir."""

    def __init__(
        self, run_dir: RunDir, *, bench_fn: BenchFn | None, observer: Observer, **options: Any
    ) -> None:
        self.sink = RunDirSink(run_dir)
        self.bench_fn = bench_fn
        self.observer = observer

    def run(self, jobs: Sequence[ConfigJob]) -> None:
        for job in jobs:
            run_config(job, self.sink, bench_fn=self.bench_fn, observer=self.observer)

    def close(self) -> None:
        pass


def ray_executor(
    run_dir: RunDir, *, bench_fn: BenchFn | None, observer: Observer, **options: Any
) -> Executor:
    """The ``ray`` executor (``options``: address, max_parallel, max_attempts): a round's launches
    run as Ray tasks, in parallel where the cluster has room."""
    from specsweep.executors.ray_executor import RaySession  # the optional extra, loaded when chosen

    return RaySession(run_dir, bench_fn=bench_fn, observer=observer, **options)


EXECUTORS: dict[str, Callable[..., Executor]] = {"local": LocalExecutor, "ray": ray_executor}


@dataclass
class RunOutcome:
    """What one ``execute`` did. ``counts``: its stored cells by status. ``rows`` reads its summary
    lines back from the run dir (appended after byte ``summary_from``), so they are not held in
    memory while the grid runs."""

    run_dir: RunDir
    counts: dict[str, int]
    reports: list[Path] = field(default_factory=list)
    summary_from: int = 0
    report_errors: list[str] = field(default_factory=list)  # why a configured report was not written

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.run_dir.summary(since=self.summary_from)


def execute(
    plan: Plan,
    run_dir: RunDir,
    *,
    bench_fn: BenchFn | None = None,
    observer: Observer = no_observer,
    executor: str = "local",
    reports: bool = True,
    executor_options: dict[str, Any] | None = None,
    plan_next: PlanNext | None = None,
) -> RunOutcome:
    """Run every unfinished cell of ``plan`` into ``run_dir``, in rounds (specsweep.experiment.
    rounds; the adaptive design's rounds when the experiment has one: specsweep.design.loop,
    whose rules ``plan_next`` may replace). KeyboardInterrupt propagates after teardown, with the
    manifest marked ``interrupted``. ``executor="ray"``: a round's launches run as Ray tasks
    (specsweep.executors.ray_executor; ``executor_options``: address, max_parallel, ...).
    One runner per run dir at a time: a second one fails at once instead of mixing their cells."""
    with run_dir_lock(run_dir):
        return _execute(
            plan,
            run_dir,
            bench_fn=bench_fn,
            observer=observer,
            executor=executor,
            reports=reports,
            executor_options=executor_options,
            plan_next=plan_next,
        )


@contextlib.contextmanager
def run_dir_lock(run_dir: RunDir) -> Iterator[None]:
    """An exclusive flock on RUN_DIR/.lock (released by the kernel if the process dies)."""
    import fcntl
    import stat

    path = run_dir.path / ".lock"
    try:  # never through a link, never blocking on a FIFO someone put there
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise UsageError(
            f"run dir {run_dir.path}: cannot open its lock file {path.name}: {e.strerror}"
        ) from e
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(
            f"run dir {run_dir.path}: its lock file {path.name} is not a regular file; remove it"
        )
    f = os.fdopen(fd, "r+")
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "?"
            raise UsageError(
                f"run dir {run_dir.path} is in use by another specsweep run (pid {holder}); "
                "wait for it or stop it first"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield
    finally:
        f.close()


def _execute(
    plan: Plan,
    run_dir: RunDir,
    *,
    bench_fn: BenchFn | None = None,
    observer: Observer = no_observer,
    executor: str = "local",
    reports: bool = True,
    executor_options: dict[str, Any] | None = None,
    plan_next: PlanNext | None = None,
) -> RunOutcome:
    """execute(), with the run dir locked."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; expected one of: {', '.join(EXECUTORS)}")
    if executor == "ray":  # MissingDependency before the run dir is touched
        require_ray("--executor ray")
    run_dir.repair_summary()  # a torn last line from a crash: cut before this run appends
    schedule = run_schedule(plan, run_dir.finished())  # the rounds, stored ids, design: once
    finished, todo, adaptive = schedule.finished, schedule.todo, schedule.adaptive
    summary_from = run_dir.summary_size()  # this invocation's rows are the lines after it
    inv = {"started_at": now_iso(), "resumed": bool(finished), "ended_at": None, "status": "running",
           "executor": executor}  # fmt: skip
    invocations = [*list(run_dir.manifest.get("invocations") or []), inv]
    run_dir.update_manifest(status="running", ended_at=None, invocations=invocations)
    if "run_order" not in run_dir.manifest:  # a run dir written before run orders were recorded
        run_dir.update_manifest(**order_records(schedule))
    for w in preflight(plan):
        log.warning("%s", w)
    inv.update(cells_to_run=schedule.cells_to_run, preflight=preflight_for_manifest(plan))
    _record_preflight(run_dir, invocations)
    observer(
        "run_start",
        {"plan": plan, "todo": 0 if adaptive else schedule.cells_to_run, "finished": len(finished),
         "finished_cells": set(finished), "run_dir": run_dir.path, "adaptive": adaptive,
         "todo_runs": [run for r in todo for x in r.launches for run in x.runs],
         "launches": [x.cfg.label for r in todo for x in r.launches]},
    )  # fmt: skip
    status = "interrupted"
    counts: dict[str, int] = {}
    written: list[Path] = []
    report_errors: list[str] = []
    # SIGTERM is a Ctrl-C from here to the end, the manifest update and the report phase included
    with sigterm_as_interrupt():
        try:
            ex = EXECUTORS[executor](
                run_dir, bench_fn=bench_fn, observer=observer, **(executor_options or {})
            )
            try:
                if adaptive:
                    from specsweep.design.loop import run_design

                    run_design(plan, run_dir, ex, observer=observer, plan_next=plan_next, schedule=schedule)
                for rnd in todo:
                    observer("round_start", {"round": rnd.index, "launches": [x.cfg.label for x in rnd.launches],
                                             "runs": rnd.runs})  # fmt: skip
                    ex.run([ConfigJob(x.cfg, plan, run_dir.path, runs=x.runs, round=rnd.index)
                            for x in rnd.launches])  # fmt: skip
            finally:
                ex.close()
            status = "finished"
        finally:
            with signals_deferred():  # the manifest must say how the run ended, whatever arrives
                for r in run_dir.iter_summary(summary_from):  # streamed back: one row in memory at a time
                    counts[r["status"]] = counts.get(r["status"], 0) + 1
                inv.update(ended_at=now_iso(), status=status, cells_stored=sum(counts.values()))
                run_dir.update_manifest(status=status, ended_at=inv["ended_at"], invocations=invocations)
                _record_preflight(run_dir, invocations)
        if reports and plan.experiment.report.enabled:
            observer("reports", {"run_dir": run_dir.path})
            try:
                written = write_reports(run_dir, plan)
            except ReportsFailed as e:
                written, report_errors = e.written, e.reasons
        observer("run_end", {"counts": counts, "run_dir": run_dir.path, "report_errors": report_errors})
    return RunOutcome(run_dir, counts, written, summary_from, report_errors)


def _record_preflight(run_dir: RunDir, invocations: list[dict[str, Any]]) -> None:
    """The manifest's ``preflight``: the checks of the invocations that measured (each invocation
    keeps its own), with the servers' checks once they ran."""
    run_dir.update_manifest(preflight=of_measurements({**run_dir.manifest, "invocations": invocations}))


class ReportsInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM in the report phase: every cell is stored (manifest ``finished``), and no
    report of this run is left (none half-written, none stale beside a missing one)."""


class ReportsFailed(SpecsweepError):
    """A configured report could not be built or written. Every cell is stored; ``reasons`` says
    why each report is missing, ``written`` what was written. ``specsweep run`` exits with
    ``EXIT_REPORT_FAILED`` and prints the command that writes the reports later."""

    exit_code = EXIT_REPORT_FAILED

    def __init__(self, run_dir: Path, reasons: list[str], written: list[Path]) -> None:
        super().__init__(
            "reports not written: " + "; ".join(reasons) + f". Every cell is stored: once that is fixed, "
            f"`specsweep report {run_dir}` writes them (or `specsweep run --resume {run_dir}`)"
        )
        self.reasons = reasons
        self.written = written


def write_reports(run_dir: RunDir, plan: Plan) -> list[Path]:
    """report.md / report.html through specsweep.report. A report that cannot be built or written
    (a missing module, no analysable cell, a full disk) raises ``ReportsFailed`` after trying every
    format: the grid is stored, the run is not a success without its reports. Interrupted (Ctrl-C,
    SIGTERM): no report is left and ``ReportsInterrupted`` (a KeyboardInterrupt) propagates;
    ``specsweep report`` or ``run --resume`` writes them later."""
    opts = plan.experiment.report
    if not opts.enabled:
        return []
    try:
        return _write_reports(run_dir, plan)
    except KeyboardInterrupt:  # anywhere in the phase: building the view, lossless.json, rendering
        _remove_reports(run_dir, opts.formats)
        raise ReportsInterrupted from None


def _why(e: BaseException) -> str:
    if isinstance(e, ImportError):
        return f"{type(e).__name__}: {e} (a module specsweep needs is missing: reinstall it with pip)"
    return str(e) or type(e).__name__


def _write_reports(run_dir: RunDir, plan: Plan) -> list[Path]:
    opts = plan.experiment.report
    try:
        from specsweep.report import build_view, write_report

        methods = sorted({c.method or "none" for c in plan.configs})
        kind = opts.kind if opts.kind != "auto" else ("compare" if len(methods) > 1 else "sweep")
        method = plan.configs[0].method if kind == "sweep" else None
        lossless = _lossless_view(run_dir, plan)
        view = build_view([run_dir.path], kind, method=method, baseline=opts.baseline, lossless=lossless)
    except Exception as e:  # no analysable cell, a missing module, a bug: said, never a silent success
        raise_if_interrupted()  # a Ctrl-C that surfaced as another error (an interrupted import)
        log.error("reports not written: %s", _why(e))
        raise ReportsFailed(run_dir.path, [_why(e)], []) from e
    written: list[Path] = []
    reasons: list[str] = []
    for fmt in opts.formats:
        path = run_dir.path / f"report.{fmt}"
        try:
            written.append(write_report(view, path, fmt=fmt, lang=opts.lang))
        except OSError as e:  # disk full, quota, I/O
            reasons.append(f"report.{fmt}: {write_failed(e, path, 'the report')}")
        except Exception as e:
            raise_if_interrupted()
            reasons.append(f"report.{fmt}: {_why(e)}")
    if reasons:
        for r in reasons:
            log.error("%s", r)
        raise ReportsFailed(run_dir.path, reasons, written)
    return written


def _remove_reports(run_dir: RunDir, formats: Iterable[str]) -> None:
    """All or none: an interrupted report phase leaves no report (each is written atomically, so a
    partial set is whole files, but of two different moments)."""
    for fmt in formats:
        with contextlib.suppress(OSError):
            (run_dir.path / f"report.{fmt}").unlink()


def _lossless_view(run_dir: RunDir, plan: Plan) -> Any:
    """Compare the two configs' collected outputs; also written to lossless.json in the run dir."""
    opts = plan.experiment.lossless
    if opts is None:
        return None
    from specsweep.client.lossless import compare_collected
    from specsweep.report.build.lossless import to_view

    ref, against = lossless_pair(opts, [c.label for c in plan.configs])
    servers = run_dir.manifest.get("servers") or {}
    a, b = (servers.get(x, {}).get("lossless_outputs") for x in (ref, against))
    if not a or not b:
        log.warning("losslessness check skipped: no outputs collected for %s", ref if not a else against)
        return None
    res = compare_collected(a, b, names=[ref, against], backend=opts.backend, max_tokens=opts.max_tokens)
    atomic_write_bytes(run_dir.path / "lossless.json", dumps(res.to_dict(), indent=True))
    return to_view(res.to_dict())
