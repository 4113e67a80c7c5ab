"""check-lossless: divergence location (pure) and the whole command against two real sim servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.cli import main
from specsweep.lossless import first_divergence, load_lossless_view


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


@pytest.fixture(scope="module")
def two_servers():
    sim = pytest.importorskip("specsweep.sim.server")
    args = ["--profile", "toy", "--port", "0", "--time-scale", "100"]
    with (
        sim.SubprocessServer(*args) as good,
        sim.SubprocessServer(*args) as same,
        sim.SubprocessServer(*args, "--faults", "diverge=1") as bad,
    ):
        yield good.url, same.url, bad.url


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
    view = load_lossless_view(out2)
    assert view.n_prompts == 6 and view.share_identical == d2["share_identical"]


def test_check_lossless_needs_two_urls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-lossless", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "exactly two" in capsys.readouterr().err
