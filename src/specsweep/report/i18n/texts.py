"""Sentences (message templates) in English and Chinese: data only.

A new sentence is one ``_t(key, en, zh)`` call here. Arguments are named in each
:class:`~specsweep.report.build.view.Msg`: numbers raw (fractions for percentages), templates format them
(``{gain:.2%}``); ``{x_label}`` renders ``label(x)``. :func:`specsweep.report.i18n.text` renders them.
"""

from __future__ import annotations

from specsweep.client.selfcheck import INVALID_REASONS

TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _t(key: str, en: str, zh: str) -> None:
    TEXTS["en"][key] = en
    TEXTS["zh"][key] = zh


_t("title.sweep", "{method} `{param}` comparison report", "{method} `{param}` 对比报告")
_t("title.sweep_any", "{method} configuration comparison report", "{method} 配置对比报告")
_t("title.compare", "{methods}: speculative decoding comparison report", "{methods} 投机解码对比报告")

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
    "{config}: the client marked this run invalid ({reasons_text}); its numbers are left out of verdicts.",
    "{config}：压测客户端将此次运行标记为无效（{reasons_text}），其数据不参与判定。",
)
# Why the client marked a run invalid, by the code the run stored (``invalid_reasons``); English is the
# client's own sentence (client/selfcheck.py INVALID_REASONS), so a report says what the result says.
_INVALID_ZH = {
    "client_cpu": "客户端 CPU 饱和（占单核的 {util:.0%}）",
    "client_cpu_worker": "客户端 CPU 饱和（worker {worker} 占单核的 {util:.0%}）",
    "schedule_late": "请求发送调度滞后（p99 {lag_ms:.1f} ms）：实际施加的负载不是所要求的负载",
    "schedule_late_worker": "请求发送调度滞后（worker {worker} 的 p99 {lag_ms:.1f} ms）：实际施加的负载不是所要求的负载",
    "read_time": "{n} 个响应的时间戳是读取时记录的，而非内核时间戳（其到达记录已丢失）",
    "stamps_off": (
        "到达时间戳可能有偏差：{figure} 最多偏差 {worst_ms:.1f} ms（> {max_ms:g} ms）；{n} 个请求的 SSE 事件与之后的字节"
        "被一起读取（最严重：请求 {index}，{bound_ms:.1f} ms）"
    ),
    "loop_lag": "事件循环延迟 p99 {lag_ms:.1f} ms > {max_ms:g} ms：读取时记录的时间戳（无内核时间戳）最多晚这么多",
}
for _code, _en in INVALID_REASONS.items():
    _t(f"invalid.{_code}", _en, _INVALID_ZH[_code])
_t("invalid.text", "{text}", "{text}")
_t(
    "invalid.list", "{reasons_text}", "{reasons_text}"
)  # a reason stored as text only (older run dirs, other clients)
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
    "re-import them with the same `--scenario NAME` (`specsweep import sglang FILE --label LABEL --method METHOD --scenario chat -o RESULTS_DIR`) so the same "
    "workload lands in the same cell.**",
    "**结论：无可对比——{methods} 没有共同的（场景，并发）测试点。它们的结果记录在不同的场景名下（导入的文件以其 "
    "tag 作为场景名）：请用相同的 `--scenario NAME` 重新导入（`specsweep import sglang FILE --label LABEL --method METHOD --scenario chat -o RESULTS_DIR`），使同一负载"
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
    "{discarded}; some builds are not lossless below the block size: run `specsweep check-lossless --base-url "
    "URL_A --base-url URL_B` against a server without speculation.",
    "{config}：k={k} 小于 {method} 的 draft block（{block} 个 token），每次起草 {block} 个、丢弃 {discarded} 个；"
    "部分版本在小于 block 时并非无损：请用 `specsweep check-lossless --base-url URL_A --base-url URL_B` 与不开投机的服务对比输出。",
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
    "Re-run {cells} with repeats to confirm or discard the outliers: set `repeats: 3` (or an `adaptive:` "
    "section) in the experiment file and run `specsweep run EXPERIMENT.yaml`.",
    "用重复运行重跑 {cells}，确认或排除 outlier：在实验文件中设置 `repeats: 3`（或 `adaptive:` 一节），"
    "然后运行 `specsweep run EXPERIMENT.yaml`。",
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
    "next.repeats_nothing_compared",
    "Measure each config's run-to-run noise: run every cell at least twice (repeats: 2); single runs rest on an "
    "assumed noise. Deciding {target:.0%} with {power:.0%} probability in each comparison takes about "
    "{need_quiet} runs per config at {quiet:.0%} noise and {need} at {sigma:.0%}.",
    "请实测每个配置的运行间噪声：每个测试点至少运行 2 次（repeats: 2）；单次运行依赖假设噪声。要在每个比较中以 "
    "{power:.0%} 的概率分辨 {target:.0%} 的差异，噪声为 {quiet:.0%} 时每个配置约需运行 {need_quiet} 次，"
    "噪声为 {sigma:.0%} 时约需 {need} 次。",
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
