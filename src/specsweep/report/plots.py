"""Plots of a :class:`~specsweep.report.build.view.ReportView`, drawn with matplotlib (Agg / SVG, no pyplot).

- one figure per latency/throughput metric: small multiples, one panel per scenario, one line per
  config (a compare report draws each config of a method as its own line, in the method's colour
  with a style of its own: :meth:`ReportView.plot_lines`), x = concurrency (log2 axis), whiskers =
  the cell's confidence interval when known;
- a win/loss map: scenario x concurrency on the primary metric, coloured by the winner's colour,
  grey for a tie, hatched where the cell is missing; each cell carries a tooltip (SVG ``<title>``);
- acceptance length against concurrency, when any cell knows it.

Text inside the figures is language-neutral (scenario names, metric labels, config labels, numbers),
so the SVGs read the same in both reports and need no CJK font; the HTML renderer puts translated
titles and captions around them. The one translated word (the tie legend entry) falls back to English
when no CJK font is installed. ``svg.fonttype`` is "none": text stays text, which the browser draws
with its own fonts (and which keeps the SVG small and searchable).

:func:`build_plots` returns inline-ready SVG markup (ids prefixed per plot, so several SVGs can share
one HTML page); :func:`export_plots` writes PNG or SVG files for slides.
"""

from __future__ import annotations

import html
import io
import math
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from matplotlib import font_manager, rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from specsweep.errors import UsageError, one_of
from specsweep.report import i18n
from specsweep.report.build.view import CellView, PlotLine, ReportView, WinnerRow, level_text

# metrics drawn as small multiples, in this order (those the view has values for)
PLOT_METRICS = ("total_throughput", "mean_tpot_ms", "mean_ttft_ms", "mean_e2e_latency_ms")
EXPORT_FORMATS = ("png", "svg")

# Okabe-Ito: distinguishable with the common colour-vision deficiencies, and in greyscale print
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
TIE_COLOR = "#C8C8C8"
MISSING_COLOR = "#FFFFFF"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES: tuple[Literal["-", "--", ":", "-."], ...] = (
    "-",
    "--",
    ":",
    "-.",
)  # a method's configs: a style each

_CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "Microsoft YaHei",
    "PingFang SC",
    "SimHei",
    "AR PL UMing CN",
)
_CJK_FILES = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
)
_cjk_cache: list[str | None] = []


@dataclass(frozen=True)
class Plot:
    """One figure: ``key`` names it ("metric-total_throughput", "winmap", "accept_length")."""

    key: str
    kind: str  # "metric" | "winmap" | "accept_length"
    metric: str | None
    scenarios: tuple[str, ...]
    svg: str  # inline-ready <svg> element (no XML prolog, ids prefixed with the key)


def cjk_font() -> str | None:
    """The family name of an installed CJK font matplotlib can use, or None (cached)."""
    if not _cjk_cache:
        names = {f.name for f in font_manager.fontManager.ttflist}
        found = next((n for n in _CJK_FAMILIES if n in names), None)
        if found is None:
            # matplotlib's font cache predates fonts installed later; register the usual files
            for path in _CJK_FILES:
                if Path(path).is_file():
                    try:
                        font_manager.fontManager.addfont(path)
                        found = font_manager.FontProperties(fname=path).get_name()
                        break
                    except (OSError, RuntimeError):
                        continue
        _cjk_cache.append(found)
    return _cjk_cache[0]


@contextmanager
def _style() -> Iterator[None]:
    families = ["DejaVu Sans", "Liberation Sans", "Arial"]
    cjk = cjk_font()
    if cjk:
        families.append(cjk)  # matplotlib >= 3.6 falls back glyph by glyph
    rc: dict[str, Any] = {
        "svg.fonttype": "none",
        "svg.hashsalt": "specsweep",  # deterministic clip-path ids
        "text.parse_math": False,  # a '$' in a config label is text, not TeX
        "text.usetex": False,
        "font.family": "sans-serif",
        "font.sans-serif": families,
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": "#E4E4E4",
        "grid.linewidth": 0.6,
        "legend.frameon": False,
        "figure.dpi": 100,
        "savefig.dpi": 150,
    }
    with rc_context(rc), warnings.catch_warnings():  # type: ignore[arg-type]
        # a label with glyphs no font has (e.g. CJK without a CJK font) still renders in the browser
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        warnings.filterwarnings("ignore", message=".*findfont.*")
        yield


# ---- data access ---------------------------------------------------------------------------------
def config_colors(view: ReportView) -> dict[str, str]:
    """Config label -> colour; stable by the view's config order (the HTML legend uses the same)."""
    return {c.label: PALETTE[i % len(PALETTE)] for i, c in enumerate(view.configs)}


def _series(cells: Sequence[CellView], scenario: str, key: str) -> list[tuple[int, float, list[float]]]:
    """(concurrency, value, [ci_low, ci_high] or []) of one line's ok cells that have a value."""
    out = []
    for c in cells:
        if c.scenario != scenario or c.status != "ok":
            continue
        v = c.accept_length if key == "accept_length" else c.values.get(key)
        if v is None or not math.isfinite(v):
            continue
        ci = c.ci.get(key) or []
        out.append((c.concurrency, float(v), list(ci) if len(ci) == 2 else []))
    return sorted(out)


def plotted_metrics(view: ReportView) -> list[str]:
    keys = {m.key for m in view.metrics}
    have = {k for c in view.cells for k, v in c.values.items() if v is not None}
    return [k for k in PLOT_METRICS if k in keys and k in have]


def has_accept_length(view: ReportView) -> bool:
    return any(c.accept_length is not None for c in view.cells)


def _metric_label(key: str) -> str:
    return i18n.label(f"metric.{key}", "en")


def _grid(n: int) -> tuple[int, int]:
    ncols = min(4, max(1, n))
    return math.ceil(n / ncols), ncols


def _concurrency_axis(ax: Axes, levels: list[int]) -> None:
    """Measured levels evenly spaced (1, 4, 8, ... 96, 128 stay legible; the grid is what was run)."""
    ax.set_xlim(-0.4, len(levels) - 0.6)
    ax.set_xticks(range(len(levels)), [level_text(c) for c in levels], fontsize=7)
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(FuncFormatter(_compact))


def _compact(y: float, _pos: object = None) -> str:
    if abs(y) >= 10_000:
        return f"{y / 1000:g}k"
    return f"{y:g}"


def ellipsize(text: str, n: int) -> str:
    """Shorten text drawn inside a figure; the full string is in the HTML tables and tooltips."""
    return text if len(text) <= n else text[: n - 1] + "…"


# ---- figures ---------------------------------------------------------------------------------------
def point_gid(scenario_index: int, config_index: int, level: int) -> str:
    return f"pt-{scenario_index}-{config_index}-{level}"


def metric_figure(
    view: ReportView, key: str, *, accept: bool = False, titles: dict[str, str] | None = None
) -> Figure:
    """Small multiples of one metric (or acceptance length) against concurrency, one panel per scenario.

    Each marker is its own artist with a gid (:func:`point_gid`); ``titles`` (when given) receives a
    tooltip per gid: scenario, level, config (and the picked config in a compare), value and interval.
    """
    lines = [(line, view.line_cells(line)) for line in view.plot_lines()]
    scenarios = [s for s in view.scenarios if any(_series(cells, s, key) for _line, cells in lines)]
    colors = config_colors(view)
    levels = sorted({c.concurrency for c in view.cells}) or [1]
    nrows, ncols = _grid(len(scenarios) or 1)
    # fixed margins (inches) instead of constrained layout: 3-4x faster and stable across reports
    width, height = 2.9 * ncols + 0.5, 2.25 * nrows + 0.75
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(
        left=0.75 / width,
        right=1 - 0.15 / width,
        top=1 - 0.6 / height,
        bottom=0.45 / height,
        wspace=0.32,
        hspace=0.55,
    )
    axes = fig.subplots(nrows, ncols, squeeze=False)
    ylabel = "Accept length" if accept else _metric_label(key)
    for i, ax in enumerate(axes.flat):
        if i >= len(scenarios):
            ax.set_visible(False)
            continue
        scen = scenarios[i]
        top = 0.0
        for j, (line, cells) in enumerate(lines):
            pts = _series(cells, scen, key)
            if not pts:
                continue
            xs = [levels.index(p[0]) for p in pts]
            ys = [p[1] for p in pts]
            top = max([top, *ys, *(p[2][1] for p in pts if p[2])])
            color = colors[line.column]
            marker = MARKERS[j % len(MARKERS)]
            ax.plot(xs, ys, color=color, linewidth=1.4, linestyle=LINESTYLES[line.style % len(LINESTYLES)])
            for x, (level, y, ci) in zip(xs, pts, strict=True):
                gid = point_gid(i, j, level)
                ax.plot([x], [y], color=color, marker=marker, markersize=4, linestyle="none", gid=gid)
                if titles is not None:
                    titles[gid] = _point_title(view, scen, level, line, key, y, ci)
            lows = [p[1] - p[2][0] if p[2] else 0.0 for p in pts]
            highs = [p[2][1] - p[1] if p[2] else 0.0 for p in pts]
            if any(lows) or any(highs):
                yerr = [[max(0.0, v) for v in lows], [max(0.0, v) for v in highs]]
                ax.errorbar(xs, ys, yerr=yerr, fmt="none", ecolor=color, elinewidth=0.9, capsize=2)
        _concurrency_axis(ax, levels)
        ax.set_title(ellipsize(scen, 34), loc="left")
        ax.set_ylim(0, top * 1.1 if top > 0 else 1)
        if i // ncols == nrows - 1 or i + ncols >= len(scenarios):
            ax.set_xlabel("Concurrency")
    fig.supylabel(ylabel, x=0.08 / width, ha="left", fontsize=9)
    handles = [
        Line2D([], [], color=colors[line.column], marker=MARKERS[j % len(MARKERS)], markersize=4, linewidth=1.4,
               linestyle=LINESTYLES[line.style % len(LINESTYLES)])
        for j, (line, _cells) in enumerate(lines)
    ]  # fmt: skip
    fig.legend(
        handles,
        [ellipsize(line.label, 32) for line, _cells in lines],
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0),
        ncols=min(len(handles), 6),
    )
    return fig


def _point_title(
    view: ReportView, scen: str, level: int, line: PlotLine, key: str, y: float, ci: list[float]
) -> str:
    try:
        spec = view.metric(key)
        decimals, unit = spec.decimals, spec.unit
    except KeyError:
        decimals, unit = 2, ""
    name = line.label
    if view.kind == "compare" and not line.member:
        cell = view.cell(scen, level, line.column)
        if cell and cell.picked and cell.picked != line.label:
            name = f"{line.column} ({cell.picked})"
    text = f"{scen} · c={level_text(level)} · {name}: {y:.{decimals}f} {unit}".rstrip()
    if ci:
        text += f" [{ci[0]:.{decimals}f}, {ci[1]:.{decimals}f}]"
    return text


def _winmap_cell(view: ReportView, row: WinnerRow) -> tuple[str, str]:
    """(state, text): state is a config label, "tie" or "missing" (the view's decision,
    :meth:`ReportView.winner_name`: no verdict is not comparable); text is the in-cell annotation."""
    who = view.winner_name(row)
    if who.kind == "none" or row.leader is None:
        return "missing", "n/a"
    gain = f"+{row.gain * 100:.1f}%" if row.gain is not None and math.isfinite(row.gain) else ""
    if who.kind == "tie" or row.winner is None:
        return "tie", f"=\n{gain}" if gain else "="
    return row.winner, gain


def _luminance(hex_color: str) -> float:
    r, g, b = (int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def winmap_gid(scenario_index: int, level_index: int) -> str:
    return f"cell-{scenario_index}-{level_index}"


def winmap_figure(view: ReportView, lang: str = "en") -> Figure:
    """Scenario x concurrency map of the primary-metric winner (gids ``cell-<i>-<j>`` per cell)."""
    rows = {(w.scenario, w.concurrency): w for w in view.winners if w.metric == view.primary_metric}
    scenarios = [s for s in view.scenarios if any(k[0] == s for k in rows)] or list(view.scenarios)
    levels = sorted({k[1] for k in rows}) or sorted(view.concurrencies)
    colors = config_colors(view)
    names = [ellipsize(s, 24) for s in scenarios]
    left = 0.25 + 0.068 * max((len(x) for x in names), default=4)
    width, height = max(4.5, 0.8 * len(levels) + left + 0.3), 0.42 * len(scenarios) + 1.25
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=1 - 0.2 / width, top=1 - 0.5 / height, bottom=0.6 / height)
    ax = fig.subplots()
    ax.set_xlim(0, len(levels))
    ax.set_ylim(len(scenarios), 0)
    ax.grid(False)
    for side in ("left", "bottom", "top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_xticks([j + 0.5 for j in range(len(levels))], [level_text(c) for c in levels])
    ax.set_yticks([i + 0.5 for i in range(len(scenarios))], names)
    ax.tick_params(length=0)
    ax.xaxis.set_ticks_position("top")
    ax.set_xlabel("Concurrency")
    ax.xaxis.set_label_position("top")
    for i, scen in enumerate(scenarios):
        for j, level in enumerate(levels):
            row = rows.get((scen, level))
            if row is None:
                continue  # level not measured for this scenario: leave blank
            state, note = _winmap_cell(view, row)
            if state == "missing":
                face, hatch, text_color = MISSING_COLOR, "///", "#555555"
            elif state == "tie":
                face, hatch, text_color = TIE_COLOR, None, "#222222"
            else:
                face, hatch = colors.get(state, "#888888"), None
                text_color = "#000000" if _luminance(face) > 0.5 else "#FFFFFF"
                name = view.winner_name(row).names[0]  # as the winner table names it
                note = f"{ellipsize(name, 14)}\n{note}"
            rect = Rectangle(
                (j + 0.04, i + 0.06), 0.92, 0.88, facecolor=face, edgecolor="#999999", linewidth=0.5
            )
            if hatch:
                rect.set_hatch(hatch)
            rect.set_gid(winmap_gid(i, j))
            ax.add_patch(rect)
            ax.text(j + 0.5, i + 0.5, note, ha="center", va="center", fontsize=7, color=text_color)
    tie_word = i18n.label("verdict.tie", lang)
    if lang != "en" and not cjk_font():
        tie_word = i18n.label("verdict.tie", "en")
    handles = [Patch(facecolor=colors[c.label], edgecolor="#999999") for c in view.configs]
    labels = [ellipsize(c.label, 24) for c in view.configs]
    handles += [Patch(facecolor=TIE_COLOR, edgecolor="#999999"), Patch(facecolor="w", hatch="///")]
    labels += [f"= {tie_word}", "n/a"]
    fig.legend(
        handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=min(len(handles), 5), fontsize=8
    )
    return fig


# ---- SVG post-processing ---------------------------------------------------------------------------
SVG_CSS = "svg.plot * { stroke-linejoin: round; stroke-linecap: butt; }"  # what matplotlib's <style> said
_TAG = re.compile(r"<[^>]*>")  # matplotlib escapes '<' and '>' in text and attribute values
_ID = re.compile(r'(\sid=")([^"]+)(")')
_URL = re.compile(r"url\(#([^)]+)\)")
_HREF = re.compile(r'(href="#)([^"]+)(")')


def _figure_svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def inline_svg(svg: str, prefix: str, *, label: str = "", titles: Mapping[str, str] | None = None) -> str:
    """Make matplotlib's SVG document an inline element: drop the prolog and metadata, prefix every id
    (and the references to it) with ``prefix``, drop matplotlib's global ``<style>`` (see
    :data:`SVG_CSS`), drop the fixed size (CSS sizes it by the viewBox), add
    ``role``/``aria-label``, and put an escaped ``<title>`` into the groups named in ``titles``.
    """
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    # matplotlib's "*{stroke-linejoin: round; stroke-linecap: butt}" would style the whole HTML page
    # once inlined; the report's CSS applies it to svg.plot only
    svg = re.sub(r"<style[^>]*>.*?</style>\s*", "", svg, flags=re.S)

    def fix_tag(m: re.Match[str]) -> str:
        tag = m.group(0)
        tag = _ID.sub(lambda t: f"{t.group(1)}{prefix}-{t.group(2)}{t.group(3)}", tag)
        tag = _URL.sub(lambda t: f"url(#{prefix}-{t.group(1)})", tag)
        return _HREF.sub(lambda t: f"{t.group(1)}{prefix}-{t.group(2)}{t.group(3)}", tag)

    svg = _TAG.sub(fix_tag, svg)
    head_end = svg.index(">")
    head = svg[:head_end]
    width = re.search(r'\swidth="([0-9.]+)pt"', head)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head, count=2)
    attrs = ' class="plot"'
    if width:  # CSS scales the plot to the page width, but never above its natural size (pt -> px)
        attrs += f' style="max-width: {float(width.group(1)) * 4 / 3:.0f}px"'
    if label:
        attrs += f' role="img" aria-label="{html.escape(label)}"'
    svg = head + attrs + svg[head_end:]
    for gid, title in (titles or {}).items():
        opening = f'<g id="{prefix}-{gid}">'
        svg = svg.replace(opening, f"{opening}<title>{html.escape(title)}</title>", 1)
    return svg.strip()


# ---- public API ----------------------------------------------------------------------------------
def build_plots(
    view: ReportView, lang: str = "en", winmap_titles: Mapping[tuple[str, int], str] | None = None
) -> list[Plot]:
    """Every plot of the view as inline SVG. ``winmap_titles`` maps (scenario, concurrency) to the
    tooltip of that win-map cell (the HTML renderer passes translated verdicts)."""
    i18n.check_lang(lang)
    plots: list[Plot] = []
    with _style():
        for key, kind, metric, fig, titles in _figures(view, lang, winmap_titles):
            svg = inline_svg(_figure_svg(fig), key, label=key, titles=titles)
            plots.append(Plot(key=key, kind=kind, metric=metric, scenarios=tuple(view.scenarios), svg=svg))
    return plots


def _figures(
    view: ReportView, lang: str, winmap_titles: Mapping[tuple[str, int], str] | None
) -> Iterator[tuple[str, str, str | None, Figure, dict[str, str]]]:
    """Figures are built lazily (one alive at a time); the caller holds the :func:`_style` context."""
    for key in plotted_metrics(view):
        titles: dict[str, str] = {}
        yield f"metric-{key}", "metric", key, metric_figure(view, key, titles=titles), titles
    if any(w.metric == view.primary_metric for w in view.winners):
        fig = winmap_figure(view, lang)
        yield "winmap", "winmap", view.primary_metric, fig, _winmap_gid_titles(view, winmap_titles)
    if has_accept_length(view):
        titles = {}
        fig = metric_figure(view, "accept_length", accept=True, titles=titles)
        yield "accept_length", "accept_length", None, fig, titles


def _winmap_gid_titles(view: ReportView, titles: Mapping[tuple[str, int], str] | None) -> dict[str, str]:
    rows = {(w.scenario, w.concurrency): w for w in view.winners if w.metric == view.primary_metric}
    scenarios = [s for s in view.scenarios if any(k[0] == s for k in rows)] or list(view.scenarios)
    levels = sorted({k[1] for k in rows}) or sorted(view.concurrencies)
    out = {}
    for i, s in enumerate(scenarios):
        for j, c in enumerate(levels):
            if (s, c) in rows:
                text = (titles or {}).get((s, c)) or _default_title(view, rows[(s, c)])
                out[winmap_gid(i, j)] = text
    return out


def _default_title(view: ReportView, row: WinnerRow) -> str:
    state, _ = _winmap_cell(view, row)
    gain = i18n.fmt_pct(row.gain)
    return f"{row.scenario} c={level_text(row.concurrency)}: {state} ({row.leader} {gain})"


def export_plots(view: ReportView, out_dir: str | Path, fmt: str = "png", lang: str = "en") -> list[Path]:
    """Write every plot to ``out_dir/<key>.<fmt>`` (png at 150 dpi, or standalone svg); returns the paths."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"--plots-format: {one_of(fmt, EXPORT_FORMATS)}")
    i18n.check_lang(lang)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    with _style():
        for key, _kind, _metric, fig, _titles in _figures(view, lang, None):
            path = out / f"{key}.{fmt}"
            fig.savefig(path, format=fmt, metadata={"Software": None} if fmt == "png" else {"Date": None})
            paths.append(path)
    return paths
