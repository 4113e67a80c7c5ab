"""Launch commands never pass through a shell; servers bind to loopback unless told; result paths
cannot leave the results dir (labels, experiment names, cell ids, import labels)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from specsweep.errors import SpecsweepError
from specsweep.experiment.argv import build_argv, version_argv
from specsweep.experiment.config import ConfigError, plan_experiment
from specsweep.experiment.labels import make_cell_id
from specsweep.experiment.loader import parse_experiment
from specsweep.importers import ImportOptions, import_results
from specsweep.store.paths import safe_name
from specsweep.store.run_dir import RunDir

SRC = Path(__file__).resolve().parents[2] / "src" / "specsweep"
EVIL = "x; rm -rf /tmp/specsweep-pwned && touch /tmp/specsweep-pwned `id` $(id) | cat > /etc/x"
KINDS: dict[str, dict[str, Any]] = {
    "vllm": {"model": EVIL, "params": {"spec_tokens": EVIL, "max_num_seqs": EVIL}},
    "sglang": {"model": EVIL, "params": {"num_steps": EVIL, "mem_fraction_static": EVIL}},
    "llamacpp": {"model": EVIL, "params": {"draft_max": EVIL, "ctx_size": EVIL}},
    "sim": {"profile": EVIL, "params": {"seed": EVIL}},
    "command": {"argv": ["/bin/echo", "{v}", "--model={v}"], "params": {"v": EVIL}},
}


def _plan(kind: str, **over: Any) -> Any:
    spec = {"name": "s", "kind": kind, **KINDS[kind], "args": ["--extra", EVIL], "env": {"E": EVIL}, **over}
    data = {
        "name": "sec",
        "servers": [spec],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}],
    }
    return plan_experiment(parse_experiment(data))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_hostile_value_stays_one_argv_element(kind: str) -> None:
    (cfg,) = _plan(kind).configs
    argv = build_argv(cfg, 1234)
    assert argv is not None and all(isinstance(a, str) for a in argv)
    # the value arrives whole, as one element (or inside one JSON element for vLLM's spec config)
    whole = [a for a in argv if EVIL in a]
    assert whole, argv
    pieces = set(EVIL.split()) - {"x;"}
    assert not pieces & set(argv), "the value was split into several arguments"
    assert argv[argv.index("--extra") + 1] == EVIL
    for a in argv:
        if a != EVIL and EVIL in a and a.startswith("{"):
            assert EVIL in json.loads(a).values()  # --speculative-config JSON: a value, not code
    assert not any(a in ("sh", "bash", "/bin/sh", "/bin/bash", "-c") for a in argv[:3])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_servers_bind_loopback_unless_told(kind: str) -> None:
    (cfg,) = _plan(
        kind, **({"argv": ["/bin/echo", "--host", "{host}", "{v}"]} if kind == "command" else {})
    ).configs
    argv = build_argv(cfg, 1234)
    assert argv is not None and argv[argv.index("--host") + 1] == "127.0.0.1"
    (told,) = _plan(
        kind,
        host="0.0.0.0",
        **({"argv": ["/bin/echo", "--host", "{host}", "{v}"]} if kind == "command" else {}),
    ).configs
    told_argv = build_argv(told, 1234)
    assert told_argv is not None and told_argv[told_argv.index("--host") + 1] == "0.0.0.0"


def test_no_shell_anywhere_in_the_source() -> None:
    pat = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|create_subprocess_shell|commands\.getoutput")
    hits = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pat.search(line)]  # fmt: skip
    assert hits == []


def test_version_argv_has_no_shell() -> None:
    for kind in ("vllm", "sglang", "llamacpp", "sim"):
        (cfg,) = _plan(kind).configs
        argv = version_argv(cfg)
        assert argv is None or argv[0] not in ("sh", "bash", "/bin/sh", "/bin/bash")


def test_hostile_command_launch_runs_nothing_extra(tmp_path: Path) -> None:
    """Really launch a command server with the hostile value: no file appears, the value arrives as
    one argument (the fake server echoes its argv into its log)."""
    from specsweep.servers.process import ManagedServer

    marker = tmp_path / "pwned"
    evil = f"a; touch {marker} && touch {marker}2 `touch {marker}3` $(touch {marker}4)"
    fake = Path(__file__).resolve().parents[1] / "orchestrate" / "fakeserver.py"
    data = {"name": "sec", "servers": [{"name": "s", "kind": "command", "argv": [sys.executable, str(fake), "--port", "{port}", "--tag", "{v}"], "params": {"v": evil}}], "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]}  # fmt: skip
    (cfg,) = plan_experiment(parse_experiment(data)).configs
    srv = ManagedServer(cfg, tmp_path / "s.log", ready_timeout_s=30, stop_s=3)
    try:
        srv.start()
    finally:
        srv.stop()
    assert not list(tmp_path.glob("pwned*"))
    log = (tmp_path / "s.log").read_text()
    assert repr(evil) in log or evil in log


# ---- paths ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["..", "../x", "/abs", ".hidden", "a/b", ""])
def test_experiment_name_cannot_be_a_path(name: str) -> None:
    data = {"name": name, "servers": [{"name": "s", "kind": "sim", "profile": "toy"}],
            "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]}  # fmt: skip
    with pytest.raises(ConfigError) as e:
        parse_experiment(data)
    assert e.value.path == "name"


@pytest.mark.parametrize("label", ["../../x", "..", "/etc/passwd", "a/../../b", "..\\..\\x", "\0x", "~/x"])
def test_labels_and_cell_ids_stay_inside(tmp_path: Path, label: str) -> None:
    rd = RunDir.create(tmp_path / "res", "exp", {"kind": "test"}, "stamp")
    cid = make_cell_id(label, "../scen", 1)
    p = rd.records_path(cid, 0)
    assert p.resolve().parent == (rd.path / "records").resolve()
    assert "/" not in safe_name(label) and not safe_name(label).startswith(".")
    assert (rd.path / "logs" / f"{safe_name(label)}.log").resolve().parent == (rd.path / "logs").resolve()


@pytest.mark.parametrize("label", ["../../escaped", "/tmp/abs-import", "..", "a/../../b"])
def test_import_label_stays_inside(tmp_path: Path, label: str) -> None:
    f = tmp_path / "in.jsonl"
    row = {
        "tag": "chat_short",
        "max_concurrency": 4,
        "duration": 1.0,
        "completed": 1,
        "output_throughput": 10.0,
    }
    f.write_text(json.dumps(row) + "\n")
    res = tmp_path / "a" / "b" / "res"
    try:
        rd = import_results("sglang", [f], res, ImportOptions(label=label, method="m"))
    except SpecsweepError:
        return  # refusing the label is fine too
    assert rd.path.resolve().parent == res.resolve()
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and res not in p.parents and p != f]
    assert outside == []
