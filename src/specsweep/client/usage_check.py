"""The server's output token counts held against the text it sent (issue 38, defect 4).

A server that streams no text but reports ``usage.completion_tokens = max_tokens`` would be measured
at any throughput it likes (521,145 tok/s against an honest ~36,000); one that reports a handful of
tokens for a page of text understates itself. Both directions are checked, per measured request
whose count came from the server:

- too many: each output token decodes to at least one byte of text, except a few special tokens
  (an end-of-sequence, a stop string's tokens that are cut from the text): more than
  ``BYTE_SLACK`` tokens above the text's UTF-8 length cannot be. No tokenizer is needed.
- too few: the client's own count of the text is more than ``FEW_FACTOR`` times the server's count
  plus ``FEW_SLACK`` (the client's tokenizer may differ from the server's; this is far past any
  difference between real tokenizers). The client tokenizes only texts long enough to be in doubt
  (more than ``BYTES_PER_TOKEN`` bytes a counted token), so an honest run costs no tokenizing.

A run in which at least ``MIN_SHARE`` of the completed requests (at least one) disagree is invalid
(``client.result.build_outcome``): its throughput rests on counts its own responses contradict.
"""

from __future__ import annotations

from collections.abc import Callable

BYTE_SLACK = 16
FEW_FACTOR = 3
FEW_SLACK = 16
BYTES_PER_TOKEN = 6  # an honest token is ~4 bytes of English, ~3-5 of CJK: past this, count the text
MIN_SHARE = 0.01
LISTED = 3  # requests named in the reason


def disagreement(server_tokens: int, text: str, count: Callable[[str], int]) -> str | None:
    """Why ``server_tokens`` (the server's output count of one response) cannot be the count of
    ``text`` (what the response carried), or None."""
    nbytes = len(text.encode("utf-8", "surrogatepass"))
    if server_tokens > nbytes + BYTE_SLACK:
        return (
            f"the server counted {server_tokens:,} output tokens for {nbytes:,} bytes of text (a token is at "
            f"least one byte; {BYTE_SLACK} allowed for special tokens)"
        )
    if nbytes > BYTES_PER_TOKEN * server_tokens + 2 * FEW_SLACK:
        n = count(text)
        if n > FEW_FACTOR * server_tokens + FEW_SLACK:
            return (
                f"the server counted {server_tokens:,} output tokens for a text of {n:,} by the client's count "
                f"(accepted: up to {FEW_FACTOR} times plus {FEW_SLACK}, for the tokenizers differing)"
            )
    return None


def invalid_reason(found: list[tuple[int, str]], completed: int) -> str | None:
    """The run's reason to be invalid from its disagreeing requests ``(index, why)``, or None."""
    if not found or len(found) < max(1, MIN_SHARE * completed):
        return None
    named = "; ".join(f"request {i}: {why}" for i, why in sorted(found)[:LISTED])
    more = f" (and {len(found) - LISTED} more)" if len(found) > LISTED else ""
    return (
        f"the server's output token counts disagree with the text it sent in {len(found):,} of {completed:,} "
        f"completed requests: {named}{more}"
    )
