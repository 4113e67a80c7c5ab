"""The adaptive design's report strings (section "how each cell was decided"), English and Chinese:
data only. :mod:`specsweep.report.i18n` merges them into its tables (labels and sentences), so
``label()`` and ``text()`` find them like any other.
"""

from __future__ import annotations

LABELS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}
TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _l(key: str, en: str, zh: str) -> None:
    LABELS["en"][key] = en
    LABELS["zh"][key] = zh


def _t(key: str, en: str, zh: str) -> None:
    TEXTS["en"][key] = en
    TEXTS["zh"][key] = zh


_l("sec.design", "How each cell was decided (adaptive design)", "各测试点如何判定（自适应设计）")
_l("prov.design", "Adaptive design", "自适应设计")
_l("design.cost", "Cost", "用时")
_l("col.design_pair", "Comparison", "比较")
_l("col.design_runs", "Runs per config", "每个配置的运行次数")
_l("col.design_effect", "Effect [interval]", "差异 [区间]")
_l("col.design_result", "Result", "结果")
_l("col.design_stop", "Stopped by", "停止原因")
_l("design.stop.decided", "decided", "已判定")
_l("design.stop.equivalent", "equivalent", "等效")
_l("design.stop.max_repeats", "max repeats", "达到最大重复次数")
_l("design.stop.budget", "budget", "预算用尽")
_l("design.stop.behind", "clearly behind", "明显落后")
_l("design.stop.futile", "more runs would not decide it", "再多运行也无法判定")
_l("design.stop.running", "still running", "仍在测量")
_l("design.stop.none", "-", "-")

_t(
    "design.summary",
    "{spent} spent ({runs} runs in {rounds} rounds, {launches} server launches); the same grid with "
    "`repeats: 3` would have cost about {baseline} ({share:.0%} of it spent), a single pass about "
    "{single} ({single_share:.0%} of it spent)",
    "用时 {spent}（{rounds} 轮共 {runs} 次运行，{launches} 次启动服务）；同一网格使用 `repeats: 3` "
    "约需 {baseline}（本次用时为其 {share:.0%}），单次遍历约需 {single}（本次用时为其 {single_share:.0%}）",
)
_t(
    "design.settings",
    "metric `{metric}`; configs within ±{margin:.0%} count as equivalent; at most {max_repeats} runs per config "
    "and cell; false-winner level {level:.0%} (Benjamini-Hochberg over the grid), held however often the design "
    "looked at the data",
    "指标 `{metric}`；相差在 ±{margin:.0%} 以内的配置视为等效；每个配置每个测试点最多运行 {max_repeats} 次；"
    "误判胜者率上限 {level:.0%}（对整个网格做 Benjamini-Hochberg 校正），无论设计查看数据多少次都成立",
)
_t(
    "design.settings_race",
    "metric `{metric}`; configs within ±{margin:.0%} count as equivalent; each cell's later runs take at most "
    "{max_repeats} full runs' time per config (up to {max_runs} shorter runs) in at most {launches} server "
    "launches per config; false-winner level {level:.0%} (Benjamini-Hochberg over the grid), held however often "
    "the design looked at the data",
    "指标 `{metric}`；相差在 ±{margin:.0%} 以内的配置视为等效；每个测试点后续运行每个配置最多用 {max_repeats} 次完整运行的时间"
    "（至多 {max_runs} 次较短运行），每个配置至多启动服务 {launches} 次；误判胜者率上限 {level:.0%}"
    "（对整个网格做 Benjamini-Hochberg 校正），无论设计查看数据多少次都成立",
)
_l("design.budget", "budget", "预算")
_t("design.budget_seconds", "{seconds}", "{seconds}")
_t("design.budget_none", "none (max repeats only)", "无（仅受最大重复次数限制）")
_t(
    "design.budget_share",
    "{share:.0%} of the repeats: 3 grid ({seconds})",
    "repeats: 3 网格的 {share:.0%}（{seconds}）",
)
_t("design.pair", "`{a}` vs `{b}`", "`{a}` 对 `{b}`")
_t("design.why.decided", "`{winner}` wins", "`{winner}` 胜出")
_t("design.why.equivalent", "equivalent within ±{margin:.0%}", "在 ±{margin:.0%} 以内等效")
_t(
    "design.why.undecided",
    "undecided: about {more} more runs per config would decide a gap of {gap:.1%}",
    "未判定：每个配置约再运行 {more} 次可判定 {gap:.1%} 的差异",
)
_t("design.why.undecided_plain", "undecided", "未判定")
_t("design.why.no_data", "no valid runs to compare", "没有可比较的有效运行")
_t(
    "design.intro_race",
    "Racing on short first looks: every config ran a short run of every cell in one server launch (look 0); "
    "a config decided behind there got nothing more in that cell. The configs still in a cell were launched "
    "again, each holding all its pending cells, with the run length and count the design chose per cell; a cell "
    "stops when its leader is decided, when the configs are shown equivalent within the margin, when the "
    "launches allowed are used, or when the budget is spent. Runs per config count short runs too. Effects "
    "favour the first config of the pair; the interval is the one the decision rests on.",
    "短首轮竞速：每个配置在一次服务启动内对每个测试点先做一次短运行（第 0 轮）；在该处被判定落后的配置在该测试点不再运行。"
    "仍在竞争的配置再次启动，每次启动完成其全部待运行的测试点，运行长度和次数由设计按测试点选定；当领先者已判定、各配置在容差内被证明等效、"
    "允许的启动次数用完或预算用尽时，该测试点停止。每个配置的运行次数也计入短运行。差异以比较中第一个配置为正方向；区间为判定所依据的区间。",
)
_t(
    "design.intro",
    "Every config ran every cell once (the first pass); then the design repeated only what was still undecided, "
    "each config's pending runs in one server launch per round. A cell stops when its leader is decided, when "
    "the configs are shown equivalent within the margin, at the most runs per config, or when the budget is "
    "spent. Effects favour the first config of the pair; the interval is the one the decision rests on.",
    "先让每个配置在每个测试点各运行一次（首轮），之后只重复仍未判定的部分，每一轮中每个配置的待运行项在一次服务启动内完成。"
    "当领先者已判定、各配置在容差内被证明等效、达到每个配置的最大运行次数或预算用尽时，该测试点停止。差异以比较中第一个配置为正方向；"
    "区间为判定所依据的区间。",
)
