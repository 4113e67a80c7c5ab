"""One pre-flight finding: which check, which config, pass / warn / fail, what was seen, the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    check: str
    config: str | None
    status: Status
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summary(checks: list[Check]) -> dict[str, int]:
    out = {"pass": 0, "warn": 0, "fail": 0}
    for c in checks:
        out[c.status] += 1
    return out
