"""Fault injection for the simulated server: one ``--faults`` spec, seeded, faults combinable.

Syntax: ``key=value`` items separated by ``,`` or ``;`` (whitespace ignored), for example::

    error_rate=0.1,error_status=503;stall_after_tokens=5,stall_s=30;disconnect_rate=0.05

Keys (rates are per generation request, drawn in arrival order from the server's seed):

    error_rate=P              answer with an HTTP error (JSON body) instead of generating
    error_status=S            status of those errors: 429, 500 or 503 (default 500)
    stall_after_tokens=N      a streaming request stops sending once it has sent N tokens ...
    stall_s=T                 ... for T seconds (default 30), then sends what it held back
    stall_rate=P              share of streaming requests that stall (default 1 when N is given)
    disconnect_rate=P         the server drops the connection mid-stream ...
    disconnect_after_tokens=N ... once N tokens were sent (default 1)
    malformed_rate=P          one chunk of the stream is invalid JSON (the second chunk, else the first)
    crash_after=N             the process exits (non-zero) when request N+1 arrives
    slow_start_s=T            /health, /health_generate and generation answer 503 for T s after start
    diverge=P                 output departs from the deterministic (lossless) text from a random token
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from specsweep.errors import UsageError, one_of

ERROR_STATUSES = (429, 500, 503)

_RATE_KEYS = ("error_rate", "stall_rate", "disconnect_rate", "malformed_rate", "diverge")
_INT_KEYS = ("error_status", "stall_after_tokens", "disconnect_after_tokens", "crash_after")
_SECONDS_KEYS = ("stall_s", "slow_start_s")
FAULT_KEYS = _RATE_KEYS + _INT_KEYS + _SECONDS_KEYS


@dataclass(frozen=True)
class Faults:
    error_rate: float = 0.0
    error_status: int = 500
    stall_rate: float = 0.0
    stall_after_tokens: int | None = None
    stall_s: float = 30.0
    disconnect_rate: float = 0.0
    disconnect_after_tokens: int = 1
    malformed_rate: float = 0.0
    crash_after: int | None = None
    slow_start_s: float = 0.0
    diverge: float = 0.0

    @property
    def active(self) -> bool:
        return self != Faults()

    def spec(self) -> str:
        """The canonical spec string of the non-default settings (round-trips through parse_faults)."""
        base = Faults()
        return ",".join(f"{k}={getattr(self, k)}" for k in FAULT_KEYS if getattr(self, k) != getattr(base, k))


@dataclass(frozen=True)
class RequestFaults:
    """What happens to one request (drawn once, on arrival)."""

    error_status: int | None = None
    stall_after_tokens: int | None = None
    disconnect_after_tokens: int | None = None
    malformed: bool = False
    diverge: bool = False

    @property
    def any(self) -> bool:
        return self != _NO_FAULTS


_NO_FAULTS = RequestFaults()


def parse_faults(spec: str | None) -> Faults:
    """Parse a ``--faults`` spec; an error names the bad item and what is accepted."""
    if not spec or not spec.strip():
        return Faults()
    values: dict[str, float | int] = {}
    for item in re.split(r"[,;]", spec):
        item = item.strip()
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if key not in FAULT_KEYS:
            raise UsageError(f"--faults: unknown key {one_of(key, FAULT_KEYS)}")
        if not sep or not raw:
            raise UsageError(f"--faults: {key!r} needs a value, as in '{key}=VALUE'")
        if key in values:
            raise UsageError(f"--faults: {key!r} is given twice")
        values[key] = _value(key, raw)
    if "stall_after_tokens" in values and "stall_rate" not in values:
        values["stall_rate"] = 1.0
    if values.get("stall_rate", 0) and "stall_after_tokens" not in values:
        raise UsageError("--faults: stall_rate needs stall_after_tokens=N (tokens sent before the stall)")
    return Faults(**values)  # type: ignore[arg-type]


def _value(key: str, raw: str) -> float | int:
    try:
        if key in _INT_KEYS:
            v: float | int = int(raw)
        else:
            v = float(raw)
    except ValueError:
        kind = "an integer" if key in _INT_KEYS else "a number"
        raise UsageError(f"--faults: {key}={raw!r} is not {kind}") from None
    if key in _RATE_KEYS and not 0.0 <= v <= 1.0:
        raise UsageError(f"--faults: {key}={raw!r}; expected a probability in [0, 1]")
    if key == "error_status" and v not in ERROR_STATUSES:
        raise UsageError(f"--faults: error_status {one_of(int(v), ERROR_STATUSES)}")
    if key in ("stall_after_tokens", "disconnect_after_tokens") and v < 1:
        raise UsageError(f"--faults: {key}={raw!r}; expected an integer >= 1")
    if key == "crash_after" and v < 0:
        raise UsageError(f"--faults: crash_after={raw!r}; expected an integer >= 0")
    if key in _SECONDS_KEYS and not v >= 0.0:
        raise UsageError(f"--faults: {key}={raw!r}; expected seconds >= 0")
    return v


class FaultDrawer:
    """Draws each request's faults from one seeded generator, in arrival order."""

    def __init__(self, faults: Faults, seed: int) -> None:
        self.faults = faults
        self._rng = random.Random(f"faults:{seed}")

    def draw(self, *, stream: bool) -> RequestFaults:
        f = self.faults
        if not f.active:
            return _NO_FAULTS
        r = self._rng.random
        # draw every rate each time, so adding one fault does not reshuffle the others' choices
        u_err, u_stall, u_disc, u_mal, u_div = r(), r(), r(), r(), r()
        if u_err < f.error_rate:
            return RequestFaults(error_status=f.error_status)
        return RequestFaults(
            stall_after_tokens=f.stall_after_tokens if stream and u_stall < f.stall_rate else None,
            disconnect_after_tokens=f.disconnect_after_tokens
            if stream and u_disc < f.disconnect_rate
            else None,
            malformed=stream and u_mal < f.malformed_rate,
            diverge=u_div < f.diverge,
        )
