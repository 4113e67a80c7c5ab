"""Every string a report shows, in English and Chinese, in one place.

``label(key, lang)`` gives a short label (column header, section title, enum value);
``text(msg, lang)`` renders a :class:`~specsweep.report.view.Msg` (``str.format`` with the message's
arguments; templates format numbers themselves, e.g. ``{gain:.2%}``). Unknown languages fail with
the list of accepted ones; a key missing in one language falls back to English.
"""

from __future__ import annotations

import math
from typing import Any

from specsweep.errors import UsageError, one_of
from specsweep.report.view import Msg

LANGS = ("en", "zh")

# ---- short labels ------------------------------------------------------------------------------
_LABELS: dict[str, dict[str, str]] = {
    "en": {
        # columns
        "col.scenario": "Scenario",
        "col.concurrency": "Concurrency",
        "col.method": "Method",
        "col.config": "Config",
        "col.param.spec_tokens": "Spec",
        "col.winner": "Winner",
        "col.winner_by": "Winner ({metric})",
        "col.gain": "Gain",
        "col.gap": "Gap",
        "col.value_of": "{config} {metric}",
        "col.workload": "Workload",
        "col.workload_class": "Workload class",
        "col.best": "Best config",
        "col.reason": "Reason",
        "col.recommended": "Recommended",
        "col.note": "Note",
        "col.expected_gain": "Expected gain",
        "col.confidence": "Confidence",
        "col.flags": "Engine flags",
        "col.kind": "Kind",
        "col.evidence": "Evidence",
        "col.concurrency_range": "Concurrency",
        "col.ratio": "Mean ratio",
        "col.repeats": "Runs",
        # metrics (the reference reports' headers)
        "metric.duration": "Duration(s)",
        "metric.request_throughput": "Req/s",
        "metric.output_throughput": "Out tok/s",
        "metric.input_throughput": "In tok/s",
        "metric.total_throughput": "Total tok/s",
        "metric.mean_e2e_latency_ms": "Mean E2E(ms)",
        "metric.median_e2e_latency_ms": "Median E2E(ms)",
        "metric.p90_e2e_latency_ms": "P90 E2E(ms)",
        "metric.p95_e2e_latency_ms": "P95 E2E(ms)",
        "metric.p99_e2e_latency_ms": "P99 E2E(ms)",
        "metric.mean_ttft_ms": "Mean TTFT(ms)",
        "metric.median_ttft_ms": "Median TTFT(ms)",
        "metric.p95_ttft_ms": "P95 TTFT(ms)",
        "metric.p99_ttft_ms": "P99 TTFT(ms)",
        "metric.mean_tpot_ms": "Mean TPOT(ms)",
        "metric.median_tpot_ms": "Median TPOT(ms)",
        "metric.p95_tpot_ms": "P95 TPOT(ms)",
        "metric.p99_tpot_ms": "P99 TPOT(ms)",
        "metric.mean_itl_ms": "Mean ITL(ms)",
        "metric.p99_itl_ms": "P99 ITL(ms)",
        "metric.accept_length": "Accept len",
        "metric.short.mean_e2e_latency_ms": "Mean E2E",
        "metric.short.mean_tpot_ms": "Mean TPOT",
        "metric.short.mean_ttft_ms": "Mean TTFT",
        "metric.short.total_throughput": "Total tok/s",
        # values
        "verdict.tie": "tie",
        "value.missing": "missing",
        "value.failed": "failed",
        "value.invalid": "invalid",
        "value.any": "either",
        "value.none": "-",
        "band.low": "Low concurrency",
        "band.mid": "Medium concurrency",
        "band.high": "High concurrency",
        "confidence.high": "high",
        "confidence.medium": "medium",
        "confidence.low": "low",
        "class.chat": "chat",
        "class.rag": "RAG (medium context)",
        "class.long_context": "long context",
        "class.decode_heavy": "decode heavy",
        "class.generation": "generation",
        "class.all": "all workloads",
        "anomaly.trend_outlier": "outlier vs. trend",
        "anomaly.prefix_cache": "suspected prefix-cache reuse",
        "anomaly.invalid_run": "invalid client run",
        "anomaly.error_burst": "failed requests",
        "check.warn": "warning",
        "check.info": "note",
        # sections
        "sec.provenance": "Provenance",
        "sec.core": "Core metrics",
        "sec.winners": "Throughput winners",
        "sec.winners_by": "Throughput winners (by {metric})",
        "sec.findings": "Key findings",
        "sec.bands": "Findings by concurrency",
        "sec.class_best": "Best config per workload class",
        "sec.gaps": "Gap as concurrency rises",
        "sec.anomalies": "Anomalies",
        "sec.crossovers": "Crossovers",
        "sec.recommendations": "Recommendations",
        "sec.recommended_configs": "Recommended configuration",
        "sec.schedule": "Per-concurrency schedule",
        "sec.flags": "Engine flags",
        "sec.checks": "Domain checks",
        "sec.next_steps": "Next steps",
        "sec.method_notes": "Method",
        "sec.latency": "Latency and stability",
        "sec.wins": "Win counts",
        "sec.conclusion": "Conclusion",
        "sec.lossless": "Losslessness check",
        # provenance keys
        "prov.run_dirs": "Result directories",
        "prov.models": "Models",
        "prov.backends": "Backends",
        "prov.servers": "Servers",
        "prov.clients": "Benchmark client",
        "prov.warmup": "Warmup",
        "prov.warmup_n": "{n} requests",
        "prov.simulated": "Simulated",
        "prov.simulated_yes": "yes (simulated engine, time scale {scale})",
        "prov.sources": "Source",
        "prov.compared": "Compared",
        "prov.noise": "Noise floor",
        "prov.generated": "Generated",
        "prov.tool": "Tool",
    },
    "zh": {
        "col.scenario": "Scenario",
        "col.concurrency": "Concurrency",
        "col.method": "Method",
        "col.config": "配置",
        "col.param.spec_tokens": "Spec",
        "col.winner": "Winner",
        "col.winner_by": "Winner ({metric})",
        "col.gain": "提升",
        "col.gap": "差距",
        "col.value_of": "{config} {metric}",
        "col.workload": "负载特征",
        "col.workload_class": "负载类型",
        "col.best": "最佳配置",
        "col.reason": "原因",
        "col.recommended": "推荐配置",
        "col.note": "说明",
        "col.expected_gain": "预期收益",
        "col.confidence": "置信度",
        "col.flags": "引擎参数",
        "col.kind": "类型",
        "col.evidence": "证据",
        "col.concurrency_range": "并发",
        "col.ratio": "平均比值",
        "col.repeats": "次数",
        "verdict.tie": "持平",
        "value.missing": "缺失",
        "value.failed": "失败",
        "value.invalid": "无效",
        "value.any": "均可",
        "band.low": "低并发",
        "band.mid": "中并发",
        "band.high": "高并发",
        "confidence.high": "高",
        "confidence.medium": "中",
        "confidence.low": "低",
        "class.chat": "对话",
        "class.rag": "RAG（中长输入）",
        "class.long_context": "长上下文",
        "class.decode_heavy": "重 decode",
        "class.generation": "生成",
        "class.all": "全部负载",
        "anomaly.trend_outlier": "偏离趋势",
        "anomaly.prefix_cache": "疑似前缀缓存复用",
        "anomaly.invalid_run": "无效的压测",
        "anomaly.error_burst": "请求失败",
        "check.warn": "警告",
        "check.info": "提示",
        "sec.provenance": "测试信息",
        "sec.core": "核心指标对比",
        "sec.winners": "吞吐 winner 统计",
        "sec.winners_by": "吞吐 Winner 统计（按 {metric}）",
        "sec.findings": "关键发现",
        "sec.bands": "并发是决定性因素",
        "sec.class_best": "各负载类型的最佳配置",
        "sec.gaps": "随并发增加的差距",
        "sec.anomalies": "异常",
        "sec.crossovers": "交叉点",
        "sec.recommendations": "优化建议",
        "sec.recommended_configs": "推荐配置",
        "sec.schedule": "按并发切换",
        "sec.flags": "引擎参数",
        "sec.checks": "领域检查",
        "sec.next_steps": "下一步",
        "sec.method_notes": "方法说明",
        "sec.latency": "延迟与稳定性观察",
        "sec.wins": "胜出统计",
        "sec.conclusion": "结论",
        "sec.lossless": "无损性检查",
        "prov.run_dirs": "结果目录",
        "prov.models": "模型",
        "prov.backends": "后端",
        "prov.servers": "服务",
        "prov.clients": "压测客户端",
        "prov.warmup": "Warmup",
        "prov.warmup_n": "{n} 条",
        "prov.simulated": "模拟",
        "prov.simulated_yes": "是（模拟引擎，时间缩放 {scale}）",
        "prov.sources": "来源",
        "prov.compared": "对比参数",
        "prov.noise": "噪声阈值",
        "prov.generated": "生成时间",
        "prov.tool": "工具",
    },
}

# ---- sentences (templates; arguments named in each Msg) ---------------------------------------
_TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _t(key: str, en: str, zh: str) -> None:
    _TEXTS["en"][key] = en
    _TEXTS["zh"][key] = zh


def check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise UsageError(f"--lang: {one_of(lang, LANGS)}")
    return lang


def label(key: str, lang: str, **args: Any) -> str:
    """A short label; unknown keys render as the key's last part (so new metrics still show)."""
    check_lang(lang)
    s = _LABELS[lang].get(key) or _LABELS["en"].get(key)
    if s is None:
        return key.rsplit(".", 1)[-1]
    return s.format(**args) if args else s


def has_label(key: str) -> bool:
    return key in _LABELS["en"]


def text(msg: Msg, lang: str) -> str:
    """Render a message; a missing template is a programming error (KeyError names the key)."""
    check_lang(lang)
    tmpl = _TEXTS[lang].get(msg.key) or _TEXTS["en"][msg.key]
    return tmpl.format_map(_Args(msg.args, lang))


class _Args(dict[str, Any]):
    """Template arguments; ``{x_label}`` looks up ``label(x)`` so templates can name labels."""

    def __init__(self, args: dict[str, Any], lang: str) -> None:
        super().__init__(args)
        self.lang = lang

    def __missing__(self, key: str) -> Any:
        if key.endswith("_label") and key[: -len("_label")] in self:
            return label(str(self[key[: -len("_label")]]), self.lang)
        raise KeyError(key)


# ---- number formatting shared by renderers ------------------------------------------------------
def fmt_num(x: float | int | None, decimals: int = 2, lang: str = "en") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return label("value.none", lang)
    return f"{x:.{decimals}f}"


def fmt_pct(x: float | None, decimals: int = 2, lang: str = "en") -> str:
    if x is None or not math.isfinite(x):
        return label("value.none", lang)
    return f"{x * 100:.{decimals}f}%"
