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
# The whole suite: -m "" lifts pyproject's quick-tier filter (-m 'not slow'); extra args pass through.
pytest -m "" "$@"
