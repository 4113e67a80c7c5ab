"""`specsweep sim`: the simulated serving engine (predict in virtual time, fit profiles, serve over HTTP)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from specsweep.errors import UsageError, one_of

if TYPE_CHECKING:
    from rich.console import Console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="simulated serving engine: predict, fit, serve")
    ss = p.add_subparsers(dest="sim_command", metavar="SUBCOMMAND", parser_class=type(p))
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    pr = ss.add_parser("predict", help="predict bench metrics of a profile in virtual time (no HTTP)")
    pr.add_argument("--profile", required=True, help="profile name or path to a profile .yaml")
    pr.add_argument("--scenario", required=True, help="scenario name (built-in or from --scenarios)")
    pr.add_argument("--scenarios", help="YAML file with extra scenarios")
    pr.add_argument(
        "--dataset",
        metavar="NAME",
        help="real prompts instead of the scenario's: spec-bench, mt-bench, speed-bench, humaneval, gsm8k, "
        "instructcoder, sharegpt, jsonl, hf (with --dataset-path); acceptance per category from the profile",
    )
    pr.add_argument("--dataset-path", help="local file or folder of --dataset")
    pr.add_argument("--concurrency", default="1,8,64", help="comma-separated list (default 1,8,64)")
    pr.add_argument("--num-prompts", type=int, help="default: the reference runs' count per concurrency")
    pr.add_argument("--request-rate", type=float, default=float("inf"), help="open loop req/s (default inf)")
    pr.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of arrivals (1 = Poisson)")
    pr.add_argument("--seed", type=int, default=0)
    pr.add_argument(
        "--repeats", type=int, default=1,
        help="simulate each cell N times (seeds SEED..SEED+N-1): means, plus the run-to-run spread",
    )  # fmt: skip
    pr.add_argument("--json", action="store_true", help="one JSON line per concurrency")
    pr.set_defaults(func=_predict)

    ft = ss.add_parser("fit", help="fit a profile's cost model to results (run dirs / imported results)")
    ft.add_argument("results", nargs="+", help="run dirs or folders holding run dirs")
    ft.add_argument("-o", "--output", required=True, help="profile .yaml to write")
    ft.add_argument("--name", help="profile name (default: output file stem)")
    ft.add_argument("--method", help="use only rows of this method (e.g. dspark)")
    ft.add_argument("--spec-tokens", help="train on rows with these spec_tokens (comma list); default all")
    ft.add_argument("--holdout-spec-tokens", help="report hold-out errors on rows with these spec_tokens")
    ft.add_argument("--k", type=int, help="drafts of the written profile (default: from the rows)")
    ft.add_argument(
        "--acceptance", help="survival prior 'S1,S2,..' or 'const:A' if results lack spec metrics"
    )
    ft.add_argument("--base", default=None, help="profile whose limits/fixed params to start from")
    ft.add_argument("--fix", action="append", default=[], help="keep a cost param fixed: NAME=VALUE")
    ft.add_argument("--loss", default="soft_l1", choices=["linear", "soft_l1", "huber", "cauchy"])
    ft.add_argument("--f-scale", type=float, default=0.05, help="robust loss scale (log error)")
    ft.add_argument("--spec-method", help="spec method of the written profile")
    ft.add_argument("--model-name", help="served model id of the written profile")
    ft.add_argument("--description", help="one-line description stored in the profile")
    ft.add_argument("--draft-steps", type=int, help="drafter passes per step (chain drafters like EAGLE)")
    ft.add_argument(
        "--scan", action="append", default=[],
        help="try structural values, keep the best: NAME=V1,V2 (admit_delay_steps, prefill_chunk, ...)",
    )  # fmt: skip
    ft.add_argument(
        "--pair-weight", type=float, default=0.0,
        help="weight of the log error of total-throughput ratios between rows that differ only in k",
    )  # fmt: skip
    ft.add_argument("--seed", type=int, default=0)
    ft.add_argument(
        "--replicates", type=int, default=1,
        help="simulate each cell N times (seeds SEED..SEED+N-1) and fit their pooled predictions",
    )  # fmt: skip
    ft.set_defaults(func=_fit)

    from specsweep.sim.serve import add_serve_arguments

    sv = ss.add_parser("serve", help="serve a profile over HTTP (OpenAI / SGLang / vLLM endpoints)")
    add_serve_arguments(sv)
    sv.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from specsweep.sim.serve import serve_main
    from specsweep.store.paths import output_file

    if getattr(args, "truth", None):
        output_file(args.truth, "--truth")
    return int(serve_main(args) or 0)


def parse_int_list(s: str, what: str) -> list[int]:
    try:
        vals = [int(x) for x in s.split(",") if x.strip()]
    except ValueError as e:
        raise UsageError(f"bad {what} {s!r}; expected comma-separated positive integers, e.g. 1,8,64") from e
    if not vals or any(v < 1 for v in vals):
        raise UsageError(f"bad {what} {s!r}; expected comma-separated positive integers, e.g. 1,8,64")
    return vals


def _predict(args: argparse.Namespace) -> int:
    from specsweep.sim.predict import predict_repeated
    from specsweep.sim.profile import load_profile
    from specsweep.store.run_dir import dumps
    from specsweep.workload.scenarios import get_scenario, load_scenarios

    profile = load_profile(args.profile)
    extra = load_scenarios(args.scenarios) if args.scenarios else None
    scenario = get_scenario(args.scenario, extra)
    if args.dataset:
        from specsweep.workload.datasets import FILE_DATASETS

        if args.dataset not in FILE_DATASETS:
            raise UsageError(f"--dataset: {one_of(args.dataset, FILE_DATASETS)}")
        scenario = scenario.model_copy(update={"dataset": args.dataset, "dataset_path": args.dataset_path})
    concs = parse_int_list(args.concurrency, "--concurrency")
    if args.num_prompts is not None and args.num_prompts < 1:
        raise UsageError(f"bad --num-prompts {args.num_prompts}; expected a positive integer")
    if not args.request_rate > 0:
        raise UsageError(f"bad --request-rate {args.request_rate}; expected a positive number or inf")
    if args.repeats < 1:
        raise UsageError(f"bad --repeats {args.repeats}; expected a positive integer")
    rows = []
    for c in concs:
        row = predict_repeated(
            profile, scenario, c, repeats=args.repeats, num_prompts=args.num_prompts, seed=args.seed,
            request_rate=args.request_rate, burstiness=args.burstiness,
        )  # fmt: skip
        rows.append(row)
        if args.json:
            sys.stdout.write(dumps(row).decode() + "\n")
            sys.stdout.flush()
    if not args.json:
        _print_table(profile.name, scenario.name, rows)
        _print_categories(rows)
    return 0


def _print_categories(rows: list[dict[str, Any]], console: Console | None = None) -> None:
    """With --dataset: acceptance, TPOT and throughput per category and concurrency."""
    if not any(r.get("per_category") for r in rows):
        return
    from rich.console import Console
    from rich.text import Text

    from specsweep.console.table import fit

    console = console or Console()
    heads = ["category", "conc", "completed", "accept len", "TPOT mean ms", "out tok/s"]
    body = []
    for r in rows:
        for cat, m in (r.get("per_category") or {}).items():
            al, tp = m.get("accept_length"), m.get("mean_tpot_ms")
            body.append([cat, str(r["max_concurrency"]), str(m["completed"]), "-" if al is None else f"{al:.2f}",
                         "-" if tp is None else f"{tp:.2f}", f"{m['output_throughput']:,.0f}"])  # fmt: skip
    console.print(Text("per category"))
    console.print(fit(heads, body, console.width, keys=2, right=range(1, len(heads))))


PREDICT_COLUMNS = [
    ("conc", "max_concurrency", "{:d}"),
    ("prompts", "num_prompts", "{:d}"),
    ("total tok/s", "total_throughput", "{:,.0f}"),
    ("out tok/s", "output_throughput", "{:,.0f}"),
    ("req/s", "request_throughput", "{:.2f}"),
    ("TTFT mean ms", "mean_ttft_ms", "{:.1f}"),
    ("TTFT p99 ms", "p99_ttft_ms", "{:.1f}"),
    ("TPOT mean ms", "mean_tpot_ms", "{:.2f}"),
    ("ITL mean ms", "mean_itl_ms", "{:.2f}"),
    ("E2E mean ms", "mean_e2e_latency_ms", "{:.0f}"),
    ("accept len", "accept_length", "{:.2f}"),
]


def _print_table(
    profile: str, scenario: str, rows: list[dict[str, Any]], console: Console | None = None
) -> None:
    """The predictions, fitted to the terminal's width: columns stack rather than cut a number."""
    from rich.console import Console
    from rich.text import Text

    from specsweep.console.table import fit

    console = console or Console()
    repeats = rows[0].get("repeats", 1) if rows else 1
    title = f"sim predict: profile {profile}, scenario {scenario} (virtual time)"
    if repeats > 1:
        title += f"; means of {repeats} runs, +- one run-to-run standard deviation"

    def cell(r: dict[str, Any], key: str, fmt: str) -> str:
        if r.get(key) is None:
            return "-"
        text = fmt.format(r[key])
        sd = (r.get("spread") or {}).get(key, {}).get("sd")
        if sd is not None and r[key]:
            text += f" +-{100 * sd / abs(r[key]):.1f}%"
        return text

    heads = [head for head, _, _ in PREDICT_COLUMNS]
    body = [[cell(r, key, fmt) for _, key, fmt in PREDICT_COLUMNS] for r in rows]
    console.print(Text(title))
    console.print(fit(heads, body, console.width, keys=1, right=range(len(heads))))


def _fit(args: argparse.Namespace) -> int:
    from specsweep.sim.fit_cli import fit_main
    from specsweep.store.paths import output_file

    output_file(args.output, "-o")
    return fit_main(args)
