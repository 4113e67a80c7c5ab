"""How configurations and cells are named: a label's parameter abbreviations (DSpark(st=3)) and
the stable, readable, file-safe cell id every stored row is keyed by.

A label never holds a secret, so redaction never has to merge two configurations: a value under a
secret-looking key (``api_key``) is shown as ``***`` and a short, stable hash of the value
(``label_value``), distinct per value; a value that came from ``${VAR}`` is shown as written.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping

from specsweep.store import redact
from specsweep.store.paths import safe_name

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


def label_value(key: str, value: object) -> object:
    """``value`` as a label shows it: under a secret-looking ``key`` ``***`` plus 6 hex of a slow,
    salted hash of the value (stable across runs and resumes, distinct per value; the value is
    registered for scrubbing, with that placeholder); a value from ``${VAR}`` as written (``${VAR}``);
    else as it is."""
    if isinstance(value, bool) or value is None:
        return value
    written = redact.as_written(value)
    if written != value:
        return written
    if redact.looks_secret(key):
        shown = redact.REDACTED + _value_hash(str(value))
        redact.register(str(value), shown)
        return shown
    return value


@functools.lru_cache(maxsize=1024)
def _value_hash(value: str) -> str:
    # slow (PBKDF2) so that 6 hex of it do not make a dictionary check of a weak secret cheap
    return hashlib.pbkdf2_hmac("sha256", value.encode(), b"specsweep-label", 100_000).hex()[:6]


def label_values(params: Mapping[str, object]) -> dict[str, object]:
    """Every parameter as a label shows it (``label_value``): for ``label:`` templates."""
    return {k: label_value(k, v) for k, v in params.items()}


def default_label(name: str, grid_point: Mapping[str, object]) -> str:
    """``name(abbrev=value, ...)`` over a grid point's parameters: DSpark(st=3)."""
    if not grid_point:
        return name
    return name + "(" + ",".join(f"{abbrev(k)}={label_value(k, v)}" for k, v in grid_point.items()) + ")"
