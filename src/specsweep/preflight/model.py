"""One pre-flight finding: which check, which config, pass / warn / fail / skip, what was seen, the fix.

``skip``: the check could not look (a model directory that is not on this host): neither a pass nor
a problem of the experiment."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

Status = Literal["pass", "warn", "fail", "skip"]
STATUSES = ("pass", "warn", "fail", "skip")


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
    out = dict.fromkeys(STATUSES, 0)
    for c in checks:
        out[c.status] += 1
    return out


def fold(checks: Iterable[Check]) -> list[Check]:
    """Identical findings (same check, status, message and fix) of several configs as one, naming
    the configs in order: three simulated configs with the same note make one line, not three."""
    groups: dict[tuple[str, str, str, str], list[Check]] = {}
    for c in checks:
        groups.setdefault((c.check, c.status, c.message, c.fix), []).append(c)
    out = []
    for same in groups.values():
        names = list(dict.fromkeys(c.config for c in same if c.config))
        out.append(replace(same[0], config=", ".join(names) if names else None))
    return out


def fold_dicts(checks: Iterable[Any]) -> list[dict[str, Any]]:
    """``fold`` of checks as a manifest records them (entries that are not a check are dropped)."""
    ok = [d for d in checks if isinstance(d, dict) and d.get("check") and d.get("status") in STATUSES]
    parsed = [
        Check(str(d["check"]), str(d["config"]) if d.get("config") else None, d["status"],
              str(d.get("message") or ""), str(d.get("fix") or ""))
        for d in ok
    ]  # fmt: skip
    return [c.to_dict() for c in fold(parsed)]
