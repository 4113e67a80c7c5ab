"""Run dirs, and everything that crosses the disk or the terminal's edge on the way in or out.

    run_dir       RunDir: manifest, summary.jsonl, records/*.parquet, logs/; atomic, resumable
    inputs        files read from outside: regular files only (no FIFO, no device), bytes bounded
    strict_yaml   YAML from outside: duplicate keys, depth and alias bombs refused
    paths         output locations checked up front; write failures as one error
    redact        secrets: what counts as one, kept out of every sink
    redact_copy   a file copied with its secrets replaced (an import's ``source/``)
    redact_pieces text that leaves in pieces (a cut message, a streamed log) without splitting a secret
    fingerprint   which binaries and model files a run used, by content hash
    launch_noise  the stored launch-noise calibration, per engine and host

A new kind of file read from outside goes through inputs; a new sink, through redact.
"""
