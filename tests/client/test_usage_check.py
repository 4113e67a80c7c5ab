"""Issue 38, defect 4: the server's output token count held against the text it sent, both ways."""

from __future__ import annotations

from specsweep.client import usage_check
from specsweep.workload.tokenizer import load_tokenizer


def _count(text: str) -> int:
    return load_tokenizer(None, warn=False).count(text)


def test_tokens_claimed_for_no_text_are_refused() -> None:
    why = usage_check.disagreement(128, "", _count)
    assert why and "128 output tokens for 0 bytes" in why


def test_a_page_of_text_claimed_as_one_token_is_refused() -> None:
    why = usage_check.disagreement(1, " word" * 128, _count)
    assert why and "counted 1 output tokens for a text of 128" in why


def test_honest_counts_and_tokenizer_differences_pass() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 10
    n = _count(text)
    for server in (n, n // 2, 2 * n, n + 8):  # another tokenizer: within a factor of two
        assert usage_check.disagreement(server, text, _count) is None
    assert usage_check.disagreement(1, "</s>", _count) is None  # an end token, no text: fine
    assert usage_check.disagreement(3, "中文的文本", _count) is None


def test_the_run_is_invalid_from_one_percent_of_its_requests() -> None:
    assert usage_check.invalid_reason([], 100) is None
    assert usage_check.invalid_reason([(3, "x")], 1000) is None  # one odd request in a thousand
    reason = usage_check.invalid_reason([(i, "why") for i in range(5)], 5)
    assert reason and "in 5 of 5 completed requests: request 0: why" in reason and "(and 2 more)" in reason
