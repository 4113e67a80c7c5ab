"""Cells whose configs ran different workloads: their tokens per request (input or output) differ by
more than :data:`cellnames.TOKEN_TOLERANCE`, so their throughputs measure different work.

sglang's ``--random-range-ratio 0`` draws input lengths uniform in [1, L] (about L/2 on average),
vLLM's sends exactly L: two configs under one length description can run a 2x different workload.
Such a cell keeps its numbers, says so (in the cell and the report's header) and gets no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from specsweep.analysis.core import Table
from specsweep.analysis.data import CellData
from specsweep.importers import cellnames


@dataclass(frozen=True)
class Mismatch:
    scenario: str
    concurrency: int
    tokens: dict[str, tuple[float | None, float | None]]  # column label -> (input, output) per request
    sides: tuple[str, ...]  # "input" and/or "output": which differ


def cell_tokens(d: CellData) -> tuple[float | None, float | None]:
    """Mean (input, output) tokens per request over a cell's ok repeats."""
    pairs = [cellnames.tokens_per_request(r) for r in d.ok]
    out: list[float | None] = []
    for i in (0, 1):
        xs = [p[i] for p in pairs if p[i] is not None]
        out.append(sum(xs) / len(xs) if xs else None)  # type: ignore[arg-type]
    return out[0], out[1]


def mismatches(t: Table) -> list[Mismatch]:
    """Every (scenario, concurrency) whose measured configs differ in tokens per request."""
    out = []
    for s, c in t.points:
        toks = {}
        for col in t.columns:
            e = t.entry(col.label, s, c)
            if e is not None and e.ok and e.data is not None:
                toks[col.label] = cell_tokens(e.data)
        sides = []
        for i, side in enumerate(("input", "output")):
            vals = [x for v in toks.values() if (x := v[i]) is not None]
            if len(vals) >= 2 and cellnames.apart(min(vals), max(vals)):
                sides.append(side)
        if sides:
            out.append(Mismatch(s, c, toks, tuple(sides)))
    return out
