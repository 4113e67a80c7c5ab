"""Fixtures for the real-engine tests (see helpers.py and docs/engines.md)."""

from __future__ import annotations

import pytest

from tests.engines.helpers import SETUP_HINT, Engines, engines_env_path, read_env_file


@pytest.fixture(scope="session")
def engines() -> Engines:
    path = engines_env_path()
    if not path.is_file():
        pytest.skip(f"real engines not set up ({path} missing): {SETUP_HINT}")
    return Engines(read_env_file(path), path)
