"""Timings behind docs/reliability.md: each bound on hostile input, the time to its clear error and
the peak Python memory on the way (tracemalloc, which also slows what it measures).

    python benchmarks/hostile_inputs.py              # every case: about 1 min on a busy 2-core box
    python benchmarks/hostile_inputs.py --issue 27   # issue 27's bounds only (the table in section 6)
    python benchmarks/hostile_inputs.py --issue 20   # issue 20's cases only (section 5)

Issue 20 (items 8-12): planning 8,000 servers (quadratic before: 118 s), decoding one 100 MB SSE
event fed in 64 KiB reads (the decoder's bound raised for the measurement), loading the 12-line
alias bomb (90 s+ and 1.8 GB before), and metrics of a record that claims 1e8 tokens in one chunk
(1.9 GB before).

Issue 27 (items 6, 9, 11, 13): a 24 MB plain YAML file (191 s and 2.7 GB before), 1 MB of YAML
whose aliases expand a string to 2.5 GB (a 1 MB alias file took 80 s and 372 MB before), traffic loads, ``--gpus 5000`` (more
than 300 s before), an import claiming 1e300 tok/s, ``import /dev/zero`` and a FIFO summary.jsonl
(both hung before). Prints one Markdown table row per case.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specsweep.errors import SpecsweepError
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "name: e\nservers: [{name: s, kind: sim, profile: toy}]\nworkloads: [{scenarios: [chat_short], concurrency: [1]}]\n"


def measure(name: str, fn: Callable[[], Any]) -> None:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    except SpecsweepError as e:
        out = f"{type(e).__name__}: ...{str(e)[-100:]}"
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out = str(out).replace("|", "\\|").replace("\n", " ")
    print(f"| {name} | {dt:.2f} s | {peak:.1f} MiB | {out} |", flush=True)


# ---- issue 20 -------------------------------------------------------------------------------------
def plan_servers(n: int) -> str:
    servers = [{"name": f"s{i}", "kind": "sim", "profile": "toy"} for i in range(n)]
    exp = parse_experiment({"name": "big", "servers": servers,
                            "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]})  # fmt: skip
    return f"{len(plan_experiment(exp).configs):,} configs"


def sse_event(size: int) -> str:
    from specsweep.client.sse import SSEDecoder

    dec = SSEDecoder(max_event_bytes=size * 2)
    piece = b"x" * 65536
    dec.feed(b"data: ")
    for _ in range(size // len(piece)):
        dec.feed(piece)
    (ev,) = dec.feed(b"\n\n")
    return f"{len(ev) / 1e6:.0f} MB event"


def claimed_tokens(n: int) -> str:
    from specsweep.measure.metrics import compute_metrics
    from specsweep.measure.records import RequestRecord

    r = RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=4, output_len=n, scheduled_ns=0,
                      send_ns=1, chunk_ns=[10, 20_000_000], chunk_tokens=[1, n], end_ns=20_000_000,
                      output_tokens=n + 1)  # fmt: skip
    return f"mean ITL {compute_metrics([r])['mean_itl_ms']:.2e} ms"


def issue_20() -> None:
    measure("plan 8,000 servers", lambda: plan_servers(8000))
    measure("SSE: one 100 MB event in 64 KiB reads", lambda: sse_event(100 * 2**20))
    measure(
        "YAML alias bomb (12 lines)", lambda: load_experiment(ROOT / "tests/security/inputs/alias_bomb.yaml")
    )
    measure("metrics of a record claiming 1e8 tokens", lambda: claimed_tokens(10**8))


# ---- issue 27 -------------------------------------------------------------------------------------
def _reference(tmp: Path) -> Path:
    from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

    csv = find_reference_csv()
    assert csv is not None
    return write_results_dir(reference_rows(csv), tmp / "ref")


def _plan(results: Path, traffic: Path, **kw: Any) -> str:
    from specsweep.plan.planner import make_plan
    from specsweep.plan.traffic import load_traffic

    plan = make_plan([results], load_traffic(traffic), **kw)
    return f"planned: {len(plan.options)} options"


def _import(src: str, out: Path) -> str:
    from specsweep.importers import ImportOptions, import_results

    rd = import_results("sglang", [src], out, ImportOptions(label="absurd", method="x", scenario="s"))
    return f"imported: {rd.path}"


def _report(run_dir: Path) -> str:
    from specsweep.report import build_view

    view = build_view([run_dir], "sweep")
    return f"reported: {len(view.configs)} configs"


def issue_27(tmp: Path) -> None:
    import shutil

    import orjson

    big = tmp / "big.yaml"
    with big.open("w") as f:  # 24 MB of plain YAML: one long list of servers
        f.write(EXPERIMENT.replace("servers: [{name: s, kind: sim, profile: toy}]", "servers:"))
        line = "  - {name: s%d, kind: sim, profile: toy, args: [--note, " + "x" * 40 + "]}\n"
        for i in range(24 * 2**20 // len(line)):
            f.write(line % i)
    measure(f"YAML: a {big.stat().st_size / 1e6:.0f} MB plain file (item 11)", lambda: load_experiment(big))
    biggest = tmp / "biggest.yaml"  # what the byte bound lets through: 1 MiB of flow-style servers
    line = "  - {name: s%d, kind: sim, profile: toy, args: [--note, " + "x" * 40 + "]}\n"
    parts = ["name: e\nworkloads: [{scenarios: [chat_short], concurrency: [1]}]\nservers:\n"]
    size = len(parts[0])
    while size + len(line % len(parts)) <= 2**20:
        parts.append(line % len(parts))
        size += len(parts[-1])
    biggest.write_text("".join(parts))
    measure(f"YAML: {biggest.stat().st_size:,} bytes, {len(parts) - 1:,} servers (item 11, accepted size)",
            lambda: load_experiment(biggest))  # fmt: skip
    aliases = tmp / "aliases.yaml"  # 1 MB: a 10 kB string, and 250,000 aliases of it in a server's args
    aliases.write_text(f"description: &d {'a' * 10_000}\n" + EXPERIMENT.replace(
        "profile: toy}", "profile: toy, args: [" + ", ".join(["*d"] * 250_000) + "]}"))  # fmt: skip
    measure(
        f"YAML: {aliases.stat().st_size / 1e6:.1f} MB, aliases of a 10 kB string (item 11)",
        lambda: load_experiment(aliases),
    )
    ref = _reference(tmp)
    import specsweep.plan.planner  # noqa: F401 - imported before the clock starts

    for name, load in [("concurrency: 1e308", "{concurrency: 1.0e+308}"),
                       ("concurrency: 100,000", "{concurrency: 100000}"),
                       ("concurrency_by_hour peak 100,000", "{concurrency_by_hour: {0: 10, 12: 100000}}"),
                       ("request_rate: 500,000", "{request_rate: 500000}")]:  # fmt: skip
        t = tmp / "traffic.yaml"
        t.write_text(f"mix: {{chat: 1.0}}\nload: {load}\n")
        measure(f"plan, traffic {name} (item 9)", lambda t=t: _plan(ref, t))
    t = tmp / "traffic.yaml"
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\ngpus_per_instance: 1.0e+302\n")
    measure("plan, gpus_per_instance: 1e302 (item 9)", lambda: _plan(ref, t))
    t.write_text("mix: {chat: 1.0}\nload: {concurrency: 8}\n")
    measure("plan --gpus 5000 (item 9)", lambda: _plan(ref, t, gpus=5000))
    src = tmp / "absurd.jsonl"
    row = {"tag": "s", "duration": 10.0, "completed": 10, "output_throughput": 1e300, "mean_ttft_ms": 1e-300}
    src.write_bytes(orjson.dumps(row) + b"\n")
    measure("import: 1e300 tok/s, a 1e-300 ms TTFT (item 6)", lambda: _import(str(src), tmp / "imp"))
    measure("import /dev/zero (item 13)", lambda: _import("/dev/zero", tmp / "imp"))
    fifo_run = tmp / "fifo-run"
    shutil.copytree(ref, fifo_run)
    (fifo_run / "summary.jsonl").unlink()
    os.mkfifo(fifo_run / "summary.jsonl")
    measure("report: summary.jsonl is a FIFO (item 13)", lambda: _report(fifo_run))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--issue", choices=["20", "27"], help="only this issue's cases")
    args = ap.parse_args()
    print("| case | time to the result | peak Python memory | result |\n|---|---:|---:|---|")
    if args.issue in (None, "20"):
        issue_20()
    if args.issue in (None, "27"):
        with tempfile.TemporaryDirectory() as tmp:
            issue_27(Path(tmp))


if __name__ == "__main__":
    main()
