"""Wire truth: specsweep's TTFT/ITL against a loopback packet capture, quiet and oversubscribed.

A local streaming server (benchmarks/firehose.py: every stream gets one token per chunk, all streams
written in one pass per tick, ``--gap-ms`` apart) is benchmarked by ``specsweep bench`` while
``tcpdump`` captures the loopback interface with nanosecond kernel stamps. From the capture, per
request: TTFT = first SSE-data packet from the server - the last packet of the request; ITL = the
gaps between a stream's data packets. The wire's figures are over the requests the client completed
(each is found on the wire by the server's write stamp in its first chunk), and each request's TTFT
is also compared with its own packets (``per-request``; for specsweep, against the request's own
stamp bound from its records). Each specsweep run either agrees with the wire (TTFT p99 within 2 ms,
mean within 1 ms; ITL p99 within 2 ms) or must be marked invalid with the reason (``honest``); a
valid run that disagrees is ``WRONG``. The reference client (sglang.bench_serving, from
scripts/setup_peers.sh sglang) runs through the same capture where its venv exists.

Host states: ``quiet`` (nothing started), ``busy`` (three busy-loop Python processes per core,
started and stopped here). Needs root or CAP_NET_RAW for tcpdump; installs Debian's tcpdump with
apt-get when it is missing.

    python benchmarks/wire_truth.py                       # c = 32 128 512, quiet + busy, 1 and 2 workers
    python benchmarks/wire_truth.py --short               # c = 32 128, quiet + busy, 1 worker, fewer prompts
    python benchmarks/wire_truth.py --hosts quiet --concurrency 128 --workers 1 2 --out wire.md
    python benchmarks/wire_truth.py --per-chunk --hosts busy --concurrency 128   # each chunk vs its packet
    python benchmarks/wire_truth.py --per-chunk --hosts busy --concurrency 128 --client-nice 10   # a starved client
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


# ------------------------------------------------------------------------------------------ setup
def ensure_tcpdump() -> str:
    path = shutil.which("tcpdump") or ("/usr/sbin/tcpdump" if Path("/usr/sbin/tcpdump").exists() else None)
    if path:
        return path
    if shutil.which("apt-get") and os.geteuid() == 0:
        print("installing tcpdump (apt-get)", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-q", "tcpdump"], check=False,
                       stdout=subprocess.DEVNULL, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
        if not shutil.which("tcpdump"):
            subprocess.run(["apt-get", "update", "-q"], check=False, stdout=subprocess.DEVNULL)
            subprocess.run(["apt-get", "install", "-y", "-q", "tcpdump"], check=False, stdout=subprocess.DEVNULL,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
    path = shutil.which("tcpdump") or ("/usr/sbin/tcpdump" if Path("/usr/sbin/tcpdump").exists() else None)
    if not path:
        sys.exit(
            "wire_truth: tcpdump is missing and could not be installed (apt-get install tcpdump, as root)"
        )
    return path


@contextlib.contextmanager
def host_state(state: str) -> Iterator[None]:
    """``busy``: three busy-loop processes per core for the duration of the block."""
    hogs: list[subprocess.Popen[bytes]] = []
    if state == "busy":
        for _ in range(3 * (os.cpu_count() or 1)):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        time.sleep(0.5)
    try:
        yield
    finally:
        for h in hogs:
            h.terminate()
        for h in hogs:
            h.wait(10)


@contextlib.contextmanager
def firehose(chunks: int, gap_ms: float) -> Iterator[str]:
    p = subprocess.Popen([sys.executable, str(HERE / "firehose.py"), "--port", "0", "--chunks", str(chunks),
                          "--gap-ms", str(gap_ms)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert p.stdout is not None
    url = p.stdout.readline().strip().rsplit(" ", 1)[-1]
    try:
        yield url
    finally:
        p.terminate()
        p.wait(10)


@contextlib.contextmanager
def capture(tcpdump: str, port: int, path: Path) -> Iterator[dict[str, Any]]:
    """tcpdump on lo for ``port`` into ``path`` (ns stamps, 256-byte snap); yields a dict that gets
    ``dropped`` (packets the kernel dropped) once the capture stopped."""
    err = path.with_suffix(".err")
    with open(err, "w") as ef:
        p = subprocess.Popen([tcpdump, "-i", "lo", "-n", "-s", "256", "-B", "65536", "--time-stamp-precision=nano",
                              "-w", str(path), f"tcp port {port}"], stdout=subprocess.DEVNULL, stderr=ef)  # fmt: skip
    t0 = time.monotonic()
    while "listening on" not in err.read_text() and time.monotonic() - t0 < 10:
        if p.poll() is not None:
            sys.exit(f"wire_truth: tcpdump failed: {err.read_text().strip()}")
        time.sleep(0.05)
    info: dict[str, Any] = {}
    try:
        yield info
    finally:
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        p.wait(10)
        for line in err.read_text().splitlines():
            if "dropped by kernel" in line:
                info["dropped"] = int(line.split()[0])


# ------------------------------------------------------------------------------------------- pcap
def read_pcap(path: Path) -> Iterator[tuple[int, int, int, int, bytes]]:
    """(ns, source port, destination port, sequence number, TCP payload prefix) of each IPv4 TCP
    packet."""
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    magic = struct.unpack_from(end + "I", data)[0]
    scale = 1 if magic == 0xA1B23C4D else 1000
    link = struct.unpack_from(end + "I", data, 20)[0]
    l2 = {1: 14, 113: 16, 0: 4}.get(link)
    if l2 is None:
        sys.exit(f"wire_truth: unsupported pcap link type {link}")
    off = 24
    rec = struct.Struct(end + "IIII")
    while off + 16 <= len(data):
        sec, frac, incl, _orig = rec.unpack_from(data, off)
        pkt = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        ip = pkt[l2:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        tcp = ip[ihl:]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack_from(">HHI", tcp)
        payload = tcp[(tcp[12] >> 4) * 4 :]
        yield sec * 1_000_000_000 + frac * scale, sport, dport, seq, payload


_WRITE_STAMP = re.compile(rb'" t(\d+)"')  # firehose's write time in a chunk's JSON, on the wire
_TEXT_STAMP = re.compile(r"t(\d+)")  # the same in a client's output text (one per chunk, in order)


@dataclass
class WireRequest:
    sent: int  # capture ns of the request's last packet
    data: list[int]  # capture ns of its SSE-data packets
    first_write: int | None  # the server's write time carried by its first chunk (firehose), if seen


def wire_requests(path: Path, server_port: int) -> list[WireRequest]:
    """Per request on the wire: the time of the request's last packet, the times of its SSE-data
    packets, and the write stamp its first chunk carries (which names the same request in the
    client's records). A retransmitted segment (the same bytes again: a busy host's ACKs come late
    and TCP's loss probe resends) is not a new packet: only its first transmission counts. Counting a
    resent request as a new one would start that request's TTFT at the resend and make the wire look
    faster."""
    cur: dict[int, WireRequest] = {}  # client port -> its current request
    out: list[WireRequest] = []
    sent: set[tuple[int, int, int]] = set()
    for t, sport, dport, seq, pl in read_pcap(path):
        if pl:
            if (sport, dport, seq) in sent:
                continue
            sent.add((sport, dport, seq))
        if dport == server_port and pl:
            if pl.startswith(b"POST"):
                cur[sport] = req = WireRequest(t, [], None)
                out.append(req)
            elif (r := cur.get(sport)) is not None and not r.data:  # the request's body: sent later
                r.sent = t
        elif (
            sport == server_port
            and b"data:" in pl
            and not (b"[DONE]" in pl and pl.count(b"data:") == 1)  # the end marker alone: no token
            and (r := cur.get(dport)) is not None
        ):
            if not r.data and (m := _WRITE_STAMP.search(pl)):
                r.first_write = int(m.group(1))
            r.data.append(t)
    return [r for r in out if r.data]


# ------------------------------------------------------------------------------------------- runs
CLIENT_NICE = 0  # --client-nice: specsweep's client runs this much nicer than everything else


@dataclass
class Row:
    client: str
    host: str
    concurrency: int
    workers: int
    n_wire: int = 0  # requests with an answer on the wire
    n_client: int = 0  # requests the client counted as completed (its figures are over these)
    n_paired: int = 0  # of those, found on the wire (the wire's figures are over these)
    pair_diff: tuple[float, float] = (0.0, 0.0)  # |client TTFT - wire TTFT| per request: p99, max (ms)
    # specsweep: paired requests whose TTFT is off by more than its own bound + 0.5 ms
    beyond: int | None = None
    wire: dict[str, float] = field(default_factory=dict)
    client_figs: dict[str, float] = field(default_factory=dict)
    invalid: bool | None = None
    bound: dict[str, float] = field(default_factory=dict)  # specsweep's stamp_error: how far it may be off
    reason: str = ""
    dropped: int = 0
    load: float = 0.0
    cpu_wait: float | None = None  # specsweep: p99 of its event loop's CPU wait (ms; the worst worker)

    @property
    def diff(self) -> dict[str, float]:
        return {k: self.client_figs[k] - self.wire[k] for k in self.wire if k in self.client_figs}

    @property
    def counts(self) -> str:
        return f"{self.n_wire} / {self.n_client} / {self.n_paired}"

    @property
    def verdict(self) -> str:
        d = self.diff
        if not d:
            return "n/a"
        if self.n_paired < self.n_client:
            return "unpaired"
        ok = (abs(d.get("ttft_p99", 0)) <= 2.0 and abs(d.get("ttft_mean", 0)) <= 1.0
              and abs(d.get("itl_p99", 0)) <= 2.0)  # fmt: skip
        if ok:
            return "agrees"
        if self.invalid is None:
            return "off (peer)"
        return "honest (invalid)" if self.invalid else "WRONG"

    @property
    def bound_holds(self) -> str:
        """Whether every difference to the wire is within specsweep's own bound (+0.5 ms for the
        capture's and the socket's stamps being taken at different points of the kernel)."""
        if not self.bound or not self.diff:
            return ""
        ok = all(self.diff[k] <= self.bound.get(k, 0.0) + 0.5 for k in ("ttft_mean", "ttft_p50", "ttft_p99"))
        return "yes" if ok else "NO"


def wire_figures(reqs: list[WireRequest]) -> dict[str, float]:
    ttft = np.asarray([(r.data[0] - r.sent) / 1e6 for r in reqs])
    gaps = np.asarray([(b - a) / 1e6 for r in reqs for a, b in itertools.pairwise(r.data)] or [0.0])
    return {"ttft_mean": float(ttft.mean()), "ttft_p50": float(np.percentile(ttft, 50)),
            "ttft_p99": float(np.percentile(ttft, 99)), "itl_p99": float(np.percentile(gaps, 99))}  # fmt: skip


def pair(
    reqs: list[WireRequest], done: list[tuple[str, float, float]]
) -> tuple[list[WireRequest], list[float], int]:
    """The wire's requests that the client completed, per request client TTFT - wire TTFT (ms), and
    how many of those differences exceed the request's own TTFT bound (+0.5 ms: the capture and the
    socket stamp at different points of the kernel). ``done``: (output text, client TTFT ms, TTFT
    bound ms) per completed request; the first write stamp in the text names the request on the
    wire. A client's figures are over its completed requests only, so the wire's must be over the
    same ones: a request the client failed (or dropped) but the wire saw answered would otherwise
    move the wire's mean and not the client's."""
    by_write = {r.first_write: r for r in reqs if r.first_write is not None}
    same: list[WireRequest] = []
    diffs: list[float] = []
    beyond = 0
    for text, ttft, bound in done:
        m = _TEXT_STAMP.search(text or "")
        if m and (r := by_write.get(int(m.group(1)))) is not None:
            same.append(r)
            diffs.append(d := ttft - (r.data[0] - r.sent) / 1e6)
            beyond += d > bound + 0.5 or d < -0.5  # a stamp is never early: the bound is one-sided
    return same, diffs, beyond


def run_specsweep(
    url: str, c: int, n: int, chunks: int, workers: int, out: Path
) -> tuple[dict[str, Any], list[tuple[str, float, float]]]:
    """specsweep bench's result line, and (text, TTFT ms, TTFT bound ms) of each completed request
    from its records.
    Every request asks for exactly ``chunks`` tokens (range ratio 1), what firehose streams."""
    res, recs = out / "result.jsonl", out / "records.jsonl"
    cmd = [sys.executable, "-m", "specsweep", "bench", "--backend", "vllm", "--model", "firehose", "--base-url", url,
           "--random-input-len", "16", "--random-output-len", str(chunks), "--random-range-ratio", "1",
           "--num-prompts", str(n), "--max-concurrency", str(c), "--workers", str(workers), "--disable-spec-metrics",
           "--quiet", "--keep-text", "--output-file", str(res), "--records", str(recs)]  # fmt: skip
    if CLIENT_NICE:
        cmd = ["nice", "-n", str(CLIENT_NICE), *cmd]
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    done = []
    for line in recs.read_text().splitlines():
        r = json.loads(line)
        if not r["is_warmup"] and not r["error_kind"] and r["chunk_ns"]:
            bound = (r.get("chunk_bound_ns") or [0])[0] / 1e6
            done.append((r["output_text"] or "", (r["chunk_ns"][0] - r["send_ns"]) / 1e6, bound))
    return dict(json.loads(res.read_text().splitlines()[-1])), done


def sglang_cmd(url: str, c: int, n: int, chunks: int, out: Path) -> list[str] | None:
    import cross_validate as cv

    if cv.peer_missing("sglang"):
        return None
    wl = cv.make_workload(out / "wl", n, chunks, 16, 16, 1)
    return [str(cv.peer_python("sglang")), str(cv.sglang_script()), "--backend", "vllm", "--base-url", url,
            "--model", "firehose", "--tokenizer", str(wl.tokenizer), "--dataset-name", "sharegpt",
            "--dataset-path", str(wl.sharegpt), "--sharegpt-output-len", str(chunks), "--num-prompts", str(n),
            "--max-concurrency", str(c), "--warmup-requests", "0", "--output-file", str(out / "sglang.jsonl"),
            "--output-details", "--disable-tqdm"]  # fmt: skip


def one(
    tcpdump: str, url: str, client: str, host: str, c: int, n: int, chunks: int, workers: int, tmp: Path
) -> Row:
    port = int(url.rsplit(":", 1)[1])
    d = Path(tempfile.mkdtemp(dir=tmp))
    row = Row(client, host, c, workers, load=os.getloadavg()[0])
    cmd = sglang_cmd(url, c, n, chunks, d) if client == "sglang" else None
    if client == "sglang" and cmd is None:
        row.reason = "skipped: no sglang venv (bash scripts/setup_peers.sh sglang)"
        return row
    with capture(tcpdump, port, d / "cap.pcap") as info:
        if client == "specsweep":
            res, done = run_specsweep(url, c, n, chunks, workers, d)
        else:
            assert cmd is not None
            subprocess.run(
                cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600
            )
            res = json.loads((d / "sglang.jsonl").read_text().splitlines()[-1])
            done = [(t, x * 1000, 0.0) for t, x, e in zip(res["generated_texts"], res["ttfts"], res["errors"], strict=False)
                    if not e and x > 0]  # fmt: skip
    row.dropped = int(info.get("dropped", 0))
    reqs = wire_requests(d / "cap.pcap", port)
    row.n_wire, row.n_client = len(reqs), len(done)
    same, diffs, beyond = pair(reqs, done)
    row.n_paired = len(same)
    row.beyond = beyond if client == "specsweep" else None
    if same:
        row.wire = wire_figures(same)
        a = np.abs(np.asarray(diffs))
        row.pair_diff = (float(np.percentile(a, 99)), float(a.max()))
    if client == "specsweep":
        row.client_figs = {"ttft_mean": res["mean_ttft_ms"], "ttft_p50": res["median_ttft_ms"],
                           "ttft_p99": res["p99_ttft_ms"], "itl_p99": res["p99_itl_ms"]}  # fmt: skip
        row.invalid = bool(res["invalid"])
        se = res.get("stamp_error") or {}
        row.bound = {
            k: float(se.get(f"{k}_ms", 0.0)) for k in ("ttft_mean", "ttft_p50", "ttft_p99", "itl_p99")
        }
        row.reason = res.get("invalid_reason") or "; ".join(res.get("warnings") or [])
        row.cpu_wait = (res.get("self_check") or {}).get("cpu_wait_p99_ms")
    else:
        tt = np.asarray([x for _, x, _ in done])
        itls = [
            x * 1000 for r, e in zip(res.get("itls", []), res["errors"], strict=False) if not e for x in r
        ] or [0.0]
        row.client_figs = {"ttft_mean": float(tt.mean()), "ttft_p50": float(np.percentile(tt, 50)),
                           "ttft_p99": float(np.percentile(tt, 99)), "itl_p99": float(np.percentile(itls, 99))}  # fmt: skip
    if row.n_paired < row.n_client:
        row.reason = f"{row.n_client - row.n_paired} completed requests not found on the wire; " + row.reason
    shutil.rmtree(d, ignore_errors=True)
    return row


def table(rows: list[Row]) -> str:
    out = ["| client | host | c | workers | requests on wire / completed / paired | TTFT mean wire / client (diff) | "
           "TTFT p50 diff | TTFT p99 wire / client (diff) | ITL p99 diff | per-request TTFT diff p99 / max | "
           "requests beyond own bound | "
           "bound TTFT mean/p99, ITL p99 | within bound | client CPU wait p99 | load avg | dropped | verdict | reason |",
           "|---|---|---:|---:|---:|---|---:|---|---:|---:|---:|---|---|---:|---:|---:|---|---|"]  # fmt: skip
    for r in rows:
        w, c, d = r.wire, r.client_figs, r.diff
        if not d:
            out.append(f"| {r.client} | {r.host} | {r.concurrency} | {r.workers} | {r.counts} | | | | | | | | | | "
                       f"{r.load:.1f} | {r.dropped} | n/a | {r.reason} |")  # fmt: skip
            continue
        b = r.bound
        bnd = f"{b['ttft_mean']:.2f} / {b['ttft_p99']:.2f}, {b['itl_p99']:.2f}" if b else ""
        out.append(
            f"| {r.client} | {r.host} | {r.concurrency} | {r.workers} | {r.counts} | {w['ttft_mean']:.2f} / "
            f"{c['ttft_mean']:.2f} ({d['ttft_mean']:+.2f}) | {d['ttft_p50']:+.2f} | {w['ttft_p99']:.2f} / "
            f"{c['ttft_p99']:.2f} ({d['ttft_p99']:+.2f}) | {d['itl_p99']:+.2f} | "
            f"{r.pair_diff[0]:.2f} / {r.pair_diff[1]:.2f} | {'' if r.beyond is None else r.beyond} | {bnd} | "
            f"{r.bound_holds} | "
            f"{'' if r.cpu_wait is None else f'{r.cpu_wait:.1f}'} | {r.load:.1f} | {r.dropped} | "
            f"{r.verdict} | {r.reason[:160]} |"
        )
    return "\n".join(out)


def per_chunk(tcpdump: str, url: str, host: str, c: int, n: int, chunks: int, tmp: Path) -> str:
    """One in-process specsweep run (1 worker, text kept) under the capture, compared chunk by chunk:
    each chunk's text carries the server's write time (firehose), which finds the same chunk's first
    packet on the wire; a chunk is *beyond its bound* when its stamp is more than 1 ms after that
    packet's capture stamp plus the chunk's own stamp bound. One markdown row."""
    from specsweep.client import kstamp
    from specsweep.client.bench_types import BenchConfig
    from specsweep.client.runner import run_bench_async
    from specsweep.workload.scenarios import Scenario

    port = int(url.rsplit(":", 1)[1])
    d = Path(tempfile.mkdtemp(dir=tmp))
    off = time.time_ns() - time.monotonic_ns()  # capture stamps (wall clock) -> the monotonic clock
    cfg = BenchConfig(base_url=url, scenario=Scenario(name="w", input_len=16, output_len=chunks, range_ratio=1.0),
                      backend="vllm", model="firehose", num_prompts=n, max_concurrency=c, scrape_metrics=False,
                      quiet=True, keep_text=True)  # fmt: skip
    with capture(tcpdump, port, d / "cap.pcap"):
        old = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, old + CLIENT_NICE)  # this thread: the client's event loop
        try:
            out = kstamp.run(run_bench_async(cfg))  # the loop specsweep bench measures on
        finally:
            with contextlib.suppress(PermissionError):
                os.setpriority(os.PRIO_PROCESS, 0, old)
    on_wire: dict[int, int] = {}  # server write ns -> first capture of its packet (monotonic ns)
    for t, sport, _dport, _seq, pl in read_pcap(d / "cap.pcap"):
        if sport == port:
            for m in _WRITE_STAMP.finditer(pl):
                on_wire.setdefault(int(m.group(1)), t - off)
    late: list[float] = []
    first: list[float] = []
    beyond: list[
        tuple[float, int]
    ] = []  # (ms past the bound, the chunk's bound in ns) of each chunk beyond it
    for r in out.records:
        if r.is_warmup or r.error_kind:
            continue
        b = dict(out.stamp_bounds.get(r.index, []))
        for j, (ns, w) in enumerate(
            zip(r.chunk_ns, [int(x) for x in _TEXT_STAMP.findall(r.output_text or "")], strict=False)
        ):
            if w in on_wire:
                ms = (ns - on_wire[w]) / 1e6
                late.append(ms)
                first += [ms] if j == 0 else []
                if (past := ms - (bound := b.get(j, 0)) / 1e6) > 1.0:
                    beyond.append((past, bound))
    shutil.rmtree(d, ignore_errors=True)
    res = out.result
    sc = res["self_check"]
    lt, ft = np.asarray(late or [0.0]), np.asarray(first or [0.0])
    verdict = ("invalid: " + (res["invalid_reason"] or "")[:90]) if res["invalid"] else "valid"
    return (f"| {host} | {c} | {len(late)} | {np.percentile(lt, 50):.2f} / {np.percentile(lt, 99):.2f} / {lt.max():.2f} | "
            f"{np.percentile(ft, 50):.2f} / {ft.max():.2f} | {_beyond(beyond)} | {sc.get('cpu_wait_p99_ms', float('nan')):.1f} | "
            f"{sc['loop_lag_p50_ms']:.1f} | {sc['client_cpu_util']:.0%} | {verdict} |")  # fmt: skip


def _beyond(chunks: list[tuple[float, int]]) -> str:
    """How many chunks were beyond their bound, the worst by how much, and how many of them had an
    exact stamp (bound 0) rather than a bound."""
    if not chunks:
        return "0"
    exact = sum(b == 0 for _, b in chunks)
    return f"{len(chunks)} (worst +{max(p for p, _ in chunks):.2f} ms; {exact} exact)"


PER_CHUNK_HEAD = (
    "| host | c | chunks | stamp - wire p50 / p99 / max (ms) | first chunk p50 / max | beyond bound | "
    "client CPU wait p99 | loop lag p50 | client CPU | verdict |\n|---|---:|---:|---|---|---:|---:|---:|---:|---|"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--short", action="store_true", help="c = 32 128, 1 worker, 2 rounds per run (a busy host)"
    )
    ap.add_argument("--concurrency", type=int, nargs="+")
    ap.add_argument("--hosts", nargs="+", choices=["quiet", "busy"], default=["quiet", "busy"])
    ap.add_argument("--workers", type=int, nargs="+")
    ap.add_argument(
        "--rounds", type=int, help="requests per run = rounds x concurrency (default 4; --short 2)"
    )
    ap.add_argument("--chunks", type=int, default=16, help="chunks (tokens) per stream")
    ap.add_argument("--gap-ms", type=float, default=20.0, help="time between a stream's chunks")
    ap.add_argument("--peers", nargs="*", default=["sglang"], choices=["sglang"])
    ap.add_argument("--out", help="also write the table (markdown) here")
    ap.add_argument("--client-nice", type=int, default=0,
                    help="run specsweep's client this much nicer than the server and the hogs (starve it)")  # fmt: skip
    ap.add_argument("--per-chunk", action="store_true",
                    help="instead: each chunk's stamp against its own packet on the wire (1 worker, in process)")  # fmt: skip
    args = ap.parse_args()
    global CLIENT_NICE
    CLIENT_NICE = args.client_nice
    conc = args.concurrency or ([32, 128] if args.short else [32, 128, 512])
    workers = args.workers or ([1] if args.short else [1, 2])
    rounds = args.rounds or (2 if args.short else 4)
    tcpdump = ensure_tcpdump()
    if args.per_chunk:
        lines = [PER_CHUNK_HEAD]
        with (
            tempfile.TemporaryDirectory(prefix="wire-truth-") as tmp,
            firehose(args.chunks, args.gap_ms) as url,
        ):
            for host in args.hosts:
                with host_state(host):
                    for c in conc:
                        lines.append(per_chunk(tcpdump, url, host, c, rounds * c, args.chunks, Path(tmp)))
                        print(lines[-1], flush=True)
        print("\n" + "\n".join(lines))
        if args.out:
            Path(args.out).write_text("\n".join(lines) + "\n")
        return 0
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="wire-truth-") as tmp, firehose(args.chunks, args.gap_ms) as url:
        for host in args.hosts:
            with host_state(host):
                for c in conc:
                    n = rounds * c
                    for w in workers:
                        rows.append(one(tcpdump, url, "specsweep", host, c, n, args.chunks, w, Path(tmp)))
                        print(table(rows[-1:]).splitlines()[-1], flush=True)
                    for peer in args.peers:
                        rows.append(one(tcpdump, url, peer, host, c, n, args.chunks, 1, Path(tmp)))
                        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print("\n" + text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    wrong = [r for r in rows if r.verdict == "WRONG"]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
