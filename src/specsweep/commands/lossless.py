"""`specsweep check-lossless --base-url A --base-url B`: greedy outputs of two servers, compared."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser(
        "check-lossless",
        help="compare greedy outputs of two servers (speculation on vs off)",
        description="Send the same real-text prompts, greedy (temperature 0), to two servers; report the "
        "share of identical outputs and, for each differing pair, the first divergence (token index and the "
        "text around it on both sides) as JSON.",
    )
    p.add_argument("--base-url", action="append", required=True, metavar="URL", help="give twice: A and B")
    p.add_argument("--num-prompts", type=int, default=16)
    p.add_argument("--backend", default="openai", choices=["openai", "openai-chat", "sglang"])
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--model", help="model id (default: each server's first /v1/models entry)")
    p.add_argument("--seed", type=int, default=1, help="prompt sampling seed")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("-o", "--output", metavar="FILE", help="write the JSON here (default: stdout)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from specsweep.client.lossless import check_lossless
    from specsweep.store.paths import output_file, write_failed
    from specsweep.store.run_dir import atomic_write_bytes, dumps

    if args.output:  # before the prompts are sent: a bad path is one line, at once
        output_file(args.output, "-o")
    res = check_lossless(
        args.base_url,
        num_prompts=args.num_prompts,
        backend=args.backend,
        max_tokens=args.max_tokens,
        model=args.model,
        seed=args.seed,
        concurrency=max(1, args.concurrency),
    )
    data = dumps(res.to_dict(), indent=True) + b"\n"
    if args.output:
        from pathlib import Path

        try:
            atomic_write_bytes(Path(args.output), data)
        except OSError as e:
            raise write_failed(e, args.output, "the result") from e
    else:
        sys.stdout.write(data.decode())
    sys.stderr.write(
        f"{res.identical} of {res.n_prompts} outputs identical ({res.share_identical:.1%}); "
        f"{res.n_prompts - res.identical - res.errors} differ, {res.errors} errors\n"
    )
    return 0
