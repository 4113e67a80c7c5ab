"""The first next steps, "what to deploy", read from the cell advice (:mod:`specsweep.analysis.advice`)
and nothing else, so they say what the schedule beside them says, cell by cell (issue 34 items 1-2):

- one full config advised in every cell, alone or in every even or undecided set, and every load class
  (workload class x concurrency band) naming it with medium or high confidence: "Serve `DSpark(st=5)`
  by default", naming the cells it covers by a tie (a band-level pick: it wins some, ties the rest,
  loses none);
- else, per advice (one config, or a set left even or undecided), its cells: "Deploy `DSpark(st=5)`
  for chat_short c=1, 16", "`DSpark(st=3)` or `DSpark(st=5)` for rag_medium c=32: undecided; about 3
  more runs a side would decide a gap of 4.1%", "... even there: either will do";
- no advice: no headline (the conclusion and the ties note say why).

Issue 29 item 5: the headline said "Serve `B` by default: it wins 1 of 18 cells" while every row said
"either": a default needs every load class behind it; a lone win is named for its own cell only.
"""

from __future__ import annotations

from collections.abc import Sequence

from specsweep.report.build import view as V
from specsweep.report.build.view import cells_text

CONFIDENT = ("high", "medium")


def _names(configs: Sequence[str]) -> str:
    return ", ".join(f"`{c}`" for c in configs)


def _default(
    recs: Sequence[V.Recommendation], advice: Sequence[V.CellAdvice], scenarios: Sequence[str]
) -> V.Msg | None:
    """ "Serve X by default" when every load class names X (its one config) with confidence and every
    cell's advice holds X; the cells it covers by a tie are named."""
    rows = [r for r in recs if r.workload_class is not None] or list(recs)

    def own(r: V.Recommendation) -> set[str]:  # the configs a row names alone (or as its band pick)
        return {p.config for p in r.picks if p.state == "pick" or p.band_pick}

    named = [r for r in rows if r.config is not None and r.confidence in CONFIDENT and own(r)]
    configs = {c for r in named for c in own(r)}
    if not rows or len(named) < len(rows) or len(configs) != 1:
        return None
    (config,) = configs
    wins = sum(1 for a in advice if a.state == "pick" and a.configs == [config])
    if not wins or not all(config in a.configs for a in advice):  # it wins some, ties the rest, loses none
        return None
    tied = [a for a in advice if a.state != "pick"]
    args: dict[str, V.ArgValue] = {"config": config, "rows": len(rows), "wins": wins, "n": len(advice)}
    if not tied:
        return V.Msg(key="next.default", args=args)
    others = sorted({c for a in tied for c in a.configs if c != config})
    args.update(
        cells=cells_text([[a.scenario, a.concurrency] for a in tied], scenarios), others=_names(others)
    )
    return V.Msg(key="next.default_tie", args=args)


def steps(
    recs: Sequence[V.Recommendation], advice: Sequence[V.CellAdvice], scenarios: Sequence[str]
) -> list[V.Msg]:
    if not advice:
        return []
    if (d := _default(recs, advice, scenarios)) is not None:
        return [d]
    groups: dict[tuple[tuple[str, ...], str], list[V.CellAdvice]] = {}
    for a in advice:
        groups.setdefault((tuple(a.configs), a.state), []).append(a)
    out = []
    for (configs, state), cells in sorted(groups.items(), key=lambda kv: (kv[0][1] != "pick", -len(kv[1]))):
        where = cells_text([[a.scenario, a.concurrency] for a in cells], scenarios)
        if state == "pick":
            out.append(V.Msg(key="next.deploy", args={"config": configs[0], "cells": where}))
            continue
        args: dict[str, V.ArgValue] = {"configs": " / ".join(f"`{c}`" for c in configs), "cells": where}
        if state == "even":
            out.append(V.Msg(key="next.either", args=args))
            continue
        more = [a.more_runs for a in cells if a.more_runs is not None]
        gaps = [a.gap for a in cells if a.gap is not None]
        if len(more) == len(cells) and gaps:
            args.update(more=max(more), gap=max(gaps))
            out.append(V.Msg(key="next.undecided", args=args))
        else:
            args.update(gap=max(gaps) if gaps else 0.0)
            out.append(V.Msg(key="next.undecided_many", args=args))
    return out
