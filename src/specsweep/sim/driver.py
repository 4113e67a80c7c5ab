"""The engine driver of ``sim serve``: the engine against the wall clock, its chunks written to the sockets.

One task drives the engine: while requests are pending it takes ``step = engine.step()``, waits until
``wall_start + step.end / time_scale`` (an absolute schedule: a late step does not delay the next), and
writes every emission of the step to its stream in one pass, straight to the socket (pre-encoded bytes,
HTTP chunked framing, no per-chunk await). While idle it waits for an arrival and moves the engine's
virtual clock to the arrival's time. Asyncio timers wake up 1-2 ms late (epoll has millisecond timeouts),
so the driver waits for a deadline with ``time.sleep`` in slices of at most 2 ms (one event-loop pass
between slices lets arrivals in) and polls the clock for the last ``spin_s``.

With ``truth`` set, one JSON line per request records when each chunk was written to the socket
(``mono_ns``: time.monotonic_ns() as the bytes were handed to send(2), so a client on the same machine
never sees them earlier; ``epoch_ns``: the same instant on time.time_ns(); ``sched_mono_ns``: the
engine's scheduled time on the monotonic clock) and the tokens it carried.

The HTTP surface (``server.py``) parses and admits requests and hands each to :meth:`EngineDriver.submit`;
this module knows nothing of HTTP beyond the chunked framing of the bytes it writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

import orjson

from specsweep.sim.engine import Engine, Step
from specsweep.sim.faults import RequestFaults
from specsweep.sim.settings import SimConfig
from specsweep.sim.textgen import WordStream, word_table

# flags of a prepared emission
_FINISHED, _NONSTREAM, _HOLD, _DISCONNECT = 1, 2, 4, 8
_SLICE_S = 0.002  # the driver's longest blocking sleep between event-loop passes while it waits


class LiveRequest:
    """One generation request in flight: what the engine driver needs to encode and write its chunks."""

    __slots__ = (
        "arrival_epoch_ns",
        "arrival_mono_ns",
        "category",
        "disconnected",
        "done",
        "enc",
        "endpoint",
        "faults",
        "faulty",
        "fd",
        "finish_reason",
        "held",
        "ids",
        "kind",
        "malformed_sent",
        "max_tokens",
        "n_chunks",
        "n_out",
        "prompt_tokens",
        "rid",
        "stall_until",
        "stalled",
        "stream",
        "transport",
        "truth",
        "verify_ct",
        "words",
    )

    def __init__(self, rid: str, kind: str, endpoint: str, stream: bool, prompt_tokens: int, max_tokens: int):
        self.rid = rid
        self.category: str | None = None
        self.kind = kind  # "cmpl" | "chat" | "gen" | "health"
        self.endpoint = endpoint
        self.stream = stream
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.finish_reason = "length"
        self.words: WordStream | None = None
        self.enc: Any = None
        self.transport: asyncio.Transport | None = None
        self.fd = -1  # the socket's file descriptor (direct writes, writer threads)
        self.done: asyncio.Future[None] | None = None
        self.faults = RequestFaults()
        self.faulty = False  # any fault drawn for this request (checked per chunk)
        self.ids: list[int] = []  # output word indices (non-stream)
        self.n_out = 0
        self.n_chunks = 0
        self.verify_ct = 0
        self.truth: list[tuple[int, int, int, int]] | None = None
        self.held: list[bytes] = []
        self.stall_until = 0.0
        self.stalled = False
        self.malformed_sent = False
        self.disconnected = False
        self.arrival_mono_ns = time.monotonic_ns()
        self.arrival_epoch_ns = time.time_ns()


class EngineDriver:
    """Runs one Engine against the wall clock and writes its emissions to the requests' sockets.

    ``on_death`` is called once if the driver task dies of an exception (a bug in the engine): by then
    every open stream is reset, ``failure`` holds the exception and ``dead`` is set.
    """

    def __init__(self, cfg: SimConfig, engine: Engine, on_death: Callable[[], None]) -> None:
        self.cfg = cfg
        self.engine = engine
        self.words, self.word_ids = word_table()
        self.reqs: dict[str, LiveRequest] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.wall0 = 0.0  # loop.time() at virtual time 0
        self.failure: BaseException | None = None  # the driver task's exception, if it died
        self.dead: asyncio.Event | None = None  # set when the driver dies (created on start)
        self._scale = float(cfg.time_scale)
        self._on_death = on_death
        self._truth_file: IO[bytes] | None = None
        self._truth_pending: list[LiveRequest] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._pool = (
            ThreadPoolExecutor(cfg.writer_threads, thread_name_prefix="sim-writer")
            if cfg.writer_threads > 1
            else None
        )

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """On the running loop: virtual time 0 is now; the truth file opens; the driver task starts."""
        self.loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self.wall0 = self.loop.time()
        if self.cfg.truth:
            self._truth_file = open(self.cfg.truth, "ab")  # noqa: SIM115 - closed in stop()
        self.dead = asyncio.Event()
        self._task = asyncio.create_task(self._drive(), name="specsweep-sim-engine")
        self._task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        """A dead engine must not look like a slow one: every open stream is reset, the server answers
        nothing more, and ``dead`` is set (``sim serve`` then exits non-zero with the traceback)."""
        if task.cancelled() or task.exception() is None:
            return
        self.failure = task.exception()
        self._on_death()
        self.abort_all()
        assert self.dead is not None
        self.dead.set()

    def cancel(self) -> None:
        """Stop driving the engine (a simulated crash; steps are no longer taken)."""
        if self._task is not None:
            self._task.cancel()

    def abort_all(self) -> None:
        """Reset the connection of every request in flight."""
        for req in list(self.reqs.values()):
            if req.transport is not None:
                req.transport.abort()

    async def stop(self) -> None:
        """Shutdown: the task ends, open streams are closed, the truth file is written and closed."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for req in list(self.reqs.values()):
            if req.transport is not None:
                req.transport.close()
            self.finish(req)
        self.flush_truth()
        if self._truth_file is not None:
            self._truth_file.close()
            self._truth_file = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    @property
    def records_truth(self) -> bool:
        """Whether requests keep their chunks' write times (a truth file is open)."""
        return self._truth_file is not None

    def elapsed_s(self) -> float:
        """Wall seconds since virtual time 0."""
        assert self.loop is not None
        return self.loop.time() - self.wall0

    def _vnow(self) -> float:
        return self.elapsed_s() * self._scale

    def submit(self, req: LiveRequest) -> None:
        """The request arrives at the engine now (virtual time follows the wall clock while idle)."""
        assert self._wake is not None
        eng = self.engine
        if eng.idle:
            eng.advance_to(self._vnow())
        eng.add(req.rid, req.prompt_tokens, req.max_tokens, req.category)
        self.reqs[req.rid] = req
        self._wake.set()

    # ---- the loop -----------------------------------------------------------------------------
    async def _drive(self) -> None:
        """Run the engine against the wall clock: compute and encode the next step as soon as the
        previous one is written, wait for its deadline, write all its chunks in one pass.

        The wait: the event loop's own timers wake 1-2 ms late (epoll has millisecond timeouts) and a
        timer thread must win the GIL back and wake the loop through its self-pipe (both measured:
        docs/perf/sim_capacity.md). So the driver sleeps in this thread, in slices of at most
        ``_SLICE_S``, giving the loop one pass between slices (arrivals are read, parsed and queued for
        the engine, which takes them at its next step, exactly as when they are read at once), and
        polls the clock for the last ``spin_s``. A late step does not delay the next: the schedule is
        absolute."""
        loop = self.loop
        assert loop is not None and self._wake is not None
        eng = self.engine
        wake = self._wake
        spin = self.cfg.spin_s
        clock = loop.time
        sleep = time.sleep
        while True:
            if eng.idle:
                wake.clear()
                await wake.wait()
                continue
            step = eng.step()
            if step is None:
                continue
            target = self.wall0 + step.end / self._scale
            prepared = self.prepare(step, target)
            await asyncio.sleep(0)  # one loop pass even when behind schedule: arrivals keep coming in
            while (delay := target - clock() - spin) > 0:
                if delay > _SLICE_S:
                    sleep(_SLICE_S)
                    await asyncio.sleep(0)
                else:
                    sleep(delay)
                    break
            while clock() < target:  # the last ``spin`` seconds
                pass
            self.emit(prepared, target)

    def prepare(self, step: Step, target: float) -> list[tuple[LiveRequest, bytes, int, int]]:
        """Encode every emission of a step ahead of its deadline: (request, HTTP chunk frame, tokens, flags)."""
        reqs = self.reqs
        words = self.words
        sched_ns = int(target * 1e9)
        out: list[tuple[LiveRequest, bytes, int, int]] = []
        for em in step.emissions:
            req = reqs.get(em.rid)  # type: ignore[call-overload]
            if req is None:
                continue
            n = em.n_tokens
            assert req.words is not None
            idx = req.words.take(n)
            req.n_out += n
            if not em.first:
                req.verify_ct += 1
            flags = _FINISHED if em.finished else 0
            if not req.stream:
                req.ids.extend(idx)
                out.append((req, b"", n, flags | _NONSTREAM))
                continue
            text = b"".join([words[i] for i in idx])
            fr = req.finish_reason if em.finished else None
            enc = req.enc
            if req.kind == "gen":
                enc.add(text, [self.word_ids[i] for i in idx])
                e2e = (sched_ns - req.arrival_mono_ns) / 1e9 if em.finished else None
                data = enc.event(req.n_out, req.verify_ct, fr, e2e)
            else:
                data = enc.chunk(text, req.n_out, fr)
                if em.first:
                    data = enc.start() + data
            if req.faulty:
                rf = req.faults
                if rf.malformed and not req.malformed_sent and (req.n_chunks == 1 or em.finished):
                    data = enc.malformed()
                    req.malformed_sent = True
                if req.stalled or (
                    rf.stall_after_tokens is not None
                    and not req.stall_until
                    and req.n_out - n >= rf.stall_after_tokens
                ):
                    req.stalled = True
                    flags |= _HOLD
                elif rf.disconnect_after_tokens is not None and req.n_out >= rf.disconnect_after_tokens:
                    flags |= _DISCONNECT
            if em.finished:
                data += enc.end(req.n_out) if req.kind != "gen" else enc.end()
            req.n_chunks += 1
            out.append((req, b"%x\r\n%b\r\n" % (len(data), data), n, flags))
        return out

    def emit(self, prepared: list[tuple[LiveRequest, bytes, int, int]], target: float) -> None:
        """At the deadline: one socket write per stream, in one pass; bookkeeping afterwards."""
        mono = time.monotonic_ns
        sched_ns = int(target * 1e9)
        to_epoch = time.time_ns() - mono()  # one epoch reading per step, not per chunk
        times = (sched_ns, to_epoch)
        finished: list[LiveRequest] = []
        lost: list[LiveRequest] = []
        pool = self._pool
        direct: list[tuple[LiveRequest, bytes, int]] = []  # for the writer threads: (req, frame, n)
        if pool is not None and len(prepared) < 4 * self.cfg.writer_threads:
            pool = None  # a small step: threads would cost more than they save
        for req, frame, n, flags in prepared:
            if flags & _NONSTREAM:
                if flags & _FINISHED:
                    finished.append(req)
                continue
            t = req.transport
            if t is None or t.is_closing():
                lost.append(req)
                continue
            if flags & _HOLD and req.stalled:  # (a stall released since prepare: write as usual)
                self._hold(req, frame, n, sched_ns, bool(flags & _FINISHED))
                continue
            if req.fd >= 0 and not flags & _DISCONNECT and not t.get_write_buffer_size():
                if pool is not None:
                    direct.append((req, frame, n))
                else:
                    k = _send_frame(req, frame, n, times)
                    if k < len(frame):  # the tail, or all of it on a dead connection (asyncio closes it)
                        t.write(frame[k:] if k > 0 else frame)
            else:
                if req.truth is not None:
                    m = mono()
                    req.truth.append((m, m + to_epoch, sched_ns, n))
                t.write(frame)
            if flags & _FINISHED:
                finished.append(req)
            elif flags & _DISCONNECT:
                req.disconnected = True
                t.close()
                lost.append(req)
        if direct:
            assert pool is not None
            w = self.cfg.writer_threads
            parts = [direct[i::w] for i in range(w)]
            for req, rest in (x for part in pool.map(_write_raw, parts, [times] * w) for x in part):
                t = req.transport
                if rest is None or t is None or t.is_closing():
                    lost.append(req)
                else:
                    t.write(rest)  # the socket took part of the frame: asyncio sends the rest, in order
        for req in lost:
            if req.rid in self.reqs:
                self.engine.abort(req.rid)
                req.finish_reason = "abort"
                self.finish(req)
        for req in finished:
            self.finish(req)
        self.flush_truth()

    def _hold(self, req: LiveRequest, data: bytes, n: int, sched_ns: int, finished: bool) -> None:
        """Stall fault: keep the request's chunks back until its stall ends, then write them at once."""
        assert self.loop is not None
        req.held.append(data)
        if req.truth is not None:
            req.truth.append((0, 0, sched_ns, n))  # write time filled in on release
        if not req.stall_until:
            req.stall_until = self.loop.time() + self.cfg.faults.stall_s
            self.loop.call_at(req.stall_until, self._release, req)
        if finished:
            req.held.append(b"")  # marker: the request ends with the held chunks

    def _release(self, req: LiveRequest) -> None:
        req.stalled = False
        ended = bool(req.held) and req.held[-1] == b""
        chunks = [d for d in req.held if d]
        req.held = []
        t = req.transport
        if t is None or t.is_closing():
            self.engine.abort(req.rid)
            self.finish(req)
            return
        now_m, now_e = time.monotonic_ns(), time.time_ns()  # before the write, as in _emit
        t.write(b"".join(chunks))
        if req.truth is not None:
            req.truth[:] = [(m or now_m, e or now_e, s, n) for m, e, s, n in req.truth]
        if ended:
            self.finish(req)
            self.flush_truth()

    def finish(self, req: LiveRequest) -> None:
        if self.reqs.pop(req.rid, None) is None:
            return
        if req.truth is not None:
            self._truth_pending.append(req)
        if req.done is not None and not req.done.done():
            req.done.set_result(None)

    def flush_truth(self) -> None:
        """Write the truth lines of finished requests (called after each step's writes)."""
        f = self._truth_file
        if f is None or not self._truth_pending:
            self._truth_pending.clear()
            return
        lines = []
        for req in self._truth_pending:
            rec = {
                "rid": req.rid,
                "endpoint": req.endpoint,
                "stream": req.stream,
                "prompt_tokens": req.prompt_tokens,
                "max_tokens": req.max_tokens,
                "completion_tokens": req.n_out,
                "finish_reason": "abort" if req.disconnected else req.finish_reason,
                "arrival_mono_ns": req.arrival_mono_ns,
                "arrival_epoch_ns": req.arrival_epoch_ns,
                "chunks": [
                    {"mono_ns": m, "epoch_ns": e, "sched_mono_ns": s, "tokens": n}
                    for m, e, s, n in (req.truth or ())
                ],
            }
            lines.append(orjson.dumps(rec) + b"\n")
        self._truth_pending.clear()
        f.write(b"".join(lines))
        f.flush()


def _send_frame(req: LiveRequest, frame: bytes, n: int, times: tuple[int, int]) -> int:
    """``os.write`` a step's frame straight to the request's socket (only for sockets asyncio holds
    nothing for, so order is kept; half the cost of ``transport.write``, docs/perf/sim_capacity.md).
    Returns the bytes sent (the caller hands any tail to asyncio), or -1 for a dead connection. The
    truth stamp is taken as the bytes go to send(2): a reader never sees them earlier."""
    sched_ns, to_epoch = times
    m = time.monotonic_ns()
    try:
        k = os.write(req.fd, frame)
    except (BlockingIOError, InterruptedError):
        k = 0
    except OSError:
        return -1
    if req.truth is not None:
        req.truth.append((m, m + to_epoch, sched_ns, n))
    return k


def _write_raw(
    items: list[tuple[LiveRequest, bytes, int]], times: tuple[int, int]
) -> list[tuple[LiveRequest, bytes | None]]:
    """Writer thread: :func:`_send_frame` for each item (send(2) releases the GIL, so threads write
    in parallel); returns what is left to write (the unsent tail, or None for a dead connection)."""
    left: list[tuple[LiveRequest, bytes | None]] = []
    for req, frame, n in items:
        k = _send_frame(req, frame, n, times)
        if k < 0:
            left.append((req, None))
        elif k < len(frame):
            left.append((req, frame[k:]))
    return left
