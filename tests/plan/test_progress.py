"""Long planning work shows its progress (issue 28 defect 7): `plan` and `plan --validate` name their
stages with step totals (an ETA needs them) and count every step; the CLI draws them as a live rich
display on a terminal and prints nothing of it otherwise."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from specsweep.console import tracking
from specsweep.plan.planner import make_plan, to_json
from specsweep.plan.replay import validate_plan
from specsweep.plan.traffic import parse_traffic

TRAFFIC = {"mix": {"chat_short": 0.5, "rag_medium": 0.5}, "load": {"concurrency": 8}, "gpus_per_instance": 8}


class Recorder:
    def __init__(self) -> None:
        self.stages: list[list[object]] = []  # [name, total, steps counted]

    def stage(self, name: str, total: int | None) -> None:
        self.stages.append([name, total, 0])

    def advance(self, n: int) -> None:
        self.stages[-1][2] += n  # type: ignore[operator]


@pytest.mark.slow  # plans on the reference data and replays: seconds
def test_plan_and_replay_count_every_step_of_their_stages(reference_results: Path) -> None:
    rec = Recorder()
    with tracking.listening(rec):
        plan = make_plan([reference_results], parse_traffic(TRAFFIC), gpus=16)
        view = to_json(plan)
        validate_plan(plan, view, time_scale=10.0, n_requests=24)
    names = [s[0] for s in rec.stages]
    for want in ("reading results", "split options", "engine model", "replay (requests)"):
        assert want in names, names
    for name, total, steps in rec.stages:
        if total is not None:  # a known total is exactly what the stage counted: the ETA's basis
            assert steps == total, (name, total, steps)
    replay = next(s for s in rec.stages if s[0] == "replay (requests)")
    assert replay[1] == len(view["options"]) * 24  # max(24, 2 x 8 in flight) per option


def _run_on_terminal(argv: list[str]) -> tuple[int, str]:
    """``argv`` with its stderr on a pseudo-terminal (what a user at a shell sees)."""
    main, sub = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=sub, env={**os.environ, "COLUMNS": "80"})
    os.close(sub)
    out = b""
    while True:
        r, _, _ = select.select([main], [], [], 120)
        if not r:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    return p.wait(timeout=60), out.decode("utf-8", "replace")


@pytest.mark.slow
def test_cli_shows_the_stages_on_a_terminal(reference_results: Path, tmp_path: Path) -> None:
    traffic = tmp_path / "t.yaml"
    traffic.write_text(
        "mix: {chat_short: 1.0}\nload: {concurrency: 8}\ngpus_per_instance: 8\n"
    )  # one pool: quick
    argv = [sys.executable, "-m", "specsweep", "plan", str(reference_results), "--traffic", str(traffic),
            "--gpus", "8", "-o", str(tmp_path / "plan.md")]  # fmt: skip
    rc, seen = _run_on_terminal(argv)
    assert rc == 0, seen
    assert "reading results" in seen and "engine model" in seen and "ETA" in seen


class Stop(Exception):
    pass


def test_cli_shows_nothing_of_it_when_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """stderr piped (CI, a log file): no display, so the work's stages reach nobody."""
    from specsweep.cli import main
    from specsweep.plan import planner

    def work(*args: object, **kw: object) -> None:
        tracking.stage("reading results", 3)
        tracking.advance(3)
        raise Stop(tracking.listener())

    monkeypatch.setattr(planner, "make_plan", work)
    traffic = tmp_path / "t.yaml"
    traffic.write_text("mix: {chat_short: 1.0}\nload: {concurrency: 8}\n")
    with pytest.raises(Stop) as e:
        main(["plan", str(tmp_path), "--traffic", str(traffic)])
    assert e.value.args == (None,)  # nobody listening
    assert capsys.readouterr().err == ""
