"""Reports: build the view model once, render it as Markdown, JSON, a terminal table or HTML.

Library API (what ``specsweep report`` and ``specsweep run`` call)::

    view = build_view(run_dirs, "sweep" | "compare", method=..., baseline=..., min_effect=0.0)
    text = render(view, "md" | "json" | "html", lang="zh" | "en")
    write_report(view, path, fmt="md", lang="en")
"""

from __future__ import annotations

from pathlib import Path

from specsweep.errors import UsageError, one_of
from specsweep.report.build import build_view
from specsweep.report.build.view import ReportView
from specsweep.report.i18n import check_lang

FORMATS = ("md", "html", "json", "table")

__all__ = ["FORMATS", "ReportView", "build_view", "render", "write_report"]


def render(view: ReportView, fmt: str = "md", lang: str = "en") -> str:
    check_lang(lang)
    if fmt == "md":
        from specsweep.report.markdown import render_markdown

        return render_markdown(view, lang)
    if fmt == "json":
        return json_with_texts(view, lang) + "\n"
    if fmt == "html":
        from specsweep.report.html.page import render_html

        return render_html(view, lang)
    if fmt == "table":
        from specsweep.report.table import table_text

        return table_text(view, lang)
    raise UsageError(f"--format: {one_of(fmt, FORMATS)}")


def write_report(view: ReportView, path: str | Path, fmt: str = "md", lang: str = "en") -> Path:
    """Render and write atomically; returns the path."""
    from specsweep.store.run_dir import atomic_write_bytes

    p = Path(path)
    atomic_write_bytes(p, render(view, fmt, lang).encode("utf-8"))
    return p


def json_with_texts(view: ReportView, lang: str) -> str:
    """The view model as JSON, every message also rendered (``text``) in ``lang`` for JSON consumers."""
    import json

    from specsweep.report.build.view import Msg
    from specsweep.report.i18n import text

    def walk(x: object) -> object:
        if isinstance(x, dict):
            if (
                set(x) == {"key", "args", "text"}
                and isinstance(x["key"], str)
                and isinstance(x["args"], dict)
            ):
                return {**x, "text": text(Msg(key=x["key"], args=x["args"]), lang)}
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    data = walk(view.model_dump(mode="json"))
    assert isinstance(data, dict)
    data["lang"] = lang
    return json.dumps(data, ensure_ascii=False, indent=2)
