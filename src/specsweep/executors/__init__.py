"""Where a grid's configurations run.

    local   in this process, one configuration after another (specsweep.orchestrate)
    ray     each configuration a Ray task on a node with the resources its launcher needs
            (specsweep.executors.ray_executor); needs ``pip install 'specsweep[ray]'``

Both write the same run dir, so a run started with one can be resumed with the other.
"""

from __future__ import annotations

EXECUTORS = ("local", "ray")
