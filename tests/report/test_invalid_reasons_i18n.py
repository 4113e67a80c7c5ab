"""Why the client marked a run invalid, in the report's language (issue 34 item 9): a run stores each
reason's code and figures beside its English sentence; the zh report words them in Chinese, the en
report says exactly what the result says, and a run dir with text only keeps its text."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from specsweep.client.selfcheck import INVALID_REASONS, ClientLoad, judge, reason_text
from specsweep.report import build_view, i18n, render
from specsweep.report.build.view import Msg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))  # its run-dir helpers
from test_analysis import K3, K5, make_run, row

ARGS: dict[str, dict[str, Any]] = {
    "client_cpu": {"util": 0.97},
    "client_cpu_worker": {"util": 0.97, "worker": 1},
    "schedule_late": {"lag_ms": 12.3},
    "schedule_late_worker": {"lag_ms": 12.3, "worker": 0},
    "read_time": {"n": 2},
    "stamps_off": {
        "figure": "itl p99",
        "worst_ms": 1.6,
        "max_ms": 1.0,
        "n": 12,
        "index": 5,
        "bound_ms": 16.2,
    },
    "loop_lag": {"lag_ms": 40.0, "max_ms": 10.0},
}
_ENGLISH_WORD = re.compile(r"\b(?!itl\b|ttft\b|p99\b|ms\b|worker\b|CPU\b|SSE\b)[A-Za-z]{3,}\b")


@pytest.mark.parametrize("code", sorted(INVALID_REASONS))
def test_every_reason_reads_the_same_in_english_and_in_chinese(code: str) -> None:
    msg = Msg(key=f"invalid.{code}", args=ARGS[code])
    en, zh = i18n.text(msg, "en"), i18n.text(msg, "zh")
    assert en == reason_text({"code": code, "args": ARGS[code]})
    assert not _ENGLISH_WORD.search(zh), zh
    numbers = re.compile(r"\d+(?:\.\d+)?%?")
    assert sorted(numbers.findall(zh)) == sorted(numbers.findall(en))  # every figure, as English gives it


def test_the_stored_codes_say_what_invalid_reason_says() -> None:
    v = judge([ClientLoad(cpu_s=0.1, wall_s=1.0, loop_lag_ms=[40.0] * 10)], False, [], {})
    assert [r["code"] for r in v.codes] == ["loop_lag"]
    assert v.reasons == [i18n.text(Msg(key="invalid.loop_lag", args=v.codes[0]["args"]), "en")]


def _run(tmp: Path, **bad: Any) -> str:
    rows = [row(*K3, "chat_short", 1, 0.0, status="invalid", **bad), row(*K5, "chat_short", 1, 1000.0)]
    rows += [row(*K3, "chat_short", 8, 3000.0), row(*K5, "chat_short", 8, 2900.0)]
    make_run(tmp, "x", rows)
    return str(tmp)


def test_the_zh_report_words_an_invalid_run_in_chinese(tmp_path: Path) -> None:
    code = {"code": "stamps_off", "args": ARGS["stamps_off"]}
    view = build_view([_run(tmp_path, invalid_reason=reason_text(code), invalid_reasons=[code])], "sweep")
    zh, en = render(view, "md", "zh"), render(view, "md", "en")
    assert "到达时间戳可能有偏差：itl p99 最多偏差 1.6 ms（> 1 ms）；12 个请求的 SSE 事件" in zh
    assert "arrival stamps could be off" not in zh
    assert f"the client marked this run invalid ({reason_text(code)})" in en


def test_a_reason_stored_as_text_only_is_shown_as_it_is(tmp_path: Path) -> None:
    view = build_view([_run(tmp_path, invalid_reason="client saturated: send lag 40 ms")], "sweep")
    assert "（client saturated: send lag 40 ms）" in render(view, "md", "zh")
