"""Fuzzing the experiment loader: mutated YAML (values of wrong types, unknown or missing keys,
typos, broken syntax) gives a ConfigError naming the file (and the key path where there is one),
or a valid plan; never a traceback from deeper down (TypeError, KeyError, ...)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from specsweep.errors import ConfigError
from specsweep.experiment.loader import load_experiment

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
N_TREE = 300
N_TEXT = 300

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10)
    | st.sampled_from(["{port}", "{nope}", "${HOME}", "; rm -rf /", "../..", "-1", "1e309", "", "toy"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
    max_leaves=5,
)  # fmt: skip


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _edit(obj: Any, path: tuple[Any, ...], fn: Any) -> Any:
    if not path:
        return fn(obj)
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {**obj, head: _edit(obj[head], rest, fn)}
    return [_edit(v, rest, fn) if i == head else v for i, v in enumerate(obj)]


@st.composite
def mutated_tree(draw: st.DrawFn) -> Any:
    obj = yaml.safe_load((EXAMPLES / draw(st.sampled_from(BASES))).read_text())
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(obj)))
        op = draw(st.sampled_from(["set", "set", "drop", "typo", "add"]))
        if op == "set":
            value = draw(VALUES)
            obj = _edit(obj, path, lambda _old, v=value: v)
        elif op == "drop" and path:
            parent, last = path[:-1], path[-1]
            obj = _edit(
                obj,
                parent,
                lambda p, k=last: (
                    {a: b for a, b in p.items() if a != k}
                    if isinstance(p, dict)
                    else [b for i, b in enumerate(p) if i != k]
                ),
            )
        elif op == "typo" and path and isinstance(path[-1], str):
            parent, last = path[:-1], path[-1]
            new = last[:-1] or "x"
            obj = _edit(obj, parent, lambda p, k=last, n=new: {(n if a == k else a): b for a, b in p.items()})
        elif op == "add":
            key, value = draw(st.text(max_size=8)), draw(VALUES)
            obj = _edit(obj, path, lambda p, k=key, v=value: {**p, k: v} if isinstance(p, dict) else p)
    return obj


def fuzz(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def load_clearly(path: Path) -> None:
    t0 = time.monotonic()
    try:
        _exp, plan = load_experiment(path)
    except ConfigError as e:
        assert e.file == str(path), f"the error does not name the file: {e}"
        assert str(e).strip()
        return
    finally:
        assert time.monotonic() - t0 < 10
    assert plan.configs and all(plan.cells[c.label] is not None for c in plan.configs)


def _with_budget(value: Any) -> Any:
    tree = yaml.safe_load((EXAMPLES / "quickstart.yaml").read_text())
    return {**tree, "adaptive": {**(tree.get("adaptive") or {}), "budget": value}}


@fuzz(N_TREE)
@given(tree=mutated_tree())
@example(tree=_with_budget([1]))  # CI's falsifying example (a TypeError from the budget's regex)
@example(tree=_with_budget({"a": 1}))
def test_mutated_experiment(tmp_path: Path, tree: Any) -> None:
    p = tmp_path / "exp.yaml"
    try:
        p.write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    except (yaml.YAMLError, UnicodeEncodeError):
        return
    load_clearly(p)


# Every value a YAML file can hold, at every key of every example: the validators take the type they
# are given, never call a string method on a list or a mapping (the search the fuzz test does by chance).
SHAPES: list[Any] = [[1], {"a": 1}, [], {}, "x", 1.5, None, True, -1, [[1]], {"a": [1]}]


@pytest.mark.parametrize("base", [b for b in BASES if not b.startswith("traffic")])
def test_every_key_takes_every_yaml_shape(tmp_path: Path, base: str) -> None:
    tree = yaml.safe_load((EXAMPLES / base).read_text())
    p = tmp_path / "exp.yaml"
    failures = []
    for path in _paths(tree)[1:]:
        for value in SHAPES:
            p.write_text(yaml.safe_dump(_edit(tree, path, lambda _old, v=value: v)))
            try:
                load_experiment(p)
            except ConfigError:
                continue
            except Exception as e:
                failures.append(f"{'.'.join(map(str, path))} = {value!r}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ([1], "budget [1] (list)"),
        ({"a": 1}, "(dict)"),
        ("1e15", "at most"),
        (10**23, "at most"),
        ("1e400", "budget"),
    ],
)
def test_budget_of_any_shape_is_one_clear_error(tmp_path: Path, value: Any, says: str) -> None:
    p = tmp_path / "exp.yaml"
    p.write_text(yaml.safe_dump(_with_budget(value)))
    with pytest.raises(ConfigError) as e:
        load_experiment(p)
    assert e.value.path == "adaptive.budget" and says in str(e.value), str(e.value)


def test_margin_too_small_to_print_is_refused(tmp_path: Path) -> None:
    tree = _with_budget("75%")
    tree["adaptive"]["margin"] = 1e-300
    p = tmp_path / "exp.yaml"
    p.write_text(yaml.safe_dump(tree))
    with pytest.raises(ConfigError) as e:
        load_experiment(p)
    assert e.value.path == "adaptive.margin", str(e.value)


def test_errors_name_the_key_path(tmp_path: Path) -> None:
    """Hand-picked typos: the error names the file and the path to the bad key."""
    base = yaml.safe_load((EXAMPLES / "quickstart.yaml").read_text())
    cases = {
        "servers[0].kind": lambda d: d["servers"][0].update(kind="vllmm"),
        "workloads[0].concurrency": lambda d: d["workloads"][0].update(concurrency="eight"),
        "client.warmup_requestz": lambda d: d["client"].update(warmup_requestz=1) if "client" in d else d.update(client={"warmup_requestz": 1}),
        "timeouts.ready_s": lambda d: d.update(timeouts={"ready_s": -1}),
    }  # fmt: skip
    for path, fn in cases.items():
        d = yaml.safe_load(yaml.safe_dump(base))
        fn(d)
        p = tmp_path / "e.yaml"
        p.write_text(yaml.safe_dump(d))
        with pytest.raises(ConfigError) as e:
            load_experiment(p)
        assert e.value.file == str(p) and e.value.path == path, (path, str(e.value))


@st.composite
def mutated_text(draw: st.DrawFn) -> bytes:
    buf = bytearray((EXAMPLES / draw(st.sampled_from(BASES))).read_bytes())
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, max(0, len(buf) - 1)))
        op = draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        if op == "flip" and buf:
            buf[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del buf[i : i + draw(st.integers(1, 20))]
        elif op == "insert":
            buf[i:i] = draw(
                st.sampled_from(
                    [
                        b"\t",
                        b":",
                        b": ",
                        b"- ",
                        b"\n  ",
                        b"[",
                        b"{",
                        b"&a ",
                        b"*a",
                        b"!!python/object:os.system ",
                        b"\xff",
                        b"'",
                        b"%",
                    ]
                )
            )
        else:
            del buf[i:]
    return bytes(buf)


@fuzz(N_TEXT)
@given(raw=mutated_text())
def test_mutated_yaml_text(tmp_path: Path, raw: bytes) -> None:
    p = tmp_path / "exp.yaml"
    p.write_bytes(raw)
    load_clearly(p)
