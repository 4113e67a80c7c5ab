"""The report's losslessness section (``LosslessView``) from a ``check-lossless`` result: the JSON
object specsweep.client.lossless writes (``lossless.json`` in a run dir, or ``check-lossless -o``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from specsweep.errors import DataError
from specsweep.store import inputs


def to_view(d: dict[str, Any]) -> Any:
    """The report's LosslessView from a check-lossless JSON object."""
    from specsweep.report.build.view import Divergence, LosslessView

    return LosslessView(
        base_urls=list(d["base_urls"]),
        n_prompts=int(d["n_prompts"]),
        identical=int(d["identical"]),
        share_identical=float(d["share_identical"]),
        errors=int(d.get("errors", 0)),
        divergences=[Divergence(**x) for x in d.get("divergences", [])],
    )


def load_lossless_view(path: str | Path) -> Any:
    p = Path(path)
    try:
        d = orjson.loads(inputs.read_bytes(p))
        return to_view(d)
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise DataError(f"not a check-lossless result: {e}", file=str(p)) from e
