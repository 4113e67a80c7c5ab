"""Experiment files -> a checked Plan: the one place a plan to run is loaded.

    file --YAML (experiment.checks.load_yaml)--> data --${VAR} (templates.expand_env_vars)--> data
         --parse_experiment--> Experiment --plan_of--> Plan (every template checked: experiment.argv)

``parse_experiment`` turns pydantic's errors into one ConfigError naming the file, the path to the
bad key and what is accepted. ``plan_of`` is also what ``run --resume`` plans a run dir's
manifest with, so both paths check the same things.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from specsweep.errors import ConfigError
from specsweep.experiment import checks
from specsweep.experiment.adaptive import AdaptiveOptions
from specsweep.experiment.argv import check_templates
from specsweep.experiment.config import Experiment, Plan, plan_experiment
from specsweep.experiment.templates import expand_env_vars
from specsweep.store import redact

log = logging.getLogger(__name__)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _describe(err: dict[str, Any], model: type[BaseModel]) -> tuple[str, str]:
    """(path, message) for one pydantic error, naming what is accepted."""
    loc = tuple(err["loc"])
    path = _loc(loc)
    if err["type"] == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        accepted = sorted(parent.model_fields) if parent else []
        return path, f"unknown key {loc[-1]!r}; accepted keys: {', '.join(accepted)}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    got = err.get("input")
    if err["type"] not in ("value_error", "assertion_error", "missing"):
        msg += f" (got {redact.as_written(got)!r})"
    elif isinstance(got, str) and redact.as_written(got) != got and got in msg:
        msg = msg.replace(repr(got), repr(redact.as_written(got))).replace(got, redact.as_written(got))
    return path, msg


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    cur: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        f = cur.model_fields.get(part) if isinstance(cur, type) and issubclass(cur, BaseModel) else None
        if f is None:
            return None
        ann = f.annotation
        args = getattr(ann, "__args__", None)
        cur = args[0] if args and isinstance(args[0], type) else ann
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def parse_experiment(data: Any, *, file: str | None = None, default_name: str | None = None) -> Experiment:
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping at the top level, got {type(data).__name__}", file=file)
    if "servers" not in data and ("mix" in data or "load" in data):
        raise ConfigError(
            "this is a traffic file (mix: and load:, what a deployment must serve) for `specsweep plan "
            "RESULTS --traffic FILE`, not an experiment file; `run` and `preflight` take an "
            "experiment file (servers: and workloads:, e.g. examples/quickstart.yaml; docs/experiments.md)",
            file=file,
        )
    if "name" not in data and default_name:
        data = {"name": default_name, **data}
    try:
        return Experiment.model_validate(data)
    except ValidationError as e:
        errs = [_describe(dict(x), Experiment) for x in e.errors()]
        path, msg = errs[0]
        # every error, one a line: a file with two typos shows both, not "(and 1 more error(s))"
        more = "".join(f"\n  {f'at {p!r}: ' if p else ''}{m}" for p, m in errs[1:])
        raise ConfigError(msg + more, file=file, path=path or None) from e


def plan_of(exp: Experiment, *, file: str | None = None) -> Plan:
    """``exp``'s plan, with every template checked, so a typo fails now rather than at launch."""
    return plan_experiment(exp, file=file, check_config=check_templates)


def load_experiment(path: str | Path) -> tuple[Experiment, Plan]:
    p = Path(path)
    data = checks.read_yaml_file(p, "experiment file")
    data = expand_env_vars(data, file=str(p))
    exp = parse_experiment(data, file=str(p), default_name=p.stem)
    return exp, plan_of(exp, file=str(p))


def with_design(plan: Plan, on: bool, file: str | None = None) -> Plan:
    """``plan`` with the adaptive design on (the file's ``adaptive:`` section, else the defaults) or
    off: ``run --adaptive`` / ``--no-adaptive``. The flag wins over the file: with the design on, the
    file's ``repeats`` and ``run_order`` give way, with a note."""
    exp = plan.experiment
    if on == (exp.adaptive is not None):
        return plan
    update: dict[str, Any] = {"adaptive": AdaptiveOptions() if on else None}
    if on and exp.repeats != 1:
        log.warning(
            "--adaptive: the design chooses the repeats; the file's 'repeats: %d' is not used", exp.repeats
        )
        update["repeats"] = 1
    if on and exp.run_order != "interleaved":
        log.warning(
            "--adaptive: the design runs in rounds; the file's 'run_order: %s' is not used", exp.run_order
        )
        update["run_order"] = "interleaved"
    return plan_of(exp.model_copy(update=update), file=file)
