"""specsweep: benchmark, compare and choose speculative-decoding setups for LLM serving engines."""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
