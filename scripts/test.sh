#!/usr/bin/env bash
# Install everything the tests need (idempotent, cached) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test,ray]'
# Headless Chromium for the HTML report test, and a CJK font for Chinese plot exports (Debian).
if ! command -v chromium >/dev/null 2>&1 || ! fc-list :lang=zh 2>/dev/null | grep -q .; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
fi
# Real engines for tests/engines (cached under ~/.cache/specsweep; SPECSWEEP_SKIP_ENGINES=1 skips).
bash scripts/setup_engines.sh
# The peer client the lean cross-validation test runs (sglang.bench_serving, standalone, own venv).
bash scripts/setup_peers.sh sglang
# The whole suite, in two stages (each -m replaces pyproject's quick-tier filter, -m 'not slow'):
# first the tests that measure time (`timing`, tests/conftest.py), serially, alone on the machine;
# then everything else on pytest-xdist workers, a module's shared fixture kept on one worker
# (--dist loadgroup). Extra args pass through to both stages. Each stage writes junit XML to
# $SPECSWEEP_TEST_REPORTS (default test-artifacts/junit); scripts/test_durations.py prints the split.
reports="${SPECSWEEP_TEST_REPORTS:-test-artifacts/junit}"
mkdir -p "$reports"
rm -f "$reports/timing.xml" "$reports/parallel.xml"
status=0 empty=0
stage() {  # stage NAME PYTEST-ARGS...: exit 5 (no test selected, e.g. a path with none) fails only if both are
    local name="$1" rc=0
    shift
    pytest --junitxml="$reports/$name.xml" "$@" || rc=$?
    if [ "$rc" -eq 5 ]; then empty=$((empty + 1)); elif [ "$rc" -ne 0 ]; then status="$rc"; fi
}
stage timing -m timing -p no:xdist "$@"
# Workers: twice the cores (most of these tests wait on servers and subprocesses), at most 16.
cores="$(nproc)"
workers="${SPECSWEEP_TEST_WORKERS:-$(( cores * 2 > 16 ? 16 : cores * 2 ))}"
stage parallel -m "not timing" -n "$workers" --dist loadgroup "$@"
python3 scripts/test_durations.py "$reports/timing.xml" "$reports/parallel.xml" --top 15 || true
if [ "$status" -eq 0 ] && [ "$empty" -eq 2 ]; then status=5; fi
exit "$status"
