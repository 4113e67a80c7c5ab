"""summary.jsonl is append-only: one line per finished cell, a torn last line is cut, never more."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.store.run_dir import SUMMARY, RunDir, dumps


def _rows(n: int) -> list[dict[str, object]]:
    return [{"cell_id": f"c{i}", "repeat": 0, "status": "ok", "note": "é" * (i % 3)} for i in range(n)]


def test_append_adds_one_line_in_place(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    rd.append_summary({"cell_id": "first", "status": "ok"})
    p = tmp_path / SUMMARY
    ino, before = os.stat(p).st_ino, p.read_bytes()
    for row in _rows(5):
        rd.append_summary(row)
        # the same file, grown at its end: the earlier lines are not rewritten (no temp + rename)
        assert os.stat(p).st_ino == ino
        assert p.read_bytes().startswith(before)
        before = p.read_bytes()
    assert [r["cell_id"] for r in rd.summary()] == ["first"] + [f"c{i}" for i in range(5)]
    assert p.read_bytes().count(b"\n") == 6 and p.read_bytes().endswith(b"\n")


def test_summary_since_reads_only_later_lines(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd.summary_size() == 0
    for row in _rows(3):
        rd.append_summary(row)
    mark = rd.summary_size()
    rd.append_summary({"cell_id": "late", "status": "failed"})
    assert [r["cell_id"] for r in rd.summary(since=mark)] == ["late"]
    assert len(rd.summary()) == 4


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5), cut_frac=st.floats(0.0, 1.0))
def test_a_crash_at_any_byte_loses_at_most_the_torn_line(n: int, cut_frac: float) -> None:
    """A crash during an append leaves a prefix of the file. Appending (or resuming) afterwards
    keeps every complete line, drops the torn fragment, and the new line is whole."""
    rows = _rows(n)
    lines = [dumps(r) + b"\n" for r in rows]
    data = b"".join(lines)
    cut = round(cut_frac * len(data))
    kept, end = [], 0
    for line in lines:
        if end + len(line) - 1 <= cut:  # its JSON text survived (maybe without the newline)
            kept.append(line)
        end += len(line)
    with tempfile.TemporaryDirectory() as d:
        for repair_first in (False, True):
            rd = RunDir(Path(d) / str(repair_first))
            rd.path.mkdir()
            (rd.path / SUMMARY).write_bytes(data[:cut])
            if repair_first:  # what execute() does when it starts (a resume)
                rd.repair_summary()
                assert (rd.path / SUMMARY).read_bytes() == b"".join(kept)
            rd.append_summary({"cell_id": "new", "status": "ok"})
            assert (rd.path / SUMMARY).read_bytes() == b"".join(kept) + dumps(
                {"cell_id": "new", "status": "ok"}
            ) + b"\n"
            assert [r["cell_id"] for r in rd.summary()] == [r["cell_id"] for r in rows[: len(kept)]] + ["new"]


def test_torn_line_longer_than_a_read_block(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    rd.append_summary({"cell_id": "a", "status": "ok"})
    with (tmp_path / SUMMARY).open("ab") as f:
        f.write(b'{"cell_id": "b", "log_tail": "' + b"x" * 200_000)  # no end: torn mid-line
    rd.append_summary({"cell_id": "c", "status": "ok"})
    assert [r["cell_id"] for r in rd.summary()] == ["a", "c"]
    assert (tmp_path / SUMMARY).stat().st_size < 100
