"""The verdict rule's sentence names every test that decided the verdicts, each with how many it
decided, so a design run whose first look decided some cells on the assumed noise and its later looks
others on repeats does not read as "assumed noise" alone beside a measured noise in the header."""

from __future__ import annotations

import dataclasses

import pytest

from specsweep.analysis.core import PairVerdict
from specsweep.report import i18n
from specsweep.report.build.verdict_notes import rule_msg


def verdict(method: str, n: int, *, sequential: bool = True) -> PairVerdict:
    return PairVerdict(
        scenario="s", concurrency=1, metric="total_throughput", a="A", b="B", verdict="a", effect=0.2,
        ci_low=0.1, ci_high=0.3, basis="", noise_floor=0.05, min_effect=0.0, a_value=1.2, b_value=1.0,
        winner="A", leader="A", gain=0.2, method=method, n_a=n, n_b=n, n_compared=3, sequential=sequential,
    )  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_mixed_tests_are_each_named_with_their_count(lang: str) -> None:
    vs = [verdict("z_assumed_noise", 1), verdict("welch_t", 3), verdict("welch_t", 2)]
    msg = rule_msg(vs)
    assert msg is not None and msg.key == "verdict.rule_seq"
    out = i18n.text(msg, lang)
    welch, z = i18n.label("test.welch_t", lang), i18n.label("test.z_assumed_noise", lang)
    assert welch in out and z in out
    assert out.index(welch) < out.index(z)  # the most common first
    assert i18n.label("list.counted", lang, item=welch, n=2) in out
    assert i18n.label("list.counted", lang, item=z, n=1) in out
    assert "1-3" in out  # runs per config at the deciding looks


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_test_is_named_alone(lang: str) -> None:
    vs = [dataclasses.replace(verdict("welch_t", 3), sequential=False)] * 2
    msg = rule_msg(vs)
    assert msg is not None and msg.key == "verdict.rule"
    out = i18n.text(msg, lang)
    assert out.startswith(i18n.label("test.welch_t", lang))
    counted = i18n.label("list.counted", lang, item="X", n=2)
    assert counted.replace("X", i18n.label("test.welch_t", lang)) not in out
