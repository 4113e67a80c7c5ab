"""Issue 27, defects 1 and 5, end to end: one `specsweep run` against an honest simulator and two
lying servers (tests/security/lying_server.py), then its summary and reports.

- ``flood``: one chunk of 2,000,000 words to requests capped at 256 tokens, no usage field. Before,
  its cell was `ok` at about 1.4M tok/s and the report named it the winner. Now each request is
  failed (`over_max_tokens`), the cell is failed, and no report names it.
- ``liar``: its /metrics counters claim 7,000,000 accepted tokens for 3 drafted. Before, its `ok`
  cell stored an acceptance rate of 2,333,333 and an accept length of 7,000,001, and the report
  printed them. Now every acceptance figure of the cell is dropped with the reason, and no report
  shows one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ..faults.harness import assert_no_process_left, experiment, run

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

LIAR = str(Path(__file__).with_name("lying_server.py"))


def _lying(name: str, method: str, *extra: str, **over: object) -> dict[str, object]:
    argv = [sys.executable, LIAR, "--port", "{port}", "--host", "{host}", *extra]
    return {"name": name, "kind": "command", "method": method, "argv": argv, **over}


def test_lying_servers_win_nothing_and_print_nothing(tmp_path: Path) -> None:
    honest = {"name": "honest", "kind": "sim", "method": "none", "profile": "toy", "time_scale": 20}
    flood = _lying("flood", "eagle", "--flood-words", "2000000")
    liar = _lying("liar", "mtp", "--lie-metrics", "inflate", "--spec-tokens", "{spec_tokens}",
                  params={"spec_tokens": 3})  # fmt: skip
    exp = experiment(honest, flood, liar, concurrency=(1,), num_prompts=2)
    exp["scenarios"]["tiny"]["output_len"] = 256
    res = run(exp, tmp_path)
    assert_no_process_left(res.tag)
    rows = {r["server"]: r for r in res.rows}
    assert set(rows) == {"honest", "flood", "liar"}, res.stderr[-2000:]

    f = rows["flood"]
    assert (f["status"], f["failure_kind"]) == ("failed", "all_requests_failed"), f
    assert f["errors_by_kind"] == {"over_max_tokens": 2} and f["total_output_tokens"] == 0
    assert "over_max_tokens" in f["error"]
    recs = (
        [r for r in res.run_dir.read_records(f["cell_id"], 0) if not r.is_warmup] if f.get("records") else []
    )
    for r in recs:
        assert r.error_kind == "over_max_tokens" and "for 256 requested" in (r.error or "")

    li = rows["liar"]
    assert li["status"] in ("ok", "invalid"), li  # its throughput is measured; its acceptance is not
    for key in ("accept_length", "spec_accept_length", "spec_acceptance_rate", "spec_accept_per_pos"):
        assert li.get(key) is None, (key, li.get(key))
    assert "more draft tokens accepted (7,000,000) than drafted (3)" in li["acceptance_invalid_reason"]
    assert any("acceptance figures dropped" in w for w in li["warnings"])
    assert rows["honest"].get("acceptance_invalid_reason") is None

    md = (res.run_dir.path / "report.md").read_text()
    html = (res.run_dir.path / "report.html").read_text()
    for text in (md, html):
        for absurd in ("7,000,001", "7000001", "2,333,333", "2333333"):
            assert absurd not in text, absurd
    section = md.split("## Throughput winners", 1)[1].split("\n## ", 1)[0]
    winners = [row.split("|")[3].strip() for row in section.splitlines() if re.match(r"\| tiny \|", row)]
    assert winners and not {"flood", "eagle"} & set(winners), section
    assert re.search(r"\| tiny \| 1 \|[^\n]*\| failed \|", section), section  # flood's column: failed
