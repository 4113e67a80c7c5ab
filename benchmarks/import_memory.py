"""Peak memory and time of importing one large result file per format (issue 38, defect 9).

Writes a file of about ``--mb`` MB in each format whose files are legitimately large, with the
per-request detail the clients save, then imports it (``run_import``, what ``specsweep import``
runs) in a fresh process per file and reports that process's peak RSS (``VmHWM`` of
/proc/self/status), the import's wall time and, timed apart in the same process before it, the two
parts that grow with the file: reading the results (``read_objects`` and the importer's rows) and
the copy into the run dir's ``source/`` with secrets scrubbed (``copy_scrubbed``):

* ``vllm``: ``vllm bench serve --save-result --save-detailed``: one compact JSON object (``json.dump``)
  with ``ttfts``, ``itls`` (every gap of every request), ``input_lens``, ``output_lens``,
  ``generated_texts`` and ``errors``;
* ``sglang``: ``sglang.bench_serving --output-file --output-details``: JSON lines, one result per
  run with the same lists, ``request_rate: Infinity`` (Python's json), a second run's line after it;
* ``guidellm``: ``benchmarks.json`` (``tests/importers/fixtures/guidellm/benchmarks.json``, indent 2)
  with request records (prompt, output, timings) in ``benchmarks[0].requests.successful``.

``--src NAME=DIR`` (repeatable) measures each under another checkout's ``src``, e.g. the code before
the streaming reader: ``git archive 7fec02d src | tar -x -C /tmp/old`` then
``--src before=/tmp/old/src --src after=src``. Needs Linux (/proc).

    python benchmarks/import_memory.py [--mb 200] [--formats vllm sglang guidellm] [--src NAME=DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
GUIDELLM_FIXTURE = ROOT / "tests" / "importers" / "fixtures" / "guidellm" / "benchmarks.json"
OUT_LEN = 256  # output tokens per request: 255 inter-token gaps each
PER_REQUEST = {"vllm": 6_600, "sglang": 6_600, "guidellm": 2_350}  # bytes a request adds, about

SUMMARY: dict[str, Any] = {
    "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": "inf", "burstiness": 1.0,
    "max_concurrency": 64, "request_goodput:": None,
    "mean_ttft_ms": 48.75, "median_ttft_ms": 46.5, "std_ttft_ms": 7.8, "p99_ttft_ms": 60.7,
    "mean_tpot_ms": 7.9, "median_tpot_ms": 7.8, "std_tpot_ms": 0.4, "p99_tpot_ms": 8.6,
    "mean_itl_ms": 7.9, "median_itl_ms": 7.8, "std_itl_ms": 0.9, "p99_itl_ms": 9.0,
}  # fmt: skip
SG_KEYS: dict[str, Any] = {
    "tag": "chat", "backend": "sglang-oai", "dataset_name": "random", "request_rate": float("inf"),
    "max_concurrency": 64, "random_input_len": 512, "random_output_len": OUT_LEN, "random_range_ratio": 1.0,
    "mean_e2e_latency_ms": 2100.0, "median_e2e_latency_ms": 2050.0, "p99_e2e_latency_ms": 2500.0,
    "mean_ttft_ms": 48.1, "median_ttft_ms": 41.7, "p99_ttft_ms": 102.6, "mean_tpot_ms": 7.35,
    "median_tpot_ms": 7.3, "p99_tpot_ms": 8.9, "mean_itl_ms": 7.3, "median_itl_ms": 6.1, "p99_itl_ms": 17.4,
}  # fmt: skip

CHILD = """
import re, sys, tempfile, time
from pathlib import Path
from specsweep.importers import IMPORTERS, ImportOptions, run_import
from specsweep.importers.reader import read_objects
from specsweep.store.redact_copy import copy_scrubbed
kind, path, out = sys.argv[1:4]
def read_all():  # the reading alone, as the import's first pass does it (nothing kept after it)
    for loc in read_objects(Path(path)):
        IMPORTERS[kind].to_rows(loc.obj, path, loc.line)
t = time.perf_counter()
read_all()
read = time.perf_counter() - t
with tempfile.NamedTemporaryFile() as tmp:
    t = time.perf_counter()
    copy_scrubbed(path, tmp.name)  # the copy into source/ alone
    copy = time.perf_counter() - t
t = time.perf_counter()
run_import(kind, [path], out, ImportOptions(label="big", method="m"))
wall = time.perf_counter() - t
hwm = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print(f"{wall:.2f} {read:.2f} {copy:.2f} {hwm / 1024:.0f}")
"""


POOL = 97  # distinct requests, repeated in turn: the file is written at disk speed


def _requests(n: int, rng: random.Random) -> Iterator[tuple[float, list[float], str]]:
    pool = []
    for _ in range(min(n, POOL)):
        gaps = [rng.uniform(0.004, 0.012) for _ in range(OUT_LEN - 1)]
        words = " ".join(rng.choice(("the", "cat", "sat", "on", "a", "mat")) for _ in range(OUT_LEN))
        pool.append((rng.uniform(0.03, 0.3), gaps, words))
    for i in range(n):
        yield pool[i % len(pool)]


def _write_lists(fh: TextIO, head: dict[str, Any], n: int, seed: int) -> None:
    """One JSON object: ``head``'s keys, then the per-request lists of ``n`` requests."""
    fh.write(json.dumps(head)[:-1])
    reqs = list(_requests(min(n, POOL), random.Random(seed)))
    for k, key in enumerate(("ttfts", "itls", "generated_texts")):
        encoded = [json.dumps(r[k]) for r in reqs]
        fh.write(f', "{key}": [')
        fh.write(",".join(encoded[i % len(encoded)] for i in range(n)))
        fh.write("]")
    for key, item in (("input_lens", 512), ("output_lens", OUT_LEN), ("errors", "")):
        fh.write(f', "{key}": ' + json.dumps([item] * n))
    fh.write("}")


def _totals(n: int, seed: int) -> dict[str, Any]:
    dur = 60.0
    lat = [t + sum(g) for t, g, _ in _requests(n, random.Random(seed))]
    return {"duration": dur, "completed": n, "num_prompts": n, "total_input_tokens": 512 * n,
            "total_output_tokens": OUT_LEN * n, "request_throughput": n / dur,
            "output_throughput": OUT_LEN * n / dur, "input_throughput": 512 * n / dur,
            "total_token_throughput": 768 * n / dur, "mean_e2el_ms": 1000 * sum(lat) / n}  # fmt: skip


def write_vllm(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        _write_lists(fh, {"date": "20250312-101500", **SUMMARY, **_totals(n, 1)}, n, 1)


def write_sglang(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for run, size in ((1, n), (2, 4)):
            t = _totals(size, run)
            head = {
                **SG_KEYS,
                **{k: v for k, v in t.items() if not k.startswith(("total_token", "mean_e2el"))},
            }
            head["total_throughput"] = t["total_token_throughput"]
            head["duration"] += run  # two runs: two distinct results
            _write_lists(fh, head, size, run)
            fh.write("\n")


def write_guidellm(path: Path, n: int) -> None:
    doc = json.loads(GUIDELLM_FIXTURE.read_text(encoding="utf-8"))
    doc["benchmarks"][0]["requests"]["successful"] = "@@REQUESTS@@"
    text = json.dumps(doc, indent=2)
    before, after = text.split('"@@REQUESTS@@"')
    rng = random.Random(3)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(before + "[")
        for i, (ttft, gaps, out) in enumerate(_requests(n, rng)):
            start = 1_750_000_000.0 + i * 0.05
            rec = {"type_": "generative_request_stats", "request_id": f"{i:032x}", "request_type": "text_completions",
                   "prompt": out, "output": out, "prompt_tokens": 512, "output_tokens": OUT_LEN,
                   "request_args": {"max_tokens": OUT_LEN, "stream": True}, "start_time": start,
                   "end_time": start + ttft + sum(gaps), "first_token_time": start + ttft,
                   "last_token_time": start + ttft + sum(gaps), "request_latency": ttft + sum(gaps),
                   "time_to_first_token_ms": ttft * 1000, "inter_token_latency_ms": 1000 * sum(gaps) / len(gaps),
                   "time_per_output_token_ms": 1000 * (ttft + sum(gaps)) / OUT_LEN}  # fmt: skip
            fh.write(("," if i else "") + "\n      " + json.dumps(rec))
        fh.write("\n    ]" + after)


WRITERS = {"vllm": write_vllm, "sglang": write_sglang, "guidellm": write_guidellm}
FILE_NAMES = {"vllm": "vllm-detailed.json", "sglang": "sglang-details.jsonl", "guidellm": "benchmarks.json"}


def measure(kind: str, path: Path, src: Path, out: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    p = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), str(out)], env=env, capture_output=True,
                       text=True, check=False)  # fmt: skip
    if p.returncode:
        raise SystemExit(f"{kind} under {src}: {p.stderr.strip()[-2000:]}")
    return [float(x) for x in p.stdout.split()[-4:]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="about this many MB per file")
    ap.add_argument("--formats", nargs="+", choices=list(WRITERS), default=list(WRITERS))
    ap.add_argument("--src", action="append", help="NAME=DIR: a checkout's src (default: this one's)")
    args = ap.parse_args()
    srcs = [tuple(s.split("=", 1)) for s in args.src] if args.src else [("this", str(ROOT / "src"))]
    print("| format | file MB | code | peak RSS MB | import s | reading s | scrubbed copy s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        for kind in args.formats:
            path = Path(d) / FILE_NAMES[kind]
            WRITERS[kind](path, max(1, int(args.mb * 1e6 / PER_REQUEST[kind])))
            mb = path.stat().st_size / 1e6
            for i, (name, src) in enumerate(srcs):
                wall, read, copy, peak = measure(kind, path, Path(src), Path(d) / f"res-{kind}-{i}")
                print(
                    f"| {kind} | {mb:.0f} | {name} | {peak:.0f} | {wall:.1f} | {read:.1f} | {copy:.1f} |",
                    flush=True,
                )
            path.unlink()


if __name__ == "__main__":
    main()
