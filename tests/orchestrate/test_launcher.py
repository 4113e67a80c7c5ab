"""ManagedServer against a real local process: readiness, logs, versions, teardown of the group."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from specsweep.errors import ServerError
from specsweep.experiment.config import ServerConfig, ServerSpec
from specsweep.servers.process import ManagedServer, free_port

from .helpers import fake_argv, pid_alive, wait_gone

pytestmark = pytest.mark.slow


def server(tmp_path: Path, *extra: str, **kw: Any) -> ManagedServer:
    spec = ServerSpec(name="fake", kind="command", argv=fake_argv(*extra), **kw)
    cfg = ServerConfig(label="fake", spec=spec, params={}, grid_params={})
    return ManagedServer(cfg, tmp_path / "logs" / "fake.log", ready_timeout_s=20, stop_s=5)


def test_ready_version_model_and_log(tmp_path: Path) -> None:
    s = server(tmp_path, "--model", "m1", env={"FAKE_API_KEY": "sk-should-not-appear-in-logs-header"})
    try:
        s.start()
        assert s.alive() and s.model_id == "m1" and s.version == "fake-1.2.3"
        assert s.port is not None and s.base_url == f"http://127.0.0.1:{s.port}"
        d = s.describe()
        assert d["argv"][-4:] == ["--host", "127.0.0.1", "--model", "m1"]
        assert d["env"] == {"FAKE_API_KEY": "***"}
    finally:
        s.stop()
    assert not s.alive()
    text = (tmp_path / "logs" / "fake.log").read_text()
    assert "fakeserver listening" in text and "launch 1 of fake" in text
    header = text.split("fakeserver argv", 1)[0]
    assert "sk-should-not" not in header  # our own header never carries the secret
    assert re.search(r"POST /v1/completions", text)  # readiness ran one real generation


def test_launch_failure_has_log_tail(tmp_path: Path) -> None:
    s = server(tmp_path, "--fail-start")
    with pytest.raises(ServerError) as ei:
        s.start()
    msg = str(ei.value)
    assert "exited with code 3 before it was ready" in msg
    assert "cannot load model weights (simulated)" in msg  # the log tail


def test_missing_binary(tmp_path: Path) -> None:
    spec = ServerSpec(name="x", kind="command", argv=["/nonexistent/engine-binary", "{port}"])
    s = ManagedServer(ServerConfig("x", spec, {}, {}), tmp_path / "x.log", ready_timeout_s=5)
    with pytest.raises(ServerError, match="cannot start /nonexistent/engine-binary"):
        s.start()


def test_not_ready_in_time_is_stopped(tmp_path: Path) -> None:
    s = server(tmp_path, "--no-generate", ready_timeout_s=2.0)
    with pytest.raises(ServerError) as ei:
        s.start()
    assert "not ready after 2 s (waiting for generation: generation answered HTTP 503" in str(ei.value)
    assert s.proc is None and s.launches[-1]["returncode"] is not None


def test_unlisted_model_fails_fast(tmp_path: Path) -> None:
    s = server(tmp_path, "--model", "a", served_model="b")
    with pytest.raises(ServerError, match=r"model 'b' not listed; the server lists \['a'\]"):
        s.start()


def test_teardown_kills_the_whole_group(tmp_path: Path) -> None:
    s = server(tmp_path, "--child")
    s.start()
    assert s.proc is not None
    leader = s.proc.pid
    log = (tmp_path / "logs" / "fake.log").read_text()
    child = int(re.search(r"child pid (\d+)", log).group(1))  # type: ignore[union-attr]
    assert pid_alive(child)
    s.stop()
    assert wait_gone([leader, child], timeout=5) == []


def test_restart_appends_to_the_same_log(tmp_path: Path) -> None:
    s = server(tmp_path, port=free_port())
    s.start()
    s.stop()
    s.start()
    s.stop()
    text = (tmp_path / "logs" / "fake.log").read_text()
    assert "launch 1 of fake" in text and "launch 2 of fake" in text
    assert len(s.launches) == 2 and all("stopped_at" in x for x in s.launches)


def test_url_kind_checks_readiness_and_leaves_the_server_alone(tmp_path: Path) -> None:
    owner = server(tmp_path, "--model", "remote-m")
    owner.start()
    try:
        spec = ServerSpec(name="u", kind="url", url=owner.base_url + "/")
        u = ManagedServer(ServerConfig("u", spec, {}, {}), tmp_path / "u.log", ready_timeout_s=10)
        u.start()
        assert u.base_url == owner.base_url and u.model_id == "remote-m" and u.version == "fake-1.2.3"
        assert u.describe()["argv"] is None
        u.stop()
        assert owner.alive()  # stopping a url server stops nothing
    finally:
        owner.stop()
    spec = ServerSpec(name="u", kind="url", url=owner.base_url)
    gone = ManagedServer(ServerConfig("u", spec, {}, {}), tmp_path / "u.log", ready_timeout_s=1)
    with pytest.raises(ServerError, match=r"not ready after 1 s \(waiting for health"):
        gone.start()
