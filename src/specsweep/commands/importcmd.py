"""`specsweep import sglang|vllm FILE... --label L --method M [--param k=v]... -o RESULTS_DIR`."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser(
        "import",
        help="import sglang.bench_serving / vllm bench serve results as a run dir",
        description="Import results of sglang.bench_serving (JSONL) or vllm bench serve (JSON) into "
        "RESULTS_DIR as one run dir. Several imports into one RESULTS_DIR make one comparable result set; "
        "several results for the same scenario, concurrency and workload are repeats of that cell. "
        "Identical content (a file given twice, a result already imported under this label) is never a "
        "repeat; results differing in request rate, dataset or lengths are separate cells; a result "
        "of the other client is refused.",
    )
    p.add_argument("kind", choices=["sglang", "vllm"], help="which client wrote the files")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--label", required=True, help='config label, e.g. "DSpark(st=3)"')
    p.add_argument("--method", required=True, help="speculative method, e.g. dspark, eagle, none")
    p.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="config parameter (repeatable)"
    )
    p.add_argument("--scenario", help="scenario name (default: each result's 'tag')")
    p.add_argument(
        "--concurrency",
        type=int,
        help="concurrency level for results without max_concurrency (a result with another value "
        "is refused unless --override-concurrency)",
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
    from specsweep.paths import output_dir

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
