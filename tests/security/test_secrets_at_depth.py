"""Secrets at any depth and on every path (issue 27, items 7 and 8).

- a value nested under an auth-like key (``extra_request_body: {auth: {value: X}}``);
- URL query values (``?api_key=X``) in a ``url:``, the manifest and ``bench``'s messages;
- ``--dry-run``, ``preflight`` and config errors show ``${VAR}`` values as written, however short;
- a secret cut by the log pump (at 64 KiB, or written in two goes) is scrubbed whole;
- an error cut short by the client (HTTP body 500, non-JSON chunk 120, stream error 300) is
  scrubbed before the cut, so no part of the secret stays;
- a grid over a secret-looking key keeps one configuration per value (labels never hold the value),
  and ``*_token_map`` is not a secret.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsweep.cli import main
from specsweep.client.bench import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import create_run_dir, execute
from specsweep.servers import logpump
from specsweep.store import redact
from specsweep.workload.scenarios import Scenario

from ..orchestrate.helpers import fake_argv
from ..orchestrate.test_grid import StandIn
from .echo_server import serve

SECRET = "SENTINEL-q7Zx3k9Vw2p4Rt8"  # no known token shape: found by where it stands


@pytest.fixture(autouse=True)
def _own_registry() -> Iterator[None]:
    with redact.isolated():
        yield


def fragments(text: str, secret: str = SECRET, n: int = 6) -> list[str]:
    """The pieces of ``secret`` (``n`` characters or more) that ``text`` holds."""
    return sorted({secret[i : i + n] for i in range(len(secret) - n + 1) if secret[i : i + n] in text})


# ---- item 7: depth, URLs ------------------------------------------------------------------------
def test_a_secret_nested_under_an_auth_key_is_hidden_at_every_depth() -> None:
    dump = {"servers": [], "client": {"extra_request_body": {
        "auth": {"value": SECRET, "kinds": ["bearer-xyz-1", {"deep": 12345678}]}, "temperature": 0}}}  # fmt: skip
    out = redact.redact_config(dump)
    assert out["client"]["extra_request_body"] == {
        "auth": {"value": "***", "kinds": ["***", {"deep": "***"}]}, "temperature": 0}  # fmt: skip
    # registered: a server echoing it anywhere (records, logs) is scrubbed
    assert (
        redact.scrub_text(f"401 body={{'auth': {{'value': '{SECRET}'}}}}")
        == "401 body={'auth': {'value': '***'}}"
    )


def test_url_query_values_are_secrets_wherever_the_url_goes() -> None:
    url = f"http://user:pw-123456@127.0.0.1:9/v1?api_key={SECRET}&mode=short&flag"
    shown = redact.redact_url(url)
    assert shown == "http://user:***@127.0.0.1:9/v1?api_key=***&mode=***&***"
    assert redact.scrub_text(f"GET failed for {SECRET} at {url} (see http://x/?a=&b=)") == (
        f"GET failed for *** at {shown} (see http://x/?a=&b=)"
    )
    # the manifest's config (servers.*.url) and an argument holding such a URL
    cfg = redact.redact_config(
        {"servers": [{"url": url, "args": ["--upstream", f"https://h/?sig={SECRET}"]}]}
    )
    assert SECRET not in str(cfg) and "pw-123456" not in str(cfg)


def test_bench_never_prints_a_url_query_secret(capsys: pytest.CaptureFixture[str]) -> None:
    url, stop = serve("http", "unrelated", 0)  # answers every request 401: no request completes
    try:
        code = main(["bench", "--base-url", f"{url}/?api_key={SECRET}", "--backend", "vllm", "--model", "m", "--scenario", "chat_short",
                     "--num-prompts", "2", "--max-concurrency", "1", "--disable-spec-metrics", "--quiet"])  # fmt: skip
    finally:
        stop()
    out = capsys.readouterr()
    assert code != 0, out.err  # refused, or no request completed: either way nothing of the secret shown
    assert fragments(out.out + out.err) == [], out.err


# ---- item 7: what a dry run, preflight and a config error print ----------------------------------
EXPERIMENT = {
    "name": "shown",
    "description": "owner ${NOTE_REF}",
    "scenarios": {"tiny": {"input_len": 16, "output_len": 8, "range_ratio": 1.0}},
    "servers": [{"name": "s", "kind": "sim", "profile": "toy",
                 "grid": {"session_token": ["tok-a", "${GRID_REF}"], "speculative_token_map": ["m1.pt", "m2.pt"]}}],
    "workloads": [{"scenarios": ["tiny"], "concurrency": [1]}],
}  # fmt: skip


def test_dry_run_and_preflight_show_secrets_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NOTE_REF", "shh")  # short: never searched for in text, still never shown
    monkeypatch.setenv("GRID_REF", SECRET)
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(EXPERIMENT))
    assert main(["run", str(path), "--dry-run"]) == 0
    assert main(["preflight", str(path), "--no-versions", "--format", "md"]) in (0, 1)
    out = capsys.readouterr().out
    assert "owner ${NOTE_REF}" in out and "shh" not in out
    assert "tok-a" not in out and fragments(out) == []
    assert "st=${GRID_REF}" in out  # a ${VAR} grid value is shown as written
    assert "stm=m1.pt" in out and "stm=m2.pt" in out  # *_token_map is not a secret


def test_a_config_error_never_echoes_an_env_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e.yaml"
    data = {**EXPERIMENT, "workloads": [{"scenarios": ["tiny"], "concurrency": ["${CONC}"]}],
            "servers": [{"name": "s", "kind": "url", "url": "${URL_REF}"}]}  # fmt: skip
    path.write_text(yaml.safe_dump(data))
    for conc, url in (("sk7", "http://127.0.0.1:1"), ("1", SECRET), ("1", "abc")):
        monkeypatch.setenv("CONC", conc)
        monkeypatch.setenv("URL_REF", url)
        monkeypatch.setenv("NOTE_REF", "n")
        assert main(["run", str(path), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert ("'${CONC}'" in err) if conc == "sk7" else ("'${URL_REF}'" in err), err
        assert "sk7" not in err and "abc" not in err and fragments(err) == [], err


# ---- item 7: the log pump ----------------------------------------------------------------------
def _pump(tmp_path: Path, *writes: bytes, flush_between: bool = False) -> str:
    """What the pump writes to the log for ``writes`` to the server's stdout, in that order;
    ``flush_between``: a log tail is read after each write (as a failed cell's does)."""
    r, w = os.pipe()
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        pump = logpump.LogPump(r, log)
        for data in writes:
            os.write(w, data)
            if flush_between:
                deadline = time.monotonic() + 10
                while not pump._buf and time.monotonic() < deadline:  # read by the pump thread
                    time.sleep(0.005)
                pump.flush()
        os.close(w)
        pump.close()
    return log_path.read_text()


def test_the_log_pump_scrubs_a_secret_written_in_two_goes(tmp_path: Path) -> None:
    redact.register(SECRET)
    half = len(SECRET) // 2
    text = _pump(tmp_path, f"key: {SECRET[:half]}".encode(), f"{SECRET[half:]} ok\nnext\n".encode(),
                 flush_between=True)  # fmt: skip
    assert text == "key: *** ok\nnext\n", text


def test_the_log_pump_scrubs_a_secret_cut_at_its_line_limit(tmp_path: Path) -> None:
    redact.register(SECRET)
    line = b"a" * (logpump.MAX_LINE - 10) + SECRET.encode() + b" tail\n"
    text = _pump(tmp_path, line)
    assert fragments(text) == [] and text.endswith("a***" + " tail\n")
    assert len(text) == logpump.MAX_LINE - 10 + len("*** tail\n")


def test_the_log_pump_still_shows_a_prompt_without_a_newline(tmp_path: Path) -> None:
    redact.register(SECRET)
    assert _pump(tmp_path, b"Loading model... ", b"SENTINEL", flush_between=True).startswith(
        "Loading model... "
    )


# ---- item 7: errors cut short by the client ------------------------------------------------------
SC = Scenario(name="t", input_len=16, output_len=8, range_ratio=1.0)


@pytest.mark.parametrize(("mode", "cut", "kind"), [("http", 500, "http_status"), ("chunk", 118, "malformed"),
                                                  ("error", 300, "server_error")])  # fmt: skip
@pytest.mark.parametrize("known", [True, False], ids=["known", "unknown"])
def test_an_error_cut_short_keeps_no_part_of_a_secret(mode: str, cut: int, kind: str, known: bool) -> None:
    """``known``: the secret is under an auth-like key (registered); ``unknown``: under a plain key,
    where only the cut's own rule (a cut word is dropped) keeps its first half out."""
    body = {"auth": {"value": SECRET}} if known else {"note": SECRET}
    redact.redact_tree({"extra_request_body": body})  # as `bench` and `run` do
    url, stop = serve(mode, SECRET, cut)
    cfg = BenchConfig(base_url=url, scenario=SC, backend="vllm", model="m", num_prompts=2, max_concurrency=2,
                      scrape_metrics=False, quiet=True, request_timeout_s=20, extra_request_body=body)  # fmt: skip
    try:
        out = asyncio.run(run_bench_async(cfg))
    finally:
        stop()
    errors = [r.error or "" for r in out.records if not r.is_warmup]
    assert {r.error_kind for r in out.records} == {kind}, errors
    # the echo is there: scrubbed (then short enough), or cut short
    assert all(("***" in e) if known else e.endswith("\u2026") for e in errors), errors
    assert [fragments(e) for e in errors] == [[], []], errors


# ---- item 8: labels never merge -----------------------------------------------------------------
def test_a_grid_over_a_secret_key_keeps_one_config_per_value(tmp_path: Path) -> None:
    data: dict[str, Any] = {
        "name": "grid",
        "servers": [{"name": "s", "kind": "command", "argv": [*fake_argv(), "--key", "{api_key}"],
                     "grid": {"api_key": [SECRET, SECRET + "-2", "short"]}}],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1], "num_prompts": 2}],
        "client": {"warmup_requests": 0, "warmup_sleep_s": 0},
        "timeouts": {"ready_s": 20, "stop_s": 5},
        "report": {"enabled": False},
    }  # fmt: skip
    plan = plan_experiment(parse_experiment(data))
    labels = [c.label for c in plan.configs]
    assert len(set(labels)) == 3 and not any("short" in x or fragments(x) for x in labels), labels
    again = [c.label for c in plan_experiment(parse_experiment(data)).configs]
    assert again == labels  # stable: a resume finds its cells
    rd = create_run_dir(plan, tmp_path, None)
    execute(plan, rd, bench_fn=StandIn(0.01))
    assert sorted(rd.manifest["servers"]) == sorted(labels)
    assert len({r["label"] for r in rd.summary()}) == 3
    assert fragments((rd.path / "manifest.json").read_text()) == []


def test_a_token_map_is_not_a_secret() -> None:
    assert not redact.looks_secret("speculative_token_map") and not redact.looks_secret("eos_token")
    assert redact.looks_secret("HF_TOKEN") and redact.looks_secret("accessToken")
    data = {"name": "m", "servers": [{"name": "sg", "kind": "sim", "profile": "toy",
                                      "grid": {"speculative_token_map": ["a.pt", "b.pt"]}}],
            "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]}  # fmt: skip
    labels = [c.label for c in plan_experiment(parse_experiment(data)).configs]
    assert labels == ["sg(stm=a.pt)", "sg(stm=b.pt)"]
    assert redact.redact_tree({"params": {"speculative_token_map": "a.pt"}}) == {
        "params": {"speculative_token_map": "a.pt"}
    }


@pytest.mark.slow
def test_a_client_worker_scrubs_what_its_parent_knows() -> None:
    """``--workers 2``: the requests run in worker processes, which get the driver's known secrets.
    A secret with spaces shows why the cut's own rule is not enough: only its last word is cut."""
    from specsweep.client.multiworker import run_multiworker_async

    spaced = "SENTINEL q7Zx 3k9V w2p4 Rt8 Lm5"
    body = {"auth": {"value": spaced}}
    redact.redact_tree({"extra_request_body": body})
    url, stop = serve("http", spaced, 500)
    cfg = BenchConfig(base_url=url, scenario=SC, backend="vllm", model="m", num_prompts=4, max_concurrency=2,
                      scrape_metrics=False, quiet=True, request_timeout_s=20, extra_request_body=body,
                      workers=2, warmup_requests=0)  # fmt: skip
    try:
        out = asyncio.run(run_multiworker_async(cfg))
    finally:
        stop()
    errors = [r.error or "" for r in out.records]
    assert len(errors) == 4 and all(r.error_kind == "http_status" for r in out.records)
    assert all("***" in e and fragments(e, spaced) == [] for e in errors), errors
