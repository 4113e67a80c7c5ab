"""check-lossless: divergence location (pure) and the whole command against two real sim servers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.cli import main
from specsweep.client.lossless import first_divergence
from specsweep.report.build.lossless import load_lossless_view

pytestmark = pytest.mark.slow


def test_first_divergence_index_and_context() -> None:
    a = "the quick brown fox jumps over the lazy dog ."
    b = "the quick brown cat jumps over the lazy dog ."
    i, ca, cb = first_divergence(a, b, context=2)  # type: ignore[misc]
    assert i == 3
    assert ca == "quick brown fox jumps over" and cb == "quick brown cat jumps over"


def test_identical_and_prefix_cases() -> None:
    assert first_divergence("a b, c", "a  b , c") is None  # whitespace alone is not a difference
    i, _ca, cb = first_divergence("one two", "one two three")  # type: ignore[misc]
    assert i == 2 and cb.endswith("three")


words = st.lists(st.sampled_from(["alpha", "beta", "gamma", ",", "."]), max_size=30)


@settings(max_examples=80, deadline=None)
@given(words, words)
def test_divergence_is_the_first_differing_token(xs: list[str], ys: list[str]) -> None:
    d = first_divergence(" ".join(xs), " ".join(ys))
    if xs == ys:
        assert d is None
    else:
        assert d is not None
        i = d[0]
        assert xs[:i] == ys[:i]
        assert i == min(len(xs), len(ys)) or xs[i] != ys[i]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sim(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """`specsweep sim serve` (the public command) on a free port; returns once /health answers."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "specsweep",
        "sim",
        "serve",
        "--profile",
        "toy",
        "--port",
        str(port),
        "--time-scale",
        "100",
        *extra,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sim serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("sim serve did not become healthy in 30 s")


@pytest.fixture(scope="module")
def two_servers():
    procs = []
    try:
        urls = []
        for extra in ((), (), ("--faults", "diverge=1")):
            p, u = _sim(*extra)
            procs.append(p)
            urls.append(u)
        yield tuple(urls)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stderr:
                p.stderr.close()


@pytest.mark.timeout(120)
def test_check_lossless_against_sim_servers(two_servers: tuple[str, str, str], tmp_path: Path) -> None:
    good, same, bad = two_servers
    out = tmp_path / "same.json"
    assert (
        main(
            [
                "check-lossless",
                "--base-url",
                good,
                "--base-url",
                same,
                "--num-prompts",
                "6",
                "--max-tokens",
                "24",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    d = json.loads(out.read_text())
    assert (
        d["n_prompts"] == 6 and d["identical"] == 6 and d["share_identical"] == 1.0 and d["divergences"] == []
    )

    out2 = tmp_path / "diff.json"
    assert (
        main(
            [
                "check-lossless",
                "--base-url",
                good,
                "--base-url",
                bad,
                "--num-prompts",
                "6",
                "--max-tokens",
                "24",
                "-o",
                str(out2),
            ]
        )
        == 0
    )
    d2 = json.loads(out2.read_text())
    assert d2["identical"] < 6 and d2["errors"] == 0
    assert len(d2["divergences"]) == 6 - d2["identical"]
    for div in d2["divergences"]:
        assert 0 <= div["token_index"] < 24
        assert div["a_context"] != div["b_context"]
    out3 = tmp_path / "native.json"
    args = [
        "--base-url",
        good,
        "--base-url",
        bad,
        "--num-prompts",
        "3",
        "--max-tokens",
        "16",
        "--backend",
        "sglang",
    ]
    assert main(["check-lossless", *args, "-o", str(out3)]) == 0
    d3 = json.loads(out3.read_text())
    assert d3["backend"] == "sglang" and d3["errors"] == 0 and d3["identical"] < 3
    view = load_lossless_view(out2)
    assert view.n_prompts == 6 and view.share_identical == d2["share_identical"]


def test_check_lossless_needs_two_urls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-lossless", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "exactly two" in capsys.readouterr().err
