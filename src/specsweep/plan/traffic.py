"""TRAFFIC.yaml: what the deployment must serve.

    mix: {SCENARIO_OR_CATEGORY: share, ...}   # request shares, summing to 1
    load: {concurrency: N} | {request_rate: R}  # users in flight (closed loop) or req/s (open loop)
    gpus_per_instance: 8                       # GPUs one server of the measured configs occupies
    profiles: {CONFIG_LABEL: SIM_PROFILE}      # optional: simulator profile per config

A mix key is a scenario name or a workload class (``chat``, ``rag``, ``long_context``, ...); a class
share is divided evenly over the measured scenarios of that class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from specsweep.errors import ConfigError

SHARE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Traffic:
    mix: dict[str, float]
    concurrency: int | None = None
    request_rate: float | None = None
    gpus_per_instance: int = 1
    profiles: dict[str, str] = field(default_factory=dict)
    file: str = "<traffic>"


def _num(v: Any, where: str, file: str, *, positive: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"expected a number, got {v!r}", file=file, path=where)
    if positive and v <= 0:
        raise ConfigError(f"expected a positive number, got {v!r}", file=file, path=where)
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
    if (
        not isinstance(load, dict)
        or len(load) != 1
        or next(iter(load)) not in ("concurrency", "request_rate")
    ):
        raise ConfigError(
            f"'load' must be {{concurrency: N}} or {{request_rate: R}}, got {load!r}", file=file, path="load"
        )
    conc: int | None = None
    rate: float | None = None
    if "concurrency" in load:
        c = _num(load["concurrency"], "load.concurrency", file)
        if c != int(c):
            raise ConfigError(f"expected a positive integer, got {c!r}", file=file, path="load.concurrency")
        conc = int(c)
    else:
        rate = _num(load["request_rate"], "load.request_rate", file)
    gpi = data.get("gpus_per_instance", 1)
    g = _num(gpi, "gpus_per_instance", file)
    if g != int(g):
        raise ConfigError(f"expected a positive integer, got {gpi!r}", file=file, path="gpus_per_instance")
    profiles = data.get("profiles") or {}
    if not isinstance(profiles, dict) or not all(isinstance(v, str) for v in profiles.values()):
        raise ConfigError("'profiles' must map config labels to simulator profile names", file=file, path="profiles")  # fmt: skip
    return Traffic({k: v / total for k, v in mix.items()}, conc, rate, int(g), {str(k): v for k, v in profiles.items()}, file)  # fmt: skip


def load_traffic(path: str | Path) -> Traffic:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror or e}", file=str(p)) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {e}", file=str(p)) from None
    return parse_traffic(data, str(p))


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
