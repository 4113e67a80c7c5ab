"""The stored launch-noise calibration (``specsweep calibrate-noise``), per engine and host.

File: ``launch-noise.json`` in the results dir (beside the run dirs), or the file named by
``$SPECSWEEP_LAUNCH_NOISE``. One entry per ``ENGINE@HOST``: ``sd`` (log, one launch's level),
``df`` (launches - 1, pooled over the calibration's configs), ``metric``, ``launches``, ``cells``,
``run_dir`` and ``at``. Later reports of runs on that engine and host read it as the prior of
:mod:`specsweep.stats.launch` (the report names it); so does the adaptive design.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from specsweep.errors import DataError
from specsweep.stats.launch import LaunchPrior
from specsweep.store.run_dir import atomic_write_bytes, dumps

FILE = "launch-noise.json"
ENV = "SPECSWEEP_LAUNCH_NOISE"


def key_of(engine: str | None, host: str | None) -> str:
    return f"{engine or 'unknown'}@{host or 'unknown'}"


def path_for(results_dir: str | Path) -> Path:
    env = os.environ.get(ENV)
    return Path(env) if env else Path(results_dir) / FILE


def read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read the launch-noise calibration: {e}", file=str(path)) from e
    return data if isinstance(data, dict) else {}


def store(results_dir: str | Path, key: str, entry: dict[str, Any]) -> Path:
    path = path_for(results_dir)
    data = read(path)
    data[key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, dumps(data, indent=True))
    return path


def prior_for(run_dirs: Iterable[str | Path], keys: Iterable[str]) -> LaunchPrior | None:
    """The stored calibration for these runs' engine and host (the first key found, in the results
    dir of the first run dir that has one); None when there is none."""
    want = list(dict.fromkeys(keys))
    for d in dict.fromkeys(str(Path(x).resolve().parent) for x in run_dirs):
        data = read(path_for(d))
        for k in want:
            e = data.get(k)
            if isinstance(e, dict) and isinstance(e.get("sd"), (int, float)) and e["sd"] >= 0:
                df = e.get("df")
                df = float(df) if isinstance(df, (int, float)) and df > 0 else math.inf
                return LaunchPrior(float(e["sd"]), df, "calibrated", f"{k} ({path_for(d).name})")
    return None


def prior_in(results_dir: str | Path, host: str, kinds: Iterable[str]) -> LaunchPrior | None:
    """The stored calibration for a run about to start on ``host`` with servers of these ``kinds``
    (sim, vllm, ...: the engine a server will report is not known before it runs): the entry of that
    host whose recorded kinds include one of them; None when there is none."""
    want = set(kinds)
    path = path_for(results_dir)
    for k, e in read(path).items():
        if not (isinstance(e, dict) and k.endswith(f"@{host}") and want & set(e.get("kinds") or ())):
            continue
        if isinstance(e.get("sd"), (int, float)) and math.isfinite(e["sd"]) and e["sd"] >= 0:
            df = e.get("df")
            df = float(df) if isinstance(df, (int, float)) and df > 0 else math.inf
            return LaunchPrior(float(e["sd"]), df, "calibrated", f"{k} ({path.name})")
    return None
