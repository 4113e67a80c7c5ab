"""The HTML report's reading of the results: anomalies, crossovers, per-domain results,
recommendations with engine flags, domain checks, next steps, method notes and the lossless check."""

from __future__ import annotations

from specsweep.report import i18n
from specsweep.report.build.view import EngineFlags, band_range, level_text
from specsweep.report.display import advice_text, basis_text, deployed_flags, recommended_text
from specsweep.report.domains_render import domains_html
from specsweep.report.html.kit import HtmlPage, esc, md_inline
from specsweep.report.i18n import fmt_pct, label
from specsweep.report.i18n.html import hl


def anomalies(page: HtmlPage) -> str:
    if not page.view.anomalies:
        return ""
    rows = [
        [
            page.td(esc(a.scenario)),
            page.td(esc(level_text(a.concurrency)), sort=a.concurrency, num=True),
            page.td(page.shared_label(f"anomaly.{a.kind}")),
            page.td(esc(", ".join(page.short(c) for c in a.configs))),
            page.td(page.msg_html(a.evidence)),
        ]
        for a in page.view.anomalies
    ]
    headers = [
        (page.shared_label("col.scenario_name"), False),
        (page.shared_label("col.concurrency_range"), True),
        (page.shared_label("col.kind"), False),
        (page.html_string("col.configs"), False),
        (page.shared_label("col.evidence"), False),
    ]
    return page.section(
        "anomalies", label("sec.anomalies", page.lang), page.table(headers, rows, tid="anomalies-table")
    )


def side_name(page: HtmlPage, who: str, a: str, b: str) -> str:
    if who == "a":
        return page.short(a)
    if who == "b":
        return page.short(b)
    return label("verdict.tie", page.lang)


def crossovers(page: HtmlPage) -> str:
    if not page.view.crossovers:
        return ""
    rows = []
    for x in page.view.crossovers:
        at = hl("crossover_at", page.lang, c=f"{x.concurrency:.3g}", lo=f"{x.low:g}", hi=f"{x.high:g}")
        rows.append(
            [
                page.td(esc(x.scenario)),
                page.td(esc(hl("vs", page.lang, a=page.short(x.a), b=page.short(x.b)))),
                page.td(esc(page.metric_short(x.metric))),
                page.td(esc(at), sort=x.concurrency, num=True),
                page.td(esc(f"{side_name(page, x.before, x.a, x.b)} → {side_name(page, x.after, x.a, x.b)}")),
                page.td(page.msg_html(x.text)),
            ]
        )
    headers = [
        (page.shared_label("col.scenario_name"), False),
        (page.html_string("col.pair"), False),
        (page.html_string("col.metric"), False),
        (page.html_string("col.crossover_at"), True),
        (page.html_string("col.change"), False),
        (page.shared_label("col.note"), False),
    ]
    return page.section("crossovers", label("sec.crossovers", page.lang), page.table(headers, rows))


def flags_block(page: HtmlPage, f: EngineFlags | None) -> str:
    if f is None:
        return ""
    lines = []
    for key, val in (("vllm", f.vllm), ("sglang", f.sglang), ("measured", f.measured)):
        if val:
            lines.append(
                f'<div class="flag"><span>{page.html_string(f"flags.{key}")}</span><pre><code>{esc(val)}</code></pre></div>'
            )
    return "".join(lines)


def recommendations(page: HtmlPage) -> str:
    v = page.view
    parts = []
    if v.recommendations:
        rows = []
        alts = any(r.alternatives for r in v.recommendations)  # a column empty in every row goes
        for r in v.recommendations:
            gain = page.pct(r.expected_gain, True)
            if r.ci_low is not None and r.ci_high is not None:
                gain += f" [{page.pct(r.ci_low, True)}, {page.pct(r.ci_high, True)}]"
            rows.append(
                [
                    page.td(esc(page.class_label(r.workload_class))),
                    page.td(
                        f"{page.shared_label(f'band.{r.band}')} ({esc(band_range(r.c_low, r.c_high))})",
                        sort=r.c_low,
                        num=False,
                    ),
                    page.td(md_inline(esc(recommended_text(v, r, page.lang)))),
                    *([page.td(esc(", ".join(r.alternatives)))] if alts else []),  # as the row names them
                    page.td(esc(gain), sort=r.expected_gain, num=True),
                    page.td(
                        page.shared_label(f"confidence.{r.confidence}")
                        + " ("
                        + esc(basis_text(r, page.lang))
                        + ")",
                        title=r.basis,
                    ),
                    page.td(esc(r.n_cells), sort=r.n_cells, num=True),
                    page.td(page.sentences_html(r.note, r.extra, r.set_aside, r.n_cells)),
                ]
            )
        headers = [
            (page.shared_label("col.workload"), False),
            (page.shared_label("col.concurrency_range"), True),
            (page.shared_label("col.recommended"), False),
            *([(page.html_string("col.alternatives"), False)] if alts else []),
            (page.shared_label("col.expected_gain"), True),
            (page.shared_label("col.confidence"), False),
            (page.html_string("col.cells"), True),
            (page.shared_label("col.note"), False),
        ]
        parts.append(
            f"<h3>{page.shared_label('sec.recommended_configs')}</h3>"
            + page.table(headers, rows, tid="rec-table")
        )
    if v.schedule:
        rows = [
            [
                page.td(esc(page.class_label(s.scope) if i18n.has_label(f"class.{s.scope}") else s.scope)),
                page.td(esc(band_range(s.c_low, s.c_high)), sort=s.c_low, num=True),
                page.td(
                    md_inline(esc(advice_text(s.configs, s.state, page.lang)))
                    if s.configs
                    else page.shared_label("verdict.tie")
                ),
            ]
            for s in v.schedule
        ]
        headers = [
            (page.html_string("col.scope"), False),
            (page.shared_label("col.concurrency_range"), True),
            (page.shared_label("col.config"), False),
        ]
        parts.append(
            f"<h3>{page.shared_label('sec.schedule')}</h3>" + page.table(headers, rows, cls="compact")
        )
    flags = [f"<h4>{esc(cfg)}</h4>{flags_block(page, f)}" for cfg, f in deployed_flags(v).items()]
    if flags:
        parts.append(f"<h3>{page.shared_label('sec.flags')}</h3>" + "\n".join(flags))
    if not parts:
        return ""
    return page.section("recommendations", label("sec.recommendations", page.lang), "\n".join(parts))


def checks(page: HtmlPage) -> str:
    if not page.view.checks:
        return ""
    items = []
    for c in page.view.checks:
        extra = []
        if c.configs:
            extra.append(", ".join(page.short(x) for x in c.configs))
        if c.cells:
            extra.append("; ".join(" c=".join(str(p) for p in cell) for cell in c.cells))
        tail = f' <span class="muted">({esc(" · ".join(extra))})</span>' if extra else ""
        items.append(
            f'<li class="check {c.severity}"><strong>{page.shared_label(f"check.{c.severity}")}</strong>: '
            f"{page.msg_html(c.message)}{tail}</li>"
        )
    return page.section("checks", label("sec.checks", page.lang), f"<ul>{''.join(items)}</ul>")


def next_steps(page: HtmlPage) -> str:
    parts = []
    if page.view.next_steps:
        parts.append(
            page.section(
                "next-steps",
                label("sec.next_steps", page.lang),
                "<ol>" + "".join(f"<li>{page.msg_html(m)}</li>" for m in page.view.next_steps) + "</ol>",
            )
        )
    if page.view.notes:
        parts.append(
            page.section(
                "notes",
                label("sec.method_notes", page.lang),
                "<ul>" + "".join(f"<li>{page.msg_html(m)}</li>" for m in page.view.notes) + "</ul>",
            )
        )
    return "\n".join(parts)


def lossless(page: HtmlPage) -> str:
    ll = page.view.lossless
    if ll is None:
        return ""
    summary = hl(
        "lossless_summary",
        page.lang,
        identical=ll.identical,
        n=ll.n_prompts,
        share=fmt_pct(ll.share_identical),
        errors=ll.errors,
    )
    body = f"<p>{esc(summary)}</p><p>{' · '.join(f'<code>{esc(u)}</code>' for u in ll.base_urls)}</p>"
    if ll.divergences:
        rows = [
            [
                page.td(esc(d.index), sort=d.index, num=True),
                page.td(esc(d.token_index), sort=d.token_index, num=True),
                page.td(f"<code>{esc(d.a_context)}</code>"),
                page.td(f"<code>{esc(d.b_context)}</code>"),
            ]
            for d in ll.divergences
        ]
        headers = [
            (page.html_string("col.prompt"), True),
            (page.html_string("col.token"), True),
            (page.html_string("col.context_a"), False),
            (page.html_string("col.context_b"), False),
        ]
        body += page.table(headers, rows)
    return page.section("lossless", label("sec.lossless", page.lang), body)


def domains(page: HtmlPage) -> str:
    got = domains_html(page.view, page.lang)
    return page.section("domains", got[0], got[1]) if got else ""
