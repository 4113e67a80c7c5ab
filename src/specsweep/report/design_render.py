"""The adaptive design's section in Markdown and HTML (en and zh through the i18n tables): one line
at the top (time spent against the same grid with ``repeats: 3``) and the table of how each cell was
decided (:class:`~specsweep.report.build.view_design.DesignView`)."""

from __future__ import annotations

from specsweep.report.build.view import Msg, ReportView
from specsweep.report.build.view_design import DesignMsg, DesignPair, DesignView
from specsweep.report.html.kit import HtmlPage, esc, md_inline
from specsweep.report.i18n import fmt_pct, label, text


def _t(m: DesignMsg, lang: str) -> str:
    return text(Msg(key=m.key, args=m.args), lang)


def _name(view: ReportView, config: str) -> str:
    return view.short(config)


def _signed(x: float, lang: str) -> str:
    return ("+" if x >= 0 else "") + fmt_pct(x, 2, lang)


def _effect(p: DesignPair, lang: str) -> str:
    return f"{_signed(p.effect, lang)} [{_signed(p.ci_low, lang)}, {_signed(p.ci_high, lang)}]"


def _stop(stopped_by: str, status: str, lang: str) -> str:
    key = stopped_by or ("running" if status == "running" else "none")
    return label(f"design.stop.{key}", lang)


def _why(view: ReportView, p: DesignPair, lang: str) -> str:
    args = dict(p.why.args)
    if "winner" in args:
        args["winner"] = _name(view, str(args["winner"]))
    return _t(DesignMsg(key=p.why.key, args=args), lang)


def summary_line(d: DesignView, lang: str) -> str:
    return _t(d.summary, lang)


def settings_line(d: DesignView, lang: str) -> str:
    return f"{_t(d.settings_line, lang)}; {label('design.budget', lang)}: {_t(d.budget, lang)}"


def rows(view: ReportView, lang: str) -> list[list[str]]:
    """One row per pair of configs in each cell: the comparison, runs, effect, result, why it stopped."""
    d = view.design
    assert d is not None
    out = []
    for c in d.cells:
        for p in c.pairs:
            pair = _t(DesignMsg(key="design.pair", args={"a": _name(view, p.a), "b": _name(view, p.b)}), lang)
            out.append([c.scenario, str(c.concurrency), pair, f"{p.n_a} / {p.n_b}", _effect(p, lang),
                        _why(view, p, lang), _stop(c.stopped_by, c.status, lang)])  # fmt: skip
    return out


HEAD = ("col.scenario", "col.concurrency", "col.design_pair", "col.design_runs", "col.design_effect",
        "col.design_result", "col.design_stop")  # fmt: skip


# ---- Markdown ------------------------------------------------------------------------------------
def design_summary_md(view: ReportView, lang: str) -> list[str]:
    """The line at the top of the report, under its title: time spent against repeats: 3."""
    if view.design is None:
        return []
    sep = "：" if lang == "zh" else ": "
    return [f"**{label('prov.design', lang)}**{sep}{summary_line(view.design, lang)}", ""]


def design_markdown(view: ReportView, lang: str) -> list[str]:
    d = view.design
    if d is None:
        return []

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |"

    sep = "：" if lang == "zh" else ": "
    out = ["", "---", "", f"## {label('sec.design', lang)}", "", _t(d.intro, lang), ""]
    out += [f"- {label('design.cost', lang)}{sep}{summary_line(d, lang)}", f"- {settings_line(d, lang)}", ""]
    out.append(row([label(k, lang) for k in HEAD]))
    out.append("|---|---:|---|---:|---:|---|---|")
    out += [row(r) for r in rows(view, lang)]
    return out


# ---- HTML ----------------------------------------------------------------------------------------
def design_banner(page: HtmlPage) -> str:
    """The line at the top of the page: time spent against the same grid with repeats: 3."""
    d = page.view.design
    if d is None:
        return ""
    head = esc(label("prov.design", page.lang))
    return f'<p class="banner design" role="note"><strong>{head}</strong>: {md_inline(esc(summary_line(d, page.lang)))}</p>'


def design_html(page: HtmlPage) -> str:
    d = page.view.design
    if d is None:
        return ""
    numeric = {"col.concurrency", "col.design_runs", "col.design_effect"}
    heads = [(page.shared_label(k), k in numeric) for k in HEAD]
    body_rows = []
    for r in rows(page.view, page.lang):
        cells = [page.td(md_inline(esc(x)), num=HEAD[i] in numeric) for i, x in enumerate(r)]
        body_rows.append(cells)
    body = (
        f"<p>{md_inline(esc(_t(d.intro, page.lang)))}</p>\n"
        f"<ul><li>{esc(label('design.cost', page.lang))}: {md_inline(esc(summary_line(d, page.lang)))}</li>"
        f"<li>{md_inline(esc(settings_line(d, page.lang)))}</li></ul>\n"
        + page.table(heads, body_rows, tid="design-table")
    )
    return page.section("design", label("sec.design", page.lang), body)
