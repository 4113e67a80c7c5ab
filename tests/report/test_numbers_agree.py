"""Numbers in a row agree (issue 34 item 5): a gap shown beside two values is their gap, and one
comparison has one interval in every table and format. Before: the gap table read "+373.4%" beside
values 359.4% apart (the verdict's drift-adjusted estimate on log means), and a compare report of a
design run gave the design table's interval and a wider one (a best-of factor on top of the design's
own family) for the same two configs in the same cell."""

from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

from specsweep.experiment.adaptive import DesignSettings
from specsweep.report import build_view, render
from specsweep.report.build.view import ReportView
from specsweep.report.i18n import fmt_pct

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "design"))
from test_analysis import make_run, row
from test_design_rules import LABELS, POINTS, replay

K3 = ("DSpark(st=3)", "dspark", {"spec_tokens": 3})
EAGLE = ("EAGLE", "eagle", {"num_steps": 3})
METHODS = {"A": "m", "B": "m", "C": "c"}
SETTINGS = DesignSettings(budget_fraction=None, families=tuple(METHODS.items()))


def _skewed(tmp: Path) -> ReportView:
    """Three runs a config whose arithmetic means are 2-9% from their geometric ones; one level in the
    medium band (a recommendation of one cell)."""
    rows = []
    for c, spread in ((1, 0.6), (8, 0.3), (64, 0.5)):
        for rep, f in enumerate((1 - spread, 1.0, 1 + spread)):
            rows += [row(*K3, "chat_short", c, 3000.0 * f, rep), row(*EAGLE, "chat_short", c, 1000.0, rep)]
    make_run(tmp, "x", rows)
    return build_view([tmp], "compare")


def test_a_gap_beside_two_values_is_their_gap(tmp_path: Path) -> None:
    v = _skewed(tmp_path)
    (g,) = v.gaps
    for r in g.rows:
        assert r.a_value is not None and r.b_value is not None and r.verdict is not None
        gap = max(r.a_value, r.b_value) / min(r.a_value, r.b_value) - 1
        assert r.text.args["gain"] == gap
        assert (
            abs(r.verdict.gain - gap) > 0.005
        )  # the verdict's own estimate differs: the row shows the values'
    md = render(v, "md", "en")
    for r in g.rows:
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {r.concurrency} | {r.a_value:.2f} |"))
        assert line.endswith(f"| DSpark +{r.text.args['gain']:.1%} |")


def test_a_one_cell_recommendation_gives_its_comparisons_interval(tmp_path: Path) -> None:
    v = _skewed(tmp_path)
    (ver,) = [x for x in v.verdicts if x.concurrency == 64]
    (rec,) = [r for r in v.recommendations if r.c_low == 33 and r.workload_class is None]
    assert (rec.ci_low, rec.ci_high) == (ver.ci_low, ver.ci_high)


def _truth(label: str, p: tuple[str, int]) -> float:
    return {"A": 1050.0, "B": 1000.0, "C": 350.0}[label] * p[1]


def _design_compare(tmp: Path) -> ReportView:
    _states, obs = replay(_truth, noise=0.03, seed=2, design=SETTINGS)
    rows = [row(o.label, METHODS[o.label], {}, o.point[0], o.point[1], o.value, o.repeat, round=o.round, seq=o.seq)
            for o in obs]  # fmt: skip
    order = [[la for la in LABELS if any(o.round == r and o.label == la for o in obs)]
             for r in sorted({o.round for o in obs})]  # fmt: skip
    plan = [{"label": la, "scenario": s, "max_concurrency": c} for la in LABELS for s, c in POINTS]
    make_run(tmp, "design", rows, {"design": {"kind": "adaptive", "settings": asdict(SETTINGS)}, "plan": plan,
                                   "run_order": {"kind": "adaptive", "rounds": order}})  # fmt: skip
    return build_view([tmp], "compare")


def test_a_compare_verdict_of_a_design_run_is_the_designs_comparison(tmp_path: Path) -> None:
    v = _design_compare(tmp_path)
    assert v.design is not None
    pairs = {((c.scenario, c.concurrency), p.a, p.b): p for c in v.design.cells for p in c.pairs}
    n = 0
    for ver in v.verdicts:
        picked = [v.cell(ver.scenario, ver.concurrency, x).picked for x in (ver.a, ver.b)]  # type: ignore[union-attr]
        p = pairs[((ver.scenario, ver.concurrency), *picked)]
        assert (ver.ci_low, ver.ci_high) == (p.ci_low, p.ci_high)
        assert ver.verdict == ("a" if p.winner == picked[0] else "b" if p.winner else "tie")
        n += 1
    assert n == 6
    # the HTML: every interval its winner table shows is the design table's for the same comparison
    page = render(v, "html", "en")
    text = html.unescape(
        re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|svg)\b.*?</\1>", "", page, flags=re.S))
    )
    intervals = set(re.findall(r"\[[+-]?[0-9.]+%, [+-]?[0-9.]+%\]", text))
    design = {f"[{_signed(p.ci_low)}, {_signed(p.ci_high)}]" for p in pairs.values()}
    groups = {
        f"[{_signed(r.ci_low)}, {_signed(r.ci_high)}]" for r in v.recommendations if r.ci_low is not None
    }
    shown = {
        f"[{_signed(lo)}, {_signed(hi)}]" for w in v.winners if (iv := v.gain_interval(w)) for lo, hi in [iv]
    }
    assert shown and shown <= design  # the winner table's intervals are the design's
    assert intervals <= design | groups  # and no other interval for a cell's comparison anywhere
    # the JSON: the same numbers
    data = json.loads(render(v, "json", "en"))
    assert [(x["ci_low"], x["ci_high"]) for x in data["verdicts"]] == [
        (x.ci_low, x.ci_high) for x in v.verdicts
    ]


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "") + fmt_pct(x)


def _race_run(tmp: Path) -> Path:
    """A racing run (design.race) of A and B (one method, A 12% ahead in the first three cells, even in
    the rest) and C (another method, a third of them): its rows as the loop writes them, with their
    lengths, and its manifest's design record."""
    from test_race import LABELS as RL
    from test_race import POINTS as RP
    from test_race import replay as race_replay

    s = DesignSettings(race=True, budget_fraction=None, families=tuple(METHODS.items()), launch_sd=0.01)

    def truth(lab: str, p: tuple[str, int]) -> float:
        ahead = 1.12 if lab == "A" and p in RP[:3] else 1.0
        return (400.0 if lab == "C" else 1000.0 * ahead) * p[1]

    _states, obs = race_replay(truth, noise=0.02, seed=4, settings=s)
    rows = [row(o.label, METHODS[o.label], {}, o.point[0], o.point[1], o.value, o.repeat, round=o.round,
                seq=o.seq, length=o.length) for o in obs]  # fmt: skip
    order = [[la for la in RL if any(o.round == r and o.label == la for o in obs)]
             for r in sorted({o.round for o in obs})]  # fmt: skip
    plan = [{"label": la, "scenario": sc, "max_concurrency": c} for la in RL for sc, c in RP]
    make_run(tmp, "race", rows, {"design": {"kind": "adaptive", "settings": asdict(s)}, "plan": plan,
                                 "run_order": {"kind": "adaptive", "rounds": order}})  # fmt: skip
    return tmp


def test_a_racing_runs_compare_advice_is_its_own_decisions(tmp_path: Path) -> None:
    """The compare report of a racing run advises a method's configs from the design's own decisions
    (as its sweep report does), and says its verdicts came from the racing rule. Before, the compare
    report judged a method's configs by the first generation's rule on the same rows: at the
    quickstart's stress_standard c=96 the design decided st=3 (+11.6%) and the same report's advice
    read "st=3 / st=5 undecided"."""
    run = _race_run(tmp_path)
    comp, sweep = build_view([run], "compare"), build_view([run], "sweep", method="m")
    assert comp.design is not None
    decided = {(c.scenario, c.concurrency): p.winner for c in comp.design.cells for p in c.pairs
               if {p.a, p.b} == {"A", "B"} and p.status == "decided"}  # fmt: skip
    assert decided  # the race named a winner between A and B somewhere
    sweep_winners = {(v.scenario, v.concurrency): v.winner for v in sweep.verdicts if v.winner}
    for a in comp.advice:
        mine = [x for x in a.configs if METHODS.get(x) == "m"]
        want = decided.get((a.scenario, a.concurrency))
        if mine:
            assert mine == ([want] if want else ["A", "B"]), (a.scenario, a.concurrency, mine, want)
    assert sweep_winners == decided
    assert comp.noise.rule_within is not None and comp.noise.rule_within.key == "verdict.rule_race"
    assert comp.noise.rule is not None and comp.noise.rule.key == "verdict.rule_race"
