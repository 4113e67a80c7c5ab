"""What the report says about the noise its verdicts rest on: each config's own noise, a drift taken
out, blocked order, outlier runs, heavy tails under single-run verdicts (docs/statistics.md) - in
both languages."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from test_analysis import K3, K5, make_run, row

from specsweep.report import build_view, render


def _keys(v) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.key for n in v.notes]


def _grid(
    rng: np.random.Generator, drift: float, order: str, outlier: bool = False, rounds: int = 3
) -> list[dict]:  # type: ignore[type-arg]
    rows: list[dict] = []  # type: ignore[type-arg]
    cells = [1, 2, 4, 8, 16, 32]
    if order == "interleaved":
        seq = [
            (k, c, r) for r in range(rounds) for k in ((K3, K5) if r % 2 == 0 else (K5, K3)) for c in cells
        ]
    else:
        seq = [(k, c, r) for k in (K3, K5) for c in cells for r in range(3)]
    for i, (k, c, r) in enumerate(seq):
        v = 1000 * c * math.exp(drift * i / len(seq) + rng.normal(0, 0.005))
        if outlier and i == 7:
            v *= 1.35
        rows.append(row(*k, "chat_short", c, v, r, round=r, seq=i))
    return rows


def test_a_drift_in_interleaved_rounds_is_named_and_taken_out(tmp_path: Path) -> None:
    # 5 rounds: with 3, round levels are told from the launches' own levels on 2 df only (stats.launch.round_drift_p)
    make_run(tmp_path, "x", _grid(np.random.default_rng(0), 0.06, "interleaved", rounds=5),
             {"run_order": {"kind": "interleaved", "rounds": []}})  # fmt: skip
    v = build_view([tmp_path], "sweep")
    keys = _keys(v)
    assert "note.noise_per_config" in keys and "note.drift_rounds" in keys
    assert all(x.verdict == "tie" for x in v.verdicts)  # equal configs stay equal once the drift is out
    for lang, word in (("en", "drifted"), ("zh", "漂移")):
        assert word in render(v, "md", lang)


def test_blocked_order_says_it_cannot_rule_a_drift_out(tmp_path: Path) -> None:
    make_run(
        tmp_path,
        "x",
        _grid(np.random.default_rng(1), 0.0, "blocked"),
        {"run_order": {"kind": "blocked", "rounds": []}},
    )
    v = build_view([tmp_path], "sweep")
    assert "note.blocked_order" in _keys(v) and "note.drift_rounds" not in _keys(v)


def test_an_outlier_run_is_listed(tmp_path: Path) -> None:
    make_run(tmp_path, "x", _grid(np.random.default_rng(2), 0.0, "interleaved", outlier=True),
             {"run_order": {"kind": "interleaved", "rounds": []}})  # fmt: skip
    v = build_view([tmp_path], "sweep")
    (note,) = [n for n in v.notes if n.key == "note.outliers"]
    assert note.args["n"] == 1 and "+3" in str(note.args["list"])  # ~+35%
