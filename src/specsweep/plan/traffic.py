"""TRAFFIC.yaml: what the deployment must serve.

    mix: {SCENARIO_OR_CATEGORY: share, ...}   # request shares, summing to 1
    load: {concurrency: N} | {request_rate: R}  # users in flight (closed loop) or req/s (open loop)
        | {concurrency_by_hour: {HOUR: N, ...}} | {request_rate_by_hour: {HOUR: R, ...}}
                                               # a daily profile: hours 0-23, each value holds until the
                                               # next listed hour (wrapping at midnight); the plan is
                                               # sized for the peak hour and costed over the day
    gpus_per_instance: 8                       # GPUs one server of the measured configs occupies
    profiles: {CONFIG_LABEL: SIM_PROFILE}      # optional: simulator profile per config

A mix key is a scenario name or a workload class (``chat``, ``rag``, ``long_context``, ...); a class
share is divided evenly over the measured scenarios of that class.

Every number is bounded when the file is read (a ConfigError, exit 2, naming the key): a load of at
most ``MAX_LOAD`` (users or requests/s), at most ``MAX_GPUS_PER_INSTANCE`` GPUs per instance. The
planner then bounds the load against the results (``planner.in_flight_cap``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep.errors import ConfigError
from specsweep.store.strict_yaml import read_yaml_file

SHARE_TOLERANCE = 1e-3
MAX_LOAD = 1_000_000  # users in flight, or requests/s (as experiment files' concurrency levels)
MAX_GPUS_PER_INSTANCE = 1024


@dataclass(frozen=True)
class Traffic:
    mix: dict[str, float]
    concurrency: int | None = None
    request_rate: float | None = None
    gpus_per_instance: int = 1
    profiles: dict[str, str] = field(default_factory=dict)
    file: str = "<traffic>"
    by_hour: tuple[float, ...] | None = None  # 24 values (concurrency or request rate) when a profile

    @property
    def peak_hour(self) -> int | None:
        return None if self.by_hour is None else max(range(24), key=lambda h: self.by_hour[h])  # type: ignore[index]


def _num(v: Any, where: str, file: str, *, positive: bool = True, hi: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"expected a number, got {v!r}", file=file, path=where)
    if positive and v <= 0:
        raise ConfigError(f"expected a positive number, got {v!r}", file=file, path=where)
    if hi is not None and v > hi:
        raise ConfigError(f"expected a number up to {hi:,.0f}, got {v!r}", file=file, path=where)
    return float(v)


def parse_traffic(data: Any, file: str = "<traffic>") -> Traffic:
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping with 'mix' and 'load'", file=file)
    unknown = set(data) - {"mix", "load", "gpus_per_instance", "profiles", "description"}
    if unknown:
        raise ConfigError(
            f"unknown key(s) {sorted(unknown)}; accepted: description, gpus_per_instance, load, mix, profiles",
            file=file,
        )
    mix_raw = data.get("mix")
    if not isinstance(mix_raw, dict) or not mix_raw:
        raise ConfigError("'mix' must map scenario or category names to shares, e.g. {chat_short: 0.6, rag_medium: 0.4}", file=file, path="mix")  # fmt: skip
    mix: dict[str, float] = {}
    for k, v in mix_raw.items():
        share = _num(v, f"mix.{k}", file, positive=False)
        if share < 0:
            raise ConfigError(f"a share must be >= 0, got {v!r}", file=file, path=f"mix.{k}")
        if share > 0:
            mix[str(k)] = share
    total = sum(mix.values())
    if abs(total - 1.0) > SHARE_TOLERANCE:
        listed = ", ".join(f"{k}={v:g}" for k, v in mix.items())
        raise ConfigError(f"shares must sum to 1, got {total:g} ({listed})", file=file, path="mix")
    load = data.get("load")
    kinds = ("concurrency", "request_rate", "concurrency_by_hour", "request_rate_by_hour")
    if not isinstance(load, dict) or len(load) != 1 or next(iter(load)) not in kinds:
        raise ConfigError(
            f"'load' must be {{concurrency: N}}, {{request_rate: R}}, {{concurrency_by_hour: {{HOUR: N, ...}}}} "
            f"or {{request_rate_by_hour: {{HOUR: R, ...}}}}, got {load!r}",
            file=file,
            path="load",
        )
    conc: int | None = None
    rate: float | None = None
    by_hour: tuple[float, ...] | None = None
    key = next(iter(load))
    if key.endswith("_by_hour"):
        by_hour = _hours(load[key], f"load.{key}", file, integer=key.startswith("concurrency"))
        if key.startswith("concurrency"):
            conc = int(max(by_hour))
        else:
            rate = max(by_hour)
    elif "concurrency" in load:
        c = _num(load["concurrency"], "load.concurrency", file, hi=MAX_LOAD)
        if c != int(c):
            raise ConfigError(f"expected a positive integer, got {c!r}", file=file, path="load.concurrency")
        conc = int(c)
    else:
        rate = _num(load["request_rate"], "load.request_rate", file, hi=MAX_LOAD)
    gpi = data.get("gpus_per_instance", 1)
    g = _num(gpi, "gpus_per_instance", file, hi=MAX_GPUS_PER_INSTANCE)
    if g != int(g):
        raise ConfigError(f"expected a positive integer, got {gpi!r}", file=file, path="gpus_per_instance")
    profiles = data.get("profiles") or {}
    if not isinstance(profiles, dict) or not all(isinstance(v, str) for v in profiles.values()):
        raise ConfigError("'profiles' must map config labels to simulator profile names", file=file, path="profiles")  # fmt: skip
    return Traffic({k: v / total for k, v in mix.items()}, conc, rate, int(g), {str(k): v for k, v in profiles.items()}, file, by_hour)  # fmt: skip


def _hours(raw: Any, where: str, file: str, *, integer: bool) -> tuple[float, ...]:
    """{HOUR: value} (hours 0-23) -> 24 values, each listed value holding until the next listed hour."""
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"expected a mapping of hours 0-23 to loads, e.g. {{0: 20, 8: 120, 18: 60}}, got {raw!r}",
                          file=file, path=where)  # fmt: skip
    given: dict[int, float] = {}
    for h, v in raw.items():
        if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h <= 23:
            raise ConfigError(f"hour {h!r}; expected an integer 0-23", file=file, path=f"{where}.{h}")
        x = _num(v, f"{where}.{h}", file, hi=MAX_LOAD)
        if integer and x != int(x):
            raise ConfigError(f"expected a positive integer, got {v!r}", file=file, path=f"{where}.{h}")
        given[h] = x
    hours = sorted(given)
    return tuple(given[max((g for g in hours if g <= h), default=hours[-1])] for h in range(24))


def load_traffic(path: str | Path) -> Traffic:
    p = Path(path)
    return parse_traffic(read_yaml_file(p, "traffic file"), str(p))


def parse_slo(text: str | None) -> dict[str, float]:
    """``ttft_p99_ms=2000,tpot_p99_ms=50`` -> {"ttft_p99_ms": 2000.0, "tpot_p99_ms": 50.0}."""
    from specsweep.errors import UsageError

    if not text:
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        key, sep, val = item.partition("=")
        key = key.strip()
        if key not in ("ttft_p99_ms", "tpot_p99_ms") or not sep:
            raise UsageError(f"--slo item {item!r}; expected ttft_p99_ms=MS and/or tpot_p99_ms=MS")
        try:
            v = float(val)
        except ValueError:
            v = -1.0
        if not v > 0:
            raise UsageError(f"--slo {key}={val!r}; expected a positive number of milliseconds")
        out[key] = v
    return out
