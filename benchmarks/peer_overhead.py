"""Client overhead of specsweep and the reference clients, each in its own process, on one firehose.

The server (``peer_overhead.py serve``, pinned to CPU 1) is benchmarks/firehose.py's raw-asyncio
streamer with two additions: every chunk's text is `` a<arrival ns> t<write ns>`` (the request's
arrival and the chunk's write time, CLOCK_MONOTONIC), and ``GET /stats`` returns the arrival times and
the last write time. The client (pinned to CPU 0) runs a closed loop at concurrency C; for each C we
raise the offered chunk rate (C / gap) until the client falls behind. Per run:

- achieved chunks/s: chunks written for the measured requests / (last chunk written - first measured
  request arrived). In a closed loop a slow client delays its next requests, so this is its rate.
- CPU s per 1,000 tokens: CPU time (user + system) of the client's whole process tree (psutil,
  sampled every 50 ms, interpolated) inside that window, per 1,000 streamed tokens (1 token/chunk).
- TTFT error, per request: the client's TTFT - the server's (first chunk written - request arrived,
  read back from the text the client kept). Clients that do not keep text: no figure.

    python benchmarks/peer_overhead.py [--clients specsweep sglang vllm aiperf] [--concurrency 256 1024]
        [--out docs/perf/peers.md --section overhead]

"Sustained" = achieved >= 95% of offered and no failed request; TTFT error and first-chunk stamp error
(first chunk received - written, where the client keeps absolute times) are reported beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cross_validate as cv  # noqa: E402
import firehose  # noqa: E402

_AT = re.compile(r"a(\d+) t(\d+)")


# ------------------------------------------------------------------------------------------ server
class Server(firehose.Server):
    """firehose.Server whose chunks carry the request's arrival time too; keeps stats."""

    def __init__(self, chunks: int, gap_ms: float) -> None:
        super().__init__(chunks, gap_ms, 1)
        self.arrivals: list[int] = []
        self.last_write = 0
        self.written = 0

    def text(self, s: firehose.Stream, now: int) -> str:
        return f" a{s.arrival} t{now}"

    def on_write(self, now: int) -> None:
        self.written += 1
        self.last_write = now


class Proto(firehose.Proto):
    def get_body(self, path: str) -> bytes:
        srv = self.srv
        assert isinstance(srv, Server)
        if path.startswith("/stats"):
            return orjson.dumps(
                {"arrivals": srv.arrivals, "last_write": srv.last_write, "written": srv.written}
            )
        return super().get_body(path)

    def start_stream(self) -> None:
        super().start_stream()
        assert isinstance(self.srv, Server)
        self.srv.arrivals.append(self.srv.streams[-1].arrival)


async def serve_main(chunks: int, gap_ms: float) -> None:
    srv = Server(chunks, gap_ms)
    await firehose.listen(srv, Proto)
    await srv.ticker()


def start_server(chunks: int, gap_ms: float, cpu: int | None) -> tuple[subprocess.Popen[str], str]:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "serve",
        "--chunks",
        str(chunks),
        "--gap-ms",
        str(gap_ms),
    ]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    url = p.stdout.readline().strip().rsplit(" ", 1)[-1]
    return p, url


def stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/stats", timeout=60) as r:
        return dict(json.loads(r.read()))


# ------------------------------------------------------------------------------------ CPU sampling
class TreeCPU:
    """Samples the CPU seconds (user + system) of a process and all its descendants every `every` s."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.every = every
        self.samples: list[tuple[int, float]] = []
        self.dead: dict[int, float] = {}  # last seen CPU of exited descendants
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _total(self) -> float:
        import psutil

        seen: dict[int, float] = {}
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            procs = []
        for p in procs:
            try:
                t = p.cpu_times()
                seen[p.pid] = t.user + t.system
            except psutil.Error:
                continue
        for pid, v in seen.items():
            self.dead[pid] = v
        return sum(self.dead.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic_ns(), self._total()))
            time.sleep(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._t.join(5)

    def at(self, ns: int) -> float:
        if not self.samples:
            return float("nan")
        ts = np.array([s[0] for s in self.samples], dtype=np.float64)
        vs = np.array([s[1] for s in self.samples])
        return float(np.interp(float(ns), ts, vs))


# ----------------------------------------------------------------------------------------- clients
@dataclass
class Run:
    client: str
    concurrency: int
    gap_ms: float
    chunks: int
    n: int
    out: Path
    url: str = ""
    wl: cv.Workload | None = None


@dataclass
class Outcome:
    completed: int = 0
    failed: int = 0
    ttft_err_ms: list[float] = field(default_factory=list)
    recv_err_ms: list[float] = field(default_factory=list)  # first chunk received - written (absolute clocks)
    note: str = ""


def _pairs(texts: list[str], ttfts_ms: list[float]) -> list[float]:
    """TTFT error per request: the client's TTFT - (first chunk written - arrived), from the kept text."""
    out = []
    for text, ttft in zip(texts, ttfts_ms, strict=True):
        m = _AT.search(text or "")
        if m and ttft and ttft > 0:
            out.append(ttft - (int(m.group(2)) - int(m.group(1))) / 1e6)
    return out


def _recv(texts: list[str], recv_ns: list[int]) -> list[float]:
    """First chunk's receive stamp (client, CLOCK_MONOTONIC) - its write time (server, same clock)."""
    out = []
    for text, ns in zip(texts, recv_ns, strict=True):
        m = _AT.search(text or "")
        if m and ns:
            out.append((ns - int(m.group(2))) / 1e6)
    return out


def cmd_specsweep(r: Run) -> list[str]:
    assert r.wl is not None
    return ["specsweep", "bench", "--backend", "vllm", "--base-url", r.url, "--model", "firehose", "--tokenizer",
            str(r.wl.tokenizer), "--dataset-name", "jsonl", "--dataset-path", str(r.wl.jsonl), "--num-prompts",
            str(r.n), "--max-concurrency", str(r.concurrency), "--warmup-requests", "0", "--keep-text",
            "--disable-spec-metrics", "--request-timeout", "600", "--output-file", str(r.out / "result.jsonl"),
            "--records", str(r.out / "records.parquet"), "--quiet"]  # fmt: skip


def read_specsweep(r: Run) -> Outcome:
    import pyarrow.parquet as pq

    res = json.loads((r.out / "result.jsonl").read_text().splitlines()[-1])
    recs = pq.read_table(r.out / "records.parquet").to_pylist()
    ok = [x for x in recs if not x.get("error_kind") and x.get("chunk_ns") and not x.get("is_warmup")]
    ttfts = [(x["chunk_ns"][0] - x["send_ns"]) / 1e6 for x in ok]
    texts = [x["output_text"] or "" for x in ok]
    return Outcome(int(res["completed"]), int(res["failed"]), _pairs(texts, ttfts),
                   _recv(texts, [x["chunk_ns"][0] for x in ok]))  # fmt: skip


def cmd_sglang(r: Run) -> list[str]:
    assert r.wl is not None
    return [str(cv.peer_python("sglang")), str(cv.sglang_script()), "--backend", "vllm", "--base-url", r.url,
            "--model", "firehose", "--tokenizer", str(r.wl.tokenizer), "--dataset-name", "sharegpt",
            "--dataset-path", str(r.wl.sharegpt), "--sharegpt-output-len", str(r.chunks), "--num-prompts", str(r.n),
            "--max-concurrency", str(r.concurrency), "--warmup-requests", "0", "--output-file",
            str(r.out / "result.jsonl"), "--output-details", "--disable-tqdm"]  # fmt: skip


def read_sglang(r: Run) -> Outcome:
    res = json.loads((r.out / "result.jsonl").read_text().splitlines()[-1])
    errs = [e for e in res.get("errors", []) if e]
    ttfts = [t * 1000 for t in res["ttfts"]]
    return Outcome(int(res["completed"]), len(errs), _pairs(res["generated_texts"], ttfts))


def cmd_vllm(r: Run) -> list[str]:
    assert r.wl is not None
    return [str(cv.peer_python("vllm")), "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "vllm",
            "--base-url", r.url, "--endpoint", "/v1/completions", "--model", "firehose", "--tokenizer",
            str(r.wl.tokenizer), "--dataset-name", "sharegpt", "--dataset-path", str(r.wl.sharegpt),
            "--sharegpt-output-len", str(r.chunks), "--num-prompts", str(r.n), "--max-concurrency",
            str(r.concurrency), "--ignore-eos", "--save-result", "--save-detailed", "--result-dir", str(r.out),
            "--result-filename", "result.json", "--disable-tqdm", "--ready-check-timeout-sec", "0"]  # fmt: skip


def read_vllm(r: Run) -> Outcome:
    res = json.loads((r.out / "result.json").read_text())
    errs = [e for e in res.get("errors", []) if e]
    ttfts = [t * 1000 for t in res["ttfts"]]
    # start_times are time.perf_counter() (CLOCK_MONOTONIC on Linux, the server's clock)
    recv = [int((s + t) * 1e9) for s, t in zip(res["start_times"], res["ttfts"], strict=True)]
    return Outcome(int(res["completed"]), len(errs), _pairs(res["generated_texts"], ttfts),
                   _recv(res["generated_texts"], recv))  # fmt: skip


def cmd_aiperf(r: Run) -> list[str]:
    assert r.wl is not None
    return [str(cv.peer_python("aiperf").parent / "aiperf"), "profile", "--model", "firehose", "--url", r.url,
            "--endpoint-type", "completions", "--streaming", "--tokenizer", str(r.wl.tokenizer), "--input-file",
            str(r.wl.aiperf), "--custom-dataset-type", "single_turn", "--dataset-sampling-strategy", "sequential",
            "--request-count", str(r.n), "--concurrency", str(r.concurrency), "--extra-inputs", "ignore_eos:true",
            "--artifact-dir", str(r.out / "artifacts"), "--ui-type", "none", "--no-gpu-telemetry",
            "--no-server-metrics", "--export-level", "raw", "--request-timeout-seconds", "600"]  # fmt: skip


def read_aiperf(r: Run) -> Outcome:
    art = r.out / "artifacts"
    summ = json.loads(next(iter(sorted(art.rglob("profile_export_aiperf.json")))).read_text())
    completed = int(summ.get("request_count", {}).get("avg", 0))
    failed = int((summ.get("error_request_count") or {}).get("avg", 0) or 0)
    errs: list[float] = []
    recv: list[float] = []
    raws = sorted(art.rglob("profile_export_raw.jsonl"))
    note = ""
    if raws:
        for line in raws[0].read_text().splitlines():
            rec = json.loads(line)
            req = rec.get("request") or rec
            responses = rec.get("responses") or []
            start = req.get("start_perf_ns") or rec.get("start_perf_ns")
            if not responses or start is None:
                continue
            first = next((x for x in responses if _AT.search(json.dumps(x))), None)
            if first is None:
                continue
            m = _AT.search(json.dumps(first))
            assert m is not None
            errs.append(
                (int(first["perf_ns"]) - int(start)) / 1e6 - (int(m.group(2)) - int(m.group(1))) / 1e6
            )
            recv.append((int(first["perf_ns"]) - int(m.group(2))) / 1e6)
    else:
        note = "no raw export: no TTFT error"
    return Outcome(completed, failed, errs, recv, note=note)


CLIENTS: dict[str, tuple[Callable[[Run], list[str]], Callable[[Run], Outcome]]] = {
    "specsweep": (cmd_specsweep, read_specsweep),
    "sglang": (cmd_sglang, read_sglang),
    "vllm": (cmd_vllm, read_vllm),
    "aiperf": (cmd_aiperf, read_aiperf),
}


def measure(r: Run, cpu_client: int | None, cpu_server: int | None) -> dict[str, Any]:
    proc, r.url = start_server(r.chunks, r.gap_ms, cpu_server)
    r.out.mkdir(parents=True, exist_ok=True)
    cmd_f, read_f = CLIENTS[r.client]
    cmd = cmd_f(r)
    if cpu_client is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(cpu_client), *cmd]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "VLLM_HOST_IP": "127.0.0.1"}
    if r.client != "aiperf":  # see cross_validate._run
        env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    row: dict[str, Any] = {"client": r.client, "concurrency": r.concurrency, "gap_ms": r.gap_ms,
                           "offered_chunks_per_s": r.concurrency * 1000.0 / r.gap_ms}  # fmt: skip
    try:
        with (r.out / "log.txt").open("w") as logf:
            p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env)
            sampler = TreeCPU(p.pid)
            rc = p.wait(timeout=1200)
            sampler.stop()
        st = stats(r.url)
    finally:
        proc.terminate()
        proc.wait(10)
    if rc != 0 and not (r.client == "specsweep" and rc == 5):  # 5: specsweep's self-check marked it invalid
        tail = (r.out / "log.txt").read_text(errors="replace").splitlines()[-5:]
        return {**row, "error": f"exit {rc}: {' | '.join(tail)[-400:]}"}
    o = read_f(r)
    done = min(o.completed, r.n)
    arr = sorted(st["arrivals"])[-max(done, 1) :]
    t0, t1 = arr[0], st["last_write"]
    window = (t1 - t0) / 1e9
    chunks = done * r.chunks
    cpu_s = sampler.at(t1) - sampler.at(t0)
    e = np.array(o.ttft_err_ms) if o.ttft_err_ms else np.array([np.nan])
    rv = np.array(o.recv_err_ms) if o.recv_err_ms else np.array([np.nan])
    return {
        **row,
        "achieved_chunks_per_s": chunks / window if window > 0 else 0.0,
        "cpu_s_per_1k_tokens": cpu_s / chunks * 1000,
        "client_cpu_util": cpu_s / window if window > 0 else float("nan"),
        "ttft_err_p50_ms": float(np.percentile(e, 50)),
        "ttft_err_p99_ms": float(np.percentile(e, 99)),
        "ttft_err_n": len(o.ttft_err_ms),
        "recv_err_p50_ms": float(np.percentile(rv, 50)),
        "recv_err_p99_ms": float(np.percentile(rv, 99)),
        "completed": o.completed,
        "failed": o.failed + (r.n - o.completed if o.completed < r.n else 0),
        "window_s": window,
        "specsweep_invalid": r.client == "specsweep" and rc == 5,
        "note": o.note,
    }


def sustained(row: dict[str, Any]) -> bool:
    """Keeps up: >= 95% of the offered chunk rate, no failed request. (The timestamp errors are shown
    beside it, not part of it: on a loaded shared host the server's own accept delay is inside TTFT
    error for every client alike.)"""
    return (
        "error" not in row
        and row["achieved_chunks_per_s"] >= 0.95 * row["offered_chunks_per_s"]
        and row["failed"] == 0
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    sv = sub.add_parser("serve", help="run the firehose (internal)")
    sv.add_argument("--chunks", type=int, default=48)
    sv.add_argument("--gap-ms", type=float, default=10.0)
    sv.add_argument("--cpu", type=int, default=None)
    ap.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=list(CLIENTS))
    ap.add_argument("--concurrency", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--rates", type=float, nargs="+", default=[2_500, 5_000, 10_000, 20_000],
                    help="offered chunks/s, rising; a client stops at its first rate not sustained")  # fmt: skip
    ap.add_argument("--chunks", type=int, default=48)
    ap.add_argument(
        "--min-seconds", type=float, default=3.0, help="requests per run: enough rounds for this long"
    )
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--section", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--from-json", default=None)
    args = ap.parse_args()
    if args.cmd == "serve":
        if args.cpu is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {args.cpu})
        asyncio.run(serve_main(args.chunks, args.gap_ms))
        return
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        text = render(saved["header"], saved["rows"])
    else:
        text = run_all(args)
    print(text)
    if args.out:
        cv.write_section(Path(args.out), args.section, text)


def run_all(args: argparse.Namespace) -> str:
    import tempfile

    work = Path(args.workdir or tempfile.mkdtemp(prefix="peer-overhead-"))
    # as many entries as the largest run sends: sglang samples ShareGPT without replacement
    wl = cv.make_workload(work / "workload", 4096, args.chunks, 8, 16, 1)
    pin = hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2
    cpu_c, cpu_s = (0, 1) if pin else (None, None)
    rows: list[dict[str, Any]] = []
    clients = [c for c in args.clients if c == "specsweep" or not cv.peer_missing(c)]
    for client in clients:
        for conc in args.concurrency:
            for rate in args.rates:
                gap = round(conc / rate * 1000, 3)
                rounds = max(2, math.ceil(args.min_seconds / (args.chunks * gap / 1000)))
                r = Run(
                    client,
                    conc,
                    gap,
                    args.chunks,
                    conc * rounds,
                    work / f"{client}-c{conc}-r{int(rate)}",
                    wl=wl,
                )
                row = measure(r, cpu_c, cpu_s)
                rows.append(row)
                print(json.dumps(row), flush=True)
                if not sustained(row):
                    break
    header = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, {os.cpu_count()} "
        f"cores shared with other jobs (figures are noisy), Python {platform.python_version()}; client pinned to "
        f"CPU 0, server to CPU 1: {pin}.",
        "",
        "Command: `python benchmarks/peer_overhead.py " + " ".join(sys.argv[1:]) + "`",
        "",
    ]
    if args.json:
        Path(args.json).write_text(json.dumps({"header": header, "rows": rows}, indent=1))
    return render(header, rows)


def _f2(v: float) -> str:
    return "-" if v is None or not np.isfinite(v) else f"{v:.2f}"


def render(header: list[str], rows: list[dict[str, Any]]) -> str:
    lines = list(header)
    lines += [
        "| client | concurrency | offered chunks/s | achieved chunks/s | CPU s / 1k tokens | client CPU | "
        "TTFT err p50 / p99 (ms) | first-chunk stamp err p50 / p99 (ms) | failed | sustained |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|:--|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['client']} | {r['concurrency']} | {r['offered_chunks_per_s']:,.0f} | "
                         f"error: {r['error'][:120]} | | | | | | no |")  # fmt: skip
            continue
        lines.append(
            f"| {r['client']} | {r['concurrency']} | {r['offered_chunks_per_s']:,.0f} | "
            f"{r['achieved_chunks_per_s']:,.0f} | {r['cpu_s_per_1k_tokens']:.3f} | {r['client_cpu_util']:.0%} | "
            f"{r['ttft_err_p50_ms']:.2f} / {r['ttft_err_p99_ms']:.2f} | {_f2(r['recv_err_p50_ms'])} / "
            f"{_f2(r['recv_err_p99_ms'])} | {r['failed']} | "
            f"{'yes' if sustained(r) else 'no'} |"
        )
    best: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        key = (r["client"], r["concurrency"])
        if sustained(r) and r["achieved_chunks_per_s"] > best.get(key, {}).get("achieved_chunks_per_s", 0):
            best[key] = r
    lines += ["", "Most chunks/s sustained (>= 95% of offered, no failures), one client process (tree):", "",
              "| client | concurrency | chunks/s | CPU s / 1k tokens | TTFT err p99 (ms) | first-chunk stamp err p99 (ms) |",
              "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for client in dict.fromkeys(r["client"] for r in rows):
        for conc in sorted({r["concurrency"] for r in rows}):
            b = best.get((client, conc))
            if b:
                lines.append(f"| {client} | {conc} | {b['achieved_chunks_per_s']:,.0f} | "
                             f"{b['cpu_s_per_1k_tokens']:.3f} | {b['ttft_err_p99_ms']:.2f} | "
                             f"{_f2(b['recv_err_p99_ms'])} |")  # fmt: skip
            else:
                lines.append(f"| {client} | {conc} | none of the offered rates | | | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
