"""Where and how a configuration's launch runs: its server and its cells, in this process or on Ray.

    cells         a cell's summary row (ok_row, failed_row) and FAILURE_KINDS: why a cell failed
    signals       SIGTERM as Ctrl-C; signals held off while a server is torn down
    job           ConfigJob -> run_config: one configuration's server and its cells, into a CellSink
                  (RunDirSink: straight into the run dir); the ``local`` executor runs it here
    ray_executor  ``ray``: each launch of a round a Ray task on a node with the resources its launcher
                  needs; needs ``pip install 'specsweep[ray]'``
    resources     what a launcher needs of a Ray node
    watchdog      the orphan watchdog: a Ray task's servers die with it

specsweep.orchestrate.run chooses the executor by name (EXECUTORS). Both write the same run dir, so
a run started with one can be resumed with the other.
"""
