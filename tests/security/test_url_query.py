"""Issue 27, defect 14: a base URL with a query string (or a fragment) is refused at once, with the
reason, instead of a launch that waits out ``ready_s`` "waiting for health" (the client appends
/health, /v1/models and /v1/completions to the base URL, after the query). The query is never
echoed: it often carries a key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specsweep.cli import main
from specsweep.experiment.checks import base_url_problem

SECRET = "SENTINEL-query-key-3f9e"


def _experiment(tmp_path: Path, url: str) -> Path:
    exp = {
        "name": "q",
        "servers": [{"name": "a", "kind": "url", "url": url}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 1}],
        "timeouts": {"ready_s": 5},
    }
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(exp))
    return f


@pytest.mark.parametrize(
    "url",
    [f"http://127.0.0.1:9/?api_key={SECRET}", f"http://127.0.0.1:9/v1?k={SECRET}", "http://127.0.0.1:9/#top"],
)
def test_run_refuses_a_url_with_a_query_before_anything_starts(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _experiment(tmp_path, url)
    rc = main(["run", str(f), "--results-dir", str(tmp_path / "results"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "servers[0].url" in err and "cannot be part of a base URL" in err
    assert ("query string" in err) == ("?" in url) and ("fragment" in err) == ("#" in url)
    assert SECRET not in err
    assert not (tmp_path / "results").exists(), "nothing may be created for a refused file"


def test_bench_refuses_a_base_url_with_a_query(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "--base-url", f"http://127.0.0.1:9/?api_key={SECRET}", "--scenario", "chat_short",
               "--num-prompts", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "--base-url" in err and "query string" in err and "http://127.0.0.1:9/..." in err
    assert SECRET not in err


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000", "http://127.0.0.1:8000/", "https://h.example/v1", "http://u:pw@h:1"]
)
def test_plain_base_urls_pass(url: str) -> None:
    assert base_url_problem(url) is None


def test_the_password_of_a_refused_url_is_not_echoed() -> None:
    msg = base_url_problem(f"http://user:{SECRET}@h:1/?x=1") or ""
    assert "query string" in msg and SECRET not in msg and "user:***@h:1" in msg


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/ a",
        "http://127.0.0.1:9/\ta",
        "http://127.0.0.1:9/\x07",
        "http://127.0.0.1:9/\u202ev1",
    ],
)
def test_a_url_with_whitespace_or_control_characters_is_refused_when_the_file_loads(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38, defect 11: before, http.client's InvalidURL traceback mid-run, and a run dir left
    marked interrupted. Now: exit 2 when the experiment loads, naming the character; no run dir."""
    f = _experiment(tmp_path, url)
    rc = main(["run", str(f), "--results-dir", str(tmp_path / "results"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "servers[0].url" in err and "whitespace or control characters" in err and "U+" in err
    assert "Traceback" not in err and "\x07" not in err and "\u202e" not in err
    assert not (tmp_path / "results").exists()
