"""The HTML report's header: title, simulated-results banner and the provenance list."""

from __future__ import annotations

from collections.abc import Iterable

from specsweep import __version__
from specsweep.report import i18n
from specsweep.report.html.kit import HtmlPage, esc
from specsweep.report.i18n import fmt_pct, label
from specsweep.report.i18n.html import hl


def header(page: HtmlPage) -> str:
    v, p = page.view, page.view.provenance
    items: list[tuple[str, str]] = []

    def code_list(xs: Iterable[str]) -> str:
        return "<br>".join(f"<code>{esc(x)}</code>" for x in xs)

    if p.run_dirs:
        items.append((page.shared_label("prov.run_dirs"), code_list(p.run_dirs)))
    if p.experiments:
        items.append((page.html_string("prov.experiments"), code_list(p.experiments)))
    if p.sources:
        items.append((page.shared_label("prov.sources"), esc(", ".join(p.sources))))
    items.append(
        (page.shared_label("prov.compared"), esc(", ".join(c.label for c in v.configs)) + varied_note(page))
    )
    if p.models:
        items.append((page.shared_label("prov.models"), code_list(p.models)))
    if p.backends:
        items.append((page.shared_label("prov.backends"), esc(", ".join(p.backends))))
    if p.servers:
        lines = []
        for s in p.servers:
            bits = [x for x in (s.backend, s.model, s.version) if x]
            line = f"<strong>{esc(s.label)}</strong>"
            if bits:
                line += " — " + esc(", ".join(bits))
            if s.argv:
                line += f"<br><code class=argv>{esc(' '.join(s.argv))}</code>"
            lines.append(line)
        items.append((page.shared_label("prov.servers"), "<br>".join(lines)))
    if p.clients:
        items.append((page.shared_label("prov.clients"), code_list(p.clients)))
    if p.lengths:
        items.append(
            (
                page.shared_label("prov.lengths"),
                esc("; ".join(i18n.length_text(x, page.lang) for x in p.lengths)),
            )
        )
    if p.warmup:
        items.append(
            (
                page.shared_label("prov.warmup"),
                esc(", ".join(label("prov.warmup_n", page.lang, n=n) for n in p.warmup)),
            )
        )
    if p.ignore_eos is not None:
        items.append((page.html_string("prov.ignore_eos"), page.html_string("yes" if p.ignore_eos else "no")))
    if p.datasets:
        items.append((page.html_string("prov.datasets"), esc(", ".join(p.datasets))))
    if p.simulated:
        scale = "-" if p.time_scale is None else f"{p.time_scale:g}"
        items.append(
            (page.shared_label("prov.simulated"), page.shared_label("prov.simulated_yes", scale=scale))
        )
    noise = hl("noise", page.lang, floor=fmt_pct(v.noise.floor), source=v.noise.source, n=v.noise.n)
    if v.noise.detail is not None:
        noise += " — " + i18n.text(v.noise.detail, page.lang)
    items.append((page.shared_label("prov.noise"), esc(noise)))
    if v.noise.rule is not None:
        items.append((page.shared_label("prov.verdicts"), esc(i18n.text(v.noise.rule, page.lang))))
    if v.noise.rule_within is not None:
        items.append(
            (page.shared_label("prov.verdicts_within"), esc(i18n.text(v.noise.rule_within, page.lang)))
        )
    ties = [i18n.text(m, page.lang) for m in (v.noise.ties_min, v.noise.ties) if m is not None]
    if ties:
        items.append((page.shared_label("prov.ties"), esc(("" if page.lang == "zh" else " ").join(ties))))
    for m in p.comparability:
        items.append((page.shared_label("prov.comparability"), f"<strong>{_linked(m, page.lang)}</strong>"))
    if p.generated_at:
        items.append((page.shared_label("prov.generated"), esc(p.generated_at)))
    if p.tool_versions:
        items.append((page.shared_label("prov.tool"), esc(tools(page))))
    dl = "\n".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in items)
    banner = ""
    if p.simulated:
        msg = (
            hl("simulated", page.lang, scale=f"{p.time_scale:g}")
            if p.time_scale is not None
            else hl("simulated_noscale", page.lang)
        )
        banner = f'<p class="banner sim" role="note">{esc(msg)}</p>'
    return (
        f"<header>\n<h1>{page.msg_html(v.title)}</h1>\n{banner}\n"
        f'<section id="provenance"><h2 class="visually-hidden">{page.shared_label("sec.provenance")}</h2>'
        f'<dl class="prov">\n{dl}\n</dl></section>\n</header>'
    )


def tools(page: HtmlPage) -> str:
    vs = page.view.provenance.tool_versions or [__version__]
    return ", ".join(x if x.startswith("specsweep") else f"specsweep {x}" for x in vs)


def varied_note(page: HtmlPage) -> str:
    if page.view.kind == "sweep" and page.view.varied_param:
        return f" (<code>{esc(page.view.varied_param)}</code>)"
    return ""


def _linked(m: i18n.Msg, lang: str) -> str:
    """A message's text, escaped, with the document it names as a link."""
    t, link = esc(i18n.text(m, lang)), i18n.doc_link(m)
    return t.replace(esc(link[0]), f'<a href="{esc(link[1])}">{esc(link[0])}</a>', 1) if link else t
