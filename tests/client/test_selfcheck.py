"""The self-check: stamp bounds -> how far TTFT/ITL could be off -> one verdict for 1 or N workers."""

from __future__ import annotations

from specsweep.client.selfcheck import shared_stamp_fraction
from specsweep.records import RequestRecord


def _rec(chunk_ns: list[int], error: str | None = None) -> RequestRecord:
    r = RequestRecord(
        index=0, is_warmup=False, worker=0, prompt_len=1, output_len=len(chunk_ns), scheduled_ns=0
    )
    r.chunk_ns = chunk_ns
    r.error_kind = error
    return r


MS = 1_000_000


def test_shared_stamp_fraction_counts_consecutive_equal_arrivals_of_ok_streams() -> None:
    recs = [
        _rec([0, 10 * MS, 10 * MS, 30 * MS]),
        _rec([0, 0, 9 * MS]),
        _rec([7, 7, 7], error="disconnect"),
        _rec([9]),
    ]
    # (10,10) and (0,0) of 3 + 2 pairs; the failed and the one-chunk stream do not count
    assert shared_stamp_fraction(recs) == 2 / 5
    assert shared_stamp_fraction([]) == 0.0


def test_merges_in_streams_faster_than_the_resolution_are_not_damage() -> None:
    fast = _rec([0, 100_000, 100_000, 300_000, 300_000])  # chunks 0.1 ms apart: merges cost < 0.1 ms
    assert shared_stamp_fraction([fast]) == 0.0
    assert shared_stamp_fraction([fast], min_gap_ns=10_000) == 2 / 4
