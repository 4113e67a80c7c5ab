"""Manifests are read once, whichever layout wrote them (analysis.data.run_info and the server
facts of ConfigMeta); the report's provenance shows what they normalise to."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_analysis import K3, K5, make_run, row

from specsweep.analysis.data import ConfigMeta, RunInfo, run_info
from specsweep.report import build_view


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        ({}, RunInfo(path="p")),
        (  # our own run: client under the resolved config, experiment as a record
            {"experiment": {"name": "e1"}, "tool_version": "0.1", "preflight": [{"status": "warn"}, "junk"],
             "config": {"client": {"warmup": 5, "ignore_eos": 0, "dataset": "random"}}},
            RunInfo(path="p", experiment="e1", tool_version="0.1", warmup=5, ignore_eos=False, dataset="random",
                    preflight=[{"status": "warn"}]),
        ),
        (  # an import: a top-level client record names the tool and its backend; older warmup key
            {"experiment": "e2", "source": "import",
             "client": {"tool": "sglang.bench_serving", "backend": "vllm", "warmup_requests": 100}},
            RunInfo(path="p", experiment="e2", source="import", client="sglang.bench_serving --backend vllm",
                    warmup=100),
        ),
        (  # a simulated run: the time scale under "sim"; a bool warmup is no count
            {"sim": {"time_scale": 4}, "client": {"warmup": True}},
            RunInfo(path="p", simulated=True, time_scale=4.0, time_scale_recorded=True),
        ),
        (  # simulated by source; a time scale that is not a number is recorded but unknown
            {"source": "sim", "time_scale": "fast"},
            RunInfo(path="p", source="sim", simulated=True, time_scale=None, time_scale_recorded=True),
        ),
    ],
)  # fmt: skip
def test_run_info_reads_every_layout(manifest: dict[str, object], expected: RunInfo) -> None:
    assert run_info("p", manifest) == expected


def test_server_facts_resolve_aliases() -> None:
    m = ConfigMeta(
        "x", "dspark", {}, None, server_info={"launcher": "vllm", "model_id": "m", "argv": ["a", 1]}
    )
    assert (m.backend, m.model, m.version, m.argv) == ("vllm", "m", None, ["a", "1"])
    m = ConfigMeta("x", "dspark", {}, None, server_info={"kind": "sim", "version": "1", "argv": "a b"})
    assert (m.backend, m.version, m.argv) == ("sim", "1", [])


def test_provenance_shows_the_normalised_manifests(tmp_path: Path) -> None:
    client = {"tool": "sglang.bench_serving", "backend": "sglang", "warmup": 10, "ignore_eos": True}
    servers = {K3[0]: {"backend": "sim-engine", "model": "m3"}, K5[0]: {"launcher": "vllm", "model_id": "m5"}}
    make_run(
        tmp_path,
        "a",
        [row(*K3, "s", 8, 1000)],
        {"client": client, "servers": servers, "sim": {"time_scale": 2}},
    )
    make_run(
        tmp_path, "b", [row(*K5, "s", 8, 1500)], {"config": {"client": {"warmup": 3}}, "servers": servers}
    )
    p = build_view([tmp_path], "sweep").provenance
    assert p.experiments == ["a", "b"]
    assert p.clients == ["sglang.bench_serving --backend sglang", "specsweep bench"]
    assert p.warmup == [3, 10] and p.ignore_eos is True
    assert p.models == ["m3", "m5"] and p.backends == ["sim-engine", "vllm"]
    assert p.simulated and p.time_scale == 2.0
