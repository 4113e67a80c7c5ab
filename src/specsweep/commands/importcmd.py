"""`specsweep import sglang|vllm|aiperf|genai-perf|guidellm|llmperf|auto FILE|DIR... --label L --method M
[--param k=v]... -o RESULTS_DIR`."""

from __future__ import annotations

import argparse
import sys

KINDS = ("sglang", "vllm", "aiperf", "genai-perf", "guidellm", "llmperf", "auto")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser(
        "import",
        help="import results of sglang.bench_serving, vllm bench serve, AIPerf, genai-perf, GuideLLM or "
        "LLMPerf as a run dir",
        description="Import results of sglang.bench_serving (JSONL), vllm bench serve (JSON, bench sweep "
        "folders), AIPerf (profile_export_aiperf.json), genai-perf (profile_export_genai_perf.json), GuideLLM "
        "(benchmarks.json) or LLMPerf (*_summary.json) into RESULTS_DIR as one run dir; `auto` tells the "
        "client from the keys. Several imports into one RESULTS_DIR make one comparable result set. Results "
        "are repeats of a cell only when their workload (dataset, lengths, prompts, tokens per request) and "
        "recorded server parameters agree: otherwise they are separate cells or configs, with a warning. "
        "Open-loop results are cells by request rate. Identical content is never a repeat; a result of "
        "another client is refused.",
    )
    p.add_argument("kind", choices=KINDS, help="which client wrote the files (auto: tell from the keys)")
    p.add_argument("files", nargs="+", metavar="FILE", help="result files, or folders holding them")
    p.add_argument("--label", required=True, help='config label, e.g. "DSpark(st=3)"')
    p.add_argument("--method", required=True, help="speculative method, e.g. dspark, eagle, none")
    p.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="config parameter (repeatable)"
    )
    p.add_argument(
        "--scenario",
        help="scenario name (default: each result's 'tag', else a name from its dataset and lengths)",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        help="concurrency level for results without max_concurrency (open-loop results need none: they "
        "are cells by request rate; a result with another value is refused unless --override-concurrency)",
    )
    p.add_argument(
        "--override-concurrency",
        action="store_true",
        help="let --concurrency replace the files' max_concurrency (warned; kept as file_max_concurrency)",
    )
    p.add_argument("--model", help="model served (default: the result's model_id)")
    p.add_argument("--server-backend", dest="backend", help='engine description, e.g. "vllm-dspark (TP=8)"')
    p.add_argument("--warmup", type=int, help="warmup requests the client sent")
    p.add_argument("--experiment", help="experiment name (default: the label)")
    p.add_argument("-o", "--output", required=True, metavar="RESULTS_DIR")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from specsweep.importers import ImportOptions, parse_param, run_import
    from specsweep.store.paths import output_dir

    output_dir(args.output, "-o")  # before any file is read: a file or read-only folder is one line
    params = dict(parse_param(x) for x in args.param)
    opts = ImportOptions(
        label=args.label,
        method=args.method,
        params=params,
        scenario=args.scenario,
        concurrency=args.concurrency,
        override_concurrency=args.override_concurrency,
        model=args.model,
        backend=args.backend,
        warmup=args.warmup,
        experiment=args.experiment,
    )
    out = run_import(args.kind, args.files, args.output, opts)
    for w in out.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"imported {out.rows} result(s) into {out.rundir.path}")
    return 0
