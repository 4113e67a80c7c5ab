"""Unwritable or invalid output locations and unreadable inputs (issue 20, item 10): exit 2 with one
line naming the flag and the path, before any work; a write that fails midway (disk full) fails."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specsweep.cli import main

from .test_inputs_rundir import _row

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]
READ_ONLY = Path("/proc/specsweep-no-such-dir")  # /proc takes no new files, even from root
needs_proc = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    f = tmp_path / "exp.yaml"  # if a check regressed, this run would end quickly (nothing listens)
    f.write_text(
        "name: e\nservers: [{name: u, kind: url, url: 'http://127.0.0.1:9', ready_timeout_s: 1}]\n"
        "workloads: [{scenarios: [chat_short], concurrency: [1], num_prompts: 1}]\nreport: {enabled: false}\n"
    )
    return f


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    from specsweep.store.run_dir import RunDir

    rd = RunDir.create(tmp_path / "results", "x", {"experiment": "x"}, "20260101-000000")
    for c in (1, 8):
        rd.append_summary(_row("A", {}, c, 100.0 * c))
    return rd.path


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *fragments: str) -> None:
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("specsweep: error:")]
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def test_run_results_dir_is_a_file(
    experiment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    _fails(["run", str(experiment), "--results-dir", str(f), "--quiet"], capsys, "--results-dir", "is a file")
    assert f.read_text() == "x"


@needs_proc
def test_run_results_dir_read_only(experiment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fails(["run", str(experiment), "--results-dir", str(READ_ONLY), "--quiet"], capsys, "cannot write in")


def test_report_output_is_a_folder(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fails(["report", str(run_dir), "-o", str(tmp_path)], capsys, "-o", "is a folder")


@needs_proc
def test_report_plots_dir_read_only(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fails(["report", str(run_dir), "--plots-dir", str(READ_ONLY)], capsys, "--plots-dir", "cannot write in")


def test_report_disk_full_fails(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # the report's atomic write meets a full disk
    out = tmp_path / "r.md"
    _fails(["report", str(run_dir), "-o", str(out)], capsys, "could not write the report", "disk is full")
    assert not out.exists() and not list(tmp_path.glob("*.tmp*"))


def test_import_output_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    src = tmp_path / "r.jsonl"
    src.write_text("{}\n")
    _fails(
        ["import", "sglang", str(src), "--label", "L", "--method", "m", "-o", str(f)],
        capsys,
        "-o",
        "is a file",
    )


@needs_proc
def test_sim_serve_truth_read_only(capsys: pytest.CaptureFixture[str]) -> None:
    _fails(["sim", "serve", "--profile", "toy", "--truth", str(READ_ONLY / "t.jsonl")], capsys, "--truth")


def test_sim_fit_output_is_a_folder(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fails(["sim", "fit", str(run_dir), "-o", str(tmp_path)], capsys, "-o", "is a folder")


def test_non_utf8_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "bad.yaml"
    p.write_bytes(b"name: x\ndescription: \xff\xfe caf\xe9\n")
    _fails(
        ["sim", "predict", "--profile", str(p), "--scenario", "chat_short"], capsys, "not UTF-8", "bad.yaml"
    )


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan"])
def test_bench_request_timeout_must_be_positive_and_finite(value: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "specsweep", "bench", "--port", "9", "--scenario", "chat_short",
         "--request-timeout", value, "--quiet"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert p.returncode == 2, p.stderr[-1000:]
    assert "--request-timeout" in p.stderr and value in p.stderr.lower() and "Traceback" not in p.stderr


def test_an_existing_file_that_cannot_be_appended_to_is_refused_up_front(tmp_path: Path) -> None:
    from specsweep.errors import UsageError
    from specsweep.store.paths import output_file

    with pytest.raises(UsageError, match="cannot write the file"):
        output_file("/proc/self/status", "-o")  # exists, a regular file to stat, refuses writes (even root)
    with pytest.raises(UsageError, match="does not exist; create it first"):
        output_file(tmp_path / "no" / "out.jsonl", "--output-file", parent_must_exist=True)
    assert output_file(tmp_path / "no" / "out.jsonl", "-o") == tmp_path / "no" / "out.jsonl"  # made later
