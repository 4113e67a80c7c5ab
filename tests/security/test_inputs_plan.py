"""The planner's inputs are bounded and its output paths checked first (issue 27, items 9 and 10).

Before: a huge concurrency or hourly profile gave a MemoryError traceback at 2.7 GB,
``concurrency: 1e308`` a ValueError traceback, ``gpus_per_instance: 1e302`` was accepted,
``--gpus 5000`` planned for more than 300 s and ``--validate`` would start a simulator process per
instance of any fleet; ``plan -o`` / ``check-lossless -o`` to a bad place failed after the work,
with a traceback, and ``plan -o LINK`` wrote through the link.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specsweep.cli import main
from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

pytestmark = pytest.mark.timeout(120)
READ_ONLY = Path("/proc/specsweep-no-such-dir")  # /proc takes no new files, even from root
needs_proc = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    csv = find_reference_csv()
    assert csv is not None
    return write_results_dir(reference_rows(csv), tmp_path_factory.mktemp("ref"))


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("specsweep: error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


TRAFFIC = {
    "concurrency 1e308": ("load: {concurrency: 1.0e+308}", "load.concurrency", "up to 1,000,000"),
    "concurrency 1e7": ("load: {concurrency: 10000000}", "load.concurrency", "up to 1,000,000"),
    "request rate 1e9": ("load: {request_rate: 1.0e+9}", "load.request_rate", "up to 1,000,000"),
    "hourly 1e7": ("load: {concurrency_by_hour: {0: 10, 12: 10000000}}", "load.concurrency_by_hour.12", "up to"),
    "gpus_per_instance 1e302": ("load: {concurrency: 8}\ngpus_per_instance: 1.0e+302", "gpus_per_instance", "up to 1,024"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(TRAFFIC))
def test_traffic_numbers_are_bounded_when_read(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, path, why = TRAFFIC[case]
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\n" + text + "\n")
    line = _error(["plan", str(tmp_path / "no-results"), "--traffic", str(t)], capsys)
    assert f"at '{path}'" in line and why in line, line  # before the results are even read


@pytest.mark.slow
@pytest.mark.parametrize(
    "load", ["{concurrency: 100000}", "{concurrency_by_hour: {0: 10, 12: 100000}}", "{request_rate: 500000}"]
)
def test_a_load_beyond_what_a_plan_can_size_is_refused(
    load: str, results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = tmp_path / "t.yaml"
    t.write_text(f"mix: {{chat: 1.0}}\nload: {load}\n")
    line = _error(["plan", str(results), "--traffic", str(t)], capsys)
    assert "at 'load'" in line and "a plan sizes for at most 8,192 requests in flight" in line, line
    if "rate" in load:  # Little's law at the lowest latency: refused before any fleet is simulated
        assert "means at least" in line, line


def test_gpus_beyond_the_instance_cap_are_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\ngpus_per_instance: 8\n")
    line = _error(["plan", str(tmp_path / "no-results"), "--traffic", str(t), "--gpus", "5000"], capsys)
    assert "--gpus 5,000" in line and "64 instances" in line and "512 GPUs" in line, line


@pytest.mark.slow
def test_validate_starts_no_more_simulators_than_its_cap(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from specsweep.plan import replay

    monkeypatch.setattr(replay, "MAX_REPLAY_SERVERS", 1)  # every fleet of 2 instances is over it
    started: list[object] = []
    monkeypatch.setattr(replay, "SubprocessServer", lambda *a, **k: started.append(a))
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 16}\nprofiles: {dspark-st3: toy}\n")
    assert main(["plan", str(results), "--traffic", str(t), "--gpus", "2", "--validate"]) == 0
    out = capsys.readouterr().out
    assert started == [] and "not replayed on the simulator: its fleet needs 2 simulator processes" in out


# ---- item 10: output paths -----------------------------------------------------------------------
@needs_proc
def test_plan_output_is_checked_before_the_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\n")
    line = _error(
        ["plan", str(tmp_path / "no-results"), "--traffic", str(t), "-o", str(READ_ONLY / "p.md")], capsys
    )
    assert "-o" in line and "cannot write" in line, line  # not "no such run directory": checked first


def test_plan_output_never_writes_through_a_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("keep me")
    link = tmp_path / "plan.md"
    link.symlink_to(target)
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\n")
    line = _error(["plan", str(tmp_path / "no-results"), "--traffic", str(t), "-o", str(link)], capsys)
    assert "is a symbolic link" in line and target.read_text() == "keep me", line


@pytest.mark.slow
def test_plan_output_into_a_missing_folder_is_written(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\n")
    out = tmp_path / "new" / "dir" / "plan.json"
    assert main(["plan", str(results), "--traffic", str(t), "--format", "json", "-o", str(out)]) == 0
    assert out.read_text().startswith("{")


@needs_proc
def test_check_lossless_output_is_checked_before_the_work(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(["check-lossless", "--base-url", "http://127.0.0.1:9", "--base-url", "http://127.0.0.1:9",
                   "-o", str(READ_ONLY / "l.json")], capsys)  # fmt: skip
    assert "-o" in line and "cannot write" in line, line  # not a connection error: checked first


@pytest.mark.parametrize("n", ["1000000000000", "100001", "0"])
def test_replay_requests_is_bounded(n: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38, defect 10: ``--replay-requests 1000000000000`` was a numpy MemoryError traceback;
    now one line naming the value and the bound, before anything is read."""
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\n")
    line = _error(["plan", str(tmp_path / "no-results"), "--traffic", str(t), "--validate", "--replay-requests", n],
                  capsys)  # fmt: skip
    assert "--replay-requests" in line and "up to 100,000" in line, line
