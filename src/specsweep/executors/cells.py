"""A cell's summary row, and why a cell failed (``failure_kind``), as data.

Every row a run stores comes from one of these builders: ``ok_row`` for a measured cell (status
``ok``, or ``invalid`` with its reason), ``failed_row`` for a cell with no measurement. Both carry
the cell's identity (``Cell.to_dict``), its server kind, repeat and start/end times.
"""

from __future__ import annotations

from typing import Any

from specsweep.client.bench_types import BenchOutcome
from specsweep.experiment.config import Cell, ServerConfig
from specsweep.servers.process import ManagedServer, now_iso

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


def launch_failure_kind(error: str) -> str:
    """readiness_timeout or server_start, from ManagedServer.start's message ("server LABEL not ready
    after N s ..." is its only timeout; every other launch error is a start failure)."""
    return "readiness_timeout" if " not ready after " in error else "server_start"


def base_row(cell: Cell, repeat: int, cfg: ServerConfig, started: str) -> dict[str, Any]:
    return {
        **cell.to_dict(),
        "kind": cfg.spec.kind,
        "repeat": repeat,
        "started_at": started,
        "ended_at": now_iso(),
    }


def ok_row(
    cell: Cell, repeat: int, cfg: ServerConfig, outcome: BenchOutcome, started: str, server: ManagedServer
) -> dict[str, Any]:
    return {
        **outcome.result,
        **base_row(cell, repeat, cfg, started),
        "server_version": server.version,
        "status": "invalid" if outcome.invalid_reason else "ok",
        "failure_kind": None,
        "error": None,
        "invalid_reason": outcome.invalid_reason,
    }


def failed_row(
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
        **base_row(cell, repeat, cfg, started),
        "server_version": server.version if server else None,
        "status": "failed",
        "failure_kind": failure_kind,
        "error": error,
        "log_tail": log_tail,
    }
