"""Sentences of the compare summary, group counts (who trails, cells set aside, why the ties) and the
deployment headline, in English and Chinese: data only, merged into the report's texts by
:mod:`specsweep.report.i18n` (the rest are in :mod:`specsweep.report.i18n.texts` and :mod:`specsweep.report.i18n.noise`)."""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _t(key: str, en: str, zh: str) -> None:
    TEXTS["en"][key] = en
    TEXTS["zh"][key] = zh


# ---- compare summary (report.build.compare) ----------------------------------------------------
_t(
    "compare.wins_behind",
    "{method} wins (ahead of every other method): {n}; behind another method: {behind}",
    "{method} 胜出（领先其他所有方法）：{n} 个；落后于其他方法：{behind} 个",
)
_t(
    "compare.ties_min",
    "Ties: {n} ({below} with every gap under the {min_effect:.1%} minimum that matters, {noise} not resolvable "
    "from these runs)",
    "持平：{n} 个（{below} 个的差距均低于计为胜出所需的 {min_effect:.1%}，{noise} 个本次数据无法分辨）",
)
_t(
    "compare.ties_all_min",
    "Ties: {n}, every gap under the {min_effect:.1%} minimum that matters",
    "持平：{n} 个，差距均低于计为胜出所需的 {min_effect:.1%}",
)
_t(
    "compare.leaders_even_count",
    "Cells where the leading methods are even with each other and ahead of the rest: {n}",
    "领先的几个方法彼此持平、但领先其余方法的对比点：{n} 个",
)
_t(
    "compare.most",
    "**Conclusion: {winner} has the higher total throughput in {wins} of {n} cells; no other method wins a "
    "cell ({rest} without a single winner).**",
    "**结论：{winner} 在 {n} 个对比点中的 {wins} 个综合吞吐更高；其他方法没有胜出任何对比点（{rest} 个没有唯一胜者）。**",
)
_t(
    "compare.leaders_even",
    "**Conclusion: no method is ahead of every other in any cell: in {k} of {n} cells the leading methods are "
    "even with each other and ahead of the rest ({even} cells show no difference at all); who trails is "
    "listed above.**",
    "**结论：没有任何方法在某个对比点领先其他所有方法：{n} 个对比点中有 {k} 个的领先方法彼此持平、但领先其余方法"
    "（{even} 个完全没有差异）；落后的方法见上方。**",
)
_t(
    "compare.none_min",
    "**Conclusion: no cell shows a gap of at least {min_effect:.1%}, the minimum that matters here "
    "(--min-effect): the methods are even by that standard.**",
    "**结论：没有任何对比点的差距达到计为胜出所需的 {min_effect:.1%}（--min-effect）：按此标准各方法持平。**",
)
_t(
    "compare.none_mixed",
    "**Conclusion: no cell has a winner: in {below} of {n} cells every gap is under the {min_effect:.1%} minimum "
    "that matters, in the other {noise} these runs cannot resolve it (see the tie note above).**",
    "**结论：没有任何对比点有胜者：{n} 个中有 {below} 个的差距均低于计为胜出所需的 {min_effect:.1%}，其余 {noise} 个"
    "本次数据无法分辨（见上方关于持平的说明）。**",
)
_t(
    "compare.behind_all",
    "{method} is behind another method in all {n} cells.",
    "{method} 在全部 {n} 个对比点都落后于其他方法。",
)

# ---- groups (report.build.groups): who trails, why the ties, cells set aside --------------------
_t(
    "group.behind",
    "`{config}` is behind in {k} of its {n} cells here (beaten by {by}).",
    "`{config}` 在此处的 {n} 个点中落后 {k} 个（落后于 {by}）。",
)
_t(
    "ties.why",
    "Of these ties, {below} are gaps under the {min_effect:.1%} minimum that matters and {noise} are not "
    "resolvable from these runs.",
    "这些持平中，{below} 个是差距低于计为胜出所需的 {min_effect:.1%}，{noise} 个是本次数据无法分辨。",
)
_t(
    "aside.cells",
    "{k} of {total} cells set aside: {cells}.",
    "{total} 个点中有 {k} 个未计入：{cells}。",
)
_t(
    "band.tie_min",
    "**{band_label} (c={levels})**: `{config}` and `{other}` are even by the standard set here - in {ties} of {n} "
    "cells the gap is under the {min_effect:.1%} minimum that matters; the largest gap is {max_leader} "
    "+{max_gain:.1%} at {max_scenario} c={max_c}.",
    "**{band_label}（c={levels}）**：按本报告的标准 `{config}` 与 `{other}` 持平——{n} 个点中 {ties} 个的差距低于"
    "计为胜出所需的 {min_effect:.1%}；最大差距为 {max_scenario} c={max_c} 时 {max_leader} 高 {max_gain:.1%}。",
)
_t(
    "rec.any_min",
    "no gap reaches the {min_effect:.1%} minimum that matters: {ties} of {n} cells are ties",
    "没有差距达到计为胜出所需的 {min_effect:.1%}：{n} 个点中 {ties} 个持平",
)
_t(
    "class.reason_tie_min",
    "no winner by the standard set here: in {ties} of {n} cells the gap is under the {min_effect:.1%} minimum "
    "that matters, {wins} won, {losses} lost ({scenarios})",
    "按本报告的标准无胜者：{n} 个点中 {ties} 个的差距低于计为胜出所需的 {min_effect:.1%}，胜 {wins}、负 {losses}"
    "（{scenarios}）",
)
_t(
    "gap.tie_min",
    "even ({gain:.1%}, under the {min_effect:.1%} minimum)",
    "持平（{gain:.1%}，低于 {min_effect:.1%} 的最小差异）",
)

# ---- anomalies: failed requests when some of a cell's runs failed ------------------------------
_t(
    "anomaly.error_burst_runs",
    "{config}: {failed} failed requests ({share:.1%} of all requests of its {runs} runs){kinds_text}; "
    "{failed_runs} of the {runs} runs failed ({error}); the others completed.",
    "{config}：{runs} 次运行共 {failed} 个请求失败（占 {share:.1%}）{kinds_text}；其中 {failed_runs} 次运行失败"
    "（{error}），其余运行正常完成。",
)
_t(
    "anomaly.error_burst_runs_window",
    "{config}: {failed} failed requests ({share:.1%} of all requests of its {runs} runs){kinds_text}, up to "
    "{max_in_1s} of them within one second; {failed_runs} of the {runs} runs failed ({error}); the others "
    "completed.",
    "{config}：{runs} 次运行共 {failed} 个请求失败（占 {share:.1%}）{kinds_text}，最多 {max_in_1s} 个集中在 1 秒内；"
    "其中 {failed_runs} 次运行失败（{error}），其余运行正常完成。",
)

# ---- the deployment headline (report.build.headline) -------------------------------------------------
_t(
    "next.default",
    "Serve `{config}` by default: every load class recommends it ({rows} of {rows}); it wins {wins} of the "
    "{n} cells counted.",
    "默认使用 `{config}`：所有负载类别（{rows} 个）都推荐它；在计入的 {n} 个点中胜出 {wins} 个。",
)
_t(
    "next.default_aside",
    "Serve `{config}` by default: every load class recommends it ({rows} of {rows}); it wins {wins} of the "
    "{n} cells counted ({aside} cells set aside, see the recommendations).",
    "默认使用 `{config}`：所有负载类别（{rows} 个）都推荐它；在计入的 {n} 个点中胜出 {wins} 个（另有 {aside} 个点"
    "未计入，见推荐表）。",
)
_t(
    "next.deploy",
    'Deploy `{config}` for {cells} (its engine flags are under "Engine flags").',
    "在 {cells} 部署 `{config}`（引擎参数见“引擎参数”一节）。",
)
_t(
    "next.default_tie",
    "Serve `{config}` by default: every load class recommends it ({rows} of {rows}); it is the one config the "
    "verdicts pick in {wins} of the {n} cells and covers the others by a tie ({cells}: even with or undecided "
    "against {others} there).",
    "默认使用 `{config}`：所有负载类别（{rows} 个）都推荐它；{n} 个点中有 {wins} 个判定为唯一胜者，其余点以持平覆盖"
    "（{cells}：与 {others} 持平或未判定）。",
)
_t(
    "next.either",
    "{configs} for {cells}: shown even there, so either will do.",
    "{cells}：{configs} 经判定持平，任选其一即可。",
)
_t(
    "next.undecided",
    "{configs} for {cells}: undecided (no verdict picks one); about {more} more runs a side would decide a gap "
    "of {gap:.1%}.",
    "{cells}：{configs} 未判定（没有判定选出其一）；每边再运行约 {more} 次可判定 {gap:.1%} 的差距。",
)
_t(
    "next.undecided_many",
    "{configs} for {cells}: undecided (no verdict picks one); a gap of {gap:.1%} is more than these runs' noise "
    "lets a few more runs decide.",
    "{cells}：{configs} 未判定（没有判定选出其一）；以本次运行的噪声，再多运行几次也无法判定 {gap:.1%} 的差距。",
)

# ---- the verdicts' ties note (report.build.verdict_notes) --------------------------------------------
_t(
    "verdict.ties_min",
    "{ties} of {m} comparisons are ties because their gap (at most {largest:.1%}) is under the {min_effect:.1%} "
    "minimum that matters here (--min-effect), not because of noise.",
    "{m} 个比较中 {ties} 个持平，是因为差距（最大 {largest:.1%}）低于本报告计为胜出所需的 {min_effect:.1%}"
    "（--min-effect），而不是因为噪声。",
)
