"""The experiment file, from YAML to a checked plan, and what is known of it before anything runs.

    config     pydantic models of experiment files and grid expansion (Experiment, Plan, Cell)
    checks     bounds and field types that keep hostile or careless input out of a plan
    adaptive   the ``adaptive:`` section and the DesignSettings it gives the design (read back by
               analysis from a run's manifest)
    templates  {placeholders} and ${ENV} references: pure string functions
    labels     config labels and the stable cell ids every stored row is keyed by
    argv       each server's command line and environment from its config, a builder per engine
    loader     file -> checked Plan: the one plan loader (templates resolve, argv builds)
    stored     the experiment as a run dir keeps it (no secret), back for ``--resume``; stored cell ids
    estimate   duration guesses per cell and per launch before anything ran, and the ETA
    rounds     the run order (interleaved rounds, blocked launches) and RunSchedule: what a run
               needs of its plan, worked out once at its start and handed down

Everything here reads the file or the plan; nothing launches or measures.
"""
