"""How configurations and cells are named: a label's parameter abbreviations (DSpark(st=3)) and
the stable, readable, file-safe cell id every stored row is keyed by."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from specsweep import redact
from specsweep.paths import safe_name

# Short names for grid parameters in labels: DSpark(st=3).
_ABBREV = {
    "spec_tokens": "st",
    "num_speculative_tokens": "st",
    "num_steps": "steps",
    "eagle_topk": "topk",
    "num_draft_tokens": "dt",
    "draft_tokens": "dt",
    "draft_max": "dmax",
    "draft_min": "dmin",
    "time_scale": "ts",
}


def abbrev(key: str) -> str:
    """Label abbreviation of a parameter name: a known short form, else the initials of its words."""
    if key in _ABBREV:
        return _ABBREV[key]
    words = [w for w in key.split("_") if w]
    return "".join(w[0] for w in words) if len(words) > 1 else key


def make_cell_id(label: str, scenario: str, concurrency: int) -> str:
    """Readable and stable: ``<label>.<scenario>.c<N>-<6 hex of the exact triple>``."""
    h = hashlib.sha1(f"{label}\0{scenario}\0{concurrency}".encode()).hexdigest()[:6]
    # the readable part as written: a ${VAR} value in a label is never written (redact)
    return f"{safe_name(redact.scrub_text(label))}.{safe_name(scenario)}.c{concurrency}-{h}"


def default_label(name: str, grid_point: Mapping[str, object]) -> str:
    """``name(abbrev=value, ...)`` over a grid point's parameters: DSpark(st=3)."""
    if not grid_point:
        return name
    return name + "(" + ",".join(f"{abbrev(k)}={v}" for k, v in grid_point.items()) + ")"
