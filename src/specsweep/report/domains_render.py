"""The per-domain section in Markdown and HTML, English and Chinese (strings kept here, beside it)."""

from __future__ import annotations

import html
import math

from specsweep.report import i18n
from specsweep.report.build.domains import DomainAdvice, DomainRow, DomainsView, DomainWinner
from specsweep.report.build.view import Msg, ReportView
from specsweep.report.html.kit import md_inline

_S: dict[str, dict[str, str]] = {
    "en": {
        "title": "Per-domain results",
        "baseline": "Speedup is per-request throughput (and TPOT) against `{b}`, the configuration without "
        "speculation, in the same cell and domain; [low, high] is its interval, at least 95% and widened for "
        "multiplicity like the verdicts.",
        "measured": "Measured per domain (per response): acceptance, TPOT and per-request tok/s (output tokens "
        "per second of request time).",
        "mixed": "{k} runs mix domains in one cell: their throughput is the cell's, not a domain's, so Total "
        'tok/s shows "-" there (the results table above has the cell\'s).',
        "left_out": "Left out (no per-domain numbers):",
        "left_out.line": "{s} c={c} {config}: {status} ({reason})",
        "rec.none": "{cat}: no recommendation - no cell has two configs with valid results ({k} cells).",
        "rec.partial": "{cat}: {k} of {n} cells have fewer than two valid configs and do not count.",
        "col.req": "Req tok/s",
        "no_baseline": "No baseline: mark the no-speculation server `baseline: true` (or pass --baseline) to see speedups.",
        "out.fixed": "Output length: fixed (ignore_eos; every request generates its max tokens).",
        "out.natural": "Output length: natural (requests stop at EOS, capped at their max tokens).",
        "out.mixed": "Output length: mixed (some runs fixed with ignore_eos, some natural).",
        "out.unknown": "Output length: not recorded.",
        "proxy": "Acceptance marked * is the client's tokens-per-chunk proxy: the server reported no counters.",
        "src": "Acceptance length from: {srcs}.",
        "src.verify_ct": "SGLang's per-request verify counts",
        "src.timings": "llama-server's per-response draft counts (timings)",
        "src.server_counters": "the server's /metrics counters over the cell (one domain per cell)",
        "src.chunk_proxy": "the client's tokens-per-chunk proxy (*)",
        "rule": "Winners and speedup verdicts (▲ faster, ▼ slower) use the report's rule at {level:.0%}, "
        "Benjamini-Hochberg adjusted over the {m} pairwise comparisons of the winner table and over the "
        "speedup comparisons, so many domains do not make more false winners.",
        "col.domain": "Domain",
        "col.scenario": "Scenario",
        "col.c": "Conc",
        "col.config": "Config",
        "col.accept": "Accept len",
        "col.tpot": "TPOT (ms)",
        "col.thr": "Total tok/s",
        "col.speedup": "Speedup",
        "col.tpot_speedup": "TPOT speedup",
        "col.winner": "Winner",
        "col.gain": "Gain",
        "col.runner": "vs",
        "winners": "Winner per domain (per-request tok/s)",
        "tie": "tie (not significant)",
        "rec": "Recommendation per domain",
        "rec.line": "{lines}",
        "rec.off": "{cat}: switch speculation off from concurrency {c} on ({s}).",
        "rec.spec": "speculation off",
        "rec.weak": " (lead not significant)",
        "heat": "Speedup (per-request tok/s) over no speculation, domain x config (mean over cells)",
        "heat.rel": "Per-request throughput relative to the domain's best config (mean over cells)",
    },
    "zh": {
        "title": "分领域结果",
        "baseline": "加速比为同一单元、同一领域内相对于 `{b}`（不开投机解码）的单请求吞吐（及 TPOT）之比；[低, 高] 为其区间"
        "（至少 95%，并与判定一样按多重比较放宽）。",
        "measured": "按领域（逐响应）测得：接受长度、TPOT 与单请求 tok/s（每秒请求时间生成的输出 token 数）。",
        "mixed": "有 {k} 次运行在同一单元中混合了多个领域：其吞吐属于整个单元而非某个领域，因此此处 Total tok/s 显示"
        "“-”（单元的吞吐见上方结果表）。",
        "left_out": "未纳入（无分领域数据）：",
        "left_out.line": "{s} c={c} {config}：{status}（{reason}）",
        "rec.none": "{cat}：不作推荐——没有任何单元有两个配置的有效结果（{k} 个单元）。",
        "rec.partial": "{cat}：{n} 个单元中有 {k} 个的有效配置少于两个，不计入。",
        "col.req": "单请求 tok/s",
        "no_baseline": "未设基线：把不开投机解码的服务标记为 `baseline: true`（或使用 --baseline）即可显示加速比。",
        "out.fixed": "输出长度：固定（ignore_eos，每个请求生成到最大 token 数）。",
        "out.natural": "输出长度：自然（遇到 EOS 即停止，上限为最大 token 数）。",
        "out.mixed": "输出长度：混合（部分运行使用 ignore_eos 固定长度，部分为自然长度）。",
        "out.unknown": "输出长度：未记录。",
        "proxy": "带 * 的接受长度为客户端按每块 token 数估计的代理值：服务端未提供计数器。",
        "src": "接受长度来源：{srcs}。",
        "src.verify_ct": "SGLang 的逐请求验证次数",
        "src.timings": "llama-server 逐响应的草稿计数（timings）",
        "src.server_counters": "服务端 /metrics 计数器在单元内的差值（每单元一个领域）",
        "src.chunk_proxy": "客户端按每块 token 数估计的代理值（*）",
        "rule": "胜出与加速判定（▲ 更快，▼ 更慢）沿用报告的判定规则（{level:.0%}），并在胜出表的 {m} 个两两比较之间、"
        "加速比较之间分别做 Benjamini-Hochberg 校正，领域再多也不会多出假胜者。",
        "col.domain": "领域",
        "col.scenario": "场景",
        "col.c": "并发",
        "col.config": "配置",
        "col.accept": "接受长度",
        "col.tpot": "TPOT（ms）",
        "col.thr": "总吞吐 tok/s",
        "col.speedup": "加速比",
        "col.tpot_speedup": "TPOT 加速比",
        "col.winner": "胜出",
        "col.gain": "提升",
        "col.runner": "对比",
        "winners": "各领域胜出配置（单请求 tok/s）",
        "tie": "持平（差异不显著）",
        "rec": "各领域推荐",
        "rec.line": "{lines}",
        "rec.off": "{cat}：从并发 {c} 起应关闭投机解码（{s}）。",
        "rec.spec": "关闭投机解码",
        "rec.weak": "（领先不显著）",
        "heat": "相对不开投机解码的加速比（单请求 tok/s）：领域 x 配置（各单元平均）",
        "heat.rel": "相对该领域最佳配置的单请求吞吐：领域 x 配置（各单元平均）",
    },
}


def _s(key: str, lang: str, **args: object) -> str:
    t = _S.get(lang, _S["en"]).get(key) or _S["en"][key]
    return t.format(**args) if args else t


def _num(x: float | None, d: int = 2) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{d}f}"


def _speedup(r: DomainRow) -> str:
    if r.speedup is None:
        return "-"
    ci = f" [{r.speedup_ci[0]:.2f}, {r.speedup_ci[1]:.2f}]" if r.speedup_ci else ""
    mark = {"faster": " ▲", "slower": " ▼"}.get(r.speedup_verdict or "", "")
    return f"{r.speedup:.2f}x{ci}{mark}"


def _tpot_speedup(r: DomainRow) -> str:
    return "-" if r.tpot_speedup is None else f"{r.tpot_speedup:.2f}x"


def _accept(r: DomainRow) -> str:
    return _num(r.accept_length) + ("*" if r.accept_length_source == "chunk_proxy" else "")


def _left_out(d: DomainsView, lang: str) -> list[str]:
    """The runs without per-domain numbers, one line each."""
    return [_s("left_out.line", lang, s=x.scenario, c=x.concurrency, config=x.config, status=x.status,
               reason=i18n.text(Msg(key="invalid.list", args={"reasons": x.reasons}), lang) if x.reasons
               else x.reason or "-") for x in d.left_out]  # fmt: skip


def _advice_notes(d: DomainsView, lang: str) -> list[str]:
    """Per domain: no recommendation (no cell to compare), cells that did not count, speculation off."""
    out = []
    for a in d.advice:
        if a.config is None and a.uncompared:
            out.append(_s("rec.none", lang, cat=a.category, k=a.uncompared))
        elif a.uncompared:
            out.append(_s("rec.partial", lang, cat=a.category, k=a.uncompared, n=a.cells + a.uncompared))
        out += [_s("rec.off", lang, cat=a.category, c=c, s=s) for s, c in a.off_from]
    return out


def _winner(w: DomainWinner, lang: str, bold: str = "**") -> str:
    """The winner cell: the winner, the leader marked as a tie, or "-" with no valid competitor."""
    if w.runner_up is None:
        return "-"
    return f"{bold}{w.winner}{bold}" if w.winner else f"{w.leader} ({_s('tie', lang)})"


def recommendation_line(adv: list[DomainAdvice], lang: str) -> str:
    """ "coding: ngram k=5; math: ngram k=3; chat: speculation off"."""
    parts = []
    for a in adv:
        if a.config is None:
            continue
        name = _s("rec.spec", lang) if a.is_baseline else a.config
        parts.append(f"{a.category}: {name}" + ("" if a.clear else _s("rec.weak", lang)))
    return "; ".join(parts)


def _intro(d: DomainsView, lang: str) -> list[str]:
    out = [_s("measured", lang)]
    out.append(_s("baseline", lang, b=d.baseline) if d.baseline else _s("no_baseline", lang))
    if d.mixed_cells:
        out.append(_s("mixed", lang, k=d.mixed_cells))
    out.append(_s(f"out.{d.output_length}", lang))
    if d.accept_sources:
        sep = "；" if lang == "zh" else "; "
        out.append(_s("src", lang, srcs=sep.join(_s(f"src.{x}", lang) for x in d.accept_sources)))
    if d.n_compared or d.baseline:
        out.append(_s("rule", lang, level=d.level, m=d.n_compared))
    if d.proxy_used:
        out.append(_s("proxy", lang))
    return out


def _heat(d: DomainsView, rows: list[DomainRow]) -> tuple[bool, dict[tuple[str, str], float]]:
    """(is_speedup, {(category, config): value}): mean speedup, else per-request throughput / the
    cell's best."""
    vals: dict[tuple[str, str], list[float]] = {}
    if d.baseline:
        for r in rows:
            if r.speedup is not None:
                vals.setdefault((r.category, r.config), []).append(r.speedup)
        return True, {k: sum(v) / len(v) for k, v in vals.items()}
    best: dict[tuple[str, str, int], float] = {}
    for r in rows:
        if r.per_request_tok_s:
            k = (r.category, r.scenario, r.concurrency)
            best[k] = max(best.get(k, 0.0), r.per_request_tok_s)
    for r in rows:
        b = best.get((r.category, r.scenario, r.concurrency))
        if r.per_request_tok_s and b:
            vals.setdefault((r.category, r.config), []).append(r.per_request_tok_s / b)
    return False, {k: sum(v) / len(v) for k, v in vals.items()}


def domains_markdown(view: ReportView, lang: str) -> list[str]:
    d = view.domain_summary
    if d is None or not d.shown:
        return []
    rows = view.domains
    out = ["---", "", f"## {_s('title', lang)}", ""]
    out += [f"- {x}" for x in _intro(d, lang)] + [""]
    head = ["col.domain", "col.scenario", "col.c", "col.config", "col.accept", "col.tpot", "col.req", "col.thr",
            "col.speedup", "col.tpot_speedup"]  # fmt: skip
    out.append("| " + " | ".join(_s(h, lang) for h in head) + " |")
    out.append("|" + "|".join(["---"] * 4 + ["---:"] * 6) + "|")
    for r in rows:
        tps = _tpot_speedup(r)
        out.append(f"| {r.category} | {r.scenario} | {r.concurrency} | {r.config} | {_accept(r)} | "
                   f"{_num(r.mean_tpot_ms)} | {_num(r.per_request_tok_s, 1)} | {_num(r.total_throughput, 1)} | "
                   f"{_speedup(r)} | {tps} |")  # fmt: skip
    if d.left_out:
        out += ["", _s("left_out", lang), ""] + [f"- {x}" for x in _left_out(d, lang)]
    out += ["", f"### {_s('winners', lang)}", ""]
    out.append("| " + " | ".join(_s(h, lang) for h in ["col.domain", "col.scenario", "col.c", "col.winner", "col.runner",
                                                        "col.gain"]) + " |")  # fmt: skip
    out.append("|---|---|---:|---|---|---:|")
    for w in d.winners:
        win = _winner(w, lang)
        gain = "-" if w.gain is None else f"{w.gain:.1%}"
        out.append(
            f"| {w.category} | {w.scenario} | {w.concurrency} | {win} | {w.runner_up or '-'} | {gain} |"
        )
    out += ["", f"### {_s('rec', lang)}", ""]
    line = recommendation_line(d.advice, lang)
    if line:
        out.append(f"**{line}**")
        out.append("")
    out += ["- " + x for x in _advice_notes(d, lang)]
    out.append("")
    return out


def _color(v: float, speedup: bool) -> str:
    # speedup: red below 1, white at 1, green above (log scale, saturating at 2x); relative: white..green
    x = max(-1.0, min(1.0, math.log2(v))) if speedup and v > 0 else (v - 1.0) * 4 if not speedup else -1.0
    x = max(-1.0, min(1.0, x))
    hue = 130 if x >= 0 else 0
    light = 97 - 45 * abs(x)
    return f"background:hsl({hue},60%,{light:.0f}%)"


def domains_html(view: ReportView, lang: str) -> tuple[str, str] | None:
    """(section title, body HTML) of the per-domain section, or None when the runs had no domains."""
    d = view.domain_summary
    if d is None or not d.shown:
        return None
    e = html.escape
    parts = ["<ul>" + "".join(f"<li>{e(x.replace('`', ''))}</li>" for x in _intro(d, lang)) + "</ul>"]
    is_speedup, heat = _heat(d, view.domains)
    cats = [c for c in d.categories]
    cap = _s("heat" if is_speedup else "heat.rel", lang)
    head = "".join(f"<th scope='col'>{e(c)}</th>" for c in d.configs)
    body = []
    for cat in cats:
        tds = []
        for cfg in d.configs:
            v = heat.get((cat, cfg))
            style = f' style="{_color(v, is_speedup)}"' if v is not None else ""
            tds.append(f"<td class='num'{style} title='{e(cat)} / {e(cfg)}'>{_num(v)}</td>")
        body.append(f"<tr><th scope='row'>{e(cat)}</th>{''.join(tds)}</tr>")
    parts.append(f"<table class='heatmap domains-heat'><caption>{e(cap)}</caption><thead><tr><th>"
                 f"{e(_s('col.domain', lang))}</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")  # fmt: skip
    cols = [
        "col.domain",
        "col.scenario",
        "col.c",
        "col.config",
        "col.accept",
        "col.tpot",
        "col.req",
        "col.thr",
        "col.speedup",
        "col.tpot_speedup",
    ]
    trs = "".join(
        f"<tr><td>{e(r.category)}</td><td>{e(r.scenario)}</td><td class='num'>{r.concurrency}</td><td>{e(r.config)}</td>"
        f"<td class='num'>{e(_accept(r))}</td><td class='num'>{_num(r.mean_tpot_ms)}</td>"
        f"<td class='num'>{_num(r.per_request_tok_s, 1)}</td>"
        f"<td class='num'>{_num(r.total_throughput, 1)}</td><td class='num'>{e(_speedup(r))}</td>"
        f"<td class='num'>{_tpot_speedup(r)}</td></tr>"
        for r in view.domains
    )
    parts.append("<table class='domains'><thead><tr>" + "".join(f"<th>{e(_s(c, lang))}</th>" for c in cols)
                 + f"</tr></thead><tbody>{trs}</tbody></table>")  # fmt: skip
    if d.left_out:
        parts.append(f"<p>{e(_s('left_out', lang))}</p><ul>" + "".join(f"<li>{e(x)}</li>" for x in _left_out(d, lang))
                     + "</ul>")  # fmt: skip
    wrows = "".join(
        f"<tr><td>{e(w.category)}</td><td>{e(w.scenario)}</td><td class='num'>{w.concurrency}</td>"
        f"<td>{md_inline(e(_winner(w, lang)))}</td><td>{e(w.runner_up or '-')}</td>"
        f"<td class='num'>{'-' if w.gain is None else f'{w.gain:.1%}'}</td></tr>"
        for w in d.winners
    )
    wcols = ["col.domain", "col.scenario", "col.c", "col.winner", "col.runner", "col.gain"]
    parts.append(f"<h3>{e(_s('winners', lang))}</h3><table class='domain-winners'><thead><tr>"
                 + "".join(f"<th>{e(_s(c, lang))}</th>" for c in wcols) + f"</tr></thead><tbody>{wrows}</tbody></table>")  # fmt: skip
    line = recommendation_line(d.advice, lang)
    recs = [f"<p><strong>{e(_s('rec', lang))}</strong>: {e(line)}</p>"] if line else []
    notes = _advice_notes(d, lang)
    if notes:
        recs.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in notes) + "</ul>")
    parts += recs
    return _s("title", lang), "\n".join(parts)
