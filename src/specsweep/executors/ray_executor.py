"""The Ray executor: each launch of a round (a configuration's server and its runs in that round;
specsweep.experiment.rounds) is one Ray task; a round's tasks run in parallel where the cluster
has room, and the next round starts when they have all finished.

    driver (specsweep run)                              node with the resources
    ----------------------                              -----------------------
    submit run_config(job) with config_demand(cfg) ---> task: scratch dir, launch server, runs
    inbox actor (pinned to the driver's node)     <---  each finished cell: row + records,
      drained every 0.2 s -> RunDirSink (run dir)       server info, log bytes, progress events
                                                        server torn down; scratch removed

Only the driver writes the run dir, so the run dir format and ``--resume`` are the local
executor's. The task hands each finished cell to the inbox before it goes on (a blocking call), so
what the driver holds is exactly what finished.

Failures: a task whose worker or node is lost (Ray raises WorkerCrashedError, NodeDiedError, ...)
gets its unfinished cells written as ``failed`` rows (``error`` names the loss), then the
configuration is submitted again for those cells, up to ``max_attempts`` attempts; a lost node has
left the cluster, so the retry lands elsewhere. An exception inside the task (a bug, not a loss)
fails the unfinished cells without retry. A server outliving its dead worker is stopped by the
watchdog (specsweep.executors.watchdog). Ctrl-C cancels the tasks (the watchdogs stop the servers),
keeps finished cells and re-raises.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specsweep.client.ray_support import require_ray
from specsweep.errors import SpecsweepError
from specsweep.executors.cells import failed_row
from specsweep.executors.job import BenchFn, ConfigJob, Observer, RunDirSink, run_config
from specsweep.executors.resources import Demand, config_demand, infeasible
from specsweep.experiment.config import Cell, Plan, ServerConfig
from specsweep.measure.records import RequestRecord
from specsweep.servers.process import now_iso
from specsweep.store.run_dir import RunDir

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 3
POLL_S = 0.2


def import_ray() -> Any:
    """Ray, or MissingDependency naming ``--executor ray`` and its extra."""
    return require_ray("--executor ray")


def init_ray(address: str | None) -> bool:
    """Connect to ``address`` (or RAY_ADDRESS), else start a small local cluster. True if this call
    started/connected Ray (and so should shut it down)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address is None and not os.environ.get("RAY_ADDRESS"):
        kw["object_store_memory"] = 200 * 1024 * 1024  # a local cluster: keep it small
    try:
        ray.init(address=address, **kw)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise SpecsweepError(f"cannot connect to the Ray cluster at {address or 'RAY_ADDRESS'}: {e}") from e
    return True


# ---- the task side -----------------------------------------------------------------------------
class _Inbox:
    """Driver-side mailbox actor: tasks put, the driver drains (in order)."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, ...]] = []

    def put(self, item: tuple[Any, ...]) -> None:
        self.items.append(item)

    def drain(self) -> list[tuple[Any, ...]]:
        out, self.items = self.items, []
        return out


class InboxSink:
    """A CellSink that sends everything to the driver's inbox and ships server logs as they grow."""

    def __init__(self, inbox: Any, scratch: Path, meta: dict[str, Any]) -> None:
        self.inbox = inbox
        self.scratch = scratch
        self.meta = meta
        self.sent: dict[str, int] = {}

    def put(self, item: tuple[Any, ...]) -> None:
        ray = import_ray()
        ray.get(self.inbox.put.remote(item))

    def ship_logs(self) -> None:
        d = self.scratch / "logs"
        if not d.is_dir():
            return
        for p in sorted(d.iterdir()):
            with contextlib.suppress(OSError), p.open("rb") as f:
                f.seek(self.sent.get(p.name, 0))
                data = f.read()
                if data:
                    self.put(("log", p.name, data))
                    self.sent[p.name] = self.sent.get(p.name, 0) + len(data)

    def cell_done(self, cell: Cell, repeat: int, row: dict[str, Any], records: list[RequestRecord]) -> None:
        self.ship_logs()
        self.put(("cell", cell, repeat, {**row, **self.meta}, records))

    def server_info(self, label: str, info: dict[str, Any]) -> None:
        self.put(("server_info", label, info))


class _OrphanGuard:
    """One watchdog process per server launch (see specsweep.executors.watchdog)."""

    def __init__(self, stop_s: float, scratch: Path) -> None:
        self.stop_s = stop_s
        self.scratch = scratch
        self.procs: list[subprocess.Popen[bytes]] = []

    def watch(self, pgid: int) -> None:
        self.procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "specsweep.executors.watchdog",
                    str(pgid),
                    str(self.stop_s),
                    str(self.scratch),
                ],
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        )

    def close(self) -> None:
        for p in self.procs:  # the servers are stopped by now: each watchdog is exiting or idle
            with contextlib.suppress(OSError):
                p.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)


def _server_pid(data: dict[str, Any]) -> int | None:
    pid = data.get("pid")
    if isinstance(pid, int):
        return pid
    # Fallback: this worker's newest child that leads its own session (the server).
    mine = os.getpid()
    best = None
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == mine and int(fields[3]) == int(d):  # ppid == us, session id == itself
            best = max(best or 0, int(d))
    return best


SCRATCH_PREFIX = "specsweep-ray-"


def _sweep_scratch() -> None:
    """Remove scratch dirs of dead task workers on this node (``specsweep-ray-<pid>-*``): a worker
    killed by Ray together with its watchdog leaves its scratch dir behind."""
    base = Path(tempfile.gettempdir())
    for d in base.glob(f"{SCRATCH_PREFIX}*-*"):
        try:
            pid = int(d.name[len(SCRATCH_PREFIX) :].split("-", 1)[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:
            pass


def _task(
    job: ConfigJob, inbox: Any, attempt: int, driver_cwd: str, bench_fn: BenchFn | None
) -> dict[str, Any]:
    """Runs on the chosen node: ``run_config`` into a scratch dir, everything streamed to the inbox."""
    ray = import_ray()
    if os.path.isdir(driver_cwd):  # relative paths in the experiment mean the driver's directory
        os.chdir(driver_cwd)
    ctx = ray.get_runtime_context()
    meta = {
        "executor": "ray",
        "attempt": attempt,
        "node": socket.gethostname(),
        "node_id": ctx.get_node_id(),
        "ray_gpu_ids": [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])],
    }
    _sweep_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    sink = InboxSink(inbox, scratch, meta)
    sink.put(("started", job.cfg.label, attempt, meta["node_id"]))
    guard = _OrphanGuard(job.plan.experiment.timeouts.stop_s, scratch)

    def observer(event: str, data: dict[str, Any]) -> None:
        if event == "server_ready":
            pid = _server_pid(data)
            if pid:
                guard.watch(pid)
        if event == "cell_done":  # the driver emits it once the cell is stored
            return
        sink.put(
            (
                "event",
                event,
                {**data, "node": meta["node"], "worker_pid": os.getpid(), "scratch": str(scratch)},
            )
        )

    try:
        n = run_config(replace(job, run_path=scratch), sink, bench_fn=bench_fn, observer=observer)
        sink.ship_logs()
    finally:
        guard.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return {"rows": n, **meta}


# ---- the driver side ---------------------------------------------------------------------------
@dataclass
class _Attempt:
    job: ConfigJob  # its runs: the attempt's cells x repeats
    attempt: int
    submitted_at: str
    base: dict[tuple[str, int], int] = field(default_factory=dict)  # rows written before it ran
    avoid: str | None = None  # node id the previous attempt was lost on

    @property
    def cfg(self) -> ServerConfig:
        return self.job.cfg

    @property
    def todo(self) -> list[tuple[Cell, int]]:
        return self.job.todo()


class RaySession:
    """The ``ray`` executor of one run: connected (or a local cluster started) on first use, each
    ``run(jobs)`` (a round's launches) submitted as Ray tasks and waited for, ``close`` shuts down
    what it started."""

    def __init__(
        self,
        run_dir: RunDir,
        *,
        bench_fn: BenchFn | None,
        observer: Observer,
        address: str | None = None,
        max_parallel: int | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self.ray = import_ray()
        self.address = address
        self.run_dir = run_dir
        self.sink = RunDirSink(run_dir)
        self.bench_fn = bench_fn
        self.observer = observer
        self.max_parallel = max_parallel
        self.max_attempts = max(1, max_attempts)
        self.written: Counter[tuple[str, int]] = Counter()  # rows written this invocation (any status)
        self.started_on: dict[tuple[str, int], str] = {}  # (label, attempt) -> node id
        self._started: bool | None = None  # None: not connected yet
        self._inbox: Any = None

    def _connect(self) -> Any:
        if self._started is None:
            self._started = init_ray(self.address)
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = self.ray.get_runtime_context().get_node_id()
            self._inbox = (
                self.ray.remote(num_cpus=0)(_Inbox)
                .options(scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False))
                .remote()
            )
        return self._inbox

    def close(self) -> None:
        if self._started is None:
            return
        with contextlib.suppress(Exception):
            self.ray.kill(self._inbox)
        if self._started:
            self.ray.shutdown()
        self._started = None

    # inbox items -> run dir, observer
    def _apply(self, items: list[tuple[Any, ...]]) -> None:
        for item in items:
            kind = item[0]
            if kind == "cell":
                _, cell, repeat, row, records = item
                self._store(cell, repeat, row, records)
            elif kind == "server_info":
                self.sink.server_info(item[1], item[2])
            elif kind == "log":
                with (self.run_dir.logs_dir / item[1]).open("ab") as f:
                    f.write(item[2])
            elif kind == "started":
                self.started_on[(item[1], item[2])] = item[3]
            elif kind == "event":
                self.observer(item[1], item[2])

    def _store(self, cell: Cell, repeat: int, row: dict[str, Any], records: list[RequestRecord]) -> None:
        self.sink.cell_done(cell, repeat, row, records)
        self.written[(cell.cell_id, repeat)] += 1
        self.observer("cell_done", {"cell": cell, "repeat": repeat, "row": row})

    def _fail(self, att: _Attempt, kind: str, error: str) -> list[tuple[Cell, int]]:
        """Write failed rows for the attempt's cells that got no row from it; returns them."""
        left = [
            (c, r) for c, r in att.todo if self.written[(c.cell_id, r)] == att.base.get((c.cell_id, r), 0)
        ]
        for cell, repeat in left:
            row = failed_row(cell, repeat, att.cfg, kind, error, "", att.submitted_at)
            row.update(executor="ray", attempt=att.attempt, wall_s=0.0, launch_s=0.0,
                       round=repeat if att.job.round is None else att.job.round)  # fmt: skip
            self._store(cell, repeat, row, [])
        return left

    def run(self, jobs: Sequence[ConfigJob]) -> int:
        """Run a round's launches as Ray tasks (queued in launch order, at most ``max_parallel`` at a
        time) until every one has finished, storing into the run dir; returns the rows written."""
        ray = self.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        inbox = self._connect()
        remote = ray.remote(max_retries=0)(_task)
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        queue = [_Attempt(job, 1, now_iso()) for job in jobs if job.todo()]
        pending: dict[Any, _Attempt] = {}
        demands: dict[str, Demand] = {}
        before = sum(self.written.values())
        try:
            while queue or pending:
                while queue and (self.max_parallel is None or len(pending) < self.max_parallel):
                    att = queue.pop(0)
                    workers = att.job.plan.experiment.client.workers
                    d = demands.setdefault(att.cfg.label, config_demand(att.cfg, workers))
                    if att.attempt > 1:  # a node may have left since
                        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
                    why = infeasible(d, nodes)
                    if why:
                        self._fail(att, "infeasible", why)
                        continue
                    att.submitted_at = now_iso()
                    att.base = {(c.cell_id, r): self.written[(c.cell_id, r)] for c, r in att.todo}
                    job = replace(att.job, run_path=self.run_dir.path)
                    opts = d.options()
                    if att.avoid:  # prefer another node that fits (soft: else wherever Ray can)
                        alive = [n for n in ray.nodes() if n.get("Alive")]
                        other = [n["NodeID"] for n in alive if n["NodeID"] != att.avoid
                                 and infeasible(d, [n.get("Resources", {})]) is None]  # fmt: skip
                        if other:
                            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(other[0], soft=True)
                    ref = remote.options(**opts).remote(job, inbox, att.attempt, os.getcwd(), self.bench_fn)
                    pending[ref] = att
                    self.observer("ray_submit", {"label": att.cfg.label, "attempt": att.attempt, "demand": d})
                if not pending:
                    continue
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
                self._apply(ray.get(inbox.drain.remote()))
                for ref in ready:
                    att = pending.pop(ref)
                    retry = self._settle(ref, att)
                    if retry is not None:
                        queue.append(retry)
        except BaseException:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            with contextlib.suppress(Exception):
                self._apply(ray.get(inbox.drain.remote(), timeout=10))
            raise
        return sum(self.written.values()) - before

    def _settle(self, ref: Any, att: _Attempt) -> _Attempt | None:
        """A finished task: nothing to do, or its lost cells failed (and a retry to queue). The inbox
        was drained after the task ended, so every cell it finished is already stored."""
        ray = self.ray
        try:
            ray.get(ref)
            return None
        except ray.exceptions.RayTaskError as e:  # an exception inside run_config: not a lost node
            left = self._fail(
                att, "executor_error", f"the Ray task failed: {str(e).splitlines()[-1] if str(e) else e!r}"
            )
            log.error("%s: task failed; %d cell(s) failed", att.cfg.label, len(left))
            return None
        except ray.exceptions.RayError as e:
            what = type(e).__name__
            left = self._fail(
                att, "executor_lost", f"Ray worker/node lost ({what}) during attempt {att.attempt}"
            )
            log.warning("%s: Ray worker/node lost (%s); %d unfinished cell(s) failed%s", att.cfg.label, what,
                        len(left), "; retrying them" if left and att.attempt < self.max_attempts else "")  # fmt: skip
            self.observer("ray_lost", {"label": att.cfg.label, "attempt": att.attempt, "error": what,
                                       "cells_failed": len(left)})  # fmt: skip
            if left and att.attempt < self.max_attempts:
                lost_on = self.started_on.get((att.cfg.label, att.attempt))
                retry = replace(att.job, runs=tuple(left), finished=set())
                return _Attempt(retry, att.attempt + 1, now_iso(), avoid=lost_on)
            return None


def run_configs(
    plan: Plan,
    run_dir: RunDir,
    finished: set[tuple[str, int]],
    *,
    bench_fn: BenchFn | None = None,
    observer: Observer,
    address: str | None = None,
    max_parallel: int | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> int:
    """Run every unfinished cell of ``plan`` as Ray tasks, one per configuration (its runs blocked
    in one launch), storing into ``run_dir``; returns how many rows it wrote. Connects to
    ``address`` (else RAY_ADDRESS, else a new local cluster) unless Ray is already initialised."""
    ex = RaySession(run_dir, bench_fn=bench_fn, observer=observer, address=address,
                    max_parallel=max_parallel, max_attempts=max_attempts)  # fmt: skip
    try:
        return ex.run([ConfigJob(cfg, plan, run_dir.path, finished) for cfg in plan.configs])
    finally:
        ex.close()
