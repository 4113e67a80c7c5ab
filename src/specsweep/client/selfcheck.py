"""The client's self-check: is a run's timing the server's, or partly the client's and the host's?

One rule for every run, whatever the number of client workers. Each worker measures its own load
while it drives requests (:func:`measuring`: CPU share, event-loop lag, arrival-schedule lag, how
long bytes waited in the socket; cyclic GC off); :func:`judge` takes the workers' loads and the
merged records with their stamp bounds and returns the figures, the reasons a run is invalid and
the warnings.

Stamp bounds (kernel stamps): an SSE event read together with later bytes carries the newer bytes'
stamp (the kernel merges queued segments, keeping the newest stamp), so its true arrival lies in
``[stamp - bound, stamp]``; the runner records that bound per chunk (0 where the event's bytes were
the newest of the read). From them :func:`stamp_damage` computes how far each reported TTFT and ITL
figure (mean, p50, p99) could be from the truth: percentiles are monotone in every sample, so the
truth's percentile lies between the percentiles of the lower and the upper ends. A run whose
figures could be off by more than ``MAX_STAMP_ERROR_MS`` is invalid, whoever is to blame (a busy
client or a busy host): the number would be wrong either way.

A starved client (one that waits for a CPU: the lag monitor samples that wait too, Linux
``schedstat``) reads late, and its late reads merge; the bounds cover that, and against a packet
capture every chunk of a client that got 3% of a CPU (waits of 600 ms) stayed within its bound
(docs/validation.md, "Wire truth"). A wait p99 over ``MAX_CPU_WAIT_P99_MS`` is said as a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specsweep.client import kstamp
from specsweep.measure.records import RequestRecord

_now = time.monotonic_ns

MAX_CLIENT_CPU = 0.90  # share of one core
MAX_LOOP_LAG_P99_MS = 10.0  # read-time stamps (no kernel stamps): loop lag is how late they are
MAX_SCHEDULE_LAG_P99_MS = 10.0  # open loop: the offered load was not the one asked for
# The event loop's thread waited for a CPU longer than this (p99 of the lag samples): said as a warning.
MAX_CPU_WAIT_P99_MS = 10.0
MAX_STAMP_ERROR_MS = 1.0  # kernel stamps: how far a TTFT/ITL mean or percentile may be off
MAX_SHARED_STAMPS = 0.01  # share of consecutive chunks read together above which a warning is given
LAG_PERIOD_S = 0.005  # event-loop lag (and CPU wait) sample period
WORST_LISTED = 50  # requests named in the result's stamp_error

# Per request index: [(chunk position, bound ns), ...] for chunks whose stamp may be late (bound > 0).
StampBounds = dict[int, list[tuple[int, int]]]

# Why a run is invalid, by code: the English sentence the result's ``invalid_reason`` gives. The result
# keeps each reason's code and figures too (``invalid_reasons``), which the report words in its language
# (report/i18n/texts.py, ``invalid.<code>``: the same sentence in English).
INVALID_REASONS = {
    "client_cpu": "client CPU saturated ({util:.0%} of one core)",
    "client_cpu_worker": "client CPU saturated ({util:.0%} of one core in worker {worker})",
    "schedule_late": "arrival schedule late (p99 {lag_ms:.1f} ms): the offered load was not the one asked for",
    "schedule_late_worker": (
        "arrival schedule late (p99 {lag_ms:.1f} ms in worker {worker}): the offered load was not the one asked for"
    ),
    "read_time": "{n} responses were stamped when read, not by the kernel (their arrival record was lost)",
    "stamps_off": (
        "arrival stamps could be off: {figure} by up to {worst_ms:.1f} ms (> {max_ms:g} ms); {n} requests had SSE "
        "events read together with later bytes (worst: request {index}, {bound_ms:.1f} ms)"
    ),
    "loop_lag": (
        "event-loop lag p99 {lag_ms:.1f} ms > {max_ms:g} ms: read-time stamps (no kernel stamps) are late by up "
        "to that much"
    ),
}


def invalid_reason(code: str, **args: Any) -> dict[str, Any]:
    """One reason a run is invalid: its code (:data:`INVALID_REASONS`) and figures."""
    return {"code": code, "args": args}


def reason_text(reason: Mapping[str, Any]) -> str:
    """A reason in English, as ``invalid_reason`` gives it."""
    return INVALID_REASONS[reason["code"]].format(**reason["args"])


def _run_queue_wait_ns(fd: int) -> int:
    """Time this thread has spent runnable but waiting for a CPU so far (``/proc/thread-self/
    schedstat``'s second field, ns)."""
    return int(os.pread(fd, 128, 0).split()[1])


class LagMonitor:
    """Samples event-loop lag every ``period`` seconds (how late a sleep wakes up) and, where the
    kernel says (Linux ``schedstat``), how long the loop's thread waited for a CPU meanwhile:
    ``cpu_wait_ms`` is None where that cannot be read."""

    def __init__(self, period: float = LAG_PERIOD_S) -> None:
        self.period = period
        self.lags_ms: list[float] = []
        self.cpu_wait_ms: list[float] | None = None
        self._task: asyncio.Task[None] | None = None
        self._fd: int | None = None
        with contextlib.suppress(OSError, ValueError, IndexError):
            fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)  # the event loop's thread
            try:
                _run_queue_wait_ns(fd)
            except (OSError, ValueError, IndexError):
                os.close(fd)
                raise
            self._fd, self.cpu_wait_ms = fd, []

    async def _run(self) -> None:
        p_ns = int(self.period * 1e9)
        fd, waits = self._fd, self.cpu_wait_ms
        w0 = _run_queue_wait_ns(fd) if fd is not None else 0
        while True:
            t = _now()
            await asyncio.sleep(self.period)
            self.lags_ms.append(max(0.0, (_now() - t - p_ns) / 1e6))
            if fd is not None and waits is not None:
                w1 = _run_queue_wait_ns(fd)
                waits.append((w1 - w0) / 1e6)
                w0 = w1

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass
class ClientLoad:
    """What one client process measured about itself while it drove its requests."""

    cpu_s: float = 0.0
    wall_s: float = 0.0
    loop_lag_ms: list[float] = field(default_factory=list)
    sched_lag_ms: list[float] = field(default_factory=list)
    read_age_ns: list[int] = field(default_factory=list)  # kernel stamps: how long reads' bytes waited
    cpu_wait_ms: list[float] | None = None  # per lag sample: how long the loop waited for a CPU (Linux)
    read_time_responses: int = 0  # responses whose chunks were stamped when read (no arrival record)

    def figures(self, kernel: bool) -> dict[str, float]:
        lag = np.asarray(self.loop_lag_ms or [0.0])
        out = {
            "client_cpu_util": self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0,
            "loop_lag_p50_ms": float(np.percentile(lag, 50)),
            "loop_lag_p99_ms": float(np.percentile(lag, 99)),
            "loop_lag_max_ms": float(lag.max()),
            "schedule_lag_p99_ms": float(np.percentile(self.sched_lag_ms, 99)) if self.sched_lag_ms else 0.0,
        }
        if kernel:
            out["read_time_responses"] = float(self.read_time_responses)
        if kernel and self.read_age_ns:
            ages = np.asarray(self.read_age_ns, dtype=np.float64) / 1e6
            out["read_delay_p50_ms"] = float(np.percentile(ages, 50))
            out["read_delay_p99_ms"] = float(np.percentile(ages, 99))
        if self.cpu_wait_ms is not None:
            waits = np.asarray(self.cpu_wait_ms or [0.0])
            out["cpu_wait_p99_ms"] = float(np.percentile(waits, 99))
            out["cpu_wait_max_ms"] = float(waits.max())
        return out


@contextlib.asynccontextmanager
async def measuring() -> AsyncIterator[ClientLoad]:
    """Measure the client's own load over the block; filled in when the block ends.

    No cyclic garbage collection meanwhile: a collection pass stalls the event loop for milliseconds
    and every chunk that arrives meanwhile is read late (it halved the TTFT error at 5,000 chunks/s
    in benchmarks/client_overhead.py); collected right after. The same in every worker."""
    load = ClientLoad()
    mon = LagMonitor()
    mon.start()
    cpu0, wall0 = time.process_time(), time.monotonic()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    kstamp.read_ages_start()
    try:
        yield load
    finally:
        load.read_age_ns = kstamp.read_ages_stop()
        if gc_was_enabled:
            gc.enable()
        load.cpu_s, load.wall_s = time.process_time() - cpu0, time.monotonic() - wall0
        await mon.stop()
        load.loop_lag_ms = mon.lags_ms
        load.cpu_wait_ms = mon.cpu_wait_ms
        gc.collect()


def shared_stamp_fraction(records: Sequence[RequestRecord], min_gap_ns: int = 2_000_000) -> float:
    """Share of a stream's consecutive output chunks that got the same arrival time (came in one
    read), counted in streams whose chunks are on average more than ``min_gap_ns`` apart (closer
    chunks merge harmlessly). A figure of how busy the reader was; the verdict uses the bounds."""
    pairs = same = 0
    for r in records:
        ns = r.chunk_ns
        if r.error_kind is None and len(ns) > 1:
            pairs += len(ns) - 1
            if (ns[-1] - ns[0]) / (len(ns) - 1) > min_gap_ns:
                same += sum(1 for a, b in itertools.pairwise(ns) if a == b)
    return same / pairs if pairs else 0.0


def _pct_shift(value: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict[str, float]:
    """How far the mean, p50 and p99 of ``value`` can be from those of any samples within
    ``[lower, upper]`` element-wise (percentiles are monotone in every sample)."""
    out = {"mean": float(max(value.mean() - lower.mean(), upper.mean() - value.mean()))}
    for q in (50, 99):
        v = float(np.percentile(value, q))
        out[f"p{q}"] = max(v - float(np.percentile(lower, q)), float(np.percentile(upper, q)) - v)
    return out


def stamp_damage(
    records: Sequence[RequestRecord], bounds: Mapping[int, Sequence[tuple[int, int]]]
) -> dict[str, Any]:
    """How far TTFT and per-token ITL (mean, p50, p99) could be off given per-chunk stamp bounds, and
    which requests carry a bound (their index, TTFT bound and largest chunk bound, ms; worst first)."""
    ok = [r for r in records if not r.is_warmup and r.error_kind is None and r.chunk_ns]
    hit = [(r, bounds[r.index]) for r in ok if bounds.get(r.index)]
    out: dict[str, Any] = {f"{m}_{s}_ms": 0.0 for m in ("ttft", "itl") for s in ("mean", "p50", "p99")}
    out["requests_affected"] = len(hit)
    out["requests"] = []
    if not hit:
        return out
    ttft = np.asarray([(r.chunk_ns[0] - r.send_ns) / 1e6 for r in ok])
    ttft_lo = ttft.copy()
    pos = {id(r): i for i, r in enumerate(ok)}
    worst: list[tuple[float, int, float]] = []
    for r, bl in hit:
        first = sum(b for j, b in bl if j == 0) / 1e6
        ttft_lo[pos[id(r)]] -= first
        worst.append((max(b for _, b in bl) / 1e6, r.index, first))
    for k, v in _pct_shift(ttft, ttft_lo, ttft).items():
        out[f"ttft_{k}_ms"] = v
    itl, itl_lo, itl_hi = [], [], []
    for r in ok:
        b = dict(bounds.get(r.index) or ())
        for j in range(1, len(r.chunk_ns)):
            n = r.chunk_tokens[j]
            if n <= 0:
                continue
            g = (r.chunk_ns[j] - r.chunk_ns[j - 1]) / 1e6
            lo, hi = g - b.get(j, 0) / 1e6, g + b.get(j - 1, 0) / 1e6
            itl += [g / n] * n
            itl_lo += [max(lo, 0.0) / n] * n
            itl_hi += [hi / n] * n
    if itl:
        shift = _pct_shift(np.asarray(itl), np.asarray(itl_lo), np.asarray(itl_hi))
        for k, v in shift.items():
            out[f"itl_{k}_ms"] = v
    worst.sort(reverse=True)
    out["requests"] = [
        {"index": i, "ttft_bound_ms": round(f, 3), "max_bound_ms": round(m, 3)}
        for m, i, f in worst[:WORST_LISTED]
    ]
    return out


@dataclass
class Verdict:
    check: dict[str, Any]
    codes: list[dict[str, Any]]  # why the run is invalid (:func:`invalid_reason`), in the order found
    warnings: list[str]
    stamp_error: dict[str, Any] | None  # None: read-time stamps (no per-request bound)
    per_worker: list[dict[str, float]]  # each worker's own figures

    @property
    def reasons(self) -> list[str]:
        """Why the run is invalid, in English (``invalid_reason``)."""
        return [reason_text(r) for r in self.codes]


def judge(
    loads: Sequence[ClientLoad],
    kernel: bool,
    records: Sequence[RequestRecord],
    bounds: Mapping[int, Sequence[tuple[int, int]]],
) -> Verdict:
    """The self-check for one run from its workers' loads (one per client process) and the merged
    measured records with their stamp bounds. The same inputs give the same verdict whether they came
    from one worker or several: figures are the worst worker's, stamp damage is over all records."""
    per = [ld.figures(kernel) for ld in loads]
    many = len(per) > 1
    check: dict[str, Any] = {k: max(float(p[k]) for p in per) for k in per[0] if all(k in p for p in per)}
    reasons: list[dict[str, Any]] = []
    warns: list[str] = []

    def who(i: int) -> str:
        return f" in worker {i}" if many else ""

    def worker(code: str, i: int, **args: Any) -> dict[str, Any]:
        return invalid_reason(f"{code}_worker", worker=i, **args) if many else invalid_reason(code, **args)

    for i, p in enumerate(per):
        if p["client_cpu_util"] > MAX_CLIENT_CPU:
            reasons.append(worker("client_cpu", i, util=float(p["client_cpu_util"])))
        if p["schedule_lag_p99_ms"] > MAX_SCHEDULE_LAG_P99_MS:
            reasons.append(worker("schedule_late", i, lag_ms=float(p["schedule_lag_p99_ms"])))
    starved = [
        (p["cpu_wait_p99_ms"], i)
        for i, p in enumerate(per)
        if p.get("cpu_wait_p99_ms", 0.0) > MAX_CPU_WAIT_P99_MS
    ]
    if starved:
        # Starved, the client reads late; with kernel stamps the bounds take that into the verdict (a
        # starved client's stamps held within them against a packet capture), with read-time stamps
        # the loop-lag rule does. Said once (the worst worker), so a user knows the host was the limit.
        wait, i = max(starved)
        warns.append(
            f"client starved: its event loop waited for a CPU {wait:.1f} ms (p99 of {LAG_PERIOD_S * 1e3:g} ms "
            f"samples, max {per[i]['cpu_wait_max_ms']:.1f} ms{who(i)}); its reads were late, which the stamp "
            "bounds account for; a client with a CPU of its own measures with less doubt"
        )
    damage: dict[str, Any] | None = None
    if kernel and (n := int(sum(p.get("read_time_responses", 0.0) for p in per))):
        # Should not happen (every response keeps its arrival record); if it does, those chunks'
        # times are read times without a bound, which the kernel-stamp rules below cannot judge.
        reasons.append(invalid_reason("read_time", n=n))
    if kernel:
        frac = shared_stamp_fraction(records)
        check["shared_stamp_frac"] = frac
        damage = stamp_damage(records, bounds)
        keys = [k for k in damage if k.endswith("_ms") and k.startswith(("ttft_", "itl_"))]
        worst_key = max(keys, key=lambda k: damage[k])
        worst = float(damage[worst_key])
        late = max(float(check.get("loop_lag_p99_ms", 0.0)), float(check.get("read_delay_p99_ms", 0.0)))
        if worst > MAX_STAMP_ERROR_MS and late <= MAX_STAMP_ERROR_MS:
            # Events read together although the client was not late (its loop woke on time, its reads
            # found bytes fresh): the server wrote them together, e.g. llama-server's one event per token
            # of a speculative step, and their shared stamp is their arrival. Said, not ruled invalid.
            top = damage["requests"][0]
            warns.append(
                f"{damage['requests_affected']} requests had SSE events read together with later bytes "
                f"while the client was on time (event-loop lag and read delay p99 <= {late:.2f} ms): most "
                f"likely events the server wrote together; if not, {worst_key[:-3].replace('_', ' ')} "
                f"could be off by up to {worst:.1f} ms (worst: request {top['index']})"
            )
        elif worst > MAX_STAMP_ERROR_MS:
            top = damage["requests"][0]
            reasons.append(
                invalid_reason("stamps_off", figure=worst_key[:-3].replace("_", " "), worst_ms=worst,
                               max_ms=MAX_STAMP_ERROR_MS, n=int(damage["requests_affected"]), index=int(top["index"]),
                               bound_ms=float(top["max_bound_ms"]))
            )  # fmt: skip
        elif frac > MAX_SHARED_STAMPS:
            warns.append(
                f"{frac:.1%} of consecutive chunks shared a socket read (read delay p99 "
                f"{check.get('read_delay_p99_ms', 0.0):.1f} ms): the client or the host is busy; the "
                f"reported TTFT/ITL are within {worst:.2f} ms of the arrival times"
            )
    else:
        lag = check["loop_lag_p99_ms"]
        if lag > MAX_LOOP_LAG_P99_MS:
            reasons.append(invalid_reason("loop_lag", lag_ms=float(lag), max_ms=MAX_LOOP_LAG_P99_MS))
        elif lag > MAX_STAMP_ERROR_MS:
            warns.append(f"event-loop lag p99 {lag:.1f} ms: read-time stamps (no kernel stamps) may be "
                         "late by up to that much")  # fmt: skip
    return Verdict(check, reasons, warns, damage, per)
