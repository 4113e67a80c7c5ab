"""One source of advice: per cell, which full config the decided verdicts say to deploy, or which set
of configs they leave even or undecided, with the basis the verdicts were decided on.

Every piece of advice a report gives (the per-concurrency schedule, the recommendations' configs, the
next steps, the compare report's config inside a method, the plots' highlights and the HTML headline)
reads :func:`cell_advice` and nothing else, in both report kinds, so two reports of one run cannot
disagree on a cell and no sentence names a config the verdicts did not pick (issue 34 item 1):

- the columns no other column beats in the cell (the winner alone, else the even leaders);
- inside each of them (a compare column holds a method's configs), the configs no other config of
  the method beats, by the method's own verdicts (``member_vs``; its sweep);
- one config left: a ``pick``; several: ``even`` when every pair of them was shown even (equivalent
  within the design's margin, or a gap under ``--min-effect``), else ``undecided``, with about how
  many more runs a side would decide the gap seen (:func:`specsweep.stats.planning.runs_to_decide`).

An anomaly never erases advice here: a cell the summaries set aside keeps its cell advice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from specsweep.analysis.core import PairVerdict, Table, find_verdict
from specsweep.analysis.outcomes import tie_reason
from specsweep.stats import planning as stats_plan

Point = tuple[str, int]
State = Literal["pick", "even", "undecided"]


@dataclass(frozen=True)
class Basis:
    """What a piece of advice rests on, as its verdicts were decided: the looks at the data (rounds of
    the adaptive design), the runs a side (fewest and most over its verdicts) and whether each side's
    noise was measured (its own repeats or A/A runs) or assumed."""

    looks: int
    runs_low: int
    runs_high: int
    noise: Literal["measured", "assumed", "mixed"]

    @staticmethod
    def of(vs: Sequence[PairVerdict]) -> Basis | None:
        if not vs:
            return None
        runs = [n for v in vs for n in (v.n_a, v.n_b)]
        measured = [noise_measured(v) for v in vs]
        noise: Literal["measured", "assumed", "mixed"] = (
            "measured" if all(measured) else "assumed" if not any(measured) else "mixed"
        )
        return Basis(max(v.looks for v in vs), min(runs), max(runs), noise)


def noise_measured(v: PairVerdict) -> bool:
    """Both sides' noise measured (repeats, A/A runs), none of it the assumed default."""
    return "default" not in v.basis


@dataclass(frozen=True)
class CellAdvice:
    scenario: str
    concurrency: int
    columns: list[str]  # the table's columns no other beats here (compare: methods)
    configs: list[str]  # the full configs advised, in table order: one is a pick
    state: State
    basis: Basis | None  # of the verdicts the advice was read from
    more_runs: int | None = None  # undecided: about this many more runs a side would decide ``gap``
    gap: float | None = (
        None  # undecided: the gap those runs would decide (the largest seen, at least the target)
    )
    verdicts: list[PairVerdict] = field(default_factory=list)  # the verdicts it was read from

    @property
    def config(self) -> str | None:
        """The one config advised, or None (even or undecided)."""
        return self.configs[0] if self.state == "pick" else None


def _unbeaten(
    labels: Sequence[str], vs: Sequence[PairVerdict], s: str, c: int
) -> tuple[list[str], list[PairVerdict]]:
    """The labels no other label beats in the cell (of those with a verdict), and the verdicts read."""
    found = [
        v
        for i, x in enumerate(labels)
        for y in labels[i + 1 :]
        if (v := find_verdict(list(vs), s, c, x, y)) is not None
    ]
    present = [lab for lab in labels if any(lab in (v.a, v.b) for v in found)]
    beaten = {(v.b if v.winner == v.a else v.a) for v in found if v.winner is not None}
    return [lab for lab in present if lab not in beaten], found


def _even(v: PairVerdict) -> bool:
    return v.verdict == "tie" and (v.equivalent or tie_reason(v) == "min_effect")


def set_state(configs: Sequence[str], vs: Sequence[PairVerdict]) -> State:
    """One config: a pick; several: even when every verdict between them shows them even, else undecided."""
    if len(configs) < 2:
        return "pick"
    inside = [v for v in vs if v.a in configs and v.b in configs]
    return "even" if inside and all(_even(v) for v in inside) else "undecided"


def _more_runs(vs: Sequence[PairVerdict], cells: int) -> tuple[int | None, float | None]:
    """About how many more runs a side would decide the largest undecided gap of ``vs`` (at least the
    planning target), at the noise the verdict used (stats.planning.runs_to_decide); None beyond its cap."""
    und = [v for v in vs if v.verdict == "tie" and not _even(v)]
    if not und:
        return None, None
    v = max(und, key=lambda x: x.gain)
    gap = max(v.gain, v.target_effect)
    sigma = max(v.noise_sd, 1e-6)
    need = stats_plan.runs_to_decide(sigma, gap, comparisons=max(v.n_compared, 1), level=v.level,
                                     sigma_df=math.inf if v.df is None else v.df, cells=cells)  # fmt: skip
    if need is None:
        return None, gap
    return max(need - max(v.n_a, v.n_b), 1), gap


def advise(
    t: Table, vs: Sequence[PairVerdict], member_vs: Sequence[PairVerdict], s: str, c: int
) -> CellAdvice | None:
    """The advice of one cell (None when fewer than two configs were compared there)."""
    top, read = _unbeaten(t.labels(), vs, s, c)
    if not read:
        return None
    configs: list[str] = []
    for col in t.columns:
        if col.label not in top:
            continue
        if t.kind == "compare" and len(col.members) > 1:
            inner, inner_read = _unbeaten(col.members, member_vs, s, c)
            read = read + inner_read
            if not inner:  # no verdict between the method's configs here: every one measured, undecided
                inner = [m for m in col.members if (d := t.dataset.get(m, s, c)) is not None and d.ok]
            configs.extend(inner)
        elif t.kind == "compare" and col.members:
            configs.append(col.members[0])
        else:
            configs.append(col.label)
    within = [v for v in read if v.a in configs and v.b in configs] + [
        v for v in read if {v.a, v.b} <= set(top) and len(top) > 1
    ]
    state: State = (
        "pick" if len(configs) == 1 else "even" if within and all(_even(v) for v in within) else "undecided"
    )
    more, gap = _more_runs(within, len(t.points)) if state == "undecided" else (None, None)
    basis_vs = within if state != "pick" else read
    return CellAdvice(s, c, top, configs, state, Basis.of(basis_vs), more, gap, list(read))


def cell_advice(
    t: Table, vs: Sequence[PairVerdict], member_vs: Sequence[PairVerdict] = ()
) -> dict[Point, CellAdvice]:
    """:func:`advise` for every cell of the table that has advice, in table order. ``member_vs``: for a
    compare table, the verdicts between each method's own configs (its sweep's); a sweep needs none."""
    out: dict[Point, CellAdvice] = {}
    for s, c in t.points:
        a = advise(t, vs, member_vs, s, c)
        if a is not None:
            out[(s, c)] = a
    return out
