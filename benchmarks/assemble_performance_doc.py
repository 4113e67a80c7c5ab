"""Assemble docs/performance.md from the benchmark pages in docs/perf/ (each written by its script).

python benchmarks/assemble_performance_doc.py
"""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
ORDER = [
    (
        "client_overhead.md",
        "One client process: chunks/s and timestamp error",
        "benchmarks/client_overhead.py",
    ),
    ("peers.md", "specsweep's client against the reference clients", "benchmarks/peer_overhead.py"),
    ("client_scaling.md", "More client processes (`--workers`)", "benchmarks/client_scaling.py"),
    ("sim_capacity.md", "One simulator process: streams and chunks/s on time", "benchmarks/sim_capacity.py"),
]

HEAD = """# Performance

Every figure below was produced by the script named in its section, on this project's 2-core
development machine, with the command and date given there. The machine is shared: figures measured
while other work ran say so. Targets: one client process sustains >= 20,000 chunks/s with TTFT
error < 2 ms p99 at concurrency 256 (issue 2); one simulator process serves 512 concurrent streams
with p99 emit-time error < 1 ms (issue 3); 2 client workers beat 1 (issue 7); the client beats
`sglang.bench_serving` 2x and matches AIPerf per process (issue 8).

Status on 2026-12-02 (quiet machine, evening runs): one client process sustains **23,400 chunks/s at
concurrency 256 and 26,800 at 1024 with TTFT error p99 <= 0.02 ms** (two repeats each; 59-81% of a
core) - arrivals are the kernel's receive stamps, bodies are consumed in the read callback, and TCP
pacing is off on our sockets (target >= 20,000 with < 2 ms p99: met). Against the same firehose,
`sglang.bench_serving`, `vllm bench serve` and AIPerf are in the peers section with their own TTFT
errors against the server's truth. One sim process writes every chunk within 1 ms p99 at 64
concurrent streams in two of four runs (0.68-0.71 ms; 1.4-2.5 ms in the others) and keeps up with 512 streams at p99 4.8 ms (target 512 under 1 ms: not
met - the per-stream kernel send of a step's burst, ~8.5 us each, needs several cores).

Regenerate this page: `python benchmarks/assemble_performance_doc.py` (after running the scripts).
"""


def _demote(md: str) -> str:
    """Sub-pages start at '#': push every heading one level down."""
    return "\n".join("#" + line if line.startswith("#") else line for line in md.splitlines())


def main() -> None:
    parts = [HEAD]
    for name, title, script in ORDER:
        page = DOCS / "perf" / name
        parts.append(f"\n## {title}\n\nScript: `{script}`; source page: [perf/{name}](perf/{name}).\n")
        parts.append(_demote(page.read_text()) if page.exists() else "_Not measured yet._\n")
    (DOCS / "performance.md").write_text("\n".join(parts))
    print(f"wrote {DOCS / 'performance.md'}")


if __name__ == "__main__":
    main()
