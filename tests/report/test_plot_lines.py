"""A compare report's plots draw each config of a method as its own line (issue 34 item 9): before,
one "DSpark" line switched from st=5 to st=3 where st=3 led, so the choice between them was never
plotted. Each config keeps its method's colour (the win map's and the legend's) with a style of its own."""

from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.colors import to_hex

from specsweep.report import build_view
from specsweep.report.plots import config_colors, metric_figure

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from test_analysis import K3, K5, make_run, row

EAGLE = ("EAGLE", "eagle", {"num_steps": 3})
LEVELS = (1, 16, 64)
TPUT = {
    "DSpark(st=3)": (900.0, 8000.0, 19000.0),
    "DSpark(st=5)": (1000.0, 9000.0, 17000.0),
    "EAGLE": (400.0, 2000.0, 6000.0),
}


def test_each_config_of_a_method_is_its_own_line(tmp_path: Path) -> None:
    rows = [
        row(*cfg, "chat_short", c, TPUT[cfg[0]][i]) for cfg in (K3, K5, EAGLE) for i, c in enumerate(LEVELS)
    ]
    make_run(tmp_path, "x", rows)
    view = build_view([tmp_path], "compare")
    assert [c.label for c in view.configs] == ["DSpark", "EAGLE"]
    fig = metric_figure(view, "total_throughput")
    ax = fig.axes[0]
    drawn = [ln for ln in ax.get_lines() if ln.get_linestyle() != "None"]  # the series, not the markers
    assert sorted(tuple(ln.get_ydata()) for ln in drawn) == sorted(TPUT.values())  # type: ignore[arg-type]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["DSpark(st=3)", "DSpark(st=5)", "EAGLE"]
    colors = config_colors(view)
    by_values = {tuple(ln.get_ydata()): ln for ln in drawn}  # type: ignore[arg-type]
    st3, st5 = by_values[TPUT["DSpark(st=3)"]], by_values[TPUT["DSpark(st=5)"]]
    assert to_hex(st3.get_color()) == to_hex(st5.get_color()) == colors["DSpark"].lower()
    assert st3.get_linestyle() != st5.get_linestyle()


def test_a_sweep_draws_its_configs_as_before(tmp_path: Path) -> None:
    rows = [row(*cfg, "chat_short", c, TPUT[cfg[0]][i]) for cfg in (K3, K5) for i, c in enumerate(LEVELS)]
    make_run(tmp_path, "x", rows)
    view = build_view([tmp_path], "sweep")
    assert view.member_cells == []
    assert [ln.label for ln in view.plot_lines()] == ["DSpark(st=3)", "DSpark(st=5)"]
