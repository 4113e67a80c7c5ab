"""Run dirs and what crosses the disk: inputs from outside, redaction, paths, fingerprints."""
