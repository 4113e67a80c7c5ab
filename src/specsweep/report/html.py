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
import html
import math
import re
from collections.abc import Iterable, Sequence
from importlib import resources

from specsweep import __version__
from specsweep.report import i18n, plots
from specsweep.report.domains_render import domains_html
from specsweep.report.i18n import fmt_num, fmt_pct, label
from specsweep.report.i18n_html import hl
from specsweep.report.verdict_notes import picked_configs, rests_on
from specsweep.report.view import Cell, Msg, Recommendation, ReportView, Verdict, WinnerRow


def _e(value: object) -> str:
    """Escape text for HTML content and attribute values (quotes included)."""
    return html.escape(str(value), quote=True)


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def md_inline(escaped: str) -> str:
    """The two Markdown marks the message templates use, on already-escaped text. Safe: the tags made
    here have no attributes, and their content was escaped before."""
    return _BOLD.sub(r"<strong>\1</strong>", _CODE.sub(r"<code>\1</code>", escaped))


def md_strip(text: str) -> str:
    return _BOLD.sub(r"\1", _CODE.sub(r"\1", text))


def band_range(c_low: int, c_high: int | None) -> str:
    """Same wording as the Markdown report."""
    if c_high is None:
        return f"c ≥ {c_low}"
    if c_low == c_high:
        return f"c = {c_low}"
    return f"{c_low} ≤ c ≤ {c_high}"


@functools.cache
def _asset(name: str) -> str:
    return (resources.files("specsweep.report") / "assets" / name).read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source expression allowing exactly this inline script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def json_for_script(text: str) -> str:
    """JSON made safe inside ``<script type="application/json">``: no ``</script>``, no ``<!--``."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


class _R:
    """Renders one view in one language; methods return HTML fragments (already escaped)."""

    def __init__(self, view: ReportView, lang: str) -> None:
        self.v = view
        self.lang = i18n.check_lang(lang)
        self.configs = {c.label: c for c in view.configs}
        self.toc: list[tuple[str, str]] = []

    # ---- text helpers ----------------------------------------------------------------------------
    def L(self, key: str, **args: object) -> str:
        return _e(label(key, self.lang, **args))

    def H(self, key: str, **args: object) -> str:
        return _e(hl(key, self.lang, **args))

    def T(self, msg: Msg | None) -> str:
        """A message as HTML: escaped, then the templates' Markdown `code` and **bold** as tags."""
        return "" if msg is None else md_inline(_e(i18n.text(msg, self.lang)))

    def plain(self, msg: Msg) -> str:
        """A message as plain text (for <title> and attributes): Markdown marks dropped, not escaped."""
        return md_strip(i18n.text(msg, self.lang))

    def metric_label(self, key: str) -> str:
        return label(f"metric.{key}", self.lang)

    def metric_short(self, key: str) -> str:
        k = f"metric.short.{key}"
        return label(k, self.lang) if i18n.has_label(k) else self.metric_label(key)

    def short(self, config: str | None) -> str:
        if config is None:
            return label("value.any", self.lang)
        c = self.configs.get(config)
        return c.short if c else config

    def class_label(self, wc: str | None) -> str:
        key = f"class.{wc if wc is not None else 'all'}"
        return label(key, self.lang) if i18n.has_label(key) else str(wc)

    def num(self, key: str, v: float | None) -> str:
        try:
            d = self.v.metric(key).decimals
        except KeyError:
            d = 2
        return fmt_num(v, d, self.lang)

    def pct(self, x: float | None, signed: bool = False) -> str:
        if signed and x is not None and math.isfinite(x):
            return ("+" if x >= 0 else "") + fmt_pct(x, 2, self.lang)
        return fmt_pct(x, 2, self.lang)

    def crange(self, lo: int, hi: int | None) -> str:
        return band_range(lo, hi)

    def config_name(self, cell: Cell) -> str:
        """What the config column shows: the parameter value (sweep) or the picked config (compare)."""
        if self.v.kind == "compare":
            return cell.picked or cell.config
        conf = self.configs.get(cell.config)
        if conf and self.v.varied_param and self.v.varied_param in conf.params:
            return str(conf.params[self.v.varied_param])
        return conf.short if conf else cell.config

    # ---- structure helpers -----------------------------------------------------------------------
    def section(self, sid: str, title: str, body: str, level: int = 2) -> str:
        if level == 2:
            self.toc.append((sid, title))
        return f'<section id="{sid}">\n<h{level}>{_e(title)}</h{level}>\n{body}\n</section>'

    def table(
        self,
        headers: Sequence[tuple[str, bool]],
        rows: Iterable[Sequence[str]],
        *,
        tid: str = "",
        sortable: bool = True,
        cls: str = "",
    ) -> str:
        """headers: (escaped text, numeric); rows: ready ``<td>`` strings."""
        classes = " ".join(x for x in ("sortable" if sortable else "", cls) if x)
        th = "".join(
            f'<th scope="col"{" data-type=num" if num else ""}{" class=num" if num else ""}>{h}</th>'
            for h, num in headers
        )
        body = "\n".join("<tr>" + "".join(r) + "</tr>" for r in rows)
        idattr = f' id="{tid}"' if tid else ""
        return (
            f'<div class="table-wrap"><table{idattr} class="{classes}">'
            f"<thead><tr>{th}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>"
        )

    @staticmethod
    def td(text: str, *, sort: float | int | str | None = None, num: bool = False, title: str = "") -> str:
        """A cell; ``text`` is already escaped; ``sort`` is the raw value the sorter compares."""
        attrs = ""
        if num:
            attrs += ' class="num"'
        if sort is not None:
            if isinstance(sort, float) and not math.isfinite(sort):
                sort = ""
            attrs += f' data-sort="{_e(sort)}"'
        if title:
            attrs += f' title="{_e(title)}"'
        return f"<td{attrs}>{text}</td>"

    def tdnum(self, key: str, v: float | None, title: str = "") -> str:
        return self.td(_e(self.num(key, v)), sort=v if v is not None else "", num=True, title=title)

    # ---- sections --------------------------------------------------------------------------------
    def header(self) -> str:
        v, p = self.v, self.v.provenance
        items: list[tuple[str, str]] = []

        def code_list(xs: Iterable[str]) -> str:
            return "<br>".join(f"<code>{_e(x)}</code>" for x in xs)

        if p.run_dirs:
            items.append((self.L("prov.run_dirs"), code_list(p.run_dirs)))
        if p.experiments:
            items.append((self.H("prov.experiments"), code_list(p.experiments)))
        if p.sources:
            items.append((self.L("prov.sources"), _e(", ".join(p.sources))))
        items.append(
            (self.L("prov.compared"), _e(", ".join(c.label for c in v.configs)) + self._varied_note())
        )
        if p.models:
            items.append((self.L("prov.models"), code_list(p.models)))
        if p.backends:
            items.append((self.L("prov.backends"), _e(", ".join(p.backends))))
        if p.servers:
            lines = []
            for s in p.servers:
                bits = [x for x in (s.backend, s.model, s.version) if x]
                line = f"<strong>{_e(s.label)}</strong>"
                if bits:
                    line += " — " + _e(", ".join(bits))
                if s.argv:
                    line += f"<br><code class=argv>{_e(' '.join(s.argv))}</code>"
                lines.append(line)
            items.append((self.L("prov.servers"), "<br>".join(lines)))
        if p.clients:
            items.append((self.L("prov.clients"), code_list(p.clients)))
        if p.lengths:
            items.append(
                (self.L("prov.lengths"), _e("; ".join(i18n.length_text(x, self.lang) for x in p.lengths)))
            )
        if p.warmup:
            items.append(
                (
                    self.L("prov.warmup"),
                    _e(", ".join(label("prov.warmup_n", self.lang, n=n) for n in p.warmup)),
                )
            )
        if p.ignore_eos is not None:
            items.append((self.H("prov.ignore_eos"), self.H("yes" if p.ignore_eos else "no")))
        if p.datasets:
            items.append((self.H("prov.datasets"), _e(", ".join(p.datasets))))
        if p.simulated:
            scale = "-" if p.time_scale is None else f"{p.time_scale:g}"
            items.append((self.L("prov.simulated"), self.L("prov.simulated_yes", scale=scale)))
        noise = hl("noise", self.lang, floor=fmt_pct(v.noise.floor), source=v.noise.source, n=v.noise.n)
        if v.noise.detail is not None:
            noise += " — " + i18n.text(v.noise.detail, self.lang)
        items.append((self.L("prov.noise"), _e(noise)))
        if v.noise.rule is not None:
            items.append((self.L("prov.verdicts"), _e(i18n.text(v.noise.rule, self.lang))))
        if v.noise.ties is not None:
            items.append((self.L("prov.ties"), _e(i18n.text(v.noise.ties, self.lang))))
        if p.generated_at:
            items.append((self.L("prov.generated"), _e(p.generated_at)))
        if p.tool_versions:
            items.append((self.L("prov.tool"), _e(self.tools())))
        dl = "\n".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in items)
        banner = ""
        if p.simulated:
            msg = (
                hl("simulated", self.lang, scale=f"{p.time_scale:g}")
                if p.time_scale is not None
                else hl("simulated_noscale", self.lang)
            )
            banner = f'<p class="banner sim" role="note">{_e(msg)}</p>'
        return (
            f"<header>\n<h1>{self.T(v.title)}</h1>\n{banner}\n"
            f'<section id="provenance"><h2 class="visually-hidden">{self.L("sec.provenance")}</h2>'
            f'<dl class="prov">\n{dl}\n</dl></section>\n</header>'
        )

    def tools(self) -> str:
        vs = self.v.provenance.tool_versions or [__version__]
        return ", ".join(x if x.startswith("specsweep") else f"specsweep {x}" for x in vs)

    def _varied_note(self) -> str:
        if self.v.kind == "sweep" and self.v.varied_param:
            return f" (<code>{_e(self.v.varied_param)}</code>)"
        return ""

    def core(self) -> str:
        v = self.v
        show_status = any(c.status != "ok" for c in v.cells)
        show_repeats = any(c.repeats > 1 for c in v.cells)
        # a separate column only when accept length is not already a core metric (it was shown twice)
        show_accept = "accept_length" not in v.core_columns and any(
            c.accept_length is not None for c in v.cells
        )
        headers: list[tuple[str, bool]] = [
            (self.L("col.scenario"), False),
            (self.L("col.concurrency"), True),
            (self.L(v.config_column), False),
        ]
        if show_repeats:
            headers.append((self.L("col.repeats"), True))
        headers += [(_e(self.metric_label(k)), True) for k in v.core_columns]
        if show_accept:
            headers.append((self.L("metric.accept_length"), True))
        if show_status:
            headers.append((self.H("col.status"), False))
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
                self.td(_e(c.scenario)),
                self.td(_e(c.concurrency), sort=c.concurrency, num=True),
                self.td(_e(self.config_name(c)), title=c.config),
            ]
            if show_repeats:
                r.append(self.td(_e(c.repeats), sort=c.repeats, num=True))
            for k in v.core_columns:
                ci = c.ci.get(k)
                title = ""
                if ci and len(ci) == 2:
                    title = hl(
                        "ci_title",
                        self.lang,
                        low=self.num(k, ci[0]),
                        high=self.num(k, ci[1]),
                        basis=c.ci_basis or "-",
                    )
                r.append(self.tdnum(k, c.values.get(k), title=title))
            if show_accept:
                r.append(self.td(_e(fmt_num(c.accept_length, 2, self.lang)), sort=c.accept_length, num=True))
            if show_status:
                st = label(f"value.{c.status}", self.lang) if c.status != "ok" else "ok"
                r.append(self.td(_e(st), title=c.error or ""))
            rows.append(r)
        body = f'<p class="hint">{self.H("sort_hint")}</p>' + self.table(headers, rows, tid="core-table")
        return self.section("core", label("sec.core", self.lang), body)

    def plots_section(self, figs: list[plots.Plot]) -> str:
        out = []
        for p in figs:
            if p.kind == "metric" and p.metric:
                title = hl("plot.metric", self.lang, metric=self.metric_label(p.metric))
                cap = hl("plot.metric_caption", self.lang)
            elif p.kind == "accept_length":
                title, cap = hl("plot.accept", self.lang), hl("plot.metric_caption", self.lang)
            else:
                continue
            out.append(self.figure(p, title, cap))
        if not out:
            return ""
        return self.section("plots", hl("sec.plots", self.lang), "\n".join(out))

    def figure(self, p: plots.Plot, title: str, caption: str) -> str:
        key = _e(p.key)  # ours: "metric-<metric key>", "winmap", "accept_length"
        svg = p.svg.replace(f'aria-label="{key}"', f'aria-labelledby="fig-{key}-title"', 1)
        return (
            f'<figure class="plot" id="fig-{key}" data-plot="{key}">'
            f'<h3 id="fig-{key}-title">{_e(title)}</h3>\n{svg}\n<figcaption>{_e(caption)}</figcaption></figure>'
        )

    def verdict_text(self, vd: Verdict | None) -> tuple[str, str]:
        """(cell text, tooltip) of a verdict: the effect of a vs b with its interval."""
        if vd is None:
            return "-", ""
        text = f"{self.pct(vd.effect, True)} [{self.pct(vd.ci_low, True)}, {self.pct(vd.ci_high, True)}]"
        title = hl(
            "effect_title",
            self.lang,
            a=self.short(vd.a),
            b=self.short(vd.b),
            basis=vd.basis,
            floor=fmt_pct(vd.noise_floor),
            min_effect=fmt_pct(vd.min_effect),
            method=label(f"test.{vd.method}", self.lang),
            n_a=vd.n_a,
            n_b=vd.n_b,
            level=fmt_pct(vd.level, 0),
            detectable=fmt_pct(vd.detectable_effect, 1),
        )
        return text, title

    def winner_name(self, row: WinnerRow) -> str:
        if row.winner is None:
            return (
                label("verdict.tie", self.lang) if row.leader is not None else label("value.none", self.lang)
            )
        if self.v.kind == "compare":
            cell = self.v.cell(row.scenario, row.concurrency, row.winner)
            if cell and cell.picked:
                return cell.picked
        return self.short(row.winner)

    def winmap_titles(self) -> dict[tuple[str, int], str]:
        out = {}
        for w in self.v.winners:
            if w.metric != self.v.primary_metric:
                continue
            text, title = self.verdict_text(w.verdict)
            vals = ", ".join(f"{self.short(k)} {self.num(w.metric, x)}" for k, x in w.values.items())
            lines = [
                f"{w.scenario} · c={w.concurrency}",
                f"{label('col.winner', self.lang)}: {self.winner_name(w)} ({self.pct(w.gain, True)})",
                vals,
            ]
            if w.verdict is not None:
                lines.append(f"{hl('col.effect', self.lang)}: {text}")
                lines.append(title)
            out[(w.scenario, w.concurrency)] = "\n".join(lines)
        return out

    def winners(self, figs: list[plots.Plot]) -> str:
        v = self.v
        m = v.primary_metric
        rows_in = [w for w in v.winners if w.metric == m]
        if not rows_in:
            return ""
        mlabel = self.metric_label(m)
        headers: list[tuple[str, bool]] = [
            (self.L("col.scenario"), False),
            (self.L("col.concurrency"), True),
            (self.L("col.winner_by", metric=mlabel), False),
        ]
        headers += [(self.L("col.value_of", config=c.short, metric=mlabel), True) for c in v.configs]
        pairs = {(w.verdict.a, w.verdict.b) for w in rows_in if w.verdict is not None}
        if len(pairs) == 1:
            a, b = next(iter(pairs))
            effect_head = self.H("col.effect_pair", a=self.short(a), b=self.short(b))
        else:
            effect_head = self.H("col.effect")
        headers += [(self.L("col.gain"), True), (effect_head, True)]
        best_of = picked_configs(v)
        if best_of:
            headers.append((self.L("col.picked"), False))
        rows = []
        for w in rows_in:
            text, title = self.verdict_text(w.verdict)
            cls = "tie" if w.winner is None else ""
            r = [
                self.td(_e(w.scenario)),
                self.td(_e(w.concurrency), sort=w.concurrency, num=True),
                f'<td class="winner {cls}">{_e(self.winner_name(w))}</td>',
            ]
            r += [self.tdnum(m, w.values.get(c.label)) for c in v.configs]
            r.append(self.td(_e(self.pct(w.gain)), sort=w.gain, num=True))
            r.append(self.td(_e(text), sort=w.verdict.effect if w.verdict else "", num=True, title=title))
            if best_of:
                r.append(self.td(_e(best_of(w.scenario, w.concurrency))))
            rows.append(r)
        parts = []
        for p in figs:
            if p.kind == "winmap":
                parts.append(
                    self.figure(
                        p, hl("plot.winmap", self.lang, metric=mlabel), hl("plot.winmap_caption", self.lang)
                    )
                )
        parts.append(self.table(headers, rows, tid="winners-table"))
        title = (
            label("sec.winners", self.lang)
            if v.kind == "sweep"
            else label("sec.winners_by", self.lang, metric=mlabel)
        )
        return self.section("winners", title, "\n".join(parts))

    def win_counts(self) -> str:
        """Compare: the Markdown report's bullets and conclusion; sweep: a small table of wins per config."""
        v = self.v
        if v.compare is not None:
            cs = v.compare
            items = [Msg(key="compare.cells", args={"n": cs.n_cells})]
            items += [
                Msg(key="compare.wins", args={"method": m, "n": cs.win_counts.get(m, 0)}) for m in cs.methods
            ]
            if cs.ties:
                items.append(Msg(key="compare.ties", args={"n": cs.ties}))
            lis = "".join(f"<li>{self.T(m)}</li>" for m in items)
            return f'<ul class="counts">{lis}</ul>\n<p class="conclusion">{self.T(cs.conclusion)}</p>'
        counts: dict[str, int] = {c.label: 0 for c in v.configs}
        ties, n = 0, 0
        for w in v.winners:
            if w.metric != v.primary_metric:
                continue
            n += 1
            if w.winner is not None:
                counts[w.winner] = counts.get(w.winner, 0) + 1
            elif w.leader is not None:
                ties += 1
        if not n:
            return ""
        rows = [[self.td(_e(self.short(k))), self.td(_e(x), sort=x, num=True)] for k, x in counts.items()]
        rows.append([self.td(self.H("row.ties")), self.td(_e(ties), sort=ties, num=True)])
        rows.append([self.td(self.H("row.cells")), self.td(_e(n), sort=n, num=True)])
        headers = [(self.L("col.config"), False), (self.H("col.wins"), True)]
        return f"<h3>{self.L('sec.wins')}</h3>" + self.table(headers, rows, sortable=False, cls="compact")

    def ratios(self) -> str:
        cs = self.v.compare
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
            f'<p class="note">{self.T(Msg(key="ratio.direction", args={"num": a, "den": b}))}</p>'
            for a, b in pairs
        )
        lis = "".join(f"<li>{self.T(m)}</li>" for m in lines)
        return f"<h3>{self.L('sec.latency')}</h3><ul>{lis}</ul>{notes}"

    def findings(self) -> str:
        v = self.v
        parts = [self.win_counts(), self.ratios()]
        if v.findings:
            items = [f"<li>{self.T(f.text)}</li>" for f in v.findings]
            parts.append(f"<h3>{self.L('sec.bands')}</h3><ul>{''.join(items)}</ul>")
        if v.class_best:
            rows = []
            for cb in v.class_best:
                rows.append(
                    [
                        self.td(_e(self.class_label(cb.workload_class))),
                        self.td(_e(", ".join(cb.scenarios))),
                        self.td(f"<strong>{_e(self.short(cb.config))}</strong>"),
                        self.td(_e(f"{cb.wins} / {cb.losses} / {cb.ties}"), sort=cb.wins, num=True),
                        self.td(_e(self.pct(cb.mean_gain, True)), sort=cb.mean_gain, num=True),
                        self.td(self.T(cb.reason)),
                    ]
                )
            headers = [
                (self.L("col.workload_class"), False),
                (self.H("col.scenarios"), False),
                (self.L("col.best"), False),
                (self.H("col.wlt"), True),
                (self.H("col.mean_gain"), True),
                (self.L("col.reason"), False),
            ]
            parts.append(
                f"<h3>{self.L('sec.class_best')}</h3>" + self.table(headers, rows, tid="class-table")
            )
        for g in v.gaps:
            rows = [
                [
                    self.td(_e(r.concurrency), sort=r.concurrency, num=True),
                    self.tdnum(g.metric, r.a_value),
                    self.tdnum(g.metric, r.b_value),
                    self.td(self.T(r.text)),
                ]
                for r in g.rows
            ]
            ml = self.metric_label(g.metric)
            headers = [
                (self.L("col.concurrency"), True),
                (self.L("col.value_of", config=self.short(g.a), metric=ml), True),
                (self.L("col.value_of", config=self.short(g.b), metric=ml), True),
                (self.L("col.gap"), False),
            ]
            head = f"{label('sec.gaps', self.lang)}: {g.scenario} · {hl('vs', self.lang, a=self.short(g.a), b=self.short(g.b))}"
            parts.append(f"<h3>{_e(head)}</h3>" + self.table(headers, rows, cls="compact"))
            if g.summary is not None:
                parts.append(f"<p>{self.T(g.summary)}</p>")
        body = "\n".join(x for x in parts if x)
        return self.section("findings", label("sec.findings", self.lang), body) if body else ""

    def anomalies(self) -> str:
        if not self.v.anomalies:
            return ""
        rows = [
            [
                self.td(_e(a.scenario)),
                self.td(_e(a.concurrency), sort=a.concurrency, num=True),
                self.td(self.L(f"anomaly.{a.kind}")),
                self.td(_e(", ".join(self.short(c) for c in a.configs))),
                self.td(self.T(a.evidence)),
            ]
            for a in self.v.anomalies
        ]
        headers = [
            (self.L("col.scenario"), False),
            (self.L("col.concurrency"), True),
            (self.L("col.kind"), False),
            (self.H("col.configs"), False),
            (self.L("col.evidence"), False),
        ]
        return self.section(
            "anomalies", label("sec.anomalies", self.lang), self.table(headers, rows, tid="anomalies-table")
        )

    def _side(self, who: str, a: str, b: str) -> str:
        if who == "a":
            return self.short(a)
        if who == "b":
            return self.short(b)
        return label("verdict.tie", self.lang)

    def crossovers(self) -> str:
        if not self.v.crossovers:
            return ""
        rows = []
        for x in self.v.crossovers:
            at = hl("crossover_at", self.lang, c=f"{x.concurrency:.3g}", lo=f"{x.low:g}", hi=f"{x.high:g}")
            rows.append(
                [
                    self.td(_e(x.scenario)),
                    self.td(_e(hl("vs", self.lang, a=self.short(x.a), b=self.short(x.b)))),
                    self.td(_e(self.metric_short(x.metric))),
                    self.td(_e(at), sort=x.concurrency, num=True),
                    self.td(_e(f"{self._side(x.before, x.a, x.b)} → {self._side(x.after, x.a, x.b)}")),
                    self.td(self.T(x.text)),
                ]
            )
        headers = [
            (self.L("col.scenario"), False),
            (self.H("col.pair"), False),
            (self.H("col.metric"), False),
            (self.H("col.crossover_at"), True),
            (self.H("col.change"), False),
            (self.L("col.note"), False),
        ]
        return self.section("crossovers", label("sec.crossovers", self.lang), self.table(headers, rows))

    def _flags_block(self, rec: Recommendation) -> str:
        f = rec.flags
        if f is None:
            return ""
        lines = []
        for key, val in (("vllm", f.vllm), ("sglang", f.sglang), ("measured", f.measured)):
            if val:
                lines.append(
                    f'<div class="flag"><span>{self.H(f"flags.{key}")}</span><pre><code>{_e(val)}</code></pre></div>'
                )
        return "".join(lines)

    def recommendations(self) -> str:
        v = self.v
        parts = []
        if v.recommendations:
            rows = []
            for r in v.recommendations:
                gain = self.pct(r.expected_gain, True)
                if r.ci_low is not None and r.ci_high is not None:
                    gain += f" [{self.pct(r.ci_low, True)}, {self.pct(r.ci_high, True)}]"
                rows.append(
                    [
                        self.td(_e(self.class_label(r.workload_class))),
                        self.td(
                            f"{self.L(f'band.{r.band}')} ({_e(self.crange(r.c_low, r.c_high))})",
                            sort=r.c_low,
                            num=False,
                        ),
                        self.td(
                            f"<strong>{_e(self.short(r.config))}</strong>"
                            if r.config
                            else self.L("value.any")
                        ),
                        self.td(_e(", ".join(self.short(a) for a in r.alternatives))),
                        self.td(_e(gain), sort=r.expected_gain, num=True),
                        self.td(
                            self.L(f"confidence.{r.confidence}") + " (" + self.L(rests_on(r.basis)) + ")",
                            title=r.basis,
                        ),
                        self.td(_e(r.n_cells), sort=r.n_cells, num=True),
                        self.td(self.T(r.note)),
                    ]
                )
            headers = [
                (self.L("col.workload"), False),
                (self.L("col.concurrency_range"), True),
                (self.L("col.recommended"), False),
                (self.H("col.alternatives"), False),
                (self.L("col.expected_gain"), True),
                (self.L("col.confidence"), False),
                (self.H("col.cells"), True),
                (self.L("col.note"), False),
            ]
            parts.append(
                f"<h3>{self.L('sec.recommended_configs')}</h3>" + self.table(headers, rows, tid="rec-table")
            )
        if v.schedule:
            rows = [
                [
                    self.td(_e(self.class_label(s.scope) if i18n.has_label(f"class.{s.scope}") else s.scope)),
                    self.td(_e(self.crange(s.c_low, s.c_high)), sort=s.c_low, num=True),
                    self.td(
                        f"<strong>{_e(self.short(s.config))}</strong>" if s.config else self.L("verdict.tie")
                    ),
                ]
                for s in v.schedule
            ]
            headers = [
                (self.H("col.scope"), False),
                (self.L("col.concurrency_range"), True),
                (self.L("col.config"), False),
            ]
            parts.append(f"<h3>{self.L('sec.schedule')}</h3>" + self.table(headers, rows, cls="compact"))
        flags, seen = [], set()
        for r in v.recommendations:
            block = self._flags_block(r)
            if block and (r.config, block) not in seen:
                seen.add((r.config, block))
                flags.append(f"<h4>{_e(self.short(r.config))}</h4>{block}")
        if flags:
            parts.append(f"<h3>{self.L('sec.flags')}</h3>" + "\n".join(flags))
        if not parts:
            return ""
        return self.section("recommendations", label("sec.recommendations", self.lang), "\n".join(parts))

    def checks(self) -> str:
        if not self.v.checks:
            return ""
        items = []
        for c in self.v.checks:
            extra = []
            if c.configs:
                extra.append(", ".join(self.short(x) for x in c.configs))
            if c.cells:
                extra.append("; ".join(" c=".join(str(p) for p in cell) for cell in c.cells))
            tail = f' <span class="muted">({_e(" · ".join(extra))})</span>' if extra else ""
            items.append(
                f'<li class="check {c.severity}"><strong>{self.L(f"check.{c.severity}")}</strong>: '
                f"{self.T(c.message)}{tail}</li>"
            )
        return self.section("checks", label("sec.checks", self.lang), f"<ul>{''.join(items)}</ul>")

    def next_steps(self) -> str:
        parts = []
        if self.v.next_steps:
            parts.append(
                self.section(
                    "next-steps",
                    label("sec.next_steps", self.lang),
                    "<ol>" + "".join(f"<li>{self.T(m)}</li>" for m in self.v.next_steps) + "</ol>",
                )
            )
        if self.v.notes:
            parts.append(
                self.section(
                    "notes",
                    label("sec.method_notes", self.lang),
                    "<ul>" + "".join(f"<li>{self.T(m)}</li>" for m in self.v.notes) + "</ul>",
                )
            )
        return "\n".join(parts)

    def lossless(self) -> str:
        ll = self.v.lossless
        if ll is None:
            return ""
        summary = hl(
            "lossless_summary",
            self.lang,
            identical=ll.identical,
            n=ll.n_prompts,
            share=fmt_pct(ll.share_identical),
            errors=ll.errors,
        )
        body = f"<p>{_e(summary)}</p><p>{' · '.join(f'<code>{_e(u)}</code>' for u in ll.base_urls)}</p>"
        if ll.divergences:
            rows = [
                [
                    self.td(_e(d.index), sort=d.index, num=True),
                    self.td(_e(d.token_index), sort=d.token_index, num=True),
                    self.td(f"<code>{_e(d.a_context)}</code>"),
                    self.td(f"<code>{_e(d.b_context)}</code>"),
                ]
                for d in ll.divergences
            ]
            headers = [
                (self.H("col.prompt"), True),
                (self.H("col.token"), True),
                (self.H("col.context_a"), False),
                (self.H("col.context_b"), False),
            ]
            body += self.table(headers, rows)
        return self.section("lossless", label("sec.lossless", self.lang), body)

    def domains(self) -> str:
        got = domains_html(self.v, self.lang)
        return self.section("domains", got[0], got[1]) if got else ""

    # ---- page -------------------------------------------------------------------------------------
    def page(self) -> str:
        figs = plots.build_plots(self.v, self.lang, self.winmap_titles())
        head = self.header()
        sections = [
            self.core(),
            self.plots_section(figs),
            self.winners(figs),
            self.findings(),
            self.anomalies(),
            self.crossovers(),
            self.domains(),
            self.recommendations(),
            self.checks(),
            self.next_steps(),
            self.lossless(),
        ]
        toc = "".join(f'<li><a href="#{sid}">{_e(t)}</a></li>' for sid, t in self.toc)
        nav = f'<nav class="toc" aria-label="{self.H("toc")}"><strong>{self.H("toc")}</strong><ol>{toc}</ol></nav>'
        css = _asset("report.css")
        js = _asset("report.js")
        csp = (
            "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src {script_hash(js)}; base-uri 'none'; form-action 'none'"
        )
        footer = hl("footer", self.lang, tool=self.tools(), at=self.v.provenance.generated_at or "-")
        title = self.plain(self.v.title)
        data = json_for_script(self.v.to_json(indent=False))
        return (
            "<!DOCTYPE html>\n"
            f'<html lang="{_e(hl("lang_attr", self.lang))}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="generator" content="specsweep {_e(__version__)}">\n'
            '<link rel="icon" href="data:,">\n'
            f"<title>{_e(title)}</title>\n<style>\n{css}\n</style>\n</head>\n<body>\n"
            f"<main>\n{head}\n{nav}\n"
            + "\n".join(s for s in sections if s)
            + f"\n<footer><p>{_e(footer)}</p></footer>\n</main>\n"
            f'<script type="application/json" id="specsweep-view">{data}</script>\n'
            f"<script>{js}</script>\n</body>\n</html>\n"
        )


def render_html(view: ReportView, lang: str = "en") -> str:
    """The whole report as one self-contained HTML document (str)."""
    return _R(view, lang).page()
