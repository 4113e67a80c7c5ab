"""One run's raw records and the metrics computed from them (formulas in the docstrings).

    records       RequestSpec, RequestRecord: raw per-request facts, nothing derived
    metrics       records -> one run's metrics (sglang.bench_serving key names)
    per_category  the same per request category (domain): the result line's ``per_category``
    acceptance    acceptance length, one definition for every engine
    steady        how much of a closed-loop run was at its target concurrency, and its figures there

Pure: imports nothing of specsweep but errors, so the client, the simulator and the analysis all
compute a run's numbers the same way.
"""
