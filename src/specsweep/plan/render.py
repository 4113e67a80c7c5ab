"""A plan as Markdown or self-contained HTML (from the same JSON view), and as JSON."""

from __future__ import annotations

import html
import json
from typing import Any

from specsweep.console.md_inert import inert
from specsweep.console.terminal import md_inline, md_tree


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _rules(o: dict[str, Any]) -> str:
    parts = []
    for r in o["rules"]:
        m = r["match"]
        cond = "all" if m == "all" else ", ".join(f"{k}={v}" for k, v in m.items())
        parts.append(f"{cond} -> {r['config']}")
    return "; ".join(parts)


def to_markdown(view: dict[str, Any]) -> str:
    """The plan as Markdown: strings from outside shown as text (``md_tree``), no live HTML and no
    escape that shows inside a code span (:func:`specsweep.console.md_inert.inert`)."""
    return inert(_markdown(view))


def _markdown(view: dict[str, Any]) -> str:
    router = view.get("router")
    view = md_tree({k: v for k, v in view.items() if k != "router"})  # labels from outside: inert
    t = view["traffic"]
    lines = ["# Deployment plan", ""]
    mix = ", ".join(f"{s} {100 * p:.0f}%" for s, p in t["mix"].items())
    slo = ", ".join(f"{k}={v:g}" for k, v in t["slo"].items()) or "none"
    lines += [f"Traffic: {mix}; {t['in_flight']:g} requests in flight; SLO: {slo}; "
              f"{t['gpus_per_instance']} GPU(s) per instance.", ""]  # fmt: skip
    lines += ["| option | kind | GPUs (needed, cell model) | tok/s | goodput | p99 TTFT ms | p99 TPOT ms | meets SLO | "
              "vs single [interval] | how sure | source |",
              "|---|---|---:|---:|---:|---:|---:|---|---|---|---|"]  # fmt: skip
    for o in view["options"]:
        need = o.get("gpus_needed")
        iv = o.get("gain_interval") or [None, None]
        lines.append(
            f"| {o['name']} | {o['kind']} | {o['gpus']} ({need if need else '-'}) | {o['total_throughput']:,.0f} | "
            f"{o['goodput']:,.0f} | {o['p99_ttft_ms']:,.0f} | {o['p99_tpot_ms']:.1f} | "
            f"{'yes' if o['meets_slo'] else 'no'} | {_pct(o.get('gain_vs_single'))} [{_pct(iv[0])}, {_pct(iv[1])}] | "
            f"{o.get('confidence')} | {o['source']} |"
        )
    lines += ["", f"**Recommended: {view['recommended']}** - {view['reason']}.", ""]
    lines += [
        "Figures: each option's whole fleet run on the simulator's engine model (mixed pools' prefill "
        "interference included), scaled to the measured cells where they exist; `cell_model` in the JSON "
        "keeps the per-cell model's figures.",
        "",
    ]
    if t.get("in_flight_by_hour"):
        hours = t["in_flight_by_hour"]
        lines += [f"Daily profile: sized for the peak hour {t['peak_hour']:02d}:00 ({max(hours):g} in flight); "
                  "GPU-hours over the day, the peak fleet kept all day vs scaled per hour:", "",
                  "| option | GPU-hours fixed | GPU-hours scaled | saving |", "|---|---:|---:|---:|"]  # fmt: skip
        for o in view["options"]:
            d = o.get("day") or {}
            if d:
                save = 1 - d["gpu_hours_scaled"] / d["gpu_hours_fixed"]
                lines.append(
                    f"| {o['name']} | {d['gpu_hours_fixed']:,} | {d['gpu_hours_scaled']:,} | {100 * save:.0f}% |"
                )
        lines.append("")
        for o in view["options"]:
            d = o.get("day") or {}
            if d.get("config_by_hour"):
                runs = [f"{h:02d}:00 {c}" for h, c in enumerate(d["config_by_hour"])
                        if h == 0 or c != d["config_by_hour"][h - 1]]  # fmt: skip
                lines += [f"{o['name']}: " + ", ".join(runs) + ".", ""]
    for o in view["options"]:
        lines += [f"## {o['name']}", "", f"Rules: {_rules(o)}", ""]
        for p in o["pools"]:
            flags = p["engine_flags"]
            lines.append(f"- pool `{p['name']}`: {p['config']} x{p['instances']}, "
                         f"{p['in_flight_per_instance']} in flight per instance")  # fmt: skip
            for s, f in p["scenarios"].items():
                lines.append(f"  - {s} ({100 * f['share']:.0f}%): {f['total_throughput']:,.0f} tok/s, "
                             f"p99 TTFT {f['p99_ttft_ms']:,.0f} ms, p99 TPOT {f['p99_tpot_ms']:.1f} ms ({f['source']})")  # fmt: skip
            for eng in ("vllm", "sglang"):
                if flags.get(eng):
                    lines.append(f"  - {eng}: `{flags[eng]}`")
        for v in o.get("verdicts", []):
            if v["verdict"] == "modelled":
                lines.append(f"- {v['scenario']}: {v['config']}@{v['in_flight']} vs {v['vs']}@{v['vs_in_flight']}: "
                             f"modelled, +-{100 * v['half_width']:.1f}% ({'/'.join(v['sources'])})")  # fmt: skip
            else:
                lines.append(f"- {v['scenario']}: {v['config']} vs {v['vs']} at {v['in_flight']}: {v['verdict']} "
                             f"{_pct(v['effect'])} [{_pct(v['ci'][0])}, {_pct(v['ci'][1])}] ({v['basis']})")  # fmt: skip
        if o.get("replayed", {}).get("skipped"):
            lines.append(f"- not replayed on the simulator: {o['replayed']['skipped']}")
        elif o.get("replayed"):
            r = o["replayed"]
            lines.append(f"- replayed on the simulator: {r['total_throughput']:,.0f} tok/s, p99 TTFT "
                         f"{r['p99_ttft_ms']:,.0f} ms, p99 TPOT {r['p99_tpot_ms']:.1f} ms "
                         f"({'within' if r.get('within') else 'OUTSIDE'} the stated uncertainty "
                         + ", ".join(f"{k} +-{100 * v:.0f}%" for k, v in (r.get("tolerance") or {}).items()) + ")")  # fmt: skip
        for n in o.get("notes", []):
            lines.append(f"- note: {n}")
        lines.append("")
    if router:  # the YAML as written inside its fenced block (shown as text there); the prose escaped
        fence = "`" * 3
        body = router["config"].replace(fence, "'" * 3).rstrip()
        lines += [
            "## Router configuration",
            "",
            md_inline(router["why"]),
            "",
            fence + "yaml",
            body,
            fence,
            "",
        ]
    return "\n".join(lines)


def to_html(view: dict[str, Any]) -> str:
    body = html.escape(_markdown(view))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>specsweep plan</title></head>"
            f"<body><pre>{body}</pre><script type='application/json' id='plan'>"
            f"{html.escape(json.dumps(view))}</script></body></html>\n")  # fmt: skip
