"""Every conclusion from one verdict list (issue 19 items 3, 8, 10) and the verdict rule in every
report format and language (issue 14)."""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
from test_analysis import K3, K5, make_run, row

from specsweep.report import build_view, render

EAGLE = ("EAGLE", "eagle", {"num_steps": 3})


def test_no_shared_cell_says_so_and_suggests_scenario(tmp_path: Path) -> None:
    # real sglang tags name the run: two configs imported from differently tagged files share no cell
    make_run(
        tmp_path, "x", [row(*K3, "agg_n100_in512_out128_c8", 8, 1000), row(*EAGLE, "agg_c8_eagle", 8, 900)]
    )
    v = build_view([tmp_path], "compare")
    assert v.compare is not None and v.compare.n_cells == 0
    assert v.compare.conclusion.key == "compare.no_cells"
    for lang in ("en", "zh"):
        md = render(v, "md", lang)
        assert "--scenario" in md and "no method is ahead" not in md


def test_split_decisions_are_not_called_a_tie_and_next_steps_agree(tmp_path: Path) -> None:
    # each method wins one cell by far more than any noise: the conclusion must not say "no method ahead"
    make_run(tmp_path, "x", [row(*K3, "chat_short", 1, 2000), row(*EAGLE, "chat_short", 1, 1000),
                             row(*K3, "chat_short", 128, 1000), row(*EAGLE, "chat_short", 128, 2000)])  # fmt: skip
    v = build_view([tmp_path], "compare")
    assert v.compare is not None and v.compare.win_counts == {"DSpark": 1, "EAGLE": 1}
    assert v.compare.conclusion.key == "compare.split"
    assert not any(s.key == "next.default" for s in v.next_steps)  # no single default contradicts the bands
    named = {r.config for r in v.recommendations if r.config}
    assert named == {"DSpark", "EAGLE"}


def test_next_default_names_the_config_the_recommendations_name(tmp_path: Path) -> None:
    make_run(tmp_path, "x", [row(*K3, "chat_short", c, 2000) for c in (1, 8, 128)]
             + [row(*EAGLE, "chat_short", c, 1000) for c in (1, 8, 128)])  # fmt: skip
    v = build_view([tmp_path], "compare")
    steps = [s for s in v.next_steps if s.key == "next.default"]
    assert len(steps) == 1 and steps[0].args["config"] == "DSpark(st=3)"  # the full config, not the method
    assert {r.config for r in v.recommendations if r.config} == {"DSpark"}
    assert {p.config for r in v.recommendations for p in r.picks} == {"DSpark(st=3)"}
    assert v.compare is not None and v.compare.conclusion.key == "compare.all"


def test_best_of_cells_name_their_config(tmp_path: Path) -> None:
    # DSpark has two configs: every winner-table row names the one used, ties included
    make_run(tmp_path, "x", [row(*K3, "chat_short", 1, 2000), row(*K5, "chat_short", 1, 1500),
                             row(*K3, "chat_short", 8, 1500), row(*K5, "chat_short", 8, 2010),
                             row(*EAGLE, "chat_short", 1, 1000), row(*EAGLE, "chat_short", 8, 2000)])  # fmt: skip
    v = build_view([tmp_path], "compare")
    md = render(v, "md", "en")
    rows = [line for line in md.splitlines() if line.startswith("| chat_short |") and "%" in line]
    assert len(rows) == 2
    assert rows[0].rstrip(" |").endswith("DSpark(st=3)") and rows[1].rstrip(" |").endswith("DSpark(st=5)")
    assert "Config used (best of each method)" in md
    page = render(v, "html", "zh")
    assert "所用配置" in page and "DSpark(st=5)" in page


def test_every_format_and_language_states_the_rule_and_the_detectable_difference(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rows = []
    for rep in range(3):
        rows += [row(*K3, "chat_short", 8, 1000 * math.exp(rng.normal(0, 0.03)), rep),
                 row(*K5, "chat_short", 8, 1010 * math.exp(rng.normal(0, 0.03)), rep)]  # fmt: skip
    make_run(tmp_path, "x", rows)
    v = build_view([tmp_path], "sweep")
    (ver,) = v.verdicts
    assert ver.verdict == "tie" and ver.method == "welch_t"
    det = f"{ver.detectable_effect:.0%}"
    need = ver.repeats_needed
    assert v.noise.ties is not None and v.noise.ties.args["detectable"] == ver.detectable_effect
    expect = {
        "en": ["Welch's t test on log values", "Benjamini-Hochberg", f"differences under ~{det} are not resolvable "
               "with 3 run(s) per config", f"takes about {need} runs per config"],
        "zh": ["Welch t 检验", "Benjamini-Hochberg", f"约 {det} 以下的差异无法分辨", f"每个配置约需运行 {need} 次"],
    }  # fmt: skip
    for lang, parts in expect.items():
        for fmt in ("md", "html"):
            out = html.unescape(render(v, fmt, lang))
            for p in parts:
                assert p in out, (lang, fmt, p)


def test_single_runs_never_earn_high_confidence_and_say_what_they_rest_on(tmp_path: Path) -> None:
    single = tmp_path / "single"
    single.mkdir()
    make_run(single, "x", [row(*K3, "chat_short", c, 2000) for c in (1, 8, 16)]
             + [row(*K5, "chat_short", c, 1000) for c in (1, 8, 16)])  # fmt: skip
    v = build_view([single], "sweep")
    rec = next(r for r in v.recommendations if r.band == "low")
    assert rec.config == "DSpark(st=3)" and rec.confidence == "medium"  # 3 of 3 decided, yet one run each
    assert "medium (single runs, noise assumed)" in render(v, "md", "en")
    rep = tmp_path / "repeats"
    rep.mkdir()
    rng = np.random.default_rng(4)
    make_run(rep, "x", [row(*k, "chat_short", c, t * math.exp(rng.normal(0, 0.02)), r)
                        for c in (1, 8, 16) for r in range(3) for k, t in ((K3, 2000), (K5, 1000))])  # fmt: skip
    v = build_view([rep], "sweep")
    rec = next(r for r in v.recommendations if r.band == "low")
    assert rec.confidence == "high" and "high (3 runs a side, noise measured)" in render(v, "md", "en")
    assert "高 (每边 3 次运行，噪声实测)" in render(v, "md", "zh")


def test_best_of_selection_is_paid_for(tmp_path: Path) -> None:
    # DSpark's cell is the best of its 2 configs: its p value carries a factor 2 (Bonferroni over the
    # 2 x 1 config comparisons the pick stands for), so picking cannot manufacture a winner
    make_run(tmp_path, "x", [row(*K3, "chat_short", 8, 1000), row(*K5, "chat_short", 8, 1353),
                             row(*EAGLE, "chat_short", 8, 1000)])  # fmt: skip
    v = build_view([tmp_path], "compare")
    (ver,) = v.verdicts
    assert ver.p_adjusted == min(1.0, 2 * ver.p_value)
    assert 0.025 < ver.p_value < 0.05 and ver.verdict == "tie"  # decided alone, not after the pick
    assert ver.ci_low <= 0 <= ver.ci_high
