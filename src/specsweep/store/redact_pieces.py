"""Text that leaves in pieces, with no secret split between them: ``clip`` cuts a message after
scrubbing it (a cut never leaves part of a secret), ``open_tail`` says how much of a piece to hold back
until more comes (the log pump, the scrubbed copy of an import). The secrets are specsweep.store.redact's."""

from __future__ import annotations

import re

from specsweep.store.redact import known, scrub_text

# the start of a secret that a writer emitting text in pieces must not cut
_OPEN_CREDENTIAL = re.compile(r"\bBearer(?:\s+\S*)?$", re.I)
_TOKEN_START = re.compile(
    r"(?:sk-|hf_|gh[pousr]_|github_pat_|xox[abpr]-|AKIA|eyJ|[A-Za-z][A-Za-z0-9+.-]*://)"
)


def clip(text: str, limit: int) -> str:
    """``text`` for a record or a message, at most ``limit`` characters (plus an ellipsis): scrubbed
    *before* it is cut, so a cut never leaves part of a known secret; and a cut inside a word drops
    that word, so a secret this process does not know is not left half-shown either."""
    text = scrub_text(text[: 16 * limit + 4096])  # far past the cut: what is kept is scrubbed whole
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if not text[limit].isspace():
        cut = cut[: len(cut) - len(cut.split()[-1])] if cut.strip() else ""
    return cut.rstrip() + "\u2026"


def open_tail(text: str, limit: int = 4096) -> int:
    """How many trailing characters of ``text`` may be the start of a secret still being written:
    the longest end that begins a known secret, or a trailing ``Bearer X``, token-shaped word or
    URL (at most ``limit``). A writer that emits text in pieces keeps them back until more comes,
    so no secret is ever split between two separately scrubbed pieces (``servers.logpump``)."""
    if not text:
        return 0
    tail = text[-limit:]
    n = len(tail)
    hold = 0
    for secret in known():
        i = tail.find(secret[0], max(0, n - len(secret) + 1))
        while i != -1 and n - i > hold:
            if secret.startswith(tail[i:]):
                hold = n - i  # the first match is the longest
                break
            i = tail.find(secret[0], i + 1)
    m = _OPEN_CREDENTIAL.search(tail)
    if m:
        hold = max(hold, n - m.start())
    word = tail.split()[-1] if tail.strip() and not tail[-1].isspace() else ""
    t = _TOKEN_START.search(word)
    if t:
        hold = max(hold, len(word) - t.start())
    return hold
