"""Launches nothing links (analysis.model.unlinked_dirs, docs/statistics.md "Sessions"): a native run dir
in blocked order, or in rounds with a single round, makes each config's runs a session of its own;
interleaved rounds (2 or more) link them; a run dir of one config, or of an unknown order, is left
as it is."""

from __future__ import annotations

import pytest

from specsweep.analysis.model import unlinked_dirs


def _rows(
    d: str, labels: str, rounds: int
) -> list[tuple[str, tuple[str, int], float, str, None, int, None, int]]:
    return [(c, ("s", 1), 0.0, d, None, r, None, 0) for r in range(rounds) for c in labels]


@pytest.mark.parametrize(
    ("kind", "labels", "rounds", "split"),
    [
        ("blocked", "ab", 1, True),
        ("blocked", "ab", 3, True),  # repeats back to back, still one launch a config
        ("interleaved", "ab", 1, True),  # a single round: the same data as blocked
        ("adaptive", "ab", 1, True),
        ("interleaved", "ab", 2, False),
        ("interleaved", "ab", 5, False),
        ("blocked", "a", 3, False),  # one config: nothing to compare across
        ("", "ab", 3, False),  # order unknown (an imported file): not split
    ],
)
def test_unlinked_dirs_by_order_and_rounds(kind: str, labels: str, rounds: int, split: bool) -> None:
    rows = _rows("rd", labels, rounds)
    assert unlinked_dirs(rows, {"rd": kind}) == (("rd",) if split else ())


def test_only_the_unlinked_run_dir_is_split() -> None:
    rows = _rows("blocked-dir", "ab", 3) + _rows("rounds-dir", "ab", 3)
    kinds = {"blocked-dir": "blocked", "rounds-dir": "interleaved"}
    assert unlinked_dirs(rows, kinds) == ("blocked-dir",)
