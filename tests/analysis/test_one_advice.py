"""One source of advice (issue 34 items 1-4, 7): the schedule, the recommendations' configs, the next
steps and the compare report's config inside a method all read the cell advice, so no report names a
single config where the verdict inside the method is undecided, the sweep and compare reports of one
run agree cell by cell, every suggested command parses, and an anomaly never erases a decided verdict.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from test_analysis import K3, K5, make_run, row

from specsweep.analysis import anomalies, core, verdicts
from specsweep.analysis.data import load
from specsweep.cli import build_parser
from specsweep.report import build_view, render
from specsweep.report.build.view import ReportView

EAGLE = ("EAGLE", "eagle", {"num_steps": 3})
GRID = {"chat_short": (1, 16, 64), "rag_medium": (1, 8, 32), "stress_standard": (64, 96, 128)}


def _equal_grid(tmp: Path, seed: int, differ: dict[tuple[str, int], float] | None = None) -> Path:
    """st=3 = st=5 in every cell (but ``differ``: st=5's factor there), 3 repeats at 3% noise, EAGLE a
    third of them; the experiment asks for a compare report."""
    rng = np.random.default_rng(seed)
    differ = differ or {}
    rows = []
    for s, levels in GRID.items():
        for c in levels:
            base = 1000.0 * c**0.5
            for rep in range(3):

                def noisy(x: float) -> float:
                    return x * math.exp(rng.normal(0, 0.03))

                rows += [row(*K3, s, c, noisy(base), rep), row(*K5, s, c, noisy(base * differ.get((s, c), 1.0)), rep),
                         row(*EAGLE, s, c, noisy(base / 3), rep)]  # fmt: skip
    rd = make_run(tmp, "x", rows, {"config": {"report": {"kind": "compare"}}})
    return rd.path


def _single(view: ReportView, s: str, c: int) -> str | None:
    """The one DSpark config the view's advice names for the cell, else None."""
    a = view.cell_advice(s, c)
    if a is None:
        return None
    mine = [x for x in a.configs if x.startswith("DSpark")]
    return mine[0] if len(mine) == 1 else None


def _within(tmp: Path) -> dict[tuple[str, int], str]:
    """Each cell's st=3 vs st=5 verdict, decided as the sweep decides it."""
    ds = load([tmp])
    t = core.build_sweep(ds, "dspark")
    vs = verdicts.all_verdicts(t, core.PRIMARY, core.measure_noise(ds))
    return {(v.scenario, v.concurrency): v.verdict for v in vs}


def _deploy_cells(md: str) -> dict[str, set[str]]:
    """Next steps' "Deploy `X` for cells" lines: config -> "scenario c=N" cells."""
    out: dict[str, set[str]] = {}
    for m in re.finditer(r"Deploy `([^`]+)` for ([^(]+?) \(", md):
        for part in m.group(2).split("; "):
            s, levels = part.split(" c=")
            out.setdefault(m.group(1), set()).update(f"{s} c={x}" for x in levels.split(", "))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_no_report_names_one_config_where_the_method_is_undecided(tmp_path: Path, seed: int) -> None:
    path = _equal_grid(tmp_path, seed)
    within = _within(path)
    assert sum(v == "tie" for v in within.values()) >= 7  # equal configs: mostly undecided
    cmp_view, sweep_view = build_view([path], "compare"), build_view([path], "sweep", method="dspark")
    for view in (cmp_view, sweep_view):
        for (s, c), verdict in within.items():
            if verdict == "tie":
                assert _single(view, s, c) is None, (view.kind, s, c)
        # the schedule, the recommendations' picks, the winner table and the next steps, all rendered
        for e in view.schedule:
            cells = [(e.scope, c) for c in view.concurrencies if e.c_low <= c <= (e.c_high or c)]
            if e.config is not None:
                assert all(within.get(p) != "tie" for p in cells if p in within), (view.kind, e)
        for r in view.recommendations:
            for p in r.picks:
                if p.state == "pick":
                    assert all(within[(str(s), int(c))] != "tie" for s, c in p.cells), (view.kind, p)
        md = render(view, "md", "en")
        for cfg, cells in _deploy_cells(md).items():
            for cell in cells:
                s, c = cell.split(" c=")
                assert within[(s, int(c))] != "tie", (view.kind, cfg, cell)
    for w in cmp_view.winners:
        name = cmp_view.winner_name(w)
        if name.kind == "config" and within.get((w.scenario, w.concurrency)) == "tie":
            assert " / " in name.names[0]


def test_sweep_and_compare_reports_of_one_run_agree_cell_by_cell(tmp_path: Path) -> None:
    # st=5 decidedly ahead in two cells, equal elsewhere
    path = _equal_grid(tmp_path, 3, {("chat_short", 1): 1.4, ("stress_standard", 128): 0.7})
    cmp_view, sweep_view = build_view([path], "compare"), build_view([path], "sweep", method="dspark")
    assert cmp_view.cell_advice("chat_short", 1).configs == ["DSpark(st=5)"]  # type: ignore[union-attr]
    for s, levels in GRID.items():
        for c in levels:
            a, b = cmp_view.cell_advice(s, c), sweep_view.cell_advice(s, c)
            assert a is not None and b is not None
            assert a.columns == ["DSpark"]  # EAGLE far behind everywhere
            assert (a.configs, a.state) == (b.configs, b.state), (s, c)
    sched = {(e.scope, e.c_low, e.c_high, tuple(e.configs), e.state) for e in cmp_view.schedule}
    assert sched == {(e.scope, e.c_low, e.c_high, tuple(e.configs), e.state) for e in sweep_view.schedule}
    steps = [
        m for m in cmp_view.next_steps if m.key.startswith(("next.deploy", "next.undecided", "next.either"))
    ]
    assert steps == [
        m for m in sweep_view.next_steps if m.key.startswith(("next.deploy", "next.undecided", "next.either"))
    ]
    assert {"config": "DSpark(st=5)", "cells": "chat_short c=1"} in [m.args for m in steps]


def test_undecided_advice_says_how_many_runs_would_decide_it(tmp_path: Path) -> None:
    view = build_view([_equal_grid(tmp_path, 1)], "compare")
    und = [a for a in view.advice if a.state == "undecided"]
    assert und and all(a.more_runs is not None and a.more_runs >= 1 and a.gap is not None for a in und)
    assert all(a.basis is not None and a.basis.noise == "measured" and a.basis.runs_low == 3 for a in und)
    md = render(view, "md", "en")
    assert re.search(
        r"`DSpark\(st=3\)` / `DSpark\(st=5\)` for .*: undecided .*about \d+ more runs a side would decide", md
    )
    zh = render(view, "md", "zh")
    assert "未判定" in zh and "每边再运行约" in zh


def _commands(text: str) -> list[str]:
    return [c for c in re.findall(r"`(specsweep [^`]+)`", text)]


def _reports(tmp: Path) -> list[str]:
    rows = [row(*K3, "chat_short", c, 1000.0 * c) for c in (1, 8, 64)]
    rows += [row(*EAGLE, s, c, x) for s, c, x in (("chat_short", 1, 900.0), ("chat_short", 8, 800.0),
                                                    ("chat_short", 64, 64000.0))]  # fmt: skip
    a = tmp / "a"
    make_run(a, "x", rows)
    b = tmp / "b"  # two imported-style results that share no cell: the re-import hint
    make_run(b, "x", [row(*K3, "agg_c8_one", 8, 1000), row(*EAGLE, "agg_c8_two", 8, 900)])
    c = tmp / "c"  # k below DSpark's block: the check-lossless hint
    make_run(c, "x", [row(*K3, "chat_short", 8, 1000.0), row(*K5, "chat_short", 8, 1500.0)])
    out = []
    for d, kind in (
        (a, "compare"),
        (b, "compare"),
        (c, "sweep"),
        (_equal_grid(tmp / "d", 1).parent, "compare"),
    ):
        v = build_view([d], kind)
        out += [render(v, "md", lang) for lang in ("en", "zh")]
    return out


def test_every_suggested_command_parses_with_the_real_parser(tmp_path: Path) -> None:
    parser = build_parser()
    seen = set()
    for md in _reports(tmp_path):
        assert "--repeats" not in md  # `specsweep run` has no such flag
        for cmd in _commands(md):
            argv = shlex.split(cmd)[1:]
            try:
                parser.parse_args(argv)
            except SystemExit as e:  # argparse's error exit
                raise AssertionError(f"a report suggests a command that does not parse: {cmd}") from e
            seen.add(argv[0])
    assert {"import", "check-lossless"} <= seen


def _trend(tmp: Path, levels: tuple[int, ...], odd: int) -> ReportView:
    """DSpark 3x EAGLE at every level but ``odd`` (10x); st=5 decidedly ahead of st=3 at ``odd``."""
    rows = []
    for c in levels:
        ratio = 10.0 if c == odd else 3.0
        for rep in range(3):
            j, k = 1 + 0.01 * (rep - 1), 1 + 0.01 * ((rep + 1) % 3 - 1)
            rows += [row(*K5, "chat_short", c, 3000.0 * j * (1.15 if c == odd else 1.0), rep),
                     row(*K3, "chat_short", c, 3000.0 * k, rep),
                     row(*EAGLE, "chat_short", c, 3000.0 * j / ratio, rep)]  # fmt: skip
    make_run(tmp, "x", rows)
    return build_view([tmp], "compare")


def test_an_outlier_needs_three_other_levels(tmp_path: Path) -> None:
    v = _trend(tmp_path, (1, 16, 64), 16)  # two other levels: no trend to depart from
    assert not [a for a in v.anomalies if a.kind == "trend_outlier"]
    assert anomalies.MIN_TREND_POINTS == 4


def test_an_outlier_never_drops_the_decided_verdict_inside_the_method(tmp_path: Path) -> None:
    v = _trend(tmp_path, (1, 4, 16, 64, 128), 16)
    assert [(a.scenario, a.concurrency) for a in v.anomalies if a.kind == "trend_outlier"] == [
        ("chat_short", 16)
    ]
    a = v.cell_advice("chat_short", 16)
    assert a is not None and a.configs == ["DSpark(st=5)"] and a.state == "pick"
    assert any(e.c_low <= 16 <= (e.c_high or 16) and e.configs == ["DSpark(st=5)"] for e in v.schedule)
    md = render(v, "md", "en")
    assert re.search(r"Deploy `DSpark\(st=5\)` for chat_short c=[0-9, ]*\b16\b", md)


def test_report_defaults_to_the_experiments_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _equal_grid(tmp_path, 1)
    assert build_view([path], "auto").kind == "compare"
    from specsweep.cli import main

    assert main(["report", str(path), "--format", "json"]) == 0
    assert '"kind": "compare"' in capsys.readouterr().out
    assert main(["report", str(path), "--format", "table"]) == 0
    assert "EAGLE" in capsys.readouterr().out  # the compare table, not DSpark's sweep


def test_every_recommendation_states_the_basis_it_was_decided_on(tmp_path: Path) -> None:
    """DSpark's configs on 3 runs a side with measured noise, EAGLE once (its noise assumed): the row
    says so, never "single runs, assumed noise" (issue 34 item 6); the header describes the verdicts
    inside the method too."""
    rows = []
    rng = np.random.default_rng(4)
    for c in (1, 16, 64):
        for rep in range(3):
            rows += [row(*K3, "chat_short", c, 3000.0 * math.exp(rng.normal(0, 0.02)), rep),
                     row(*K5, "chat_short", c, 3000.0 * math.exp(rng.normal(0, 0.02)), rep)]  # fmt: skip
        rows.append(row(*EAGLE, "chat_short", c, 1000.0))
    make_run(tmp_path, "x", rows)
    v = build_view([tmp_path], "compare")
    for r in v.recommendations:
        assert r.decided_on is not None and (r.decided_on.runs_low, r.decided_on.runs_high) == (1, 3)
        assert r.decided_on.noise == "mixed"
    md = render(v, "md", "en")
    assert "single runs, assumed noise" not in md and "1-3 runs a side, noise partly assumed" in md
    assert "Verdicts inside each method (its configs against each other):" in md
    assert "每边 1-3 次运行，噪声部分假设" in render(v, "md", "zh")
