"""One configuration's work: launch its server, run its unfinished cells, stop it.

``run_config(ConfigJob, sink)`` owns one server, runs the cells not yet finished, hands each
finished cell to a ``CellSink`` at once and keeps nothing of it, so an executor can run it anywhere
(``local``: in this process, with ``RunDirSink`` writing straight into the run dir; ``ray``: in a Ray
task, with a sink that streams to the driver).

Failures are data: a server that cannot start makes its cells ``failed`` rows with the log tail; a
server that dies during a cell fails that cell, is restarted, and the grid goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from specsweep.client import kstamp
from specsweep.client.bench_types import BenchConfig, BenchOutcome
from specsweep.errors import SpecsweepError
from specsweep.executors.cells import failed_row, launch_failure_kind, ok_row
from specsweep.executors.signals import raise_if_interrupted, signals_deferred
from specsweep.experiment.argv import engine_of
from specsweep.experiment.config import DEFAULT_BACKEND, Cell, Experiment, Plan, ServerConfig, lossless_pair
from specsweep.measure.acceptance import spec_tokens
from specsweep.measure.records import RequestRecord
from specsweep.preflight.engines import is_cpu_engine
from specsweep.preflight.running import check_affinity
from specsweep.servers import affinity
from specsweep.servers.process import ManagedServer, now_iso
from specsweep.store.run_dir import RunDir, log_file_name

log = logging.getLogger(__name__)

BenchFn = Callable[[BenchConfig], Awaitable[BenchOutcome]]
Observer = Callable[[str, dict[str, Any]], None]


# A killed server closes its sockets before it can be reaped: the client may see every request fail
# a moment before the process is reported dead. Failed requests wait this long for that report.
DEATH_SETTLE_S = 2.0


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
    """Each finished cell goes to disk at once (records first, then its summary line). The one place
    rows are stored (the local executor here, the Ray executor on the driver), so it numbers them:
    ``seq`` is a row's position in the run dir's whole run order, across rounds and resumes."""

    def __init__(self, run_dir: RunDir) -> None:
        self.run_dir = run_dir
        self._seq: int | None = None

    def next_seq(self) -> int:
        if self._seq is None:  # after every stored row (a resumed run goes on counting)
            seqs = [r.get("seq") for r in self.run_dir.iter_summary()]
            ints = [x for x in seqs if isinstance(x, int) and not isinstance(x, bool)]
            self._seq = max([len(seqs) - 1, *ints]) + 1
        seq, self._seq = self._seq, self._seq + 1
        return seq

    def cell_done(self, cell: Cell, repeat: int, row: dict[str, Any], records: list[RequestRecord]) -> None:
        if records:
            p = self.run_dir.write_records(cell.cell_id, repeat, records)
            row["records"] = str(p.relative_to(self.run_dir.path))
        row["seq"] = self.next_seq()
        self.run_dir.append_summary(row)

    def server_info(self, label: str, info: dict[str, Any]) -> None:
        servers = dict(self.run_dir.manifest.get("servers") or {})
        servers[label] = {**info, "launches": merge_launches(servers.get(label), info.get("launches"))}
        self.run_dir.update_manifest(servers=servers)


def merge_launches(prev: Any, new: Any) -> list[dict[str, Any]]:
    """A config launched once per round is a new ManagedServer each time: its record keeps every
    launch of the run (reap finds a killed run's servers by them), a launch updated in place once."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for x in [*((prev or {}).get("launches") or []), *(new or [])]:
        if isinstance(x, dict):
            out[(x.get("started_at"), x.get("pid"), x.get("port"), x.get("launch_id"))] = x
    return list(out.values())


def no_observer(event: str, data: dict[str, Any]) -> None:
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
    exp: Experiment, plan: Plan, cfg: ServerConfig, cell: Cell, server: ManagedServer, pool: int | None = None
) -> BenchConfig:
    """The client's settings for one run of ``cell``; ``pool``: the cell's planned prompts, when the
    run is a shorter one (it measures their first ``cell.num_prompts``)."""
    c = exp.client
    backend = cfg.spec.backend or c.backend or DEFAULT_BACKEND[cfg.spec.kind]
    return BenchConfig(
        base_url=server.base_url,
        scenario=plan.scenarios[cell.scenario],
        backend=backend,
        model=server.model_id,
        tokenizer=c.tokenizer,
        num_prompts=cell.num_prompts,
        prompt_pool=pool,
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
        spec_tokens=spec_tokens(cfg.method or "", cfg.params),
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
    """Everything ``run_config`` needs, picklable (for executors that run it elsewhere). Its work, in
    one launch: ``runs`` ((cell, repeat) in order) when given, else the configuration's cells x
    repeats not in ``finished`` (``plan.todo``). ``round``: the round its rows belong to (None: each
    row's repeat, as a blocked run numbers them)."""

    cfg: ServerConfig
    plan: Plan
    run_path: Path
    finished: set[tuple[str, int]] = field(default_factory=set)
    runs: tuple[tuple[Cell, int], ...] | None = None
    round: int | None = None
    warmup_once: bool = False  # the client's warmup before the launch's first run only (the design's)

    def planned_prompts(self, cell: Cell) -> int | None:
        """The plan's prompts of ``cell`` (a shorter run of it has fewer)."""
        return next(
            (c.num_prompts for c in self.plan.cells.get(self.cfg.label, ()) if c.cell_id == cell.cell_id),
            None,
        )

    def length(self, cell: Cell) -> float | None:
        """A run's share of its cell's planned prompts (the design's shorter runs); None: the plan's."""
        ref = self.planned_prompts(cell)
        return None if not ref or ref == cell.num_prompts else cell.num_prompts / ref

    @property
    def cells(self) -> list[Cell]:
        return self.plan.cells[self.cfg.label]

    def todo(self) -> list[tuple[Cell, int]]:
        return list(self.runs) if self.runs is not None else self.plan.todo(self.finished, self.cfg.label)


def run_config(
    job: ConfigJob, sink: CellSink, *, bench_fn: BenchFn | None = None, observer: Observer = no_observer
) -> int:
    """Launch ``job.cfg``'s server, run its unfinished cells x repeats, stop it. Every finished cell
    goes to ``sink`` (nothing is kept here); returns how many it got."""
    exp = job.plan.experiment
    cfg = job.cfg
    bench_fn = bench_fn or default_bench_fn()
    todo = job.todo()
    stored = 0
    if not todo:
        return stored
    server = ManagedServer(
        cfg,
        job.run_path / "logs" / log_file_name(cfg.label),
        ready_timeout_s=exp.timeouts.ready_s,
        stop_s=exp.timeouts.stop_s,
        on_launch=RunDir(job.run_path).journal_launch,  # what a kill -9 leaves, the next run finds
    )

    launch_s = 0.0  # the latest launch's start -> ready time (the design weighs launches by it)
    t_cell = time.monotonic()

    def emit(row: dict[str, Any], cell: Cell, repeat: int, records: list[RequestRecord]) -> None:
        nonlocal stored
        # the run's wall time, its warmup included (a launch failure's rows cost nothing of their own)
        row.update(round=repeat if job.round is None else job.round, launch_s=round(launch_s, 3),
                   wall_s=round(time.monotonic() - t_cell, 3) if t_cell else 0.0)  # fmt: skip
        if (share := job.length(cell)) is not None:
            row["length"] = round(share, 6)
        sink.cell_done(cell, repeat, row, records)
        stored += 1
        observer("cell_done", {"cell": cell, "repeat": repeat, "row": row})

    def fail_rest(start: int, kind: str, error: str, log_tail: str) -> None:
        nonlocal t_cell
        t_cell = 0.0
        for cell, repeat in todo[start:]:
            emit(failed_row(cell, repeat, cfg, kind, error, log_tail, now_iso()), cell, repeat, [])

    restarts = 0
    lossless_outputs: list[dict[str, Any]] | None = None
    pinning = contextlib.ExitStack()
    try:
        # a pinned engine's client runs off its cores (restored once the server has stopped)
        client_cpus = pinning.enter_context(affinity.client_off(_pinned(server)))
        t0 = time.monotonic()
        launch_error = _launch(server, observer, sink, client_cpus)
        launch_s = time.monotonic() - t0
        if launch_error:
            fail_rest(0, *launch_error)
            return stored
        for i, (cell, repeat) in enumerate(todo):
            raise_if_interrupted()  # a Ctrl-C whose KeyboardInterrupt was swallowed stops here
            t_cell = time.monotonic()
            if i and exp.cooldown_s:
                time.sleep(exp.cooldown_s)
            observer("cell_start", {"cell": cell, "repeat": repeat, "index": i, "of": len(todo)})
            started = now_iso()
            bcfg = bench_config(exp, job.plan, cfg, cell, server, pool=job.planned_prompts(cell))
            if job.warmup_once and i:  # the launch is warm: its first run warmed it up
                bcfg.warmup_requests = 0
            try:
                outcome = kstamp.run(_watch(server, bench_fn(bcfg), exp.timeouts.cell_s))
            except Exception as e:  # failures are data: the cell fails, the grid goes on
                err = str(e) or type(e).__name__
                kind = "server_died" if isinstance(e, ServerDied) else "cell_timeout"
                if not isinstance(e, (ServerDied, CellTimeout)):
                    kind = "bench_error"
                if not isinstance(e, ServerDied) and server.exited_within(DEATH_SETTLE_S):
                    err = f"server exited with code {server.returncode} during the cell ({err})"
                    kind = "server_died"
                row = failed_row(cell, repeat, cfg, kind, err, server.log_tail(), started, server)
                emit(row, cell, repeat, [])
            else:
                res = outcome.result
                if (res.get("failed") or not res.get("completed")) and server.exited_within(DEATH_SETTLE_S):
                    # it finished, but only because the server went away under it
                    err = f"server exited with code {server.returncode} during the cell"
                    kind = "server_died"
                    row = failed_row(cell, repeat, cfg, kind, err, server.log_tail(), started, server)
                elif not res.get("completed") and cell.num_prompts:
                    err = f"every request failed: {res.get('errors_by_kind') or res.get('failed')}"
                    row = {
                        **ok_row(cell, repeat, cfg, outcome, started, server),
                        "status": "failed",
                        "failure_kind": "all_requests_failed",
                        "error": err,
                    }
                else:
                    row = ok_row(cell, repeat, cfg, outcome, started, server)
                emit(row, cell, repeat, outcome.records)
            if not server.alive() and i + 1 < len(todo):
                observer("server_died", {"label": cfg.label, "returncode": server.returncode})
                _stop(server)
                restarts += 1
                if restarts > exp.max_restarts:
                    why = f"server died {restarts} times (max_restarts = {exp.max_restarts})"
                    fail_rest(i + 1, "restarts_exhausted", why, "")
                    return stored
                t0 = time.monotonic()
                launch_error = _launch(server, observer, sink, client_cpus)
                launch_s = time.monotonic() - t0
                if launch_error:
                    fail_rest(i + 1, *launch_error)
                    return stored
        lossless_outputs = _lossless_outputs(job, server, observer)
    finally:
        with signals_deferred():  # stopped, and said so in the manifest, whatever arrives meanwhile
            server.stop()
            pinning.close()
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
    from specsweep.client.lossless import collect_outputs

    if job.cfg.label not in lossless_pair(opts, [c.label for c in job.plan.configs]):
        return None
    observer("lossless", {"label": job.cfg.label})
    try:
        return collect_outputs(server.base_url, backend=opts.backend, num_prompts=opts.num_prompts,
                               max_tokens=opts.max_tokens, seed=opts.seed, model=server.model_id)  # fmt: skip
    except Exception as e:  # failures are data: the check shows the errors
        return [{"text": None, "error": f"{type(e).__name__}: {e}"}] * opts.num_prompts


def _pinned(server: ManagedServer) -> frozenset[int] | None:
    try:
        return server.pinned_cpus()
    except SpecsweepError:  # the launch reports it
        return None


def _check_running(server: ManagedServer, client_cpus: frozenset[int]) -> None:
    """The cores a running CPU engine's threads may use, against the client's (``cpu_affinity``)."""
    argv = server.argv or []
    if server.proc is None or not is_cpu_engine(server.cfg, argv) or not affinity.supported():
        return
    c = check_affinity(server.cfg.label, engine_of(server.cfg, argv), affinity.tree_cpus(server.proc.pid),
                       server.cpus, client_cpus, affinity.host_cpus())  # fmt: skip
    if c is None:
        return
    if c.status != "pass":
        log.warning("preflight %s %s: %s (fix: %s)", c.status, c.config, c.message, c.fix)
    server.checks = [c.to_dict()]


def _launch(
    server: ManagedServer, observer: Observer, sink: CellSink, client_cpus: frozenset[int]
) -> tuple[str, str, str] | None:
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
        return launch_failure_kind(error), error, server.log_tail()
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
    _check_running(server, client_cpus)
    sink.server_info(cfg.label, server.describe())
    return None


def _stop(server: ManagedServer) -> None:
    with signals_deferred():
        server.stop()
