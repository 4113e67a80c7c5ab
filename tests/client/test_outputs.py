"""`bench` output paths checked before measuring, a late write failure keeps the run, redirects refused."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from specsweep.cli import main
from specsweep.client.bench_types import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.workload.scenarios import Scenario

from .scripted_server import ProcessServer, Script

pytestmark = pytest.mark.slow

CMD = [sys.executable, "-m", "specsweep"]
SC = Scenario(name="t", input_len=16, output_len=11, range_ratio=1.0)  # the script streams 11 tokens


def _bench(*extra: str, port: int = 9) -> subprocess.CompletedProcess[str]:
    # port 9 (discard): nothing listens there; a path check must fail before any connection
    argv = [*CMD, "bench", "--backend", "vllm", "--model", "m", "--port", str(port), "--scenario", "chat_short",
            "--num-prompts", "2", "--quiet", *extra]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _read_only_dir(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes through file modes: use a file system that refuses everyone
        return Path("/proc/self")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    return d


@pytest.mark.parametrize("flag", ["--output-file", "--records"])
@pytest.mark.parametrize("case", ["directory", "missing_parent", "read_only"])
def test_bad_output_path_fails_before_measuring(tmp_path: Path, flag: str, case: str) -> None:
    path = {"directory": tmp_path, "missing_parent": tmp_path / "no" / "such" / "out.jsonl",
            "read_only": _read_only_dir(tmp_path) / "out.jsonl"}[case]  # fmt: skip
    r = _bench(flag, str(path))
    assert r.returncode == 2, r.stderr
    err = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("  (see")]
    assert len(err) == 1 and flag in err[0] and str(path) in err[0], r.stderr
    want = {"directory": "is a folder", "missing_parent": "does not exist", "read_only": "cannot write"}
    assert want[case] in err[0]
    assert "no request completed" not in r.stderr and "Traceback" not in r.stderr  # nothing was measured
    assert not path.exists() or path.is_dir()


def test_late_write_failure_saves_the_run_and_says_where(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from specsweep.commands import bench as cmd

    def full(path: Path, records: list[object]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(cmd, "_write_records", full)
    with ProcessServer(Script(ttft_s=0.005, gaps_s=[0.002] * 4)) as ps:
        code = main(["bench", "--backend", "vllm", "--base-url", ps.url, "--model", "m", "--scenario", "chat_short",
                     "--num-prompts", "3", "--quiet", "--records", str(tmp_path / "r.parquet")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "saved in" in err
    where = Path(err.split("saved in ", 1)[1].split()[0].rstrip(".;"))
    try:
        res = orjson.loads((where / "result.jsonl").read_bytes())
        assert res["completed"] == 3
        assert len((where / "records.jsonl").read_bytes().splitlines()) == 3
    finally:
        for f in where.iterdir():
            f.unlink()
        where.rmdir()


@pytest.fixture()
def redirector() -> Iterator[tuple[str, str]]:
    """(redirecting URL, target URL): a real localhost server answering every POST with 307 to the
    scripted server."""
    with ProcessServer(Script(ttft_s=0.005, gaps_s=[0.002] * 4)) as ps:
        loop = asyncio.new_event_loop()
        started = threading.Event()
        holder: dict[str, object] = {}

        async def redirect(request: web.Request) -> web.Response:
            raise web.HTTPTemporaryRedirect(ps.url + request.path)

        async def start() -> None:
            app = web.Application()
            app.router.add_post("/{tail:.*}", redirect)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            holder["runner"] = runner
            holder["url"] = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
            started.set()

        t = threading.Thread(
            target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True
        )
        t.start()
        started.wait(10)
        try:
            yield str(holder["url"]), ps.url
        finally:
            asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(10)  # type: ignore[attr-defined]
            loop.call_soon_threadsafe(loop.stop)
            t.join(10)


@pytest.mark.parametrize("allow", [False, True])
def test_redirects_are_refused_unless_allowed(redirector: tuple[str, str], allow: bool) -> None:
    url, _target = redirector
    cfg = BenchConfig(base_url=url, scenario=SC, backend="vllm", model="m", num_prompts=3, max_concurrency=1,
                      scrape_metrics=False, quiet=True, allow_redirects=allow)  # fmt: skip
    out = asyncio.run(run_bench_async(cfg))
    res = out.result
    assert res["allow_redirects"] is allow
    if allow:
        assert res["completed"] == 3 and res["redirects_followed"] == 3
    else:
        assert res["completed"] == 0 and res["redirects_followed"] == 0
        assert res["errors_by_kind"] == {"http_status": 3}
        err = out.records[0].error or ""
        assert "HTTP 307" in err and _target in err and "--allow-redirects" in err


def test_progress_hook_counts_measured_requests_only() -> None:
    """`specsweep bench`'s live line advances once per measured request (warmup not counted)."""
    from specsweep.client.bench import run_bench

    with ProcessServer(Script(ttft_s=0.002, gaps_s=[0.001] * 4)) as ps:
        cfg = BenchConfig(base_url=ps.url, scenario=SC, backend="vllm", model="m", num_prompts=5,
                          max_concurrency=2, warmup_requests=2, warmup_sleep_s=0.0, scrape_metrics=False,
                          quiet=True)  # fmt: skip
        done: list[int] = []
        out = run_bench(cfg, on_request=lambda: done.append(1))
    assert out.result["completed"] == 5
    assert len(done) == 5
