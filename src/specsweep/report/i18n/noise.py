"""The sentences of how verdicts were decided and the noise they rest on (the verdict rule, the
measured or assumed noise, drift, run order, outliers, heavy tails, A/A checks), in English and
Chinese: data only. :mod:`specsweep.report.i18n` merges them with the other sentences."""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {"en": {}, "zh": {}}


def _t(key: str, en: str, zh: str) -> None:
    TEXTS["en"][key] = en
    TEXTS["zh"][key] = zh


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
    "verdict.rule_race",
    "the adaptive design's racing rule: look 0 on every config's short runs, then a look after each "
    "relaunch, the level spent over the looks as fixed in advance, so it holds however often the design "
    "looked; the test at the deciding look: {tests_counts}; false-winner level {level:.0%}; {adj_label} "
    "over {m} comparisons; a winner's interval excludes 0 at that adjusted level (runs per config at the "
    "deciding look, short runs included: {runs})",
    "自适应设计的竞速规则：先在每个配置的短运行上做第 0 次查看，之后每次重新启动后各查看一次，检验水平按事先确定的比例"
    "分配到各次查看，因此无论设计查看数据多少次都成立；作出判定那次查看所用的检验：{tests_counts}；误判胜者率上限 "
    "{level:.0%}；对 {m} 个比较做 {adj_label} 校正；胜者的置信区间在校正后的水平下不含 0（作出判定那次查看时每个配置的"
    "运行次数，含短运行：{runs}）",
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
    "The measured noise has heavy tails (runs far off their cell): with repeats each verdict keeps its 5% "
    "level, but a grid of equal configs can name a false winner somewhere more often than 5% (up to ~8.5% "
    "under Student-t(3) tails with repeats or the adaptive design, up to ~25% with single runs; "
    "docs/statistics.md). Read a lone winner with care; more repeats narrow what a far run can do.",
    "实测噪声有重尾（个别运行明显偏离同一测试点）：有重复运行时每个判定仍保持 5% 的水平，但在配置相同的网格中，"
    "某处出现误判胜者的频率可能高于 5%（Student-t(3) 重尾下，重复运行或自适应设计可达约 8.5%，单次运行可达约 25%；"
    "见 docs/statistics.md）。请谨慎对待孤立的胜者；更多重复运行可以减小偏离运行的影响。",
)
_t(
    "noise.min_effect",
    "minimum effect counted as a win: {min_effect:.1%}",
    "计为胜出的最小差异：{min_effect:.1%}",
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
    "note.launch_measured",
    "Each server launch has its own level: the launch noise, {tau:.1%} per launch, was measured from the "
    "configs' launches ({df:.0f} df, counted in launches) and is part of every verdict.",
    "每次启动服务器都有其自身的水平：启动噪声为每次启动 {tau:.1%}，由各配置的多次启动测得（{df:.0f} 个自由度，"
    "按启动计数），已计入每个判定。",
)
_t(
    "note.launch_measured_floor",
    "Each server launch has its own level: the configs' launches ({df:.0f} df, counted in launches) measured "
    "less launch noise than the assumed {tau:.1%} per launch, so verdicts use {tau:.1%} (the assumed noise is a "
    "floor: a few launches that happen to agree do not make it 0).",
    "每次启动服务器都有其自身的水平：各配置的多次启动（{df:.0f} 个自由度，按启动计数）测得的启动噪声低于假设的每次启动 "
    "{tau:.1%}，因此判定使用 {tau:.1%}（假设的噪声是下限：几次恰好一致的启动不会使它变为 0）。",
)
_t(
    "note.launch_measured_calibrated",
    "Each server launch has its own level: the launch noise, {tau:.1%} per launch, was measured from the "
    "configs' launches and pooled with the stored calibration {name} ({df:.0f} df in all); it is part of every "
    "verdict.",
    "每次启动服务器都有其自身的水平：启动噪声为每次启动 {tau:.1%}，由各配置的多次启动测得，并与已存储的校准 {name} "
    "合并（共 {df:.0f} 个自由度）；已计入每个判定。",
)
_t(
    "note.launch_calibrated",
    "Each config ran in one server launch, so the launch noise could not be measured here: verdicts use "
    "{tau:.1%} per launch from the stored calibration {name}.",
    "每个配置只在一次服务器启动中运行，因此此处无法测得启动噪声：判定使用已存储校准 {name} 的每次启动 {tau:.1%}。",
)
_t(
    "note.launch_assumed",
    "Each config ran in one server launch and no calibration is stored for this engine and host: verdicts "
    "assume a launch noise of {tau:.1%} per launch (assumed, not measured). Measure it once with "
    "`specsweep calibrate-noise EXP`, or run with repeats in interleaved rounds.",
    "每个配置只在一次服务器启动中运行，且没有该引擎与主机的校准：判定假设每次启动的启动噪声为 {tau:.1%}（假设值，"
    "未实测）。可用 `specsweep calibrate-noise EXP` 测量一次，或以交错轮次进行重复运行。",
)
_t(
    "note.launch_fit_failed",
    "The launch noise's model did not converge for {list}: verdicts use {tau:.1%} per launch, the larger of "
    "the assumed or calibrated value and the launches' own spread (conservative).",
    "启动噪声模型对 {list} 未收敛：判定使用每次启动 {tau:.1%}，即假设或校准值与各次启动自身离散度中的较大者（保守）。",
)
_t(
    "note.step_found",
    "The host changed speed once in the run order ({where}): by about {size:+.1%} for the last {after} of "
    "{units} launches (or runs), found by a CUSUM test on what the configs' means leave. Every config measured "
    "on both sides of it measures the step, so the verdicts take it out (with its uncertainty); it is not a "
    "difference between configs.",
    "主机在运行顺序中（{where}）发生了一次速度变化：最后 {after}/{units} 个启动（或运行）约 {size:+.1%}，"
    "由对配置均值之外残差的 CUSUM 检验发现。在其前后都测量过的配置测出了这一跳变，因此结论已将其扣除（并计入其不确定性）；"
    "它不是配置之间的差异。",
)
_t(
    "note.step_widened",
    "The host changed speed once in the run order ({where}): by about {size:+.1%} for the last {after} of "
    "{units} launches (or runs). Too few configs were measured on both sides of it to separate it from the "
    "configs well: comparisons across it carry its large uncertainty (widened). Run in interleaved rounds to "
    "tell a host change from a config.",
    "主机在运行顺序中（{where}）发生了一次速度变化：最后 {after}/{units} 个启动（或运行）约 {size:+.1%}。"
    "在其前后都测量过的配置太少，无法将它与配置差异清楚区分：跨越它的比较计入了其较大的不确定性（区间已放宽）。"
    "以交错轮次运行才能区分主机变化与配置差异。",
)
_t(
    "note.drift_refused",
    "A drift of about {size:.1%} ({where}) was refused: the repeats that would measure it span too little of "
    "the run order (or it exceeds 30%), so it is neither taken out nor reported as found.",
    "约 {size:.1%} 的漂移（{where}）被拒绝：能测量它的重复运行只覆盖运行顺序的一小段（或超过 30%），因此既不扣除，"
    "也不报告为已发现。",
)
_t(
    "note.sessions_unanchored",
    "{n} comparisons ({pairs}) are between configs measured only in different sessions (imports, separate "
    "runs, a resume hours later) that no config links: there a config cannot be told from a change of the "
    "host between the sessions, and verdicts carry a between-session allowance of about +-{allow:.1%}: the size "
    "of a server relaunch's change, no more (a larger change of the host between the sessions is not allowed for).",
    "{n} 个比较（{pairs}）的配置只在不同的会话中测得（导入、分开的运行、数小时后的续跑），且没有任何配置把这些会话"
    "连接起来：在这些比较中无法区分配置差异与会话之间的主机变化，判定带有约 ±{allow:.1%} 的会话间余量：仅相当于一次"
    "服务器重启的变化（会话之间更大的主机变化未被计入）。",
)
_t(
    "note.launches_unanchored",
    "{n} comparisons ({pairs}) are between configs that each ran in their own server launch, one after another "
    "({where}: blocked order, or a single round), with no round holding them all twice: nothing measures the "
    "launch noise there, and a config cannot be told from a change of the host between its launch and the next. "
    "Verdicts carry a between-launch allowance of about +-{allow:.1%} (the size of a server relaunch's change).",
    "{n} 个比较（{pairs}）的配置各自在自己的服务器启动中依次运行（{where}：blocked 顺序，或只有一轮），没有任何轮次"
    "两次包含全部配置：此处无法测得启动噪声，也无法区分配置差异与两次启动之间的主机变化。判定带有约 ±{allow:.1%} 的"
    "启动间余量（相当于一次服务器重启的变化）。",
)
_t(
    "next.interleave_rounds",
    "Run the configs in interleaved rounds (run_order: interleaved, repeats: 3 or more: one launch per config "
    "a round, {config} included): each round then holds every config, the launch noise is measured from the "
    "launches and a change of the host between rounds is taken out.",
    "以交错轮次运行各配置（run_order: interleaved，repeats: 3 或更多：每轮每个配置启动一次，包括 {config}）：每一轮都"
    "包含全部配置，启动噪声由多次启动测得，轮次之间的主机变化会被扣除。",
)
_t(
    "winner.launches",
    "tie ({names}; each in its own launch, one after the other: a host change cannot be told apart, "
    "+-{allow:.1%})",
    "持平（{names}；各自在自己的启动中依次运行：无法区分主机变化，±{allow:.1%}）",
)
_t(
    "next.anchor_sessions",
    "Anchor the sessions: run one config (e.g. {config}) again in the other session, so the report can take "
    "the host's change between them out.",
    "锚定会话：在另一个会话中再次运行一个配置（例如 {config}），报告即可扣除会话之间的主机变化。",
)
_t(
    "winner.sessions",
    "tie ({names}; measured in different sessions: a host change cannot be told apart, +-{allow:.1%})",
    "持平（{names}；在不同会话中测得：无法区分主机变化，±{allow:.1%}）",
)
