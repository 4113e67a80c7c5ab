"""Console summary of one benchmark run, laid out like sglang.bench_serving's, plus our extras."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from specsweep.console.terminal import cell
from specsweep.workload.lengths import result_length_rule_text

_t = cell  # external text as it is (never read as markup), secrets scrubbed, control characters escaped


def _f(v: Any, nd: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if 0 < abs(v) < 10**-nd:  # e.g. a 0.004 ms ITL inside a burst is not "0.00"
            return f"{v:.2g}"
        return f"{v:.{nd}f}"
    return str(v)


def _chunk_proxy(res: dict[str, Any]) -> str:
    """Tokens per chunk, or why it says nothing here: a server that streams one token per event
    (llama-server) shows 1.00 whatever speculation does."""
    tpc = res.get("mean_tokens_per_chunk")
    al = res.get("accept_length")
    if isinstance(tpc, (int, float)) and tpc <= 1.0 and isinstance(al, (int, float)) and al > 1.05:
        return "1 token per event (the server streams each token alone: no speculation signal)"
    return _f(tpc)


def print_bench_summary(res: dict[str, Any], console: Console | None = None) -> None:
    c = console or Console(stderr=False)
    t = Table(title="Serving Benchmark Result", show_header=False, title_style="bold")
    t.add_column("metric")
    t.add_column("value", justify="right")
    rows = [
        ("Backend", res.get("backend")),
        ("Scenario", res.get("scenario")),
        # the --random-*-len rule (issue 19 item 15); a Text cell: its brackets are text, never markup
        ("Request lengths", result_length_rule_text(res) or "-"),
        ("Max request concurrency", res.get("max_concurrency") or "not set"),
        ("Request rate", res.get("request_rate") or "inf"),
        ("Successful requests", res.get("completed")),
        ("Failed requests", f"{res.get('failed')} {res.get('errors_by_kind') or ''}".strip()),
        ("Benchmark duration (s)", res.get("duration")),
        ("Total input tokens", res.get("total_input_tokens")),
        ("Total generated tokens", res.get("total_output_tokens")),
        ("Request throughput (req/s)", res.get("request_throughput")),
        ("Input token throughput (tok/s)", res.get("input_throughput")),
        ("Output token throughput (tok/s)", res.get("output_throughput")),
        ("Total token throughput (tok/s)", res.get("total_throughput")),
        ("Concurrency (measured)", res.get("concurrency")),
        ("Accept length (tokens per decode step)", res.get("accept_length")),
    ]
    if res.get("spec_accept_length") is not None and res.get("accept_length_basis") == "metrics_counters":
        rows.append(("Accept length per drafted step", res.get("spec_accept_length")))
        rows.append(
            (
                "Steps with a draft",
                f"{res['spec_draft_coverage']:.0%}" if res.get("spec_draft_coverage") else None,
            )
        )
    for k, v in rows:
        t.add_row(k, _t(_f(v)))
    for name, key in (("End-to-End Latency", "e2e_latency"), ("Time to First Token", "ttft"),
                      ("Time per Output Token (excl. 1st token)", "tpot"),
                      ("Inter-Token Latency (per token)", "itl"), ("Chunk latency (verify step)", "chunk_latency"),
                      ("Client queue time", "queue")):  # fmt: skip
        t.add_section()
        t.add_row(f"[bold]{name}[/bold]", "")
        for stat in ("mean", "median", "p99"):
            v = res.get(f"{stat}_{key}_ms")
            if key == "itl" and v == 0:  # e.g. llama-server: a step's tokens arrive in one read
                t.add_row(f"{stat.capitalize()} {key} (ms)", "0 (a step's tokens arrive together)")
                continue
            t.add_row(f"{stat.capitalize()} {key} (ms)", _f(v))
    t.add_section()
    t.add_row("Tokens per chunk (mean)", _chunk_proxy(res))
    if res.get("spec_acceptance_rate") is not None:
        t.add_row("Spec acceptance rate", _f(res.get("spec_acceptance_rate"), 3))
    if res.get("request_goodput") is not None:
        t.add_row("Request goodput (req/s)", _f(res.get("request_goodput")))
    sc = res.get("self_check") or {}
    t.add_row(
        "Client CPU / loop lag p99 (ms)",
        f"{sc.get('client_cpu_util', 0):.0%} / {sc.get('loop_lag_p99_ms', 0):.2f}",
    )
    c.print(t)
    for w in res.get("warnings") or []:
        c.print(Text("warning: ", style="yellow").append_text(_t(w)))
    if res.get("invalid"):
        c.print(Text("INVALID RUN: ", style="bold red").append_text(_t(res.get("invalid_reason"))).append(
                " - the client, not the server, limited these numbers; lower the load per process or use "
                "--workers"))  # fmt: skip
