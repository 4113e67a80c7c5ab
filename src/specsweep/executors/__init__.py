"""Where a grid's configurations run (chosen by name from specsweep.orchestrate.run.EXECUTORS).

    local   in this process, a round's launches one after another (specsweep.orchestrate.run.LocalExecutor)
    ray     each launch of a round a Ray task on a node with the resources its launcher needs
            (specsweep.executors.ray_executor); needs ``pip install 'specsweep[ray]'``

Both write the same run dir, so a run started with one can be resumed with the other. An executor
runs ``specsweep.executors.job.run_config`` and imports only the job and cell modules.
"""
