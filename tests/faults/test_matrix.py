"""The fault matrix: each fault the simulator can inject x each stage it can meet, through `specsweep run`.

Generation requests reach a server in a known order (concurrency 1 first, then 2; one warmup request
per cell; four measured requests): 1 = the launcher's readiness probe, 2 = warmup of the first
cell, 3-6 = its measured requests, 7 = warmup of the second cell, 8-11 = its measured requests.
Measurement faults hit 3 of the 4 measured requests, so the cell keeps
a completed request and is 'ok' with the errors in its records (a cell where every request failed
is itself 'failed': error-measurement_all). staged_sim.py aims a fault at such a range; the `sim` launcher with --faults is used where the
fault places itself (crash_after, slow_start_s, rate 1 at readiness).

Invariants of every case (harness.check_invariants): the run ends by itself; no process is left;
every finished cell's records reload and agree with its summary line; every failure carries its kind
and evidence. Each case then checks what it should have produced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .harness import Result, check_invariants, experiment, record_errors, run, sim_server, staged_server

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]
FINISHED = {"ok", "invalid"}


@dataclass
class Case:
    fault: str
    stage: str
    exp: dict[str, Any]
    check: Callable[[Result], None]
    max_s: float = 60.0  # the run ends by itself well within this
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.fault}-{self.stage}"


def all_failed(*needles: str, log: str | None = None) -> Callable[[Result], None]:
    """The server never became ready: every cell is a failed row that says why (and shows the log)."""

    def check(res: Result) -> None:
        assert res.rc == 1, res.stderr
        rows = res.rows
        assert len(rows) == 2 and {r["status"] for r in rows} == {"failed"}
        for r in rows:
            for n in needles:
                assert n in r["error"], (n, r["error"])
            if log is not None:
                assert log in (r.get("log_tail") or ""), r.get("log_tail")
            assert not res.run_dir.records_path(r["cell_id"]).exists()

    return check


def request_errors(
    kind: str, *, warmup: int = 0, measured: int = 0, needle: str = ""
) -> Callable[[Result], None]:
    """The server stays up: both cells finish ('ok'); the first cell's records carry the fault."""

    def check(res: Result) -> None:
        assert res.rc == 0, res.stderr
        first, second = res.rows
        assert {first["status"], second["status"]} <= FINISHED
        assert record_errors(res, first, warmup=True) == ({kind: warmup} if warmup else {})
        assert record_errors(res, first, warmup=False) == ({kind: measured} if measured else {})
        assert first["errors_by_kind"] == ({kind: measured} if measured else {})
        assert record_errors(res, second) == {}, "the fault was aimed at the first cell only"
        if needle:
            recs = res.run_dir.read_records(first["cell_id"])
            assert any(needle in (x.error or "") for x in recs if x.error_kind == kind)

    return check


def statuses(
    *want: str, needle: str = "", log: str = "", launches: int | None = None
) -> Callable[[Result], None]:
    def check(res: Result) -> None:
        # 'invalid' is a finished cell whose client self-check tripped (CPU noise on a shared box)
        got = ["ok" if r["status"] in FINISHED else r["status"] for r in res.rows]
        assert got == list(want), (got, res.stderr[-2000:])
        assert res.rc == (1 if "failed" in want else 0), res.stderr
        for r in res.rows:
            if r["status"] == "failed":
                assert needle in r["error"], r["error"]
                assert log in (r.get("log_tail") or ""), r.get("log_tail")
        if launches is not None:
            (srv,) = res.run_dir.manifest["servers"].values()
            assert len(srv["launches"]) == launches, srv["launches"]
            assert all("stopped_at" in x for x in srv["launches"])

    return check


def faulted(spec: str, requests: str, *extra: str) -> dict[str, Any]:
    return staged_server("--faults", spec, "--fault-requests", requests, *extra)


SHORT_READY = {"ready_s": 8}
STALL = "stall_after_tokens=2,stall_s=60"
CASES = [
    # ---- HTTP error status
    Case("error", "readiness", experiment(sim_server("error_rate=1,error_status=503"), timeouts=SHORT_READY),
         all_failed("not ready after 8 s", "HTTP 503")),
    Case("error", "warmup", experiment(faulted("error_rate=1,error_status=503", "2:2")),
         request_errors("http_status", warmup=1)),
    Case("error", "measurement", experiment(faulted("error_rate=1,error_status=429", "3:5")),
         request_errors("http_status", measured=3, needle="HTTP 429")),
    Case("error", "measurement_all", experiment(faulted("error_rate=1,error_status=500", "3:6")),
         statuses("failed", "ok", needle="every request failed")),
    # ---- stall (a hung stream): past the request timeout it is a 'timeout'; past cell_s the cell fails
    Case("stall", "readiness", experiment(staged_server("--readiness-fault", "hang"), timeouts=SHORT_READY),
         all_failed("not ready after 8 s"), max_s=30),
    Case("stall", "warmup", experiment(faulted(STALL, "2:2"), client={"request_timeout_s": 1.5}),
         request_errors("timeout", warmup=1)),
    Case("stall", "measurement", experiment(faulted(STALL, "3:4"), client={"request_timeout_s": 1.5}),
         request_errors("timeout", measured=2, needle="no complete response within 1.5 s")),
    Case("stall", "cell_timeout", experiment(faulted(STALL, "3:3"), timeouts={"cell_s": 3}),
         statuses("failed", "ok", needle="did not finish within timeouts.cell_s = 3 s"), max_s=40),
    # ---- disconnect mid-stream
    Case("disconnect", "readiness", experiment(staged_server("--readiness-fault", "abort"), timeouts=SHORT_READY),
         all_failed("not ready after 8 s", "generation request failed")),
    Case("disconnect", "warmup", experiment(faulted("disconnect_rate=1,disconnect_after_tokens=3", "2:2")),
         request_errors("disconnect", warmup=1)),
    Case("disconnect", "measurement", experiment(faulted("disconnect_rate=1,disconnect_after_tokens=3", "3:5")),
         request_errors("disconnect", measured=3)),
    # ---- malformed chunk / garbage answer
    Case("malformed", "readiness", experiment(staged_server("--readiness-fault", "garbage"), timeouts=SHORT_READY),
         all_failed("not ready after 8 s", "no choices")),
    Case("malformed", "warmup", experiment(faulted("malformed_rate=1", "2:2")), request_errors("malformed", warmup=1)),
    Case("malformed", "measurement", experiment(faulted("malformed_rate=1", "3:5")),
         request_errors("malformed", measured=3)),
    # ---- crash (process exits 70): a failed cell, a restart, the grid goes on
    Case("crash", "readiness", experiment(sim_server("crash_after=0")),
         all_failed("exited with code 70 before it was ready", log="simulated crash")),
    Case("crash", "warmup", experiment(sim_server("crash_after=1"), max_restarts=1),
         statuses("failed", "failed", needle="server", launches=2)),
    Case("crash", "measurement", experiment(sim_server("crash_after=8"), concurrency=(1, 2, 3)),
         statuses("ok", "failed", "ok", needle="server exited with code 70", log="simulated crash", launches=2)),
    # ---- slow start: survived within ready_s, a clear failure past it
    Case("slow_start", "readiness", experiment(sim_server("slow_start_s=2")), statuses("ok", "ok")),
    Case("slow_start", "readiness_timeout", experiment(sim_server("slow_start_s=60"), timeouts=SHORT_READY),
         all_failed("not ready after 8 s", "waiting for health")),
    # ---- diverge: output leaves the deterministic text; not an error for a benchmark (lossless checks it)
    Case("diverge", "measurement", experiment(sim_server("diverge=1")), statuses("ok", "ok")),
    # ---- teardown: the leader ignores SIGTERM / a worker outlives the leader -> SIGKILL of the group
    Case("ignore_sigterm", "teardown", experiment(staged_server("--trap-sigterm", "--child"), timeouts={"stop_s": 1}),
         statuses("ok", "ok", launches=1)),
    Case("orphan_worker", "teardown", experiment(staged_server("--child"), timeouts={"stop_s": 1}),
         statuses("ok", "ok", launches=1)),
    Case("stall", "teardown", experiment(faulted(STALL, "6:6"), client={"request_timeout_s": 1}, concurrency=(1,)),
         statuses("ok")),
]  # fmt: skip


# The lean CI set keeps one case per fault at the stage where it matters most, plus every readiness
# failure path that differs and both teardown cases; the rest of the cross product is `slow`.
SLOW = {
    "error-warmup", "stall-warmup", "disconnect-warmup", "malformed-warmup", "disconnect-readiness",
    "malformed-readiness", "stall-teardown", "error-measurement_all", "diverge-measurement", "slow_start-readiness",
}  # fmt: skip
assert {c.id for c in CASES} >= SLOW


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.id in SLOW else []) for c in CASES]
)
def test_fault(case: Case, tmp_path: Path) -> None:
    res = run(case.exp, tmp_path, timeout_s=case.max_s + 60)
    check_invariants(res)
    case.check(res)
    assert res.elapsed_s < case.max_s, f"took {res.elapsed_s:.1f} s (limit {case.max_s} s)"
