"""The view model's building blocks shared by its parts (:mod:`specsweep.report.build.view`): the frozen
model base, a sentence (:class:`Msg`) and the two display decisions every renderer words the same
(a concurrency range, a list of cells)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from specsweep.client.selfcheck import INVALID_REASONS

Number = float | None
ArgValue = str | int | float | bool | None | list[Any] | dict[str, Any]


def level_text(c: int | float) -> str:
    """A concurrency level as every report writes it: ``8``; ``∞`` for an open-loop cell with no
    concurrency limit (level 0: a cell by request rate, named in its scenario)."""
    return "∞" if c == 0 else f"{c:g}" if isinstance(c, float) else str(c)


def band_range(c_low: int, c_high: int | None) -> str:
    """A concurrency range as every report writes it: ``c ≥ 96``, ``c = 64``, ``1 ≤ c ≤ 32``; the
    open-loop band (level 0, no limit) ``c = ∞``."""
    if c_low == 0 and c_high == 0:
        return "c = ∞"
    if c_high is None:
        return f"c ≥ {c_low}"
    if c_low == c_high:
        return f"c = {c_low}"
    return f"{c_low} ≤ c ≤ {c_high}"


def cells_text(cells: Sequence[Sequence[str | int]], order: Sequence[str]) -> str:
    """ "chat_short c=1, 16; rag_medium c=8": the cells per scenario (in report order), levels sorted
    (an open-loop cell, level 0, as ``c=∞``)."""
    by: dict[str, set[int]] = {}
    for s, c in cells:
        by.setdefault(str(s), set()).add(int(c))
    rank = {s: i for i, s in enumerate(order)}
    return "; ".join(
        f"{s} c={', '.join(level_text(c) for c in sorted(cs))}"
        for s, cs in sorted(by.items(), key=lambda kv: rank.get(kv[0], 1 << 30))
    )


def reason_msgs(text: str, codes: Any) -> list[dict[str, Any]]:
    """Why a run was invalid as messages (``{"key", "args"}``) a report words in its language: the
    codes the run stored (``invalid_reasons``, client/selfcheck.py), else its text as it is."""
    if (
        isinstance(codes, list)
        and codes
        and all(
            isinstance(c, dict) and c.get("code") in INVALID_REASONS and isinstance(c.get("args"), dict)
            for c in codes
        )
    ):
        return [{"key": f"invalid.{c['code']}", "args": dict(c["args"])} for c in codes]
    return [{"key": "invalid.text", "args": {"text": text or "-"}}]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Msg(Frozen):
    """A sentence: an i18n key and its arguments (numbers raw; the template formats them)."""

    key: str
    args: dict[str, ArgValue] = Field(default_factory=dict)
    text: str | None = None  # filled only in ``--format json`` output, in the report's language
