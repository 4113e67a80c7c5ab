"""`specsweep bench`: one benchmark run (or --repeats N) against a live server.

Flag names follow sglang.bench_serving so existing command lines carry over.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from specsweep.errors import EXIT_INVALID_MEASUREMENT, UsageError
from specsweep.store import redact
from specsweep.store.paths import output_file


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark one server with one workload (sglang.bench_serving-compatible flags)",
        description="Benchmark a running server. Metrics use sglang.bench_serving key names; "
        "ITL is per token (see docs/metrics.md).",
        epilog="exit status: 0 measured; 5 measured but the self-check marked the measurement invalid "
        "(the result says why under invalid_reason); 2 bad input; 4 nothing could be measured; "
        "130 interrupted",
    )
    g = p.add_argument_group("server")
    g.add_argument(
        "--backend",
        default="sglang",
        help="dialect: sglang, vllm, openai, openai-chat, sglang-oai, sglang-oai-chat, vllm-chat",
    )
    g.add_argument("--base-url", help="e.g. http://127.0.0.1:30000 (else --host/--port)")
    g.add_argument("--host", default="127.0.0.1")
    g.add_argument("--port", type=int, default=30000)
    g.add_argument("--model", help="model name sent to OpenAI endpoints (default: first in /v1/models)")
    g.add_argument(
        "--tokenizer", help="local HF tokenizer.json or model dir (default: built-in, with a warning)"
    )
    w = p.add_argument_group("workload")
    w.add_argument("--scenario", help="a built-in scenario (chat_short, ...) or one from --scenario-file")
    w.add_argument("--scenario-file", help="YAML file of user scenarios")
    w.add_argument(
        "--dataset-name",
        default=None,
        help="random (real text), random-ids, shared-prefix; from a local file: sharegpt, jsonl, spec-bench, "
        "mt-bench, speed-bench, humaneval, gsm8k, instructcoder, hf (docs/experiments.md, Datasets)",
    )
    w.add_argument("--dataset-path", help="local file or folder of the dataset (nothing is downloaded)")
    w.add_argument("--random-input-len", type=int)
    w.add_argument("--random-output-len", type=int)
    w.add_argument("--random-range-ratio", type=float)
    w.add_argument(
        "--range-ratio-mode",
        choices=["sglang", "vllm"],
        default=None,
        help="meaning of --random-range-ratio (default sglang: uniform [max(L*r,1), L])",
    )
    w.add_argument("--shared-prefix-groups", type=int, default=None)
    w.add_argument("--shared-prefix-len", type=int, default=None)
    w.add_argument("--num-prompts", type=int, help="default: by concurrency (1->32 ... 128->1024)")
    load = p.add_argument_group("load")
    load.add_argument("--max-concurrency", type=int, help="closed-loop limit on in-flight requests")
    load.add_argument("--request-rate", type=float, default=math.inf, help="open-loop req/s (default inf)")
    load.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of arrivals (1 = Poisson)")
    load.add_argument("--warmup-requests", type=int, default=0)
    load.add_argument("--seed", type=int, default=1)
    load.add_argument("--repeats", type=int, default=1, help="run the same benchmark N times")
    load.add_argument("--request-timeout", type=float, default=600.0, help="seconds per request")
    load.add_argument("--workers", type=int, default=1, help="client processes sharing the load")
    load.add_argument("--ray-address", help="with --workers: run the workers as Ray actors on this cluster")
    req = p.add_argument_group("requests")
    req.add_argument("--extra-request-body", help="JSON object merged into every request body")
    req.add_argument("--temperature", type=float, default=0.0)
    req.add_argument(
        "--no-ignore-eos",
        dest="ignore_eos",
        action="store_false",
        help="let the model stop at EOS (default: ignore_eos, like sglang)",
    )
    req.add_argument("--disable-spec-metrics", action="store_true", help="do not scrape /metrics")
    req.add_argument("--keep-text", action="store_true", help="store output text in the records")
    req.add_argument(
        "--allow-redirects",
        action="store_true",
        help="follow HTTP redirects (default: refuse them; the result line says which was done)",
    )
    out = p.add_argument_group("output")
    out.add_argument("--goodput", nargs="+", help="SLOs: ttft:MS tpot:MS e2el:MS")
    out.add_argument("--tag", help="free-form tag written into the result line (e.g. the scenario)")
    out.add_argument("--output-file", help="append one JSON line per run (sglang key names)")
    out.add_argument("--records", help="per-request records: .parquet (default) or .jsonl")
    out.add_argument("--quiet", action="store_true", help="no console summary")
    p.set_defaults(func=run)  # fmt: skip


def build_config(args: argparse.Namespace) -> object:
    import orjson

    from specsweep.client.bench import BenchConfig
    from specsweep.experiment.checks import base_url_problem
    from specsweep.measure.metrics import parse_goodput
    from specsweep.workload.scenarios import BUILTIN, Scenario, get_scenario, load_scenarios

    extra_sc = load_scenarios(args.scenario_file) if args.scenario_file else {}
    if args.scenario:
        base = get_scenario(args.scenario, extra_sc)
    else:
        base = Scenario(name="custom", input_len=1024, output_len=1024, range_ratio=0.0)
        if args.random_input_len is None and args.random_output_len is None and args.dataset_name is None:
            raise UsageError("give --scenario NAME (one of: " + ", ".join(BUILTIN) + ") or --random-input-len/"
                             "--random-output-len or --dataset-name")  # fmt: skip
    upd: dict[str, object] = {}
    for flag, key in (("random_input_len", "input_len"), ("random_output_len", "output_len"),
                      ("random_range_ratio", "range_ratio"), ("range_ratio_mode", "range_mode"),
                      ("dataset_name", "dataset"), ("dataset_path", "dataset_path"),
                      ("shared_prefix_groups", "num_groups"), ("shared_prefix_len", "prefix_len")):  # fmt: skip
        v = getattr(args, flag)
        if v is not None:
            upd[key] = v
    if upd:
        try:
            scenario = Scenario(**{**base.model_dump(), **upd})
        except Exception as e:  # pydantic ValidationError: name the flag
            raise UsageError(f"invalid workload flags: {e}".splitlines()[0] + f" ({_first_err(e)})") from e
    else:
        scenario = base
    extra: dict[str, object] = {}
    if args.extra_request_body:
        try:
            extra = orjson.loads(args.extra_request_body)
        except orjson.JSONDecodeError as e:
            raise UsageError(f"--extra-request-body is not JSON: {args.extra_request_body!r}") from e
        if not isinstance(extra, dict):
            raise UsageError(f"--extra-request-body must be a JSON object, got {args.extra_request_body!r}")
    for name in ("num_prompts", "max_concurrency", "repeats", "workers"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be > 0, got {v}")
    if args.warmup_requests < 0:
        raise UsageError(f"--warmup-requests must be >= 0, got {args.warmup_requests}")
    if not (math.isfinite(args.request_timeout) and args.request_timeout > 0):
        raise UsageError(
            f"--request-timeout must be a finite number of seconds > 0, got {args.request_timeout}"
        )
    base_url = args.base_url or f"http://{args.host}:{args.port}"
    problem = base_url_problem(base_url)
    if problem:
        raise UsageError(f"--base-url: {problem}" if args.base_url else f"--host/--port: {problem}")
    from specsweep.client.dialects import get_dialect

    get_dialect(args.backend)
    return BenchConfig(
        base_url=base_url.rstrip("/"), scenario=scenario, backend=args.backend, model=args.model,
        tokenizer=args.tokenizer, num_prompts=args.num_prompts, max_concurrency=args.max_concurrency,
        request_rate=args.request_rate, burstiness=args.burstiness, warmup_requests=args.warmup_requests,
        seed=args.seed, extra_request_body=extra, goodput=parse_goodput(args.goodput), tag=args.tag,
        ignore_eos=args.ignore_eos, temperature=args.temperature, request_timeout_s=args.request_timeout,
        keep_text=args.keep_text, repeats=args.repeats, scrape_metrics=not args.disable_spec_metrics,
        workers=args.workers,
        quiet=args.quiet, allow_redirects=args.allow_redirects,
    )  # fmt: skip


def _records_path(arg: str, rep: int, repeats: int) -> Path:
    path = Path(arg)
    return path.with_name(f"{path.stem}.r{rep}{path.suffix}") if repeats > 1 else path


def _write_records(path: Path, records: list[Any]) -> None:
    from specsweep.store.run_dir import dumps, write_records_parquet

    if path.suffix == ".jsonl":
        with open(path, "wb") as f:
            for r in records:
                f.write(dumps(redact.scrub_obj(r.to_dict())) + b"\n")
    else:
        write_records_parquet(path, records)


def rescue(result: dict[str, Any], records: list[Any], rep: int) -> Path:
    """Save a run whose output could not be written into a fresh directory under the system's temp
    dir (result.jsonl, records.jsonl); returns the directory."""
    from specsweep.store.run_dir import dumps

    d = Path(tempfile.mkdtemp(prefix=f"specsweep-bench-r{rep}-"))
    (d / "result.jsonl").write_bytes(dumps(redact.scrub_obj(result)) + b"\n")
    with open(d / "records.jsonl", "wb") as f:
        for r in records:
            f.write(dumps(redact.scrub_obj(r.to_dict())) + b"\n")
    return d


def _first_err(e: Exception) -> str:
    errs = getattr(e, "errors", None)
    if callable(errs):
        first = errs()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}, got {first.get('input')!r}"
    return str(e)


def _live(args: argparse.Namespace, cfg: Any, rep: int) -> Any:
    import contextlib

    if args.quiet or not sys.stderr.isatty():
        return contextlib.nullcontext()
    from specsweep.commands.progress import BenchProgress
    from specsweep.workload.scenarios import default_num_prompts

    n = cfg.num_prompts or default_num_prompts(cfg.max_concurrency or 1)
    rep_s = f" repeat {rep + 1}/{cfg.repeats}" if cfg.repeats > 1 else ""
    return BenchProgress(n, f"bench {cfg.scenario.name} c={cfg.max_concurrency or 'inf'}{rep_s}")


def run(args: argparse.Namespace) -> int:
    from specsweep.client.bench import BenchConfig, run_bench
    from specsweep.console.bench_summary import print_bench_summary
    from specsweep.errors import BenchError
    from specsweep.store.run_dir import dumps

    cfg = build_config(args)
    assert isinstance(cfg, BenchConfig)
    # Known secrets (OPENAI_API_KEY, URL passwords, api keys in the request body) are scrubbed from
    # everything this command writes or prints (specsweep.store.redact).
    redact.register_environ()
    redact.redact_url(cfg.base_url)
    redact.redact_tree({"extra_request_body": cfg.extra_request_body})
    # Output locations are checked before anything is measured (a run is not lost to a typo).
    if args.output_file:
        output_file(args.output_file, "--output-file", parent_must_exist=True)
    records_paths = (
        [_records_path(args.records, rep, cfg.repeats) for rep in range(cfg.repeats)] if args.records else []
    )
    for path in records_paths:
        output_file(path, "--records", parent_must_exist=True)
    status = 0
    for rep in range(cfg.repeats):
        with _live(
            args, cfg, rep
        ) as live:  # a live line on a terminal (specsweep.commands.progress.BenchProgress)
            outcome = run_bench(cfg, ray_address=args.ray_address, on_request=live.advance if live else None)
        res = outcome.result
        res["repeat"] = rep
        if not args.quiet:
            print_bench_summary(res)
        try:
            if args.output_file:
                with open(args.output_file, "ab") as f:
                    f.write(dumps(redact.scrub_obj(res)) + b"\n")
            if records_paths:
                _write_records(records_paths[rep], outcome.records)
        except OSError as e:
            where = rescue(res, outcome.records, rep)
            raise UsageError(f"cannot write the results ({e}); what was measured is saved in {where}") from e
        if res["completed"] == 0:
            raise BenchError(
                redact.scrub_text(
                    f"no request completed against {cfg.base_url} (errors: {res['errors_by_kind']}); "
                    f"first error: {next((r.error for r in outcome.records if r.error), '?')}"
                )
            )
        if outcome.invalid_reason:
            status = EXIT_INVALID_MEASUREMENT
    return status
