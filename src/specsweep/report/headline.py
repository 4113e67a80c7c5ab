"""The first next step, "what to deploy", read from the recommendation rows and nothing else.

The rows per load class (workload class x concurrency band) are decided outside the cells flagged as
anomalies; a row counts when it names a config with medium or high confidence (never a row that a
lone win against ties or losses makes "low"). Then:

- every load class names the same full config: "Serve `DSpark(st=5)` by default";
- else, per full config, the cells it is recommended for ("Deploy `DSpark(st=5)` for chat_short c=1,
  16; ..."), and how many load classes have no clear leader;
- no row counts: no headline (the conclusion and the ties note say why).

Issue 29 item 5: the headline said "Serve `B` by default: it wins 1 of 18 cells" while every row said
"either" and that one cell was flagged as an outlier.
"""

from __future__ import annotations

from collections.abc import Sequence

from specsweep.report import view as V
from specsweep.report.view import cells_text

CONFIDENT = ("high", "medium")


def steps(recs: Sequence[V.Recommendation], scenarios: Sequence[str]) -> list[V.Msg]:
    rows = [r for r in recs if r.workload_class is not None] or list(recs)
    named = [r for r in rows if r.config is not None and r.confidence in CONFIDENT and r.picks]
    if not named:
        return []
    cells: dict[str, list[list[str | int]]] = {}
    even: dict[str, set[str]] = {}  # the configs of the same method even with it in all its cells
    for r in named:
        for p in r.picks:
            cells.setdefault(p.config, []).extend(p.cells)
            even[p.config] = even.get(p.config, set(p.even_with)) & set(p.even_with)
    wins = sum(r.wins for r in named)
    n = sum(r.n_cells for r in named)
    aside = sum(len(r.set_aside) for r in rows)
    if len(named) == len(rows) and len(cells) == 1:
        (config,) = cells
        args: dict[str, V.ArgValue] = {
            "config": config,
            "rows": len(rows),
            "wins": wins,
            "n": n,
            "aside": aside,
        }
        return [V.Msg(key="next.default_aside" if aside else "next.default", args=args)]
    out = []
    for config, cs in sorted(cells.items(), key=lambda kv: -len(kv[1])):
        args = {"config": config, "cells": cells_text(cs, scenarios)}
        if even[config]:
            args["even"] = ", ".join(f"`{x}`" for x in sorted(even[config]))
        out.append(V.Msg(key="next.deploy_even" if even[config] else "next.deploy", args=args))
    if len(named) < len(rows):
        out.append(V.Msg(key="next.deploy_rest", args={"k": len(rows) - len(named), "n": len(rows)}))
    return out
