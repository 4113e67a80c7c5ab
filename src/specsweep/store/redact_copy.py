"""Copying a file with its secrets replaced (``redact.scrub_text``): the result files an import
keeps in ``source/``."""

from __future__ import annotations

import io
import re
from pathlib import Path

from specsweep.store import redact, redact_pieces
from specsweep.store.inputs import open_regular

_COPY_CHUNK = 1 << 20
_BOUNDARY = re.compile(r"[\n,{}\[\]]")


def copy_scrubbed(src: str | Path, dest: str | Path) -> bool:
    """Copy a text file with every secret ``scrub_text`` finds replaced (a result file an import
    keeps in ``source/``: an LLMPerf ``model: http://user:PW@host``, ``"api_key": "X"``). Read in
    1 MiB pieces, each cut after its last structural boundary (a newline, a comma, a bracket) and
    before any secret still being written (``open_tail``), so memory stays flat however large the
    file and no secret is split between two pieces. Returns whether anything was replaced."""
    changed = False
    raw = open_regular(src)  # a FIFO or a device: refused, never read forever
    with (
        io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="") as f,
        open(dest, "w", encoding="utf-8", errors="surrogateescape", newline="") as out,
    ):
        pending = ""
        while True:
            piece = f.read(_COPY_CHUNK)
            text = pending + piece
            if not piece:
                cut = len(text)
            else:
                cut = max((m.end() for m in _BOUNDARY.finditer(text, max(0, len(text) - 65536))), default=0)
                cut -= redact_pieces.open_tail(text[:cut]) if cut else 0
                if cut <= 0:  # no boundary in the last 64 KiB: the piece goes whole (a giant token)
                    cut = len(text) - redact_pieces.open_tail(text)
                    cut = cut if cut > 0 else len(text)
            head, pending = text[:cut], text[cut:]
            clean = redact.scrub_text(head)
            changed = changed or clean != head
            out.write(clean)
            if not piece:
                break
    return changed
