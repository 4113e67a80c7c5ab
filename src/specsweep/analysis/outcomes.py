"""What the verdict list says per cell and per group of cells, for any number of configs.

Every sentence of a report is read from these, so no sentence can say more (or less) than the
verdicts do (issue 26 item 3: with three methods the text said "no difference" while two of them
beat the third):

- per cell (:func:`cell_outcomes`): the configs with a valid result, who beats whom, the ``winner``
  (the config that beats every other config of the cell, by its own verdict against each), the
  ``top`` (the configs no other config beats: even with each other where there is no winner);
- per tie, why it is one (:func:`tie_reason`): the gap is under ``--min-effect``, the minimum that
  matters ("min_effect"), or the runs cannot resolve it ("noise").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from specsweep.analysis.core import PairVerdict, Table, find_verdict

Point = tuple[str, int]


class _Decided(Protocol):
    @property
    def verdict(self) -> str: ...
    @property
    def gain(self) -> float: ...
    @property
    def min_effect(self) -> float: ...


def tie_reason(v: _Decided) -> str | None:
    """Why a verdict is a tie: "min_effect" when its gap is under the minimum effect that counts as a
    win (however sure the test is), "noise" when the runs cannot resolve it; None for a winner."""
    if v.verdict != "tie":
        return None
    return "min_effect" if v.min_effect > 0 and v.gain < v.min_effect else "noise"


@dataclass(frozen=True)
class CellOutcome:
    scenario: str
    concurrency: int
    configs: list[str]  # the configs compared in this cell (a verdict with at least one other)
    winner: str | None  # beats every other config of the cell
    top: list[str]  # configs no other config beats, in table order
    beaten_by: dict[str, list[str]] = field(default_factory=dict)  # config -> the configs that beat it
    ties: dict[str, int] = field(default_factory=dict)  # tie reason -> tied pairs in the cell

    @property
    def decided(self) -> bool:
        """Some pair of the cell has a winner."""
        return any(self.beaten_by.values())


def cell_outcome(t: Table, vs: list[PairVerdict], s: str, c: int) -> CellOutcome | None:
    """The outcome of one cell (None when fewer than two configs have a verdict there)."""
    labels = t.labels()
    pairs = [(x, y) for i, x in enumerate(labels) for y in labels[i + 1 :]]
    found = [v for x, y in pairs if (v := find_verdict(vs, s, c, x, y)) is not None]
    configs = [lab for lab in labels if any(lab in (v.a, v.b) for v in found)]
    if len(configs) < 2:
        return None
    beaten_by: dict[str, list[str]] = {lab: [] for lab in configs}
    ties: dict[str, int] = {}
    for v in found:
        if v.winner is not None:
            beaten_by[v.b if v.winner == v.a else v.a].append(v.winner)
        elif (why := tie_reason(v)) is not None:
            ties[why] = ties.get(why, 0) + 1
    top = [lab for lab in configs if not beaten_by[lab]]
    winner = None
    for lab in configs:
        if all(lab in beaten_by[o] for o in configs if o != lab):
            winner = lab
    order = {lab: i for i, lab in enumerate(labels)}
    beaten_by = {k: sorted(set(v), key=order.__getitem__) for k, v in beaten_by.items()}
    return CellOutcome(s, c, configs, winner, top, beaten_by, ties)


def cell_outcomes(t: Table, vs: list[PairVerdict], points: list[Point] | None = None) -> list[CellOutcome]:
    """:func:`cell_outcome` of every point (or of ``points``) that has one, in table order."""
    out = []
    for s, c in points if points is not None else t.points:
        o = cell_outcome(t, vs, s, c)
        if o is not None:
            out.append(o)
    return out


@dataclass(frozen=True)
class Tally:
    """Per config over a set of cells: sole wins, cells behind another config, and the cells."""

    n: int  # cells compared
    wins: dict[str, int]  # cells where the config beats every other
    behind: dict[str, int]  # cells where some other config beats it
    beaten_by: dict[str, dict[str, int]]  # config -> {config that beat it: cells}
    even: int  # cells with no winner in any pair
    leaders_even: int  # cells with decided pairs but no single winner (the leaders are even)
    ties: dict[str, int]  # tie reason -> cells with no winner in any pair, by their ties' reason


def tally(t: Table, outcomes: list[CellOutcome]) -> Tally:
    labels = t.labels()
    wins = dict.fromkeys(labels, 0)
    behind = dict.fromkeys(labels, 0)
    by: dict[str, dict[str, int]] = {lab: {} for lab in labels}
    even = leaders_even = 0
    ties: dict[str, int] = {}
    for o in outcomes:
        if o.winner is not None:
            wins[o.winner] += 1
        elif not o.decided:
            even += 1
            why = "min_effect" if set(o.ties) == {"min_effect"} else "noise"
            ties[why] = ties.get(why, 0) + 1
        else:
            leaders_even += 1
        for lab, who in o.beaten_by.items():
            if who:
                behind[lab] += 1
                for w in who:
                    by[lab][w] = by[lab].get(w, 0) + 1
    return Tally(len(outcomes), wins, behind, by, even, leaders_even, ties)
