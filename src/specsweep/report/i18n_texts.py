"""Sentences (message templates) in English and Chinese: data only.

A new sentence is one ``_t(key, en, zh)`` call here. Arguments are named in each
:class:`~specsweep.report.view.Msg`: numbers raw (fractions for percentages), templates format them
(``{gain:.2%}``); ``{x_label}`` renders ``label(x)``. :func:`specsweep.report.i18n.text` renders them.
"""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _t(key: str, en: str, zh: str) -> None:
    TEXTS["en"][key] = en
    TEXTS["zh"][key] = zh


_t("title.sweep", "{method} `{param}` comparison report", "{method} `{param}` 对比报告")
_t("title.sweep_any", "{method} configuration comparison report", "{method} 配置对比报告")
_t("title.compare", "{methods}: speculative decoding comparison report", "{methods} 投机解码对比报告")

_t(
    "noise.default",
    "single runs, nothing measured: verdicts assume a run-to-run noise of {sigma:.0%} per run (not measured); "
    "anomalies use a {floor:.0%} floor",
    "单次运行且无实测噪声：判定假设每次运行的运行间噪声为 {sigma:.0%}（未实测）；异常检测使用 {floor:.0%} 阈值",
)
_t(
    "noise.aa",
    "{floor:.1%}, measured from {n} A/A pairs (the same config and cell in two runs); run-to-run noise "
    "{sigma:.1%} per run",
    "{floor:.1%}，由 {n} 组 A/A 对（同一配置、同一测试点的两次运行）测得；每次运行的运行间噪声 {sigma:.1%}",
)
_t(
    "noise.repeats",
    "{floor:.1%}, measured from the repeats of {n} cells; run-to-run noise {sigma:.1%} per run",
    "{floor:.1%}，由 {n} 个测试点的重复运行测得；每次运行的运行间噪声 {sigma:.1%}",
)
_t(
    "verdict.rule",
    "{tests_counts}; false-winner level {level:.0%}; {adj_label} over {m} comparisons; a winner's interval "
    "excludes 0 at that adjusted level (runs per config: {runs})",
    "{tests_counts}；误判胜者率上限 {level:.0%}；对 {m} 个比较做 {adj_label} 校正；胜者的置信区间在校正后的水平下"
    "不含 0（每个配置的运行次数：{runs}）",
)
_t(
    "verdict.rule_seq",
    "the adaptive design's sequential rule: a look at the first pass, then at each round, the level spent "
    "over the looks as fixed in advance, so it holds however often the design looked; the test at the "
    "deciding look: {tests_counts}; false-winner level {level:.0%}; {adj_label} over {m} comparisons; a winner's interval excludes 0 at "
    "that adjusted level (runs per config at the deciding look: {runs})",
    "自适应设计的序贯规则：首轮之后查看一次，之后每一轮各查看一次，检验水平按事先确定的比例分配到各次查看，"
    "因此无论设计查看数据多少次都成立；作出判定那次查看所用的检验：{tests_counts}；误判胜者率上限 {level:.0%}；对 {m} 个比较做 {adj_label} 校正；胜者的置信区间在"
    "校正后的水平下不含 0（作出判定那次查看时每个配置的运行次数：{runs}）",
)
_t(
    "verdict.ties",
    "{ties} of {m} comparisons are ties: differences under ~{detectable:.0%} are not resolvable with {runs} "
    "run(s) per config; resolving {target:.0%} with {power:.0%} probability in each of the {m} comparisons "
    "takes about {need} runs per config at the {basis_label} noise ({sigma:.1%} per run, planned at its 90% "
    "upper bound)",
    "{m} 个比较中 {ties} 个持平：每个配置 {runs} 次运行时，约 {detectable:.0%} 以下的差异无法分辨；按{basis_label}噪声"
    "（每次运行 {sigma:.1%}，按其 90% 置信上限规划），要在全部 {m} 个比较中各以 {power:.0%} 的概率分辨 {target:.0%} 的差异，"
    "每个配置约需运行 {need} 次",
)
_t(
    "verdict.ties_beyond",
    "{ties} of {m} comparisons are ties: differences under ~{detectable:.0%} are not resolvable with {runs} "
    "run(s) per config; resolving {target:.0%} with {power:.0%} probability in each of the {m} comparisons at "
    "the {basis_label} noise ({sigma:.1%} per run) takes more than {need} runs per config",
    "{m} 个比较中 {ties} 个持平：每个配置 {runs} 次运行时，约 {detectable:.0%} 以下的差异无法分辨；按{basis_label}噪声"
    "（每次运行 {sigma:.1%}），要在全部 {m} 个比较中各以 {power:.0%} 的概率分辨 {target:.0%} 的差异，每个配置需运行超过 "
    "{need} 次",
)
_t(
    "verdict.ties_assumed",
    "{ties} of {m} comparisons are ties: differences under ~{detectable:.0%} are not resolvable from single runs "
    "whose run-to-run noise is not measured and is assumed to be {sigma:.0%} per run (the top of what busy hosts "
    "show); measure it with 2 or more runs per config (repeats: 2) or an A/A run (one config run twice): at "
    "{sigma:.0%} noise resolving {target:.0%} with {power:.0%} probability in each of the {m} comparisons takes "
    "about {need} runs per config, far fewer if the measured noise is lower",
    "{m} 个比较中 {ties} 个持平：单次运行的运行间噪声未实测，按假设值每次运行 {sigma:.0%}（繁忙主机上常见的上限）"
    "计算，约 {detectable:.0%} 以下的差异无法分辨；请用每个配置 2 次以上运行（repeats: 2）或 A/A 运行（同一配置运行两次）"
    "实测噪声：按 {sigma:.0%} 噪声，要在全部 {m} 个比较中各以 {power:.0%} 的概率分辨 {target:.0%} 的差异，每个配置约需运行 "
    "{need} 次，实测噪声更低时所需次数少得多",
)
_t(
    "note.noise_per_config",
    "Run-to-run noise per config (total throughput; each config its own, pooled over its cells, with the "
    "degrees of freedom it counts for): {list}.",
    "各配置的运行间噪声（总吞吐；每个配置各自测得，在其所有测试点上合并，括号内为自由度）：{list}。",
)
_t(
    "note.noise_unmeasured",
    "Not measured (no repeats): {list}; their side of a comparison assumes {sigma:.0%} per run.",
    "未实测（无重复运行）：{list}；比较时这一侧按每次运行 {sigma:.0%} 的假设噪声计算。",
)
_t(
    "note.drift_rounds",
    "The host drifted by about {size:.1%} over the run order ({where}); the runs were interleaved in rounds, "
    "and the verdicts take the drift out (round levels and a linear trend).",
    "运行期间主机性能漂移约 {size:.1%}（{where}）；各配置按轮次交错运行，判定已扣除漂移（各轮水平与线性趋势）。",
)
_t(
    "note.drift_linear",
    "The host drifted by about {size:.1%} over the run order ({where}); the verdicts take out a linear trend "
    "in run order, which widens their intervals (run_order: interleaved measures drift at lower cost).",
    "运行期间主机性能漂移约 {size:.1%}（{where}）；判定扣除了随运行顺序的线性趋势，区间因此变宽"
    "（run_order: interleaved 可以更低代价地测量漂移）。",
)
_t(
    "note.drift_unexplained",
    "Runs far apart in the run order differ more than near ones, beyond what the drift model explains "
    "({where}): verdicts between configs measured far apart may be off. Use run_order: interleaved.",
    "运行顺序上相距较远的运行差异大于相近的运行，超出漂移模型的解释范围（{where}）：相隔较远测得的配置之间的判定"
    "可能有偏差。请使用 run_order: interleaved。",
)
_t(
    "note.drift_unaligned",
    "A drift of about {size:.1%} was found within runs, but the configs were measured in separate runs with no "
    "common clock: comparisons across them are widened by the offset such a drift could make.",
    "在各次运行内部发现约 {size:.1%} 的漂移，但各配置在不同的运行中测得、没有共同的时钟：跨运行的比较已按这种漂移"
    "可能造成的偏移放宽。",
)
_t(
    "note.blocked_order",
    "Configs ran one after another (run_order: blocked, {where}): a slow drift of the host during the grid "
    "would look like a difference between them, and repeats run back to back cannot show it; "
    "run_order: interleaved can.",
    "各配置依次运行（run_order: blocked，{where}）：测试期间主机的缓慢漂移会表现为配置之间的差异，而连续的重复运行"
    "无法发现它；run_order: interleaved 可以。",
)
_t(
    "note.outliers",
    "{n} run(s) lie far off the other runs of their cell: {list}. The measured noise includes them: that "
    "lowers the power, not the false-winner level.",
    "{n} 次运行明显偏离同一测试点的其他运行：{list}。实测噪声包含了它们：这会降低分辨力，但不会提高误判胜者率。",
)
_t(
    "note.noise_differs",
    "The run-to-run noise differs between cells beyond chance for {list} (Bartlett's test): the verdicts use "
    "each config's noise pooled over its cells, which understates it in the noisiest cells; repeat those "
    "cells or read their verdicts with care.",
    "{list} 的运行间噪声在不同测试点之间的差异超出偶然范围（Bartlett 检验）：判定使用每个配置在所有测试点上合并的噪声，"
    "会低估最嘈杂测试点的噪声；请重复这些测试点，或谨慎解读其判定。",
)
_t(
    "note.heavy_tails",
    "The measured noise has heavy tails (runs far off their cell): each verdict keeps its 5% level, but a "
    "grid of equal configs can name a false winner somewhere more often than 5% (up to ~11% under Student-t(3) "
    "tails, docs/statistics.md), and single runs more still. Read a lone winner with care; more repeats "
    "narrow what a far run can do.",
    "实测噪声有重尾（个别运行明显偏离同一测试点）：每个判定仍保持 5% 的水平，但在配置相同的网格中，某处出现误判胜者的"
    "频率可能高于 5%（Student-t(3) 重尾下可达约 11%，见 docs/statistics.md），单次运行更甚。请谨慎对待孤立的胜者；"
    "更多重复运行可以减小偏离运行的影响。",
)
_t(
    "noise.min_effect",
    "minimum effect counted as a win: {min_effect:.1%}",
    "计为胜出的最小差异：{min_effect:.1%}",
)

_t(
    "band.winner",
    "**{band_label} (c={levels})**: `{config}` wins {wins} of {n} cells against `{other}` ({ties} ties, "
    "{losses} losses), {gain:+.1%} (geometric mean over cells); the largest gap is {max_leader} +{max_gain:.1%} at "
    "{max_scenario} c={max_c}.",
    "**{band_label}（c={levels}）**：`{config}` 对 `{other}` 在 {n} 个点中胜出 {wins} 个（持平 {ties}，"
    "落后 {losses}），几何平均 {gain:+.1%}；最大差距为 {max_scenario} c={max_c} 时 {max_leader} 高 {max_gain:.1%}。",
)
_t(
    "band.winner_p99",
    "**{band_label} (c={levels})**: `{config}` wins {wins} of {n} cells against `{other}` ({ties} ties, "
    "{losses} losses), throughput {gain:+.1%} (geometric mean over cells) and P99 E2E {p99:+.1%} (negative: faster) "
    "on average; the largest gap is "
    "{max_leader} +{max_gain:.1%} at {max_scenario} c={max_c}.",
    "**{band_label}（c={levels}）**：`{config}` 对 `{other}` 在 {n} 个点中胜出 {wins} 个（持平 {ties}，"
    "落后 {losses}），吞吐几何平均 {gain:+.1%}，P99 E2E 平均 {p99:+.1%}（负值表示更快）；最大差距为 {max_scenario} c={max_c} 时 "
    "{max_leader} 高 {max_gain:.1%}。",
)
_t(
    "band.tie",
    "**{band_label} (c={levels})**: `{config}` and `{other}` are even - {ties} of {n} cells are ties (no "
    "difference these runs can resolve); the largest gap is {max_leader} +{max_gain:.1%} at {max_scenario} c={max_c}.",
    "**{band_label}（c={levels}）**：`{config}` 与 `{other}` 基本持平，{n} 个点中 {ties} 个持平（本次数据无法分辨差异）；"
    "最大差距为 {max_scenario} c={max_c} 时 {max_leader} 高 {max_gain:.1%}。",
)
_t(
    "band.mixed",
    "**{band_label} (c={levels})**: no consistent winner - `{config}` wins {wins}, loses {losses} and ties "
    "{ties} of {n} cells against `{other}`; the largest gap is {max_leader} +{max_gain:.1%} at "
    "{max_scenario} c={max_c}.",
    "**{band_label}（c={levels}）**：没有一致的胜者，`{config}` 对 `{other}` 在 {n} 个点中胜 {wins}、负 {losses}、"
    "平 {ties}；最大差距为 {max_scenario} c={max_c} 时 {max_leader} 高 {max_gain:.1%}。",
)

_t(
    "class.reason",
    "wins {wins} of {n} cells ({scenarios}); throughput {gain:+.1%} vs `{other}` (geometric mean), mean TPOT "
    "{tpot:+.1%}, mean TTFT {ttft:+.1%}",
    "{n} 个点中胜出 {wins} 个（{scenarios}）；相对 `{other}` 吞吐几何平均 {gain:+.1%}，Mean TPOT {tpot:+.1%}，"
    "Mean TTFT {ttft:+.1%}",
)
_t(
    "class.reason_accept",
    "wins {wins} of {n} cells ({scenarios}); throughput {gain:+.1%} vs `{other}` (geometric mean); acceptance "
    "length {accept_a:.2f} vs {accept_b:.2f}",
    "{n} 个点中胜出 {wins} 个（{scenarios}）；相对 `{other}` 吞吐几何平均 {gain:+.1%}；接受长度 {accept_a:.2f} 对 "
    "{accept_b:.2f}",
)
_t(
    "class.reason_tie",
    "no clear winner: {ties} of {n} cells are ties (not resolvable), {wins} won, {losses} lost ({scenarios})",
    "无明显胜者：{n} 个点中 {ties} 个持平（无法分辨），胜 {wins}、负 {losses}（{scenarios}）",
)

_t("gap.tie", "even (not resolvable, {gain:.1%})", "基本持平（{gain:.1%}，无法分辨）")
_t("gap.lead", "{leader} +{gain:.1%}", "{leader} 高 {gain:.1%}")
_t("gap.missing", "not measured", "未测")
_t(
    "gap.widens",
    "From c={c0} to c={c1} the gap widens from {g0:.1%} to {g1:.1%} in favour of {leader}.",
    "从 c={c0} 到 c={c1}，差距从 {g0:.1%} 拉大到 {g1:.1%}，{leader} 领先。",
)
_t(
    "gap.narrows",
    "From c={c0} to c={c1} the gap narrows from {g0:.1%} to {g1:.1%}.",
    "从 c={c0} 到 c={c1}，差距从 {g0:.1%} 缩小到 {g1:.1%}。",
)
_t(
    "gap.flips",
    "From c={c0} to c={c1} the lead changes sides: {first} leads at c={c0}, {leader} at c={c1}.",
    "从 c={c0} 到 c={c1} 领先方发生变化：c={c0} 时 {first} 领先，c={c1} 时 {leader} 领先。",
)
_t(
    "gap.mixed",
    "The gap does not move in one direction as concurrency rises.",
    "随并发增加差距没有单调变化。",
)

_t(
    "anomaly.trend_outlier",
    "{a} vs {b}: {effect:+.1%} here, while the trend of the other levels (c={neighbours}) puts it near "
    "{expected:+.1%} - {floors:.1f} noise floors away; an outlier until a re-run confirms it.",
    "{a} 相对 {b}：此处 {effect:+.1%}，而其他并发（c={neighbours}）的趋势约为 {expected:+.1%}，偏离 {floors:.1f} "
    "个噪声阈值；在重跑确认前视为 outlier。",
)
_t(
    "anomaly.prefix_cache",
    "{config}: Total tok/s {throughput:.2f} is {throughput_gain:.1%} above the next level c={next_concurrency} "
    "({next_throughput:.2f}) while mean TTFT fell {ttft_drop:.0%} from c={prev_concurrency} ({prev_ttft_ms:.2f} -> "
    "{ttft_ms:.2f} ms): prompts reused from an earlier run likely hit the prefix cache.",
    "{config}：Total tok/s {throughput:.2f} 比更高并发 c={next_concurrency}（{next_throughput:.2f}）还高 "
    "{throughput_gain:.1%}，而 Mean TTFT 比 c={prev_concurrency} 下降了 {ttft_drop:.0%}（{prev_ttft_ms:.2f} -> "
    "{ttft_ms:.2f} ms）：很可能复用了之前运行的 prompt，命中了前缀缓存。",
)
_t(
    "anomaly.invalid_run",
    "{config}: the client marked this run invalid ({reason}); its numbers are left out of verdicts.",
    "{config}：压测客户端将此次运行标记为无效（{reason}），其数据不参与判定。",
)
_t(
    "anomaly.error_burst",
    "{config}: {failed} failed requests ({share:.1%} of all){kinds_text}.",
    "{config}：{failed} 个请求失败（占 {share:.1%}）{kinds_text}。",
)

_t(
    "cross.change",
    "{scenario}: between c={low:g} and c={high:g} (about c={c:.0f}) the verdict of {a} vs {b} changes "
    "from {before_label} to {after_label}.",
    "{scenario}：在 c={low:g} 与 c={high:g} 之间（约 c={c:.0f}），{a} 对 {b} 的判定从 {before_label} 变为 "
    "{after_label}。",
)
_t(
    "cross.baseline",
    "{scenario}: between c={low:g} and c={high:g} (about c={c:.0f}) speculation with {a} against the "
    "baseline {b} changes from {before_label} to {after_label}.",
    "{scenario}：在 c={low:g} 与 c={high:g} 之间（约 c={c:.0f}），{a} 相对基线 {b} 的判定从 {before_label} "
    "变为 {after_label}。",
)

_t(
    "rec.win",
    "wins {wins} of {n} cells against {other} ({ties} ties, no loss)",
    "对 {other}：{n} 个点中胜出 {wins} 个（持平 {ties}，无落后）",
)
_t(
    "rec.any",
    "no difference resolvable: {ties} of {n} cells are ties",
    "无可分辨的差异：{n} 个点中 {ties} 个持平",
)
_t(
    "rec.mixed",
    "weak: ahead in {wins}, behind in {losses}, even in {ties} of {n} cells against {other}",
    "证据较弱：对 {other} 在 {n} 个点中胜 {wins}、负 {losses}、平 {ties}",
)

_t("compare.cells", "Cells compared: {n}", "对比点数：{n}")
_t("compare.wins", "{method} wins: {n}", "{method} 胜出：{n} 个")
_t("compare.ties", "Ties (not resolvable from these runs): {n}", "持平（本次数据无法分辨）：{n} 个")
_t(
    "compare.all",
    "**Conclusion: under the same load, {winner} has higher total throughput than {others} in all {n} cells.**",
    "**结论：在相同负载下，{winner} 的综合吞吐在全部 {n} 个对比点优于 {others}。**",
)
_t(
    "compare.none",
    "**Conclusion: no cell shows a difference these runs can resolve; see the tie note above for what it "
    "would take.**",
    "**结论：没有任何对比点的差异能被本次数据分辨；所需运行次数见上方关于持平的说明。**",
)
_t(
    "compare.split",
    "**Conclusion: no method is ahead everywhere: wins per method {wins} of {n} cells ({ties} ties) - the "
    "better method depends on the workload and concurrency (see the recommendations).**",
    "**结论：没有处处领先的方法：{n} 个对比点中各方法胜出 {wins}（持平 {ties}）——更优的方法取决于负载与并发"
    "（见推荐）。**",
)
_t(
    "compare.no_cells",
    "**Conclusion: nothing to compare - {methods} share no (scenario, concurrency) cell. Their results "
    "were recorded under different scenario names (imported files name the scenario after their tag): "
    "re-import them with the same `--scenario NAME` (`specsweep import ... --scenario chat`) so the same "
    "workload lands in the same cell.**",
    "**结论：无可对比——{methods} 没有共同的（场景，并发）测试点。它们的结果记录在不同的场景名下（导入的文件以其 "
    "tag 作为场景名）：请用相同的 `--scenario NAME` 重新导入（`specsweep import ... --scenario chat`），使同一负载"
    "落在同一测试点。**",
)
_t(
    "compare.no_cells_failed",
    "**Conclusion: nothing to compare - {methods} share {n} cell(s) ({cells}), but in each of them a run "
    "failed or is missing on one side (see the failed cells above), so no verdict could be drawn there.**",
    "**结论：无可对比——{methods} 有 {n} 个共同测试点（{cells}），但每个点都有一方的运行失败或缺失（见上方失败的"
    "测试点），因此无法给出判定。**",
)
_t(
    "compare.no_cells_workloads",
    "**Conclusion: nothing to compare - {methods} share {n} cell(s) ({cells}), but there they ran different "
    "workloads (tokens per request, see Comparability above), so no winner is named.**",
    "**结论：无可对比——{methods} 有 {n} 个共同测试点（{cells}），但这些点上负载不同（每请求 token 数，见上方可比性），"
    "因此不判定胜者。**",
)
_t(
    "note.clients",
    "The configs were measured by different benchmark clients ({clients}). Their TTFT, TPOT, ITL, E2E and "
    "throughput are not defined alike (genai-perf's and AIPerf's inter-token latency is TPOT; LLMPerf's includes "
    "TTFT; GuideLLM's TPOT includes TTFT): read {doc} before comparing them.",
    "这些配置由不同的压测客户端测得（{clients}）。它们的 TTFT、TPOT、ITL、E2E 与吞吐的定义并不相同（genai-perf 与 "
    "AIPerf 的 inter-token latency 即 TPOT；LLMPerf 的包含 TTFT；GuideLLM 的 TPOT 包含 TTFT）：比较前请先阅读 {doc}。",
)
_t(
    "note.workloads",
    "Different workloads in {n} cell(s): {cells} (in / out: input / output tokens per request). The configs' "
    "tokens per request differ by more than {tol:.0%} there, so their throughputs measure different work: no "
    "winner is named in those cells (re-run them with the same prompts and lengths).",
    "{n} 个测试点的负载不同：{cells}（in / out：每个请求的输入 / 输出 token 数）。这些点上各配置每个请求的 token 数相差"
    "超过 {tol:.0%}，吞吐衡量的是不同的工作量：这些点不判定胜者（请用相同的提示与长度重新运行）。",
)
_t(
    "winner.workloads",
    "not comparable: different workloads (tokens per request {detail})",
    "不可比：负载不同（每请求 token 数 {detail}）",
)
_t(
    "ratio.line",
    "Average {metric_label} ratio ({num} / {den}): {ratio:.2f}",
    "平均 {metric_label} 比值（{num} / {den}）：{ratio:.2f}",
)
_t(
    "ratio.direction",
    "A ratio < 1 means {num} is faster; > 1 means {den} is faster (mean over cells of the per-cell ratio).",
    "比值 < 1 表示 {num} 更快；> 1 表示 {den} 更快（各对比点比值的平均）。",
)

_t(
    "check.cuda_graph_cap",
    "{config}: with k={k} a decode step verifies concurrency x {k1} tokens; from c={threshold} on that exceeds "
    "the CUDA-graph capture size {cap} (vLLM default), so at c>={from_concurrency} ({tokens} tokens) steps may "
    "run without CUDA graphs, which slows them (a loss there may come from this, not from k). Raise "
    "max_cudagraph_capture_size (vLLM --compilation-config) and re-measure.",
    "{config}：k={k} 时每个 decode step 需验证 并发 x {k1} 个 token；从 c={threshold} 起超过 CUDA graph 捕获上限 "
    "{cap}（vLLM 默认），c>={from_concurrency}（{tokens} 个 token）时可能无法使用 CUDA graph，step 会变慢"
    "（高并发下的落后可能源于此，而非 k 本身）。可调大 max_cudagraph_capture_size（vLLM --compilation-config）后重测。",
)
_t(
    "check.below_block_size",
    "{config}: k={k} is below {method}'s draft block of {block} tokens - each pass drafts {block} and discards "
    "{discarded}; some builds are not lossless below the block size: run `specsweep check-lossless` against "
    "a server without speculation.",
    "{config}：k={k} 小于 {method} 的 draft block（{block} 个 token），每次起草 {block} 个、丢弃 {discarded} 个；"
    "部分版本在小于 block 时并非无损：请用 `specsweep check-lossless` 与不开投机的服务对比输出。",
)
_t(
    "check.random_ids",
    "Prompts are random token ids: acceptance on them says nothing about real text; speculative comparisons "
    "need real prompts.",
    "Prompt 为随机 token id：其接受率不代表真实文本，投机解码对比需要真实 prompt。",
)
_t(
    "check.ignore_eos",
    "Requests ran with ignore_eos: generation runs past EOS into text the "
    "drafter rarely sees, which can bias acceptance; confirm the choice with real prompts and EOS enabled.",
    "请求开启了 ignore_eos：生成会越过 EOS，进入 draft 模型少见的文本，"
    "可能使接受率失真；建议用真实 prompt 并开启 EOS 复核结论。",
)
_t(
    "check.single_run",
    "Every cell was measured once: verdicts rest on an assumed run-to-run noise of {sigma:.0%} per run, not "
    "on measured intervals; no recommendation from them is rated high confidence.",
    "每个测试点只运行了一次：判定基于假设的每次运行 {sigma:.0%} 运行间噪声，而非实测置信区间；据此得出的推荐"
    "不会被评为高置信度。",
)
_t(
    "check.simulated",
    "These results come from the simulated engine (time scale {scale}): use them for planning, not as "
    "measurements.",
    "这些结果来自模拟引擎（时间缩放 {scale}）：用于规划，不能当作实测数据。",
)

_t(
    "next.rerun_outliers",
    "Re-run {cells} with repeats (--repeats 3) to confirm or discard the outliers.",
    "用重复运行（--repeats 3）重跑 {cells}，确认或排除 outlier。",
)
_t(
    "next.prefix_cache",
    "Re-run {cells} with fresh prompts (another seed) or a flushed prefix cache.",
    "用新的 prompt（换 seed）或清空前缀缓存后重跑 {cells}。",
)
_t(
    "next.repeats",
    "Measure each config's run-to-run noise: run every cell at least twice (repeats: 2); single runs rest on an "
    "assumed noise and cannot separate differences under ~{detectable:.0%}. Deciding {target:.0%} with "
    "{power:.0%} probability in each of the {m} comparisons takes about {need_quiet} runs per config at "
    "{quiet:.0%} noise and {need} at {sigma:.0%}.",
    "请实测每个配置的运行间噪声：每个测试点至少运行 2 次（repeats: 2）；单次运行依赖假设噪声，无法区分约 "
    "{detectable:.0%} 以下的差异。要在全部 {m} 个比较中各以 {power:.0%} 的概率分辨 {target:.0%} 的差异，噪声为 "
    "{quiet:.0%} 时每个配置约需运行 {need_quiet} 次，噪声为 {sigma:.0%} 时约需 {need} 次。",
)
_t(
    "next.lossless",
    "Check that {config} is lossless (k below the draft block).",
    "检查 {config} 是否无损（k 小于 draft block）。",
)
_t(
    "next.graph_cap",
    "Re-measure {config} at c >= {threshold} with a larger CUDA-graph capture size.",
    "调大 CUDA graph 捕获上限后，在 c >= {threshold} 重测 {config}。",
)
_t("next.warmup", "Keep {n} warmup requests.", "保持 {n} 条 warmup。")
_t(
    "next.tune",
    "{loser} trails in {losses} of {n} cells: tune its parameters ({params}) before ruling it out.",
    "{loser} 在 {n} 个点中落后 {losses} 个：在排除之前可先调整其参数（{params}）。",
)
_t(
    "next.engines",
    "The methods run on different engines ({backends}); engine differences (CUDA graphs, KV cache, "
    "scheduler) are part of the result - decide on your own workload.",
    "各方法运行在不同引擎上（{backends}），引擎差异（CUDA graph、KV cache 管理、调度器）也包含在结果中，"
    "请按实际业务负载做最终选型。",
)

_t(
    "lossless.summary",
    "{identical} of {n} outputs identical ({share:.1%}) between {a} and {b}.",
    "{a} 与 {b} 的 {n} 个输出中 {identical} 个完全一致（{share:.1%}）。",
)
_t(
    "lossless.divergence",
    "prompt {index}: first difference at token {token_index}: `{a_context}` vs `{b_context}`",
    "prompt {index}：第 {token_index} 个 token 处首次不同：`{a_context}` 对 `{b_context}`",
)
_t("note.skipped", "Left out of this report: {what}", "本报告未纳入：{what}")
_t(
    "note.preflight",
    "pre-flight {status}: {check} ({config}): {message}. Fix: {fix}",
    "运行前检查 {status}：{check}（{config}）：{message}。修复：{fix}",
)
_t(
    "note.computed",
    "{config}: {keys} not in the imported results; computed from the other keys (e.g. duration = completed / "
    "request_throughput).",
    "{config}：导入结果中没有 {keys}，由其他字段计算得出（如 duration = completed / request_throughput）。",
)
_t(
    "note.aa_within",
    "{s1} and {s2} have the same definition ({input_len}/{output_len} tokens), so together they are an A/A check: "
    "the same config at the same concurrency differs by {diffs} in Total tok/s - within the {floor:.0%} noise floor "
    "used here.",
    "{s1} 与 {s2} 的定义相同（{input_len}/{output_len} token），可视为 A/A 对照：同一配置、同一并发下 Total tok/s "
    "相差 {diffs}，在本报告使用的 {floor:.0%} 噪声阈值以内。",
)
_t(
    "note.aa_beyond",
    "{s1} and {s2} have the same definition ({input_len}/{output_len} tokens), so together they are an A/A check: "
    "the same config at the same concurrency differs by {diffs} in Total tok/s - more than the {floor:.0%} noise "
    "floor used here, so differences up to {max_diff:.1%} are not evidence either.",
    "{s1} 与 {s2} 的定义相同（{input_len}/{output_len} token），可视为 A/A 对照：同一配置、同一并发下 Total tok/s "
    "相差 {diffs}，超过本报告使用的 {floor:.0%} 噪声阈值，因此 {max_diff:.1%} 以内的差异同样不能作为依据。",
)
_t(
    "anomaly.error_burst_window",
    "{config}: {failed} failed requests ({share:.1%} of all){kinds_text}; up to {max_in_1s} of them within one second.",
    "{config}：{failed} 个请求失败（占 {share:.1%}）{kinds_text}；其中最多 {max_in_1s} 个集中在 1 秒内。",
)
_t(
    "band.mostly",
    "**{band_label} (c={levels})**: `{config}` is ahead in most cells - it wins {wins} of {n} against `{other}`, "
    "loses {losses}, ties {ties}; the largest gap is {max_leader} +{max_gain:.1%} at {max_scenario} c={max_c}.",
    "**{band_label}（c={levels}）**：`{config}` 在多数点更优——对 `{other}` 在 {n} 个点中胜 {wins}、负 {losses}、"
    "平 {ties}；最大差距为 {max_scenario} c={max_c} 时 {max_leader} 高 {max_gain:.1%}。",
)
