"""Write a benchmark's generated table into a Markdown file between its markers, keeping the prose
around them (appended, with its markers, when the file has none yet)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_between(path: Path, begin: str, end: str, body: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{begin}\n{body}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def emit(body: str, write: str | None, begin: str, end: str) -> None:
    """Print a benchmark's table and, with ``--write FILE``, put it in FILE between the markers."""
    print(body)
    if write:
        write_between(Path(write), begin, end, body)
        print(f"wrote {write}", file=sys.stderr)
