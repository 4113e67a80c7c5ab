"""The HTML report: one self-contained file (inline CSS, JS and SVG plots) rendered from a ReportView.

Same content as the Markdown report (provenance, core table, winners with verdicts, win counts,
ratios, findings, anomalies, crossovers, recommendations with engine flags, next steps) plus plots
(:mod:`specsweep.report.plots`). zh and en come from the same view through the i18n catalogues.

Safety: every string that came from configs, servers or files goes through :func:`_e`
(``html.escape``), in text and attributes alike; plot text is escaped by matplotlib's SVG writer and
tooltips by :func:`plots.inline_svg`; the embedded view JSON escapes ``<``, ``>`` and ``&`` so it
cannot close its ``<script>`` element. A Content-Security-Policy allows no network access and only
the one inline script (by its hash), so even a missed escape could not run code.

Without JS the page is complete (plots are SVG, tooltips are SVG ``<title>``/``title`` attributes);
the script only makes tables sortable.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib import resources

from specsweep import __version__
from specsweep.console.terminal import visible_controls
from specsweep.report import plots
from specsweep.report.build.view import ReportView
from specsweep.report.design_render import design_banner, design_html
from specsweep.report.html.advice import (
    anomalies,
    checks,
    crossovers,
    domains,
    lossless,
    next_steps,
    recommendations,
)
from specsweep.report.html.header import header, tools
from specsweep.report.html.kit import HtmlPage, esc, md_inline, md_strip
from specsweep.report.html.results import core, findings, plots_section, winmap_titles, winners
from specsweep.report.i18n.html import hl

__all__ = ["json_for_script", "md_inline", "md_strip", "render_html", "script_hash"]


@functools.cache
def _asset(name: str) -> str:
    return (resources.files("specsweep.report") / "assets" / name).read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source expression allowing exactly this inline script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def json_for_script(text: str) -> str:
    """JSON made safe inside ``<script type="application/json">``: no ``</script>``, no ``<!--``."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_html(view: ReportView, lang: str = "en") -> str:
    """The whole report as one self-contained HTML document (str). No raw control character (ESC,
    BEL, NUL from a label, a tag or an error) or bidirectional control is left in it: each is shown
    as its escape (``terminal.visible_controls``)."""
    return visible_controls(_page(HtmlPage(view, lang)))


def _page(page: HtmlPage) -> str:
    figs = plots.build_plots(page.view, page.lang, winmap_titles(page))
    head = header(page)
    sections = [
        core(page),
        plots_section(page, figs),
        winners(page, figs),
        design_html(page),
        findings(page),
        anomalies(page),
        crossovers(page),
        domains(page),
        recommendations(page),
        checks(page),
        next_steps(page),
        lossless(page),
    ]
    toc = "".join(f'<li><a href="#{sid}">{esc(t)}</a></li>' for sid, t in page.toc)
    nav = f'<nav class="toc" aria-label="{page.html_string("toc")}"><strong>{page.html_string("toc")}</strong><ol>{toc}</ol></nav>'
    css = _asset("report.css")
    js = _asset("report.js")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {script_hash(js)}; base-uri 'none'; form-action 'none'"
    )
    footer = hl("footer", page.lang, tool=tools(page), at=page.view.provenance.generated_at or "-")
    title = page.plain(page.view.title)
    data = json_for_script(page.view.to_json(indent=False))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{esc(hl("lang_attr", page.lang))}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="specsweep {esc(__version__)}">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{esc(title)}</title>\n<style>\n{css}\n</style>\n</head>\n<body>\n"
        f"<main>\n{head}\n{design_banner(page)}\n{nav}\n"
        + "\n".join(s for s in sections if s)
        + f"\n<footer><p>{esc(footer)}</p></footer>\n</main>\n"
        f'<script type="application/json" id="specsweep-view">{data}</script>\n'
        f"<script>{js}</script>\n</body>\n</html>\n"
    )
