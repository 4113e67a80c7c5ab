"""Markdown report from the view model (both kinds, both languages)."""

from __future__ import annotations

from typing import Any

from specsweep.console.md_inert import inert as inert
from specsweep.report import i18n
from specsweep.report.build.verdict_notes import picked_configs
from specsweep.report.build.view import Msg, ReportView, band_range, level_text
from specsweep.report.design_render import design_markdown, design_summary_md
from specsweep.report.display import (
    advice_text,
    aside_text,
    basis_text,
    counted,
    deployed_flags,
    recommended_text,
    sentences,
    value_text,
    winner_text,
)
from specsweep.report.domains_render import domains_markdown
from specsweep.report.i18n import fmt_num, fmt_pct, label, text
from specsweep.report.md_escape import escaped_view


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _table(head: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    align = ["---" if i < left else "---:" for i in range(len(head))]
    return [_row(head), "|" + "|".join(align) + "|", *(_row(r) for r in rows)]


def provenance(view: ReportView, lang: str) -> list[str]:
    p = view.provenance
    L = lambda k: label(k, lang)  # noqa: E731
    sep = "：" if lang == "zh" else ": "
    if view.kind == "compare" and p.servers:
        out = []
        for key, attr in (
            ("prov.results_of", "run_dirs"),
            ("prov.model_of", "model"),
            ("prov.backend_of", "backend"),
        ):
            for cfg in view.configs:
                vals: list[str] = []
                for srv in p.servers:
                    if srv.column != cfg.label:
                        continue
                    v = getattr(srv, attr)
                    for x in v if isinstance(v, list) else [v]:
                        if x and x not in vals:
                            vals.append(x)
                if vals:
                    shown = ", ".join(f"`{x}`" for x in vals) if attr != "backend" else ", ".join(vals)
                    out.append(f"- {label(key, lang, name=cfg.label)}{sep}{shown}")
        return out + _provenance_common(view, lang, sep)
    out = [f"- {L('prov.run_dirs')}{sep}" + ", ".join(f"`{d}`" for d in p.run_dirs)]
    if p.models:
        out.append(f"- {L('prov.models')}{sep}" + ", ".join(f"`{m}`" for m in p.models))
    if p.backends:
        out.append(f"- {L('prov.backends')}{sep}" + ", ".join(p.backends))
    return out + _provenance_common(view, lang, sep)


def _provenance_common(view: ReportView, lang: str, sep: str) -> list[str]:
    p = view.provenance
    L = lambda k: label(k, lang)  # noqa: E731
    out: list[str] = []
    shorts = " vs ".join(f"`{c.short}`" for c in view.configs)
    out.append(f"- {L('prov.compared')}{sep}{shorts}")
    if p.warmup:
        out.append(
            f"- {L('prov.warmup')}{sep}" + ", ".join(label("prov.warmup_n", lang, n=w) for w in p.warmup)
        )
    if p.clients:
        out.append(f"- {L('prov.clients')}{sep}" + ", ".join(f"`{c}`" for c in p.clients))
    if p.lengths:
        out.append(f"- {L('prov.lengths')}{sep}" + "; ".join(i18n.length_text(x, lang) for x in p.lengths))
    if p.sources:
        out.append(f"- {L('prov.sources')}{sep}" + ", ".join(p.sources))
    if p.simulated:
        out.append(
            f"- {L('prov.simulated')}{sep}"
            + label("prov.simulated_yes", lang, scale=p.time_scale if p.time_scale is not None else "-")
        )
    if view.noise.detail is not None:
        line = text(view.noise.detail, lang)
        if view.noise.min_effect > 0:
            line += "; " + i18n.text(
                type(view.noise.detail)(key="noise.min_effect", args={"min_effect": view.noise.min_effect}),
                lang,
            )
        out.append(f"- {L('prov.noise')}{sep}{line}")
    if view.noise.rule is not None:
        out.append(f"- {L('prov.verdicts')}{sep}{text(view.noise.rule, lang)}")
    if view.noise.rule_within is not None:
        out.append(f"- {L('prov.verdicts_within')}{sep}{text(view.noise.rule_within, lang)}")
    ties = [text(m, lang) for m in (view.noise.ties_min, view.noise.ties) if m is not None]
    if ties:
        out.append(f"- {L('prov.ties')}{sep}{('' if lang == 'zh' else ' ').join(ties)}")
    out += [f"- **{L('prov.comparability')}**{sep}{_linked(m, lang)}" for m in p.comparability]
    return out


def _linked(m: Msg, lang: str) -> str:
    """A message's text with the document it names as a Markdown link."""
    t, link = text(m, lang), i18n.doc_link(m)
    return t.replace(link[0], f"[{link[0]}]({link[1]})", 1) if link else t


def core_table(view: ReportView, lang: str) -> list[str]:
    head = [label("col.scenario", lang), label("col.concurrency", lang), label(view.config_column, lang)]
    head += [label(f"metric.{k}", lang) for k in view.core_columns]
    rows = []
    for s, c in view.points():
        for cfg in view.configs:
            cell = view.cell(s, c, cfg.label)
            if cell is None:
                continue
            rows.append(
                [
                    s,
                    level_text(c),
                    view.config_name(cell),
                    *(value_text(view, cell, k, lang) for k in view.core_columns),
                ]
            )
    return _table(head, rows, left=1)


def winner_table(view: ReportView, lang: str) -> list[str]:
    metric = label(f"metric.{view.primary_metric}", lang)
    head = [label("col.scenario", lang), label("col.concurrency", lang)]
    head.append(
        label("col.winner_by", lang, metric=metric) if view.kind == "sweep" else label("col.winner", lang)
    )
    head += [label("col.value_of", lang, config=c.short, metric=metric) for c in view.configs]
    head.append(label("col.gain", lang))
    best_of = picked_configs(view)
    if best_of:
        head.append(label("col.picked", lang))
    rows = []
    for w in view.winners:
        vals = [
            _winner_value(view, w.scenario, w.concurrency, c.label, w.values.get(c.label), lang)
            for c in view.configs
        ]
        row = [
            w.scenario,
            level_text(w.concurrency),
            winner_text(view, w, lang),
            *vals,
            fmt_pct(w.gain, 2, lang),
        ]
        rows.append(row + ([best_of(w.scenario, w.concurrency)] if best_of else []))
    return _table(head, rows)


def _winner_value(view: ReportView, s: str, c: int, config: str, v: float | None, lang: str) -> str:
    if v is not None:
        return fmt_num(v, 2, lang)
    cell = view.cell(s, c, config)
    return label(f"value.{cell.status if cell is not None and cell.status != 'ok' else 'missing'}", lang)


def recommendation_table(view: ReportView, lang: str) -> list[str]:
    head = [
        label(k, lang)
        for k in ("col.workload", "col.recommended", "col.expected_gain", "col.confidence", "col.note")
    ]
    rows = []
    for r in view.recommendations:
        wl = (
            label(f"class.{r.workload_class or 'all'}", lang)
            + " / "
            + label(f"band.{r.band}", lang)
            + f" ({band_range(r.c_low, r.c_high)})"
        )
        rec = recommended_text(view, r, lang)
        if r.config is None:
            gain = label("value.none", lang)
        else:
            gain = f"{fmt_pct(r.expected_gain, 1, lang)} [{fmt_pct(r.ci_low, 1, lang)}, {fmt_pct(r.ci_high, 1, lang)}]"
        conf = f"{label(f'confidence.{r.confidence}', lang)} ({basis_text(r, lang)})"
        rows.append([wl, rec, gain, conf, sentences(r.note, r.extra, r.set_aside, r.n_cells, lang)])
    return _table(head, rows, left=len(head))


def render_markdown(view: ReportView, lang: str = "en") -> str:
    i18n.check_lang(lang)
    view = escaped_view(view)  # no string from outside becomes a line break, a link or a control code
    L = lambda k, **a: label(k, lang, **a)  # noqa: E731
    out: list[str] = [f"# {text(view.title, lang)}", ""]
    out += design_summary_md(view, lang)
    out += provenance(view, lang)
    out += ["", "---", "", f"## {L('sec.core')}", ""]
    out += core_table(view, lang)
    metric = L(f"metric.{view.primary_metric}")
    title = L("sec.winners") if view.kind == "sweep" else L("sec.winners_by", metric=metric)
    out += ["", "---", "", f"## {title}", ""]
    out += winner_table(view, lang)
    out += design_markdown(view, lang)
    out += ["", "---", "", f"## {L('sec.findings')}", ""]
    n = 0
    if view.kind == "compare" and view.compare is not None:
        cs = view.compare
        out += ["- " + text(m, lang) for m in cs.count_lines()]
        if (aside := aside_text(cs.set_aside, cs.n_cells, lang)) is not None:
            out.append("- " + aside)
        out += ["", text(cs.conclusion, lang), *(text(m, lang) for m in cs.trailing), ""]
        if cs.ratios:
            n += 1
            out += [f"### {n}. {L('sec.latency')}", ""]
            for r in cs.ratios:
                out.append(
                    "- "
                    + text(
                        _msg(
                            "ratio.line",
                            metric=f"metric.short.{r.metric}",
                            num=r.numerator,
                            den=r.denominator,
                            ratio=r.mean_ratio,
                        ),
                        lang,
                    )
                )
            pairs = {(r.numerator, r.denominator) for r in cs.ratios}
            out.append("")
            for num, den in sorted(pairs):
                out.append("> " + text(_msg("ratio.direction", num=num, den=den), lang))
            out.append("")
    if view.findings:
        n += 1
        out += [f"### {n}. {L('sec.bands')}", ""]
        out += ["- " + sentences(f.text, f.extra, f.set_aside, counted(f.text), lang) for f in view.findings]
        out.append("")
    if view.class_best:
        n += 1
        out += [f"### {n}. {L('sec.class_best')}", ""]
        rows = [
            [
                L(f"class.{cb.workload_class}") + f" ({', '.join(cb.scenarios)})",
                recommended_text(view, cb, lang),
                sentences(cb.reason, cb.extra, cb.set_aside, cb.wins + cb.losses + cb.ties, lang),
            ]
            for cb in view.class_best
        ]
        out += _table([L("col.workload_class"), L("col.best"), L("col.reason")], rows, left=3)
        out.append("")
    if view.gaps:
        n += 1
        out += [f"### {n}. {L('sec.gaps')}", ""]
        for g in view.gaps:
            out += [f"**{g.scenario}**", ""]
            head = [
                L("col.concurrency_range"),
                L("col.value_of", config=view.short(g.a), metric=metric),
                L("col.value_of", config=view.short(g.b), metric=metric),
                L("col.gap"),
            ]
            rows = [
                [
                    level_text(r.concurrency),
                    fmt_num(r.a_value, 2, lang),
                    fmt_num(r.b_value, 2, lang),
                    text(r.text, lang),
                ]
                for r in g.rows
            ]
            out += _table(head, rows)
            if g.summary is not None:
                out += ["", text(g.summary, lang)]
            out.append("")
    if view.anomalies:
        n += 1
        out += [f"### {n}. {L('sec.anomalies')}", ""]
        for a in view.anomalies:
            out.append(
                f"- **{a.scenario} c={level_text(a.concurrency)}** ({L('anomaly.' + a.kind)}): {text(a.evidence, lang)}"
            )
        out.append("")
    if view.crossovers:
        n += 1
        out += [f"### {n}. {L('sec.crossovers')}", ""]
        out += ["- " + text(x.text, lang) for x in view.crossovers if x.text is not None]
        out.append("")
    if view.checks:
        n += 1
        out += [f"### {n}. {L('sec.checks')}", ""]
        out += [f"- **{L('check.' + c.severity)}**: {text(c.message, lang)}" for c in view.checks]
        out.append("")
    if view.lossless is not None:
        n += 1
        ll = view.lossless
        out += [f"### {n}. {L('sec.lossless')}", ""]
        url_a, url_b = ([*ll.base_urls, "", ""])[:2]
        out.append(
            "- "
            + text(
                _msg(
                    "lossless.summary",
                    identical=ll.identical,
                    n=ll.n_prompts,
                    share=ll.share_identical,
                    a=url_a,
                    b=url_b,
                ),
                lang,
            )
        )
        for d in ll.divergences[:10]:
            out.append(
                "  - "
                + text(
                    _msg(
                        "lossless.divergence",
                        index=d.index,
                        token_index=d.token_index,
                        a_context=d.a_context,
                        b_context=d.b_context,
                    ),
                    lang,
                )
            )
        out.append("")
    if view.notes:
        n += 1
        out += [f"### {n}. {L('sec.notes')}", ""]
        out += ["- " + text(m, lang) for m in view.notes]
        out.append("")
    out += domains_markdown(view, lang)
    out += ["---", "", f"## {L('sec.recommendations')}", ""]
    if view.recommendations:
        out += [f"### {L('sec.recommended_configs')}", ""]
        out += recommendation_table(view, lang)
        out.append("")
    if view.schedule:
        out += [f"### {L('sec.schedule')}", ""]
        rows = [
            [
                s.scope,
                band_range(s.c_low, s.c_high),
                advice_text(s.configs, s.state, lang) if s.configs else L("verdict.tie"),
            ]
            for s in view.schedule
        ]
        out += _table(
            [L("col.scenario_name"), L("col.concurrency_range"), L("col.recommended")], rows, left=3
        )
        out.append("")
    flags = deployed_flags(view)
    if flags:
        out += [f"### {L('sec.flags')}", ""]
        for cfg, f in flags.items():
            out.append(f"- **{cfg}**")
            if f.measured:
                out.append(f"  - measured: `{f.measured}`")
            if f.vllm:
                out.append(f"  - vLLM: `{f.vllm}`")
            if f.sglang:
                out.append(f"  - SGLang: `{f.sglang}`")
        out.append("")
    if view.next_steps:
        out += [f"### {L('sec.next_steps')}", ""]
        out += [f"{i}. {text(m, lang)}" for i, m in enumerate(view.next_steps, 1)]
        out.append("")
    return inert("\n".join(out).rstrip() + "\n")


def _msg(key: str, **args: Any) -> Msg:
    return Msg(key=key, args=args)
