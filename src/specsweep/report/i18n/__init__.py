"""Every string a report shows, in English and Chinese: how they are looked up and rendered.

The strings themselves are data: a new short label goes in :mod:`specsweep.report.i18n.labels`, a
new sentence (a ``_t(key, en, zh)`` line) in :mod:`specsweep.report.i18n.texts`; sentences on how
verdicts were decided and their noise in :mod:`specsweep.report.i18n.noise`; the compare summary,
group counts and the deployment headline in :mod:`specsweep.report.i18n.advice` (HTML-only strings:
:mod:`specsweep.report.i18n.html`).

``label(key, lang)`` gives a short label (column header, section title, enum value);
``text(msg, lang)`` renders a :class:`~specsweep.report.build.view.Msg` (``str.format`` with the message's
arguments; templates format numbers themselves, e.g. ``{gain:.2%}``; ``{x_label}`` is ``label(x)``,
``{x_text}`` the messages in the list ``x`` rendered and joined). Unknown languages fail with
the list of accepted ones; a key missing in one language falls back to English.
"""

from __future__ import annotations

import math
from typing import Any

from specsweep.errors import UsageError, one_of
from specsweep.report.build.view import Msg
from specsweep.report.i18n import design as _design
from specsweep.report.i18n.advice import TEXTS as _ADVICE
from specsweep.report.i18n.labels import LABELS as _LABELS
from specsweep.report.i18n.noise import TEXTS as _NOISE
from specsweep.report.i18n.steady import TEXTS as _STEADY
from specsweep.report.i18n.texts import TEXTS as _SENTENCES

LANGS = ("en", "zh")
_TEXTS = {lang: {**_SENTENCES[lang], **_NOISE[lang], **_ADVICE[lang], **_STEADY[lang]} for lang in LANGS}
for _lang in LANGS:  # sections that keep their strings in a table of their own
    _LABELS[_lang].update(_design.LABELS[_lang])
    _TEXTS[_lang].update(_design.TEXTS[_lang])


def check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise UsageError(f"--lang: {one_of(lang, LANGS)}")
    return lang


# Label namespaces (longest first): a key in one with no label shows what follows the namespace
# (``col.param.max_num_seqs`` -> ``max_num_seqs``, the name the user wrote), never the raw key.
_NAMESPACES = tuple(
    sorted({"col.param.", *(k.split(".", 1)[0] + "." for k in _LABELS["en"])}, key=len, reverse=True)
)


def label(key: str, lang: str, **args: Any) -> str:
    """A short label. A key of a label namespace with no label renders as the part after the
    namespace (so a new parameter, metric or workload class still reads as a word); anything else
    is a value rather than a key (a config label) and is shown as it is."""
    check_lang(lang)
    s = _LABELS[lang].get(key) or _LABELS["en"].get(key)
    if s is None:
        return next((key[len(ns) :] for ns in _NAMESPACES if key.startswith(ns) and len(key) > len(ns)), key)
    return s.format(**args) if args else s


def has_label(key: str) -> bool:
    return key in _LABELS["en"]


def text(msg: Msg, lang: str) -> str:
    """Render a message; a missing template is a programming error (KeyError names the key)."""
    check_lang(lang)
    tmpl = _TEXTS[lang].get(msg.key) or _TEXTS["en"][msg.key]
    return tmpl.format_map(_Args(msg.args, lang))


def doc_link(msg: Msg) -> tuple[str, str] | None:
    """(text, href) when a message names a document to read (args ``doc`` and ``doc_href``): the
    renderers show that ``{doc}`` as a link."""
    doc, href = msg.args.get("doc"), msg.args.get("doc_href")
    return (str(doc), str(href)) if isinstance(doc, str) and isinstance(href, str) and doc and href else None


class _Args(dict[str, Any]):
    """Template arguments; ``{x_label}`` looks up ``label(x)`` so templates can name labels."""

    def __init__(self, args: dict[str, Any], lang: str) -> None:
        super().__init__(args)
        self.lang = lang

    def __missing__(self, key: str) -> Any:
        if key.endswith("_label") and key[: -len("_label")] in self:
            return label(str(self[key[: -len("_label")]]), self.lang)
        if key.endswith("_text") and isinstance(self.get(key[: -len("_text")]), list):
            # {x_text}: x is a list of messages ({"key", "args"}): each rendered, joined by "; "
            msgs: list[dict[str, Any]] = self[key[: -len("_text")]]
            return label("list.semi", self.lang).join(
                text(Msg(key=m["key"], args=m.get("args") or {}), self.lang) for m in msgs
            )
        if key.endswith("_counts") and isinstance(self.get(key[: -len("_counts")]), dict):
            # {x_counts}: x maps label keys to counts: one label alone, else each with its count
            counts: dict[str, int] = self[key[: -len("_counts")]]
            if len(counts) == 1:
                return label(next(iter(counts)), self.lang)
            return label("list.sep", self.lang).join(
                label("list.counted", self.lang, item=label(k, self.lang), n=n) for k, n in counts.items()
            )
        raise KeyError(key)


# ---- number formatting shared by renderers ------------------------------------------------------
def length_text(info: Any, lang: str) -> str:
    """One scenario's length rule (a view ``LengthInfo``) in words."""
    key = (
        "prov.lengths_fixed"
        if (info.input_lo, info.output_lo) == (info.input_hi, info.output_hi)
        else "prov.lengths_uniform"
    )
    return label(key, lang, scenario=info.scenario, ilo=info.input_lo, ihi=info.input_hi, olo=info.output_lo,
                 ohi=info.output_hi, ratio=f"{info.ratio:g}", mode=info.mode)  # fmt: skip


def fmt_num(x: float | int | None, decimals: int = 2, lang: str = "en") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return label("value.none", lang)
    return f"{x:.{decimals}f}"


def fmt_pct(x: float | None, decimals: int = 2, lang: str = "en") -> str:
    if x is None or not math.isfinite(x):
        return label("value.none", lang)
    return f"{x * 100:.{decimals}f}%"
