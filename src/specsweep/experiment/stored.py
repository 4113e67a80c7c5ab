"""The experiment as the manifest keeps it (no secret), and getting the secrets back for ``--resume``.

The manifest's ``config`` is the experiment with every secret replaced (``redact.redact_config``:
``${VAR}`` values as ``${VAR}``, the rest as ``***``), and ``secrets`` holds a salted hash of the
secret values. ``--resume`` re-reads the experiment file: it must give the same redacted config
(anything else changed: refused), and a different hash means only secret values changed (a rotated
key): the resume goes on, with a warning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from specsweep.errors import ConfigError
from specsweep.experiment.config import Experiment, Plan
from specsweep.experiment.loader import load_experiment, parse_experiment
from specsweep.store import redact

log = logging.getLogger(__name__)


def manifest_config(exp: Experiment, salt: str | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(config, secrets) for the manifest: the redacted config, and ``{"salt", "digest", "count"}``
    of the secret values it held (None when it held none)."""
    dump = exp.model_dump(mode="json")
    config = _normalized(redact.redact_config(dump))
    values = redact.secrets_in(dump)
    if config == _normalized(dump) and not values:
        return config, None
    salt = salt or os.urandom(8).hex()
    return config, {"salt": salt, "digest": redact.digest(values, salt), "count": len(values)}


def _normalized(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS))


def _legacy_redactions(config: dict[str, Any]) -> bool:
    """Manifests written before ``secrets`` existed: ``***`` in a server's env or args."""
    for srv in config.get("servers") or []:
        values = [*(srv.get("env") or {}).values(), *(srv.get("args") or []), *(srv.get("argv") or [])]
        if any(v == "***" or str(v).endswith("=***") for v in values):
            return True
    return False


def experiment_of(manifest: dict[str, Any], where: str) -> Experiment:
    """The experiment of a run, secrets included: from the manifest alone when it held none, else
    from its (unchanged) experiment file."""
    config = manifest["config"]
    meta = manifest.get("secrets")
    if not meta and not _legacy_redactions(config):
        return parse_experiment(config, file=where)
    src = manifest.get("experiment_file")
    if not src or not Path(src).is_file():
        raise ConfigError(
            "the run's secrets (env values, --api-key, ${VAR} values ...) are not stored in the run dir; "
            f"resume needs its experiment file {src!r}, which is missing",
            file=where,
        )
    exp, _ = load_experiment(src)
    now, now_meta = manifest_config(exp, salt=(meta or {}).get("salt"))
    if now != config:
        raise ConfigError(
            f"the experiment file {src} changed since the run started; resume needs the same experiment "
            "(the run dir keeps its secrets redacted)",
            file=where,
        )
    if meta and (now_meta or {}).get("digest") != meta.get("digest"):
        log.warning(
            "secret values in %s (or the environment variables it names) changed since the run started; "
            "resuming with the current ones",
            src,
        )
    return exp


def stored_id(cell_id: str) -> str:
    """A cell id as the run dir stores it: a label built from a ``${VAR}`` grid value is written
    with ``${VAR}`` (``redact.scrub_text``), in the summary, the plan and the records' file name."""
    return redact.scrub_text(cell_id)


def stored_ids(plan: Plan) -> dict[str, str]:
    """Each cell id of ``plan`` -> its ``stored_id``."""
    return {c.cell_id: stored_id(c.cell_id) for c in plan.all_cells()}


def finished_cells(plan: Plan, stored: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
    """The plan's finished (cell_id, repeat) pairs, from the run dir's stored (scrubbed) ids."""
    return as_planned(stored, stored_ids(plan))


def as_planned(stored: Iterable[tuple[str, int]], ids: Mapping[str, str]) -> set[tuple[str, int]]:
    """The run dir's (stored id, repeat) pairs in the plan's cell ids (``ids``: its ``stored_ids``)."""
    back = {sid: cid for cid, sid in ids.items()}
    return {(back.get(cid, cid), r) for cid, r in stored}
