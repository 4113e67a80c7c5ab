"""The HTML report's results: the core table, the plots, the winner table with its verdicts, and the
findings (win counts, latency ratios, bands, best per workload class, gaps as concurrency rises)."""

from __future__ import annotations

from specsweep.report import plots
from specsweep.report.build.verdict_notes import picked_configs
from specsweep.report.build.view import Msg, WinnerRow, level_text
from specsweep.report.display import aside_text, counted, recommended_text, winner_text
from specsweep.report.html.kit import HtmlPage, esc, md_inline
from specsweep.report.i18n import fmt_num, fmt_pct, label
from specsweep.report.i18n.html import hl


def core(page: HtmlPage) -> str:
    v = page.view
    show_status = any(c.status != "ok" for c in v.cells)
    show_repeats = any(c.repeats > 1 for c in v.cells)
    # a separate column only when accept length is not already a core metric (it was shown twice)
    show_accept = "accept_length" not in v.core_columns and any(c.accept_length is not None for c in v.cells)
    headers: list[tuple[str, bool]] = [
        (page.shared_label("col.scenario"), False),
        (page.shared_label("col.concurrency"), True),
        (page.shared_label(v.config_column), False),
    ]
    if show_repeats:
        headers.append((page.shared_label("col.repeats"), True))
    headers += [(esc(page.metric_label(k)), True) for k in v.core_columns]
    if show_accept:
        headers.append((page.shared_label("metric.accept_length"), True))
    if show_status:
        headers.append((page.html_string("col.status"), False))
    order = {c.label: i for i, c in enumerate(v.configs)}
    cells = sorted(
        v.cells,
        key=lambda c: (
            v.scenarios.index(c.scenario) if c.scenario in v.scenarios else len(v.scenarios),
            c.concurrency,
            order.get(c.config, len(order)),
        ),
    )
    rows = []
    for c in cells:
        r = [
            page.td(esc(c.scenario)),
            page.td(esc(level_text(c.concurrency)), sort=c.concurrency, num=True),
            page.td(esc(page.view.config_name(c)), title=c.config),
        ]
        if show_repeats:
            r.append(page.td(esc(c.repeats), sort=c.repeats, num=True))
        for k in v.core_columns:
            ci = c.ci.get(k)
            title = ""
            if ci and len(ci) == 2:
                title = hl(
                    "ci_title",
                    page.lang,
                    low=page.num(k, ci[0]),
                    high=page.num(k, ci[1]),
                    basis=c.ci_basis or "-",
                )
            r.append(page.tdnum(k, c.values.get(k), title=title))
        if show_accept:
            r.append(page.td(esc(fmt_num(c.accept_length, 2, page.lang)), sort=c.accept_length, num=True))
        if show_status:
            st = label(f"value.{c.status}", page.lang) if c.status != "ok" else "ok"
            r.append(page.td(esc(st), title=c.error or ""))
        rows.append(r)
    body = f'<p class="hint">{page.html_string("sort_hint")}</p>' + page.table(
        headers, rows, tid="core-table"
    )
    return page.section("core", label("sec.core", page.lang), body)


def plots_section(page: HtmlPage, figs: list[plots.Plot]) -> str:
    out = []
    for p in figs:
        if p.kind == "metric" and p.metric:
            title = hl("plot.metric", page.lang, metric=page.metric_label(p.metric))
            cap = hl("plot.metric_caption", page.lang)
        elif p.kind == "accept_length":
            title, cap = hl("plot.accept", page.lang), hl("plot.metric_caption", page.lang)
        else:
            continue
        out.append(figure(page, p, title, cap))
    if not out:
        return ""
    return page.section("plots", hl("sec.plots", page.lang), "\n".join(out))


def figure(page: HtmlPage, p: plots.Plot, title: str, caption: str) -> str:
    key = esc(p.key)  # ours: "metric-<metric key>", "winmap", "accept_length"
    svg = p.svg.replace(f'aria-label="{key}"', f'aria-labelledby="fig-{key}-title"', 1)
    return (
        f'<figure class="plot" id="fig-{key}" data-plot="{key}">'
        f'<h3 id="fig-{key}-title">{esc(title)}</h3>\n{svg}\n<figcaption>{esc(caption)}</figcaption></figure>'
    )


def verdict_text(page: HtmlPage, w: WinnerRow) -> tuple[str, str]:
    """(cell text, tooltip) of a row's verdict: the interval of the row's gain (leader over runner-up,
    :meth:`ReportView.gain_interval`); the tooltip gives the verdict's own estimate and how it was made."""
    vd = w.verdict
    iv = page.view.gain_interval(w)
    if vd is None or iv is None:
        return "-", ""
    text = f"[{page.pct(iv[0], True)}, {page.pct(iv[1], True)}]"
    title = hl(
        "effect_title",
        page.lang,
        a=page.short(vd.a),
        b=page.short(vd.b),
        effect=page.pct(vd.effect, True),
        basis=vd.basis,
        floor=fmt_pct(vd.noise_floor),
        min_effect=fmt_pct(vd.min_effect),
        method=label(f"test.{vd.method}", page.lang),
        n_a=vd.n_a,
        n_b=vd.n_b,
        level=fmt_pct(vd.level, 0),
        detectable=fmt_pct(vd.detectable_effect, 1),
    )
    return text, title


def winmap_titles(page: HtmlPage) -> dict[tuple[str, int], str]:
    out = {}
    for w in page.view.winners:
        if w.metric != page.view.primary_metric:
            continue
        text, title = verdict_text(page, w)
        vals = ", ".join(f"{page.short(k)} {page.num(w.metric, x)}" for k, x in w.values.items())
        lines = [
            f"{w.scenario} · c={level_text(w.concurrency)}",
            f"{label('col.winner', page.lang)}: {winner_text(page.view, w, page.lang)} ({page.pct(w.gain, True)})",
            vals,
        ]
        if w.verdict is not None:
            lines.append(f"{hl('col.interval', page.lang)}: {text}")
            lines.append(title)
        out[(w.scenario, w.concurrency)] = "\n".join(lines)
    return out


def winners(page: HtmlPage, figs: list[plots.Plot]) -> str:
    v = page.view
    m = v.primary_metric
    rows_in = [w for w in v.winners if w.metric == m]
    if not rows_in:
        return ""
    mlabel = page.metric_label(m)
    headers: list[tuple[str, bool]] = [
        (page.shared_label("col.scenario"), False),
        (page.shared_label("col.concurrency"), True),
        (page.shared_label("col.winner_by", metric=mlabel), False),
    ]
    headers += [(page.shared_label("col.value_of", config=c.short, metric=mlabel), True) for c in v.configs]
    headers += [(page.shared_label("col.gain"), True), (page.html_string("col.interval"), True)]
    best_of = picked_configs(v)
    if best_of:
        headers.append((page.shared_label("col.picked"), False))
    rows = []
    for w in rows_in:
        text, title = verdict_text(page, w)
        cls = "tie" if page.view.winner_name(w).kind == "tie" else ""
        r = [
            page.td(esc(w.scenario)),
            page.td(esc(level_text(w.concurrency)), sort=w.concurrency, num=True),
            f'<td class="winner {cls}">{esc(winner_text(page.view, w, page.lang))}</td>',
        ]
        r += [page.tdnum(m, w.values.get(c.label)) for c in v.configs]
        r.append(page.td(esc(page.pct(w.gain)), sort=w.gain, num=True))
        iv = v.gain_interval(w)
        r.append(page.td(esc(text), sort=iv[0] if iv else "", num=True, title=title))
        if best_of:
            r.append(page.td(esc(best_of(w.scenario, w.concurrency))))
        rows.append(r)
    parts = []
    for p in figs:
        if p.kind == "winmap":
            parts.append(
                figure(
                    page, p, hl("plot.winmap", page.lang, metric=mlabel), hl("plot.winmap_caption", page.lang)
                )
            )
    parts.append(page.table(headers, rows, tid="winners-table"))
    title = (
        label("sec.winners", page.lang)
        if v.kind == "sweep"
        else label("sec.winners_by", page.lang, metric=mlabel)
    )
    return page.section("winners", title, "\n".join(parts))


def win_counts(page: HtmlPage) -> str:
    """Compare: the Markdown report's bullets and conclusion; sweep: a small table of wins per config."""
    v = page.view
    if v.compare is not None:
        cs = v.compare
        lis = "".join(f"<li>{page.msg_html(m)}</li>" for m in cs.count_lines())
        if (aside := aside_text(cs.set_aside, cs.n_cells, page.lang)) is not None:
            lis += f"<li>{esc(aside)}</li>"
        after = "".join(f'<p class="conclusion">{page.msg_html(m)}</p>' for m in cs.trailing)
        return (
            f'<ul class="counts">{lis}</ul>\n<p class="conclusion">{page.msg_html(cs.conclusion)}</p>{after}'
        )
    counts: dict[str, int] = {c.label: 0 for c in v.configs}
    ties, n = 0, 0
    for w in v.winners:
        if w.metric != v.primary_metric:
            continue
        n += 1
        if w.winner is not None:
            counts[w.winner] = counts.get(w.winner, 0) + 1
        elif v.winner_name(w).kind == "tie":  # a row without a verdict is no tie (the table's "-")
            ties += 1
    if not n:
        return ""
    rows = [[page.td(esc(page.short(k))), page.td(esc(x), sort=x, num=True)] for k, x in counts.items()]
    rows.append([page.td(page.html_string("row.ties")), page.td(esc(ties), sort=ties, num=True)])
    rows.append([page.td(page.html_string("row.cells")), page.td(esc(n), sort=n, num=True)])
    headers = [(page.shared_label("col.config"), False), (page.html_string("col.wins"), True)]
    return f"<h3>{page.shared_label('sec.wins')}</h3>" + page.table(
        headers, rows, sortable=False, cls="compact"
    )


def ratios(page: HtmlPage) -> str:
    cs = page.view.compare
    if cs is None or not cs.ratios:
        return ""
    lines = [
        Msg(
            key="ratio.line",
            args={
                "metric": f"metric.short.{r.metric}",
                "num": r.numerator,
                "den": r.denominator,
                "ratio": r.mean_ratio,
            },
        )
        for r in cs.ratios
    ]
    pairs = sorted({(r.numerator, r.denominator) for r in cs.ratios})
    notes = "".join(
        f'<p class="note">{page.msg_html(Msg(key="ratio.direction", args={"num": a, "den": b}))}</p>'
        for a, b in pairs
    )
    lis = "".join(f"<li>{page.msg_html(m)}</li>" for m in lines)
    return f"<h3>{page.shared_label('sec.latency')}</h3><ul>{lis}</ul>{notes}"


def findings(page: HtmlPage) -> str:
    v = page.view
    parts = [win_counts(page), ratios(page)]
    if v.findings:
        items = [
            f"<li>{page.sentences_html(f.text, f.extra, f.set_aside, counted(f.text))}</li>"
            for f in v.findings
        ]
        parts.append(f"<h3>{page.shared_label('sec.bands')}</h3><ul>{''.join(items)}</ul>")
    if v.class_best:
        rows = []
        for cb in v.class_best:
            rows.append(
                [
                    page.td(esc(page.class_label(cb.workload_class))),
                    page.td(esc(", ".join(cb.scenarios))),
                    page.td(md_inline(esc(recommended_text(v, cb, page.lang)))),
                    page.td(esc(f"{cb.wins} / {cb.losses} / {cb.ties}"), sort=cb.wins, num=True),
                    page.td(esc(page.pct(cb.mean_gain, True)), sort=cb.mean_gain, num=True),
                    page.td(
                        page.sentences_html(cb.reason, cb.extra, cb.set_aside, cb.wins + cb.losses + cb.ties)
                    ),
                ]
            )
        headers = [
            (page.shared_label("col.workload_class"), False),
            (page.html_string("col.scenarios"), False),
            (page.shared_label("col.best"), False),
            (page.html_string("col.wlt"), True),
            (page.html_string("col.mean_gain"), True),
            (page.shared_label("col.reason"), False),
        ]
        parts.append(
            f"<h3>{page.shared_label('sec.class_best')}</h3>" + page.table(headers, rows, tid="class-table")
        )
    for g in v.gaps:
        rows = [
            [
                page.td(esc(level_text(r.concurrency)), sort=r.concurrency, num=True),
                page.tdnum(g.metric, r.a_value),
                page.tdnum(g.metric, r.b_value),
                page.td(page.msg_html(r.text)),
            ]
            for r in g.rows
        ]
        ml = page.metric_label(g.metric)
        headers = [
            (page.shared_label("col.concurrency_range"), True),
            (page.shared_label("col.value_of", config=page.short(g.a), metric=ml), True),
            (page.shared_label("col.value_of", config=page.short(g.b), metric=ml), True),
            (page.shared_label("col.gap"), False),
        ]
        head = f"{label('sec.gaps', page.lang)}: {g.scenario} · {hl('vs', page.lang, a=page.short(g.a), b=page.short(g.b))}"
        parts.append(f"<h3>{esc(head)}</h3>" + page.table(headers, rows, cls="compact"))
        if g.summary is not None:
            parts.append(f"<p>{page.msg_html(g.summary)}</p>")
    body = "\n".join(x for x in parts if x)
    return page.section("findings", label("sec.findings", page.lang), body) if body else ""
