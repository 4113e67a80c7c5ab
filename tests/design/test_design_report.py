"""A run made with the design and its report agree: the report reads the manifest's ``design`` record
and the rows' ``round``/``seq`` and judges them with the design's own sequential rule (docs/statistics.md)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from test_analysis import make_run, row
from test_design_rules import LABELS, replay

from specsweep.experiment.adaptive import DesignSettings
from specsweep.report import build_view

SETTINGS = DesignSettings(budget_fraction=None)


def truth(label: str, p: tuple[str, int]) -> float:
    """A 12% ahead of B except at c=64 and c=96 (2% apart); C a third."""
    close = p[1] in (64, 96)
    return {"A": 1020.0 if close else 1120.0, "B": 1000.0, "C": 350.0}[label] * p[1]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_report_of_a_design_run_gives_the_runs_own_decisions(tmp_path: Path, seed: int) -> None:
    states, obs = replay(truth, noise=0.03, seed=seed, design=SETTINGS)
    final = states[-1]
    rows = [row(o.label, "m", {}, o.point[0], o.point[1], o.value, o.repeat, round=o.round, seq=o.seq)  # type: ignore[arg-type]
            for o in obs]  # fmt: skip
    rounds = sorted({o.round for o in obs})
    order = [[la for la in (LABELS if r % 2 == 0 else LABELS[::-1]) if any(o.round == r and o.label == la for o in obs)]
             for r in rounds]  # fmt: skip
    make_run(tmp_path, "design", rows, {"design": {"kind": "adaptive", "settings": asdict(SETTINGS)},
                                        "run_order": {"kind": "adaptive", "rounds": order}})  # fmt: skip
    v = build_view([tmp_path], "sweep")
    by_pair = {((x.scenario, x.concurrency), x.a, x.b): x for x in v.verdicts}
    n = 0
    for cell in final.cells:
        for ps in cell.pairs:
            ver = by_pair[(ps.point, ps.a, ps.b)]
            assert ver.winner == ps.winner, (ps, ver)
            assert ver.p_value == pytest.approx(ps.p_value)
            assert ver.looks >= 1 and (ver.verdict == "tie") == (ver.ci_low <= 0 <= ver.ci_high)
            n += 1
    assert n == len(v.verdicts) == 3 * len(final.cells)
    assert any(x.winner for x in v.verdicts) and any(x.verdict == "tie" for x in v.verdicts)


def test_without_the_design_record_the_plain_rule_applies(tmp_path: Path) -> None:
    _states, obs = replay(truth, noise=0.03, seed=3, design=SETTINGS)
    rows = [row(o.label, "m", {}, o.point[0], o.point[1], o.value, o.repeat, round=o.round, seq=o.seq)  # type: ignore[arg-type]
            for o in obs]  # fmt: skip
    make_run(tmp_path, "plain", rows)
    v = build_view([tmp_path], "sweep")
    assert all(x.looks == 1 for x in v.verdicts)
