"""llama-server's per-response drafts (``timings.draft_n`` / ``draft_n_accepted`` on its last chunk):
parsed by the OpenAI dialects, kept on each record, and turned into acceptance per request - so per
domain in a cell that mixes domains - with the same definition as the /metrics counters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specsweep.client.dialects import ChunkError, StreamState, get_dialect
from specsweep.measure.acceptance import from_counters, from_requests

# the last two events of a real llama-server b1-0c1e570 stream (n-gram k=3, the tiny model), verbatim
LAST = (
    b'{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1796304666,'
    b'"model":"tiny-cycle-llama.gguf","system_fingerprint":"b1-0c1e570","object":"text_completion",'
    b'"usage":{"completion_tokens":20,"prompt_tokens":5,"total_tokens":25,"prompt_tokens_details":'
    b'{"cached_tokens":0}},"id":"chatcmpl-u1gkktLKnPWlxchyMfoVNbJG33ImuCSo","timings":{"cache_n":0,'
    b'"prompt_n":5,"prompt_ms":0.863,"prompt_per_token_ms":0.1726,"prompt_per_second":5793.742757821552,'
    b'"predicted_n":20,"predicted_ms":4.483,"predicted_per_token_ms":0.2359473684210526,'
    b'"predicted_per_second":4238.233325897837,"draft_n":9,"draft_n_accepted":9}}'
)
CHAT_LAST = (
    b'{"choices":[],"created":1796304669,"id":"chatcmpl-0exA","model":"m","object":"chat.completion.chunk",'
    b'"usage":{"completion_tokens":20,"prompt_tokens":32,"total_tokens":52},"timings":{"cache_n":1,'
    b'"prompt_n":31,"predicted_n":20,"draft_n":12,"draft_n_accepted":7}}'
)


def _count(text: str) -> int:
    return len(text.split())


def test_llama_server_last_chunk_gives_the_responses_drafts() -> None:
    s = StreamState(max_tokens=20)
    get_dialect("openai").parse(LAST, s, _count)
    assert (s.draft_tokens, s.draft_accepted, s.tokens) == (9, 9, 20)
    c = StreamState(max_tokens=20)
    get_dialect("openai-chat").parse(CHAT_LAST, c, _count)
    assert (c.draft_tokens, c.draft_accepted) == (12, 7)


def test_no_timings_or_no_draft_fields_leave_them_unknown() -> None:
    s = StreamState()
    get_dialect("openai").parse(b'{"choices":[{"text":"a","finish_reason":null}]}', s, _count)
    get_dialect("openai").parse(
        b'{"choices":[],"usage":{"completion_tokens":1},"timings":{"predicted_n":1}}', s, _count
    )
    assert s.draft_tokens is None and s.draft_accepted is None


@pytest.mark.parametrize(
    ("timings", "says"),
    [
        (b'{"draft_n":3,"draft_n_accepted":5}', "draft_n_accepted 5 > timings.draft_n 3"),
        (b'{"draft_n":-1,"draft_n_accepted":0}', "impossible timings.draft_n -1"),
        (b'{"draft_n":true,"draft_n_accepted":0}', "timings.draft_n is not a token count"),
    ],
)
def test_impossible_draft_counts_fail_the_request(timings: bytes, says: str) -> None:
    with pytest.raises(ChunkError, match=says) as e:
        get_dialect("openai").parse(b'{"choices":[],"usage":{"completion_tokens":4},"timings":' + timings + b"}",
                                    StreamState(max_tokens=8), _count)  # fmt: skip
    assert e.value.kind == "bad_count"


def test_from_requests_hand_computed() -> None:
    # the response above: 20 tokens, 1 from prefill, 9 accepted drafts -> 10 decode steps, 1.9 per step
    assert from_requests(20, 1, 9) == pytest.approx(1.9)
    assert from_requests(20, 1, 0) == 1.0  # nothing accepted: one token per step
    assert from_requests(10, 1, 9) is None  # no decode step left: no figure rather than a wrong one
    assert from_requests(0, 0, 0) is None


@given(st.integers(1, 40), st.integers(2, 300), st.floats(0, 0.9), st.floats(0.01, 0.99))
def test_per_request_figure_equals_the_counters_figure(
    n: int, per_req: int, acc_share: float, cover: float
) -> None:
    """Summing the responses' counts gives what the /metrics counters give over the same requests
    (whenever some step had no draft, the counters' step count is the same decode-step count)."""
    out = n * per_req
    accepted = int((out - n) * acc_share)
    steps = out - n - accepted
    drafts = max(1, int(steps * cover))
    if drafts >= steps:
        return
    assert from_requests(out, n, accepted) == pytest.approx(
        from_counters(out, n, accepted, drafts)["accept_length"]
    )
