"""Issue 38, defects 4 and 5, end to end: one `specsweep run` against an honest simulator and three
lying servers (tests/security/lying_server.py), then `specsweep report`.

- ``empty``: streams no text but its usage claims max_tokens. Before: `ok`, at a throughput of its
  choosing (521,145 tok/s against an honest ~36,000). Now: invalid, the server's counts held
  against the text it sent.
- ``few``: streams max_tokens words but its usage claims 1 token (the other direction): invalid.
- ``huge``: /metrics counters rise by 1e17 drafts (3e17 accepted) per scrape, consistent among
  themselves (acceptance 1.0, accept length 4.00) but impossible for a cell of a few hundred
  output tokens. Before: shown in the report. Now: every acceptance figure dropped, with the reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..faults.harness import assert_no_process_left, experiment, run
from .test_lying_server_run import _lying

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_counts_the_responses_contradict_make_the_run_invalid(tmp_path: Path) -> None:
    honest = {"name": "honest", "kind": "sim", "method": "none", "profile": "toy", "time_scale": 20}
    empty = _lying("empty", "eagle", "--lie-usage", "empty")
    few = _lying("few", "eagle", "--lie-usage", "few")
    huge = _lying(
        "huge", "mtp", "--lie-metrics", "huge", "--spec-tokens", "{spec_tokens}", params={"spec_tokens": 3}
    )
    exp = experiment(honest, empty, few, huge, concurrency=(1,), num_prompts=4)
    exp["scenarios"]["tiny"]["output_len"] = 96
    res = run(exp, tmp_path)
    assert_no_process_left(res.tag)
    rows = {r["server"]: r for r in res.rows}
    assert set(rows) == {"honest", "empty", "few", "huge"}, res.stderr[-2000:]

    e = rows["empty"]
    assert e["status"] == "invalid", e
    assert "disagree with the text it sent in 4 of 4" in e["invalid_reason"]
    assert "output tokens for 0 bytes of text" in e["invalid_reason"]
    f = rows["few"]
    assert f["status"] == "invalid", f
    assert "counted 1 output tokens for a text of" in f["invalid_reason"]

    h = rows["huge"]
    for key in ("accept_length", "spec_accept_length", "spec_acceptance_rate", "spec_accept_per_pos"):
        assert h.get(key) is None, (key, h.get(key))
    assert "accepted draft tokens in a run whose requests had at most" in h["acceptance_invalid_reason"]
    assert "drafts in a run whose requests had at most" in h["acceptance_invalid_reason"]

    h0 = rows["honest"]
    assert h0["status"] in ("ok", "invalid") and "disagree" not in (h0.get("invalid_reason") or ""), h0

    rep = subprocess.run([sys.executable, "-m", "specsweep", "report", str(res.run_dir.path), "--format", "md"],
                         capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert rep.returncode == 0, rep.stderr[-2000:]
    assert "4.00" not in rep.stdout  # the impossible accept length is not shown
