"""`specsweep sim serve` as a process: listening line, graceful SIGTERM, crash exit status, bad flags."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from specsweep.sim.serve import CRASH_EXIT_CODE, SubprocessServer


def _post(url: str, body: dict[str, object], timeout: float = 10.0) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def test_cli_serves_and_exits_cleanly_on_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "specsweep", "sim", "serve", "--profile", "toy", "--port", "0", "--time-scale", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("specsweep-sim listening on http://127.0.0.1:"), line
        url = line.split()[-1]
        with urllib.request.urlopen(url + "/health", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(url + "/version", timeout=10) as r:
            assert json.loads(r.read())["time_scale"] == 2.0
        status, body = _post(url + "/v1/completions", {"prompt": "hi", "max_tokens": 5})
        assert status == 200 and json.loads(body)["usage"]["completion_tokens"] == 5
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f:
                f.close()


def test_crash_after_exits_non_zero() -> None:
    srv = SubprocessServer("--profile", "toy", "--port", "0", "--faults", "crash_after=2")
    try:
        for _ in range(2):
            assert (
                _post(srv.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 3}})[0]
                == 200
            )
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            _post(srv.url + "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 3}})
        assert srv.proc.wait(10) == CRASH_EXIT_CODE
        assert srv.proc.stderr is not None and "simulated crash" in srv.proc.stderr.read()
    finally:
        srv.close()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--faults", "bogus=1"], "bogus"),
        (["--profile", "no-such-profile"], "no-such-profile"),
        (["--time-scale", "0"], "--time-scale"),
    ],
)
def test_bad_flags_fail_with_one_clear_line(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from specsweep.cli import main

    assert main(["sim", "serve", "--profile", "toy", "--port", "0", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
