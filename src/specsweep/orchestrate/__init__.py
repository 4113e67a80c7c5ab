"""Experiment -> servers x cells -> benchmark -> run dir.

A launch per configuration per round; its runs of the round go against it (warmup per cell). The
package, one job per module (each imports only the ones above it):

    dryrun.py    describe_plan (what would launch), preflight (what would fail to) and
                 refuse_unrunnable (what stops a run before its run dir exists)
    manifest.py  a new run dir with its manifest (environment, config, plan, run order); load_run_plan
                 for resume
    run.py       execute: the run dir lock, EXECUTORS {"local", "ray"}, the manifest's status, reports

The run order (interleaved rounds or blocked launches) and a run's schedule, worked out once at its
start, are specsweep.experiment.rounds; one launch and its cells is specsweep.executors (job, cells,
signals); the adaptive design's rounds come from specsweep.design.loop. This module's names below
are the package's public surface.
"""

from specsweep.executors.cells import FAILURE_KINDS, failed_row, ok_row
from specsweep.executors.job import (
    BenchFn,
    CellSink,
    ConfigJob,
    Observer,
    RunDirSink,
    bench_config,
    default_bench_fn,
    run_config,
)
from specsweep.executors.signals import sigterm_as_interrupt, stopping
from specsweep.orchestrate.dryrun import describe_plan, preflight, refuse_unrunnable
from specsweep.orchestrate.manifest import create_run_dir, environment, load_run_plan, plan_rows
from specsweep.orchestrate.run import (
    EXECUTORS,
    ReportsFailed,
    ReportsInterrupted,
    RunOutcome,
    execute,
    run_dir_lock,
    write_reports,
)

__all__ = [
    "EXECUTORS",
    "FAILURE_KINDS",
    "BenchFn",
    "CellSink",
    "ConfigJob",
    "Observer",
    "ReportsFailed",
    "ReportsInterrupted",
    "RunDirSink",
    "RunOutcome",
    "bench_config",
    "create_run_dir",
    "default_bench_fn",
    "describe_plan",
    "environment",
    "execute",
    "failed_row",
    "load_run_plan",
    "ok_row",
    "plan_rows",
    "preflight",
    "refuse_unrunnable",
    "run_config",
    "run_dir_lock",
    "sigterm_as_interrupt",
    "stopping",
    "write_reports",
]
