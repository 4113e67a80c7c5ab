#!/usr/bin/env bash
# Install everything the tests need (idempotent, cached) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test,ray]'
# Headless Chromium for the HTML report test (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# Real engines for tests/engines (cached under ~/.cache/specsweep; SPECSWEEP_SKIP_ENGINES=1 skips).
bash scripts/setup_engines.sh
pytest "$@"
