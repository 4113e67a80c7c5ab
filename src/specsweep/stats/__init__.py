"""Pure statistics: small functions, formulas and units in their docstrings (docs/statistics.md).

    basic       bootstrap intervals, t tests on log values, multiplicity adjustment, repeats needed,
                crossings, trend residuals
    noise       run-to-run noise per config, measured from every repeat, the host's drift taken out
    drift       the host's drift over the run order: its columns, its size and test, refused drifts
    launch      launch noise: the level each server launch (and session) gives the runs it makes
    step        the host's change points in the run order
    compare     two configs in one cell, judged against both configs' measured noise
    sequential  decisions that stay valid however often the data are looked at (the design's rule)
    planning    how many runs a grid needs; the expected gain of a recommendation, with its interval

A new statistical test goes here, beside the module whose question it answers; stats imports no
other stage (pyproject.toml's import contracts).
"""
