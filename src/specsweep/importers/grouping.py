"""Which cell and which config each imported result belongs to - repeats only when provably repeats.

Pass 1 of an import records, per result, a :class:`Key` (scenario base, declared workload, offered
load, recorded server parameters) and its tokens per request; :class:`Groups` keeps one entry per
distinct key plus the token counts of its results (4 bytes each). After pass 1 it decides:

* **configs**: recorded server parameters that differ between results (``deployment``,
  ``max_num_seqs``, ``framework``, the model, ...) make separate configs, the label suffixed with
  them (``A[deployment=base]``);
* **cells**: results at one point whose tokens per request differ by more than
  :data:`cellnames.TOKEN_TOLERANCE` are different workloads (``input_tokens=1000`` is added to their
  workload); names are :func:`cellnames.assign`'s;
* a warning per decision, naming the fields that differ.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any

from specsweep.errors import DataError
from specsweep.importers import cellnames
from specsweep.importers.common import ImportOptions

MAX_CONCURRENCY = 10_000_000
Pairs = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Key:
    base: str
    workload: Pairs
    rate: Any  # None | "inf" | float
    level: int
    params: Pairs


def pairs(d: dict[str, Any]) -> Pairs:
    return tuple(sorted((k, v) for k, v in d.items() if v is not None))


def place_load(row: dict[str, Any], opts: ImportOptions, where: str, line: int) -> tuple[int, Any, bool]:
    """(level, request rate, whether --override-concurrency replaced the file's value).

    The level is the file's ``max_concurrency``; ``--concurrency N`` fills it in where the file has
    none (or replaces it, with ``--override-concurrency``). An open-loop result (a request rate, no
    concurrency limit) needs neither: its level is 0, no limit, and its cell is named by the rate.
    """
    v = row.get("max_concurrency")
    rate = row.get("request_rate")
    if isinstance(rate, float) and math.isinf(rate):
        rate = "inf"
    usable = (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and float(v).is_integer()
        and 1 <= v <= MAX_CONCURRENCY
    )
    if opts.concurrency is not None:
        if v is None or (usable and int(v) == opts.concurrency):
            return opts.concurrency, rate, False
        if opts.override_concurrency:
            return opts.concurrency, rate, True
        raise DataError(
            f"the file says max_concurrency {v!r} but --concurrency is {opts.concurrency}: "
            "--concurrency only fills in results that have none; give --override-concurrency "
            "to replace the file's value",
            file=where,
            line=line,
            field="max_concurrency",
        )
    if usable:
        return int(v), rate, False  # type: ignore[arg-type]
    if v is None and rate is not None:
        return cellnames.UNBOUNDED, rate, False
    raise DataError(
        f"no usable max_concurrency (got {v!r}; expected an integer from 1 to {MAX_CONCURRENCY:,}) and no "
        "request_rate; give --concurrency N for results without one",
        file=where,
        line=line,
        field="max_concurrency",
    )


tokens = cellnames.tokens_per_request


@dataclass
class _Group:
    ins: array = field(default_factory=lambda: array("f"))
    outs: array = field(default_factory=lambda: array("f"))
    starts: tuple[list[float], list[float]] = ([], [])


def _starts(values: array) -> list[float]:
    known = sorted({v for v in values if v > 0})
    out: list[float] = []
    for v in known:
        if not out or v > out[-1] * (1.0 + cellnames.TOKEN_TOLERANCE):
            out.append(v)
    return out


def _cluster(v: float | None, starts: list[float]) -> int:
    i = 0
    while v is not None and i + 1 < len(starts) and v >= starts[i + 1]:
        i += 1
    return i


class Groups:
    """Pass-1 bookkeeping and the decisions taken from it (see the module docstring)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.groups: dict[Key, _Group] = {}
        self.label_fields: list[str] = []
        self.names: dict[tuple[Key, int, int], str] = {}
        self.extra: dict[tuple[Key, int, int], dict[str, Any]] = {}

    def add(self, key: Key, tin: float | None, tout: float | None) -> None:
        g = self.groups.setdefault(key, _Group())
        g.ins.append(tin or 0.0)
        g.outs.append(tout or 0.0)

    def decide(self, warnings: list[str]) -> None:
        values: dict[str, set[str]] = {}
        for k in self.groups:
            for name, v in k.params:
                values.setdefault(name, set()).add(repr(v))
        self.label_fields = sorted(n for n, vs in values.items() if len(vs) > 1)
        split: list[str] = []
        placed: dict[tuple[Key, int, int], cellnames.Placed] = {}
        for k, g in self.groups.items():
            g.starts = (_starts(g.ins), _starts(g.outs))
            for ci in range(max(1, len(g.starts[0]))):
                for co in range(max(1, len(g.starts[1]))):
                    extra = {}
                    if len(g.starts[0]) > 1:
                        extra["input_tokens"] = round(g.starts[0][ci])
                    if len(g.starts[1]) > 1:
                        extra["output_tokens"] = round(g.starts[1][co])
                    self.extra[(k, ci, co)] = extra
                    placed[(k, ci, co)] = cellnames.Placed.of(
                        k.base, {**dict(k.workload), **extra}, k.rate, k.level
                    )
            if len(g.starts[0]) > 1 or len(g.starts[1]) > 1:
                shown = "; ".join(
                    f"{side} {' vs '.join(str(round(x)) for x in st)}"
                    for side, st in zip(("input", "output"), g.starts, strict=True)
                    if len(st) > 1
                )
                split.append(f"{self.config_of(k)} {k.base} c={k.level}: {shown}")
        keys = list(placed)
        for key, name in zip(keys, cellnames.assign([placed[x] for x in keys]), strict=True):
            self.names[key] = name
        self._warn(warnings, split, placed)

    def _warn(self, warnings: list[str], split: list[str], placed: dict[Any, cellnames.Placed]) -> None:
        if self.label_fields:
            labels = sorted({self.config_of(k) for k in self.groups})
            warnings.append(
                f"results differ in recorded server parameters ({', '.join(self.label_fields)}): imported as "
                f"{len(labels)} configs ({', '.join(labels[:4])}{', ...' if len(labels) > 4 else ''}), not as repeats"
            )
        if split:
            warnings.append(
                "results of one config differ in tokens per request by more than "
                f"{cellnames.TOKEN_TOLERANCE:.0%} (different workloads): imported as separate cells, not as "
                f"repeats: {'; '.join(split[:3])}{' ...' if len(split) > 3 else ''}"
            )
        rated = sorted({self.names[k] for k, p in placed.items() if cellnames.is_open_loop(p.rate, p.level)})
        if rated:
            warnings.append(
                f"open-loop results (a request rate) are cells by request rate: {', '.join(rated[:4])}"
                f"{', ...' if len(rated) > 4 else ''}"
            )
        differ = cellnames.differing(placed.values())
        for base, fields in sorted(differ.items()):
            if not fields:
                continue
            cells = sorted({self.names[k] for k, p in placed.items() if p.base == base})
            warnings.append(
                f"{base}: results differ in {', '.join(fields)}: imported as {len(cells)} separate cells "
                f"(e.g. {cells[0]}), not as repeats"
            )

    def config_of(self, key: Key) -> str:
        p = dict(key.params)
        return self.label + cellnames.suffix({f: p.get(f) for f in self.label_fields})

    def params_of(self, key: Key) -> dict[str, Any]:
        p = dict(key.params)
        return {f: p.get(f) for f in self.label_fields}

    def place(self, key: Key, tin: float | None, tout: float | None) -> tuple[str, dict[str, Any]]:
        """(scenario name, workload with any token fields) of one result of ``key``."""
        g = self.groups[key]
        k = (key, _cluster(tin, g.starts[0]), _cluster(tout, g.starts[1]))
        return self.names[k], {**dict(key.workload), **self.extra[k]}
