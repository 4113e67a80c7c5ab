"""The HTML report's building blocks: escaping, the two Markdown marks, and :class:`HtmlPage`, the
state of one page being rendered (view, language, table of contents) with its text and table helpers.

Every helper that returns HTML returns it escaped: strings from configs, servers or files go through
:func:`esc` (``html.escape``, quotes included) in text and attributes alike.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence

from specsweep.report import i18n
from specsweep.report.build.view import Msg, ReportView, SetAside
from specsweep.report.display import sentences
from specsweep.report.i18n import fmt_num, fmt_pct, label
from specsweep.report.i18n.html import hl


def esc(value: object) -> str:
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


class HtmlPage:
    """One view rendered in one language: the helpers every section uses; methods that return HTML
    return fragments already escaped. Sections (:mod:`html_header`, :mod:`html_results`,
    :mod:`html_advice`) are functions of a page; ``toc`` collects the level-2 sections in order."""

    def __init__(self, view: ReportView, lang: str) -> None:
        self.view = view
        self.lang = i18n.check_lang(lang)
        self.toc: list[tuple[str, str]] = []

    def shared_label(self, key: str, **args: object) -> str:
        """A label shared with the Markdown report (:mod:`i18n`), escaped for HTML."""
        return esc(label(key, self.lang, **args))

    def html_string(self, key: str, **args: object) -> str:
        """A string only the HTML report shows (:mod:`i18n_html`), escaped for HTML."""
        return esc(hl(key, self.lang, **args))

    def msg_html(self, msg: Msg | None) -> str:
        """A message as HTML: escaped, then the templates' Markdown `code` and **bold** as tags."""
        return "" if msg is None else md_inline(esc(i18n.text(msg, self.lang)))

    def sentences_html(self, main: Msg, extra: Sequence[Msg], aside: Sequence[SetAside], counted: int) -> str:
        """A group's sentences (:func:`display.sentences`) as HTML, like :meth:`msg_html`."""
        return md_inline(esc(sentences(main, extra, aside, counted, self.lang)))

    def plain(self, msg: Msg) -> str:
        """A message as plain text (for <title> and attributes): Markdown marks dropped, not escaped."""
        return md_strip(i18n.text(msg, self.lang))

    def metric_label(self, key: str) -> str:
        return label(f"metric.{key}", self.lang)

    def metric_short(self, key: str) -> str:
        k = f"metric.short.{key}"
        return label(k, self.lang) if i18n.has_label(k) else self.metric_label(key)

    def short(self, config: str | None) -> str:
        """A config's name (the view's decision); no config at all reads "any"."""
        return label("value.any", self.lang) if config is None else self.view.short(config)

    def class_label(self, wc: str | None) -> str:
        key = f"class.{wc if wc is not None else 'all'}"
        return label(key, self.lang) if i18n.has_label(key) else str(wc)

    def num(self, key: str, v: float | None) -> str:
        try:
            d = self.view.metric(key).decimals
        except KeyError:
            d = 2
        return fmt_num(v, d, self.lang)

    def pct(self, x: float | None, signed: bool = False) -> str:
        if signed and x is not None and math.isfinite(x):
            return ("+" if x >= 0 else "") + fmt_pct(x, 2, self.lang)
        return fmt_pct(x, 2, self.lang)

    # ---- structure helpers -----------------------------------------------------------------------
    def section(self, sid: str, title: str, body: str, level: int = 2) -> str:
        if level == 2:
            self.toc.append((sid, title))
        return f'<section id="{sid}">\n<h{level}>{esc(title)}</h{level}>\n{body}\n</section>'

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
            attrs += f' data-sort="{esc(sort)}"'
        if title:
            attrs += f' title="{esc(title)}"'
        return f"<td{attrs}>{text}</td>"

    def tdnum(self, key: str, v: float | None, title: str = "") -> str:
        return self.td(esc(self.num(key, v)), sort=v if v is not None else "", num=True, title=title)
