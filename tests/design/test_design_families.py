"""The design's Benjamini-Hochberg families: the pairs within one method (what its sweep report
compares) and the pairs across methods are adjusted apart, so easy wins over a far-behind method do
not loosen the threshold for the close comparisons within a method (DesignSettings.families)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from specsweep.experiment.adaptive import DesignSettings
from specsweep.stats.sequential import decide, decide_families

POINTS = [("s", c) for c in range(9)]


@dataclass
class FakeSeq:
    """What decide() reads of a pair's looks: its sequential p values and the deciding look's sign."""

    p_seq: float
    p_eq_seq: float = 1.0

    @property
    def deciding(self) -> Any:
        return SimpleNamespace(test=SimpleNamespace(log_effect=1.0))


def _grid() -> dict[Any, Any]:
    seq: dict[Any, Any] = {}
    for p in POINTS:  # two far-behind EAGLE pairs per cell: decided at once
        seq[(p, "st3", "eagle")] = FakeSeq(1e-9)
        seq[(p, "st5", "eagle")] = FakeSeq(1e-9)
        seq[(p, "st3", "st5")] = FakeSeq(0.5)
    seq[(POINTS[0], "st3", "st5")] = FakeSeq(0.01)  # a close pair, not decided on its own evidence
    return seq


SETTINGS = DesignSettings(families=(("st3", "dspark"), ("st5", "dspark"), ("eagle", "eagle")))


def test_one_family_lets_the_easy_wins_carry_a_close_pair() -> None:
    d = decide(_grid(), 0.05)  # 27 pairs: rank 19 of 27 -> threshold 0.05 * 19 / 27 = 0.035
    assert (POINTS[0], "st3", "st5") in d.winner


def test_families_keep_the_close_pair_to_its_own_evidence() -> None:
    d = decide_families(_grid(), 0.05, lambda k: SETTINGS.family(k[1], k[2]))
    assert (POINTS[0], "st3", "st5") not in d.winner  # 9 within-DSpark pairs: 0.01 > 0.05 / 9
    assert sum(1 for k in d.winner if "eagle" in k) == 18
    within = d.level_of((POINTS[0], "st3", "st5"))
    across = d.level_of((POINTS[0], "st3", "eagle"))
    assert within < across  # each family's own effective level (its intervals)


def test_family_names() -> None:
    assert SETTINGS.family("st3", "st5") == "within:dspark"
    assert SETTINGS.family("st5", "eagle") == SETTINGS.family("eagle", "st3") == "across"
    assert DesignSettings().family("a", "b") == "all"
