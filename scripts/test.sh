#!/usr/bin/env bash
# Install everything the tests need (idempotent, cached) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test]'
pytest "$@"
