"""Raw per-request facts. Every metric is recomputed from these; nothing derived is stored here.

Times are ``time.monotonic_ns()`` of the process that measured them (``worker``); a run stores the
offset that maps each worker's clock onto the run's clock. Units are in the names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Error kinds a failed request can carry (failures are data, grouped by kind in every summary).
ERROR_KINDS = (
    "connect",  # could not connect / connection refused / DNS
    "http_status",  # non-2xx status
    "timeout",  # request exceeded its timeout (total or between chunks)
    "disconnect",  # server closed the stream before [DONE] / finish
    "malformed",  # a chunk that does not parse in the dialect
    "server_error",  # the stream carried an error object
    "too_large",  # one SSE event beyond the decoder's bound (client.sse.MAX_EVENT_BYTES)
    "bad_count",  # an impossible token count from the server (negative, not a number, too large)
    "over_max_tokens",  # more output than the request allowed, by the server's or the client's count
    "empty",  # finished without any output token
    "client",  # an exception inside the client itself
)

# The request header that carries a request's category to the server (the simulator reads it to pick
# the category's acceptance curve; other servers ignore it).
CATEGORY_HEADER = "X-Specsweep-Category"


@dataclass(slots=True)
class RequestSpec:
    """One request to send: what the workload generator hands the runner."""

    index: int
    prompt: str | list[int]  # text, or token ids for random-ids
    prompt_len: int  # nominal prompt tokens (our tokenizer's count)
    output_len: int  # max new tokens requested
    is_warmup: bool = False
    group: int | None = None  # shared-prefix group, if any
    category: str | None = (
        None  # the prompt's domain (dataset category, e.g. "coding"); see workload.datasets
    )
    # the conversation for chat endpoints (roles and contents; ``prompt`` is its text for completion
    # endpoints): a multi-turn dataset item goes to /v1/chat/completions as these messages
    messages: list[dict[str, str]] | None = None


@dataclass(slots=True)
class RequestRecord:
    index: int
    is_warmup: bool
    worker: int
    prompt_len: int  # nominal (client tokenizer)
    output_len: int  # requested max new tokens
    scheduled_ns: int  # when the request was due (open loop: schedule; closed loop: ready to go)
    send_ns: int = 0  # when the HTTP request was actually sent (after waiting for a slot)
    headers_ns: int = 0  # response headers received
    chunk_ns: list[int] = field(default_factory=list)  # arrival of each chunk carrying output
    chunk_tokens: list[int] = field(default_factory=list)  # output tokens carried by each chunk
    end_ns: int = 0  # stream finished ([DONE] / connection end / error)
    prompt_tokens_server: int | None = None
    output_tokens: int = 0  # final output token count (see output_tokens_source)
    output_tokens_source: str = "server"  # "server" | "chunks" | "retokenized"
    finish_reason: str | None = None
    spec_verify_ct: int | None = None  # SGLang meta_info.spec_verify_ct
    # llama-server's per-response ``timings``: draft tokens proposed (draft_n) and accepted
    # (draft_n_accepted); None where the server does not say (see specsweep.measure.acceptance)
    draft_tokens: int | None = None
    draft_accepted: int | None = None
    http_status: int | None = None
    error_kind: str | None = None
    error: str | None = None
    output_text: str | None = None
    category: str | None = None  # the request's domain (RequestSpec.category); None in older run dirs
    # per chunk, how much earlier than its stamp (chunk_ns) it may have arrived: the stamp bound of a
    # chunk read together with later bytes (docs/metrics.md); None: every stamp is exact (or unknown)
    chunk_bound_ns: list[int] | None = None

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def queue_ns(self) -> int:
        return max(0, self.send_ns - self.scheduled_ns)

    @property
    def ttft_ns(self) -> int | None:
        return self.chunk_ns[0] - self.send_ns if self.chunk_ns else None

    @property
    def e2e_ns(self) -> int | None:
        return self.chunk_ns[-1] - self.send_ns if self.chunk_ns else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RequestRecord:
        names = cls.__dataclass_fields__.keys()
        kw = {k: d[k] for k in names if k in d}
        kw["chunk_ns"] = list(kw.get("chunk_ns") or [])
        kw["chunk_tokens"] = list(kw.get("chunk_tokens") or [])
        if kw.get("chunk_bound_ns") is not None:
            kw["chunk_bound_ns"] = list(kw["chunk_bound_ns"])
        return cls(**kw)
