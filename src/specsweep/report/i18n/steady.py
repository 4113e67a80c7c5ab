"""The sentences of the report's steady-state notes (cells whose runs were a burst rather than the
steady state at their concurrency), in English and Chinese: data only. :mod:`specsweep.report.i18n`
merges them with the other sentences."""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _t(key: str, en: str, zh: str) -> None:
    TEXTS["en"][key] = en
    TEXTS["zh"][key] = zh


_t(
    "steady.not_steady",
    "{scenario} c={c} ({configs}): not at steady state: {waves:.3g} wave(s) of requests (num_prompts / "
    "concurrency), {share:.0%} of the run at concurrency {c} (steady: at least {min_waves:g} waves and "
    "{min_share:.0%}). Its figures are those of a burst and its drain, with fewer requests in flight than "
    "{c} for much of the run: throughput reads high and TPOT low (in the simulator one wave shows up to "
    "about 2x the steady-state throughput and a third of its TPOT), and a verdict here may not hold at "
    "steady state. More waves (num_prompts = 3 x concurrency or more) measure it; docs/metrics.md, "
    '"Steady state".',
    "{scenario} c={c}（{configs}）：未达到稳态：请求仅 {waves:.3g} 轮（num_prompts / 并发），运行时间中只有 "
    "{share:.0%} 处于并发 {c}（稳态要求：至少 {min_waves:g} 轮且 {min_share:.0%}）。其数据反映的是一次突发及其收尾，"
    "运行的大部分时间在途请求少于 {c}：吞吐量偏高、TPOT 偏低（模拟器中单轮的吞吐量可达稳态的约 2 倍，TPOT 约为其三分之一），"
    "此处的判定在稳态下未必成立。增加轮数（num_prompts = 3 x 并发或更多）即可测得稳态；见 docs/metrics.md“Steady state”。",
)
_t(
    "steady.all_steady",
    "Steady state: every closed-loop cell ran at least {min_waves:g} waves of requests with at least "
    "{min_share:.0%} of its run at its target concurrency (lowest: {low:.0%}, {low_cell}); each run's "
    'figures over that window are in its result line (steady_*; docs/metrics.md, "Steady state").',
    "稳态：每个闭环测试点都至少运行了 {min_waves:g} 轮请求，且至少 {min_share:.0%} 的运行时间处于目标并发"
    "（最低：{low:.0%}，{low_cell}）；每次运行在该窗口内的数据见其结果行（steady_*；见 docs/metrics.md“Steady state”）。",
)
_t(
    "steady.few_prompts",
    "{scenario} c={c} ({configs}): measured only by the racing design's short runs, {n} request(s) a run "
    "(fewer than {few}): its figures are those of the cell's first prompts, not the scenario's mix (at low concurrency a few "
    "prompts move throughput by tens of percent from one sample to the next). Every config ran the same prompts, so its verdicts compare like with like; a full-length run measures "
    'the figures (docs/metrics.md, "Steady state").',
    "{scenario} c={c}（{configs}）：仅由竞速设计的短运行测得，每次运行 {n} 个请求（少于 {few}）：其数据反映的是该测试点最前面的这几个提示词，"
    "而非该场景的整体分布（低并发时，几个提示词的吞吐量在不同样本间可相差数十个百分点）。"
    "各配置运行的是相同的提示词，因此判定是同条件比较；完整长度的运行才能测得这些数据（见 docs/metrics.md“Steady state”）。",
)
