"""Experiment -> servers x cells -> benchmark -> run dir.

One launch per configuration; all its cells run against it (warmup per cell). The unit of work is
``run_config(cfg, cells, ...)``: it owns one server, runs the cells not yet finished, hands each
finished cell to a ``CellSink`` at once and keeps nothing of it, so an executor can run it anywhere
(``local``: in this process, writing straight into the run dir). Memory stays flat in the number of
cells: the rows live in summary.jsonl, and ``RunOutcome.rows`` reads them back from there.

Failures are data: a server that cannot start makes its cells ``failed`` rows with the log tail; a
server that dies during a cell fails that cell, is restarted, and the grid goes on. An interrupt
(SIGINT/SIGTERM -> KeyboardInterrupt) stops the servers, keeps finished cells and leaves nothing
for the interrupted cell, so ``resume`` redoes exactly what is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import math
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from specsweep import __version__
from specsweep.bench import BenchConfig, BenchOutcome
from specsweep.config import (
    DEFAULT_BACKEND,
    Cell,
    Experiment,
    Plan,
    ServerConfig,
    plan_experiment,
)
from specsweep.errors import ConfigError, SpecsweepError, UsageError
from specsweep.preflight import for_manifest as preflight_for_manifest
from specsweep.records import RequestRecord
from specsweep.run_secrets import experiment_of, finished_cells, manifest_config, stored_id
from specsweep.servers.argv import build_argv
from specsweep.servers.process import ManagedServer, now_iso
from specsweep.store import RunDir, log_file_name

log = logging.getLogger(__name__)

BenchFn = Callable[[BenchConfig], Awaitable[BenchOutcome]]
Observer = Callable[[str, dict[str, Any]], None]


# A killed server closes its sockets before it can be reaped: the client may see every request fail
# a moment before the process is reported dead. Failed requests wait this long for that report.
DEATH_SETTLE_S = 2.0


# A failed cell's ``failure_kind``: why it has no measurement, as data (its ``error`` says the rest).
# An interrupted cell (Ctrl-C, SIGTERM) is not one of them: it stores nothing and resume redoes it.
FAILURE_KINDS = {
    "server_start": "the server could not be launched or exited before it was ready (executable "
    "missing, port in use, crash at startup, model not listed)",
    "readiness_timeout": "the server was not ready within timeouts.ready_s",
    "server_died": "the server exited during the cell",
    "restarts_exhausted": "the server died more than max_restarts times; the config's later cells are failed",
    "cell_timeout": "the cell did not finish within timeouts.cell_s",
    "all_requests_failed": "the benchmark ran but no request completed (see errors_by_kind)",
    "bench_error": "the benchmark raised before it could measure (client error, bad tokenizer, ...)",
    "executor_lost": "the Ray worker or node running the config was lost",
    "executor_error": "the Ray task running the config failed",
    "infeasible": "no node of the Ray cluster has the resources the config asks for",
}


class ServerDied(Exception):
    pass


class CellTimeout(Exception):
    pass


class CellSink(Protocol):
    def cell_done(
        self, cell: Cell, repeat: int, row: dict[str, Any], records: list[RequestRecord]
    ) -> None: ...

    def server_info(self, label: str, info: dict[str, Any]) -> None: ...


class RunDirSink:
    """Local executor: each finished cell goes to disk at once (records first, then its summary)."""

    def __init__(self, run_dir: RunDir) -> None:
        self.run_dir = run_dir

    def cell_done(self, cell: Cell, repeat: int, row: dict[str, Any], records: list[RequestRecord]) -> None:
        if records:
            p = self.run_dir.write_records(cell.cell_id, repeat, records)
            row["records"] = str(p.relative_to(self.run_dir.path))
        self.run_dir.append_summary(row)

    def server_info(self, label: str, info: dict[str, Any]) -> None:
        servers = dict(self.run_dir.manifest.get("servers") or {})
        servers[label] = info
        self.run_dir.update_manifest(servers=servers)


def _noop(event: str, data: dict[str, Any]) -> None:
    pass


def default_bench_fn() -> BenchFn:
    from specsweep.client.runner import run_bench_async

    async def bench(cfg: BenchConfig) -> BenchOutcome:
        if cfg.workers > 1:  # client.workers: the load split over processes (client/multiworker.py)
            from specsweep.client.multiworker import run_multiworker_async

            return await run_multiworker_async(cfg)
        return await run_bench_async(cfg)

    return bench


# ---- one cell ----------------------------------------------------------------------------------
def bench_config(
    exp: Experiment, plan: Plan, cfg: ServerConfig, cell: Cell, server: ManagedServer
) -> BenchConfig:
    c = exp.client
    backend = cfg.spec.backend or c.backend or DEFAULT_BACKEND[cfg.spec.kind]
    return BenchConfig(
        base_url=server.base_url,
        scenario=plan.scenarios[cell.scenario],
        backend=backend,
        model=server.model_id,
        tokenizer=c.tokenizer,
        num_prompts=cell.num_prompts,
        max_concurrency=cell.max_concurrency,
        request_rate=c.request_rate if c.request_rate is not None else float("inf"),
        burstiness=c.burstiness,
        warmup_requests=c.warmup_requests,
        warmup_sleep_s=c.warmup_sleep_s,
        seed=c.seed,
        extra_request_body=dict(c.extra_request_body),
        goodput={str(k): v for k, v in c.goodput.items()},
        tag=cell.cell_id,
        ignore_eos=c.ignore_eos,
        temperature=c.temperature,
        request_timeout_s=c.request_timeout_s,
        keep_text=c.keep_text,
        workers=c.workers,
        repeats=1,
        scrape_metrics=c.scrape_metrics,
        quiet=True,
    )


async def _watch(
    server: ManagedServer, bench: Awaitable[BenchOutcome], timeout_s: float | None
) -> BenchOutcome:
    """Run one benchmark while watching the server: its death or the cell timeout cancels it."""
    task = asyncio.ensure_future(bench)
    deadline = time.monotonic() + timeout_s if timeout_s else math.inf
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.2)
            if done:
                return task.result()
            if not server.alive():
                raise ServerDied(f"server exited with code {server.returncode} during the cell")
            if time.monotonic() > deadline:
                raise CellTimeout(f"cell did not finish within timeouts.cell_s = {timeout_s:g} s")
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


# ---- one configuration -------------------------------------------------------------------------
@dataclass
class ConfigJob:
    """Everything ``run_config`` needs, picklable (for executors that run it elsewhere)."""

    cfg: ServerConfig
    cells: list[Cell]
    plan: Plan
    run_path: Path
    finished: set[tuple[str, int]] = field(default_factory=set)


def run_config(
    job: ConfigJob, sink: CellSink, *, bench_fn: BenchFn | None = None, observer: Observer = _noop
) -> int:
    """Launch ``job.cfg``'s server, run its unfinished cells x repeats, stop it. Every finished cell
    goes to ``sink`` (nothing is kept here); returns how many it got."""
    exp = job.plan.experiment
    cfg = job.cfg
    bench_fn = bench_fn or default_bench_fn()
    todo = [(c, r) for c in job.cells for r in range(exp.repeats) if (c.cell_id, r) not in job.finished]
    stored = 0
    if not todo:
        return stored
    server = ManagedServer(
        cfg,
        job.run_path / "logs" / log_file_name(cfg.label),
        ready_timeout_s=exp.timeouts.ready_s,
        stop_s=exp.timeouts.stop_s,
    )

    def emit(row: dict[str, Any], cell: Cell, repeat: int, records: list[RequestRecord]) -> None:
        nonlocal stored
        sink.cell_done(cell, repeat, row, records)
        stored += 1
        observer("cell_done", {"cell": cell, "repeat": repeat, "row": row})

    def fail_rest(start: int, kind: str, error: str, log_tail: str) -> None:
        for cell, repeat in todo[start:]:
            emit(_failed_row(cell, repeat, cfg, kind, error, log_tail, now_iso()), cell, repeat, [])

    restarts = 0
    lossless_outputs: list[dict[str, Any]] | None = None
    try:
        launch_error = _launch(server, observer, sink)
        if launch_error:
            fail_rest(0, *launch_error)
            return stored
        for i, (cell, repeat) in enumerate(todo):
            if i and exp.cooldown_s:
                time.sleep(exp.cooldown_s)
            observer("cell_start", {"cell": cell, "repeat": repeat, "index": i, "of": len(todo)})
            started = now_iso()
            bcfg = bench_config(exp, job.plan, cfg, cell, server)
            try:
                outcome = asyncio.run(_watch(server, bench_fn(bcfg), exp.timeouts.cell_s))
            except Exception as e:  # failures are data: the cell fails, the grid goes on
                err = str(e) or type(e).__name__
                kind = "server_died" if isinstance(e, ServerDied) else "cell_timeout"
                if not isinstance(e, (ServerDied, CellTimeout)):
                    kind = "bench_error"
                if not isinstance(e, ServerDied) and server.exited_within(DEATH_SETTLE_S):
                    err = f"server exited with code {server.returncode} during the cell ({err})"
                    kind = "server_died"
                row = _failed_row(cell, repeat, cfg, kind, err, server.log_tail(), started, server)
                emit(row, cell, repeat, [])
            else:
                res = outcome.result
                if (res.get("failed") or not res.get("completed")) and server.exited_within(DEATH_SETTLE_S):
                    # it finished, but only because the server went away under it
                    err = f"server exited with code {server.returncode} during the cell"
                    kind = "server_died"
                    row = _failed_row(cell, repeat, cfg, kind, err, server.log_tail(), started, server)
                elif not res.get("completed") and cell.num_prompts:
                    err = f"every request failed: {res.get('errors_by_kind') or res.get('failed')}"
                    row = {
                        **_ok_row(cell, repeat, cfg, outcome, started, server),
                        "status": "failed",
                        "failure_kind": "all_requests_failed",
                        "error": err,
                    }
                else:
                    row = _ok_row(cell, repeat, cfg, outcome, started, server)
                emit(row, cell, repeat, outcome.records)
            if not server.alive() and i + 1 < len(todo):
                observer("server_died", {"label": cfg.label, "returncode": server.returncode})
                _stop(server)
                restarts += 1
                if restarts > exp.max_restarts:
                    why = f"server died {restarts} times (max_restarts = {exp.max_restarts})"
                    fail_rest(i + 1, "restarts_exhausted", why, "")
                    return stored
                launch_error = _launch(server, observer, sink)
                if launch_error:
                    fail_rest(i + 1, *launch_error)
                    return stored
        lossless_outputs = _lossless_outputs(job, server, observer)
    finally:
        _stop(server)
        with contextlib.suppress(Exception):
            info = server.describe()
            if lossless_outputs is not None:
                info["lossless_outputs"] = lossless_outputs
            sink.server_info(cfg.label, info)
    return stored


def _lossless_outputs(
    job: ConfigJob, server: ManagedServer, observer: Observer
) -> list[dict[str, Any]] | None:
    """This config's greedy answers for the experiment's losslessness check, if it takes part."""
    opts = job.plan.experiment.lossless
    if opts is None or not server.alive():
        return None
    from specsweep.config import lossless_pair
    from specsweep.lossless import collect_outputs

    if job.cfg.label not in lossless_pair(opts, [c.label for c in job.plan.configs]):
        return None
    observer("lossless", {"label": job.cfg.label})
    try:
        return collect_outputs(server.base_url, backend=opts.backend, num_prompts=opts.num_prompts,
                               max_tokens=opts.max_tokens, seed=opts.seed, model=server.model_id)  # fmt: skip
    except Exception as e:  # failures are data: the check shows the errors
        return [{"text": None, "error": f"{type(e).__name__}: {e}"}] * opts.num_prompts


def _launch(server: ManagedServer, observer: Observer, sink: CellSink) -> tuple[str, str, str] | None:
    """Start (or restart) the server; on failure (failure kind, error, log tail) for the failed rows."""
    cfg = server.cfg
    observer("server_start", {"label": cfg.label, "restart": bool(server.launches)})
    t0 = time.monotonic()
    try:
        server.start()
    except SpecsweepError as e:
        observer("server_failed", {"label": cfg.label, "error": str(e)})
        sink.server_info(cfg.label, server.describe())
        error = str(e).split("\n--- last lines", 1)[0]
        return _launch_failure_kind(error), error, server.log_tail()
    observer(
        "server_ready",
        {
            "label": cfg.label,
            "url": server.base_url,
            "version": server.version,
            "pid": server.proc.pid if server.proc else None,
            "startup_s": time.monotonic() - t0,
        },
    )
    sink.server_info(cfg.label, server.describe())
    return None


def _launch_failure_kind(error: str) -> str:
    """readiness_timeout or server_start, from ManagedServer.start's message ("server LABEL not ready
    after N s ..." is its only timeout; every other launch error is a start failure)."""
    return "readiness_timeout" if " not ready after " in error else "server_start"


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Teardown must finish: hold off SIGINT/SIGTERM meanwhile (main thread only). A signal that
    arrives meanwhile is delivered once it is done, not dropped (a Ctrl-C must stop the grid)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    old = {
        s: signal.signal(s, lambda signum, frame: held.append(signum))
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if held:
            signal.raise_signal(held[0])


def _stop(server: ManagedServer) -> None:
    with _signals_deferred():
        server.stop()


def _base_row(cell: Cell, repeat: int, cfg: ServerConfig, started: str) -> dict[str, Any]:
    return {
        **cell.to_dict(),
        "kind": cfg.spec.kind,
        "repeat": repeat,
        "started_at": started,
        "ended_at": now_iso(),
    }


def _ok_row(
    cell: Cell, repeat: int, cfg: ServerConfig, outcome: BenchOutcome, started: str, server: ManagedServer
) -> dict[str, Any]:
    return {
        **outcome.result,
        **_base_row(cell, repeat, cfg, started),
        "server_version": server.version,
        "status": "invalid" if outcome.invalid_reason else "ok",
        "failure_kind": None,
        "error": None,
        "invalid_reason": outcome.invalid_reason,
    }


def _failed_row(
    cell: Cell,
    repeat: int,
    cfg: ServerConfig,
    failure_kind: str,
    error: str,
    log_tail: str,
    started: str,
    server: ManagedServer | None = None,
) -> dict[str, Any]:
    assert failure_kind in FAILURE_KINDS, failure_kind
    return {
        **_base_row(cell, repeat, cfg, started),
        "server_version": server.version if server else None,
        "status": "failed",
        "failure_kind": failure_kind,
        "error": error,
        "log_tail": log_tail,
    }


# ---- the whole run -----------------------------------------------------------------------------
def _git_sha() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode().strip() or None if out.returncode == 0 else None


def environment() -> dict[str, Any]:
    return {
        "tool": "specsweep",
        "tool_version": __version__,
        "git_sha": _git_sha(),
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            # the cores this client may run on (a pinned client, e.g. `taskset -c 0`, shows here)
            "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "user": _user(),
        },
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
    }


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def plan_rows(plan: Plan) -> list[dict[str, Any]]:
    return [{**c.to_dict(), "repeats": plan.experiment.repeats} for c in plan.all_cells()]


def create_run_dir(plan: Plan, results_dir: str | Path, experiment_file: str | None = None) -> RunDir:
    exp = plan.experiment
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    config, secrets = manifest_config(exp)
    manifest = {
        **environment(),
        "kind": "experiment",
        "experiment": exp.name,
        "experiment_file": str(Path(experiment_file).resolve()) if experiment_file else None,
        "config": config,
        "secrets": secrets,
        "plan": plan_rows(plan),
        "servers": {},
        "started_at": now_iso(),
        "ended_at": None,
        "status": "running",
        "invocations": [],
    }
    return RunDir.create(results_dir, exp.name, manifest, stamp)


def load_run_plan(run_dir: RunDir) -> Plan:
    """The plan of an existing run, from its manifest's resolved config (checked against its plan)."""
    m = run_dir.manifest
    where = str(run_dir.path / "manifest.json")
    if "config" not in m or "plan" not in m:
        raise ConfigError("this run dir was not written by 'specsweep run' (no config/plan)", file=where)
    exp = experiment_of(m, where)
    plan = plan_experiment(exp, file=where)
    want = [r["cell_id"] for r in m["plan"]]
    have = [stored_id(c.cell_id) for c in plan.all_cells()]
    if want != have:
        raise ConfigError(
            "the manifest's plan does not match its config (written by another specsweep version?)",
            file=where,
            path="plan",
        )
    return plan


@dataclass
class RunOutcome:
    """What one ``execute`` did. ``counts``: its stored cells by status. ``rows`` reads its summary
    lines back from the run dir (appended after byte ``summary_from``), so they are not held in
    memory while the grid runs."""

    run_dir: RunDir
    counts: dict[str, int]
    reports: list[Path] = field(default_factory=list)
    summary_from: int = 0

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.run_dir.summary(since=self.summary_from)


def execute(
    plan: Plan,
    run_dir: RunDir,
    *,
    bench_fn: BenchFn | None = None,
    observer: Observer = _noop,
    executor: str = "local",
    reports: bool = True,
    executor_options: dict[str, Any] | None = None,
) -> RunOutcome:
    """Run every unfinished cell of ``plan`` into ``run_dir``. KeyboardInterrupt propagates after
    teardown, with the manifest marked ``interrupted``. ``executor="ray"``: configurations run as
    Ray tasks (specsweep.executors.ray_executor; ``executor_options``: address, max_parallel, ...).
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
        )


@contextlib.contextmanager
def run_dir_lock(run_dir: RunDir) -> Iterator[None]:
    """An exclusive flock on RUN_DIR/.lock (released by the kernel if the process dies)."""
    import fcntl

    path = run_dir.path / ".lock"
    f = path.open("a+")
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
    observer: Observer = _noop,
    executor: str = "local",
    reports: bool = True,
    executor_options: dict[str, Any] | None = None,
) -> RunOutcome:
    """execute(), with the run dir locked."""
    if executor not in ("local", "ray"):
        raise ConfigError(f"unknown executor {executor!r}; expected one of: local, ray")
    if executor == "ray":  # MissingDependency before the run dir is touched
        from specsweep.executors.ray_executor import import_ray

        import_ray()
    run_dir.repair_summary()  # a torn last line from a crash: cut before this run appends
    finished = finished_cells(plan, run_dir.finished())
    summary_from = run_dir.summary_size()  # this invocation's rows are the lines after it
    inv = {"started_at": now_iso(), "resumed": bool(finished), "ended_at": None, "status": "running",
           "executor": executor}  # fmt: skip
    invocations = [*list(run_dir.manifest.get("invocations") or []), inv]
    run_dir.update_manifest(status="running", ended_at=None, invocations=invocations)
    sink = RunDirSink(run_dir)
    todo_total = sum(
        1 for c in plan.all_cells() for r in range(plan.experiment.repeats) if (c.cell_id, r) not in finished
    )
    for w in preflight(plan):
        log.warning("%s", w)
    run_dir.update_manifest(preflight=preflight_for_manifest(plan))
    observer(
        "run_start",
        {"plan": plan, "todo": todo_total, "finished": len(finished), "finished_cells": set(finished),
         "run_dir": run_dir.path},
    )  # fmt: skip
    status = "interrupted"
    counts: dict[str, int] = {}
    written: list[Path] = []
    # SIGTERM is a Ctrl-C from here to the end, the manifest update and the report phase included
    with sigterm_as_interrupt():
        try:
            if executor == "ray":
                from specsweep.executors.ray_executor import run_configs

                run_configs(plan, run_dir, finished, bench_fn=bench_fn, observer=observer,
                            **(executor_options or {}))  # fmt: skip
            for cfg in plan.configs if executor == "local" else []:
                job = ConfigJob(cfg, plan.cells[cfg.label], plan, run_dir.path, finished)
                run_config(job, sink, bench_fn=bench_fn, observer=observer)
            status = "finished"
        finally:
            inv.update(ended_at=now_iso(), status=status)
            with _signals_deferred():
                run_dir.update_manifest(status=status, ended_at=inv["ended_at"], invocations=invocations)
        for r in run_dir.iter_summary(summary_from):  # streamed back: one row in memory at a time
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        if reports and plan.experiment.report.enabled:
            observer("reports", {"run_dir": run_dir.path})
            written = write_reports(run_dir, plan)
        observer("run_end", {"counts": counts, "run_dir": run_dir.path})
    return RunOutcome(run_dir, counts, written, summary_from)


class ReportsInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM in the report phase: every cell is stored (manifest ``finished``), and no
    report of this run is left (none half-written, none stale beside a missing one)."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a run the way Ctrl-C does (servers killed, finished cells kept, exit 130).
    Nests: the outer handler comes back on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def write_reports(run_dir: RunDir, plan: Plan) -> list[Path]:
    """report.md / report.html through specsweep.report; a missing or failing report is a logged
    note, never a lost grid. Interrupted (Ctrl-C, SIGTERM): no report is left and
    ``ReportsInterrupted`` (a KeyboardInterrupt) propagates; ``specsweep report`` or ``run --resume``
    writes them later."""
    opts = plan.experiment.report
    if not opts.enabled:
        return []
    try:
        return _write_reports(run_dir, plan)
    except KeyboardInterrupt:  # anywhere in the phase: building the view, lossless.json, rendering
        _remove_reports(run_dir, opts.formats)
        raise ReportsInterrupted from None


def _write_reports(run_dir: RunDir, plan: Plan) -> list[Path]:
    opts = plan.experiment.report
    try:
        from specsweep.report import build_view, write_report
    except ImportError as e:
        log.info("reports skipped: the report library is not available in this build (%s)", e)
        return []
    methods = sorted({c.method or "none" for c in plan.configs})
    kind = opts.kind if opts.kind != "auto" else ("compare" if len(methods) > 1 else "sweep")
    method = plan.configs[0].method if kind == "sweep" else None
    lossless = _lossless_view(run_dir, plan)
    try:
        view = build_view([run_dir.path], kind, method=method, baseline=opts.baseline, lossless=lossless)
    except Exception as e:  # e.g. no ok cell to analyse
        log.warning("reports skipped: %s", e)
        return []
    written = []
    failed: tuple[OSError, Path] | None = None
    for fmt in opts.formats:
        path = run_dir.path / f"report.{fmt}"
        try:
            written.append(write_report(view, path, fmt=fmt, lang=opts.lang))
        except OSError as e:  # disk full, quota, I/O: the run must not end as a success without it
            log.error("report.%s not written: %s", fmt, e)
            failed = failed or (e, path)
        except Exception as e:
            log.warning("report.%s not written: %s", fmt, e)
    if failed is not None:
        from specsweep.paths import write_failed

        err = write_failed(*failed, "the report")
        raise type(err)(f"{err}; every cell is stored: `specsweep report {run_dir.path}` writes it later")
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
    from specsweep.config import lossless_pair
    from specsweep.lossless import compare_collected, to_view
    from specsweep.store import atomic_write_bytes, dumps

    ref, against = lossless_pair(opts, [c.label for c in plan.configs])
    servers = run_dir.manifest.get("servers") or {}
    a, b = (servers.get(x, {}).get("lossless_outputs") for x in (ref, against))
    if not a or not b:
        log.warning("losslessness check skipped: no outputs collected for %s", ref if not a else against)
        return None
    res = compare_collected(a, b, names=[ref, against], backend=opts.backend, max_tokens=opts.max_tokens)
    atomic_write_bytes(run_dir.path / "lossless.json", dumps(res.to_dict(), indent=True))
    return to_view(res.to_dict())


# ---- dry run -----------------------------------------------------------------------------------
def preflight(plan: Plan) -> list[str]:
    """Problems that would make launches fail here: missing executables, unknown sim profiles.
    Warnings, not errors: a failed launch is data, and a binary may appear before its turn."""
    import shutil

    out: list[str] = []
    for cfg in plan.configs:
        argv = build_argv(cfg, 1)
        if argv and not (shutil.which(argv[0]) or (os.sep in argv[0] and os.access(argv[0], os.X_OK))):
            out.append(f"{cfg.label}: executable {argv[0]!r} not found")
        if cfg.spec.kind == "sim" and argv:
            try:
                from specsweep.sim.profile import load_profile

                load_profile(argv[argv.index("--profile") + 1])
            except SpecsweepError as e:
                out.append(f"{cfg.label}: {e}")
    return out


def describe_plan(plan: Plan) -> list[dict[str, Any]]:
    """Per configuration: label, kind, argv (``<port>`` for a free port), cells."""
    out = []
    for cfg in plan.configs:
        argv = build_argv(cfg, cfg.spec.port or "<port>")
        out.append({"config": cfg, "argv": argv, "cells": plan.cells[cfg.label]})
    return out
