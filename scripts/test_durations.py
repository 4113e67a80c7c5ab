"""Where the suite's time goes: reads the junit XML files scripts/test.sh writes (one per stage)
and prints, per stage, its wall time, and per tier, the tests and the test-seconds they took.

    python3 scripts/test_durations.py test-artifacts/junit/*.xml [--top 15]
    python3 scripts/test_durations.py serial.xml --tiers-from test-artifacts/junit/timing.xml \
        --tiers-from test-artifacts/junit/parallel.xml     # a one-stage run, split by the same tiers

A stage is one pytest run (``timing``: serial, alone on the machine; ``parallel``: on xdist
workers); its wall time is the junit suite's time, i.e. pytest's own session time (collection
included, installs not). A tier is what tests/conftest.py records on each test (timing, engine,
browser, parallel). Test-seconds add up setup + call + teardown of every test: on workers they
overlap, so a parallel stage's test-seconds exceed its wall time by about the speed-up.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Stage:
    name: str
    wall_s: float
    when: str
    host: str
    outcome: dict[str, int]
    tiers: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    tests: list[tuple[float, str]] = field(default_factory=list)


def test_key(case: ET.Element) -> tuple[str, str]:
    return case.get("classname", ""), (case.get("name") or "").split("@", 1)[0]  # xdist appends @GROUP


def tiers_of(paths: list[Path]) -> dict[tuple[str, str], str]:
    """Each test's tier as recorded in these junit files."""
    out = {}
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            for prop in case.iter("property"):
                if prop.get("name") == "tier":
                    out[test_key(case)] = prop.get("value") or "untiered"
    return out


def read_stage(path: Path, tiers: dict[tuple[str, str], str] | None = None) -> Stage:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        raise SystemExit(f"{path}: no <testsuite> (not a pytest junit file?)")
    s = suites[0]
    outcome = {k: int(s.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    stage = Stage(
        path.stem, float(s.get("time", "0")), s.get("timestamp", "?"), s.get("hostname", "?"), outcome
    )
    for case in s.iter("testcase"):
        t = float(case.get("time", "0"))
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        key = test_key(case)
        stage.tiers[props.get("tier") or (tiers or {}).get(key) or "untiered"].append(t)
        stage.tests.append((t, f"{key[0]}::{key[1]}"))
    return stage


def machine() -> str:
    """This machine's cores, CPU model and load (right after the suite, its 5- and 15-minute load
    averages say how busy the machine was while it ran)."""
    model = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return f"{os.cpu_count()} cores ({model}), load average {load} (1 / 5 / 15 min)"


def fmt_s(s: float) -> str:
    return f"{int(s // 60)} min {s % 60:04.1f} s" if s >= 60 else f"{s:.1f} s"


def render(stages: list[Stage], top: int) -> str:
    out = ["| stage | started | wall | tests | tier: tests, test-seconds |", "|---|---|---|---|---|"]
    for st in stages:
        tiers = "; ".join(f"{k}: {len(v)}, {sum(v):.0f} s" for k, v in sorted(st.tiers.items()))
        bad = st.outcome["failures"] + st.outcome["errors"]
        note = f" ({bad} failed)" if bad else ""
        out.append(f"| {st.name} | {st.when} | {fmt_s(st.wall_s)} | {st.outcome['tests']}{note} | {tiers} |")
    out.append(f"| all stages | | {fmt_s(sum(st.wall_s for st in stages))} | "
               f"{sum(st.outcome['tests'] for st in stages)} | |")  # fmt: skip
    hosts = sorted({st.host for st in stages})
    out.append(f"\nhost: {', '.join(hosts)}; here now: {machine()}")
    if top:
        out.append(f"\nslowest {top} tests (test-seconds, stage):")
        ranked = sorted(((t, name, st.name) for st in stages for t, name in st.tests), reverse=True)
        out += [f"  {t:6.1f} s  {name}  [{stage}]" for t, name, stage in ranked[:top]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", nargs="+", type=Path, help="junit XML files, one per stage")
    ap.add_argument("--top", type=int, default=10, help="list the N slowest tests (0: none)")
    ap.add_argument("--tiers-from", type=Path, action="append", default=[], metavar="JUNIT",
                    help="take the tier of tests that carry none (a plain `pytest -m \"\" --junitxml=...` "
                    "run, e.g. of an older checkout) from this split run's junit file; repeatable")  # fmt: skip
    a = ap.parse_args(argv)
    tiers = tiers_of([p for p in a.tiers_from if p.is_file()])
    stages = [read_stage(p, tiers) for p in a.junit if p.is_file()]
    if not stages:
        raise SystemExit(f"no junit file among {[str(p) for p in a.junit]}")
    print(render(stages, a.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
