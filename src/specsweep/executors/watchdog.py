"""Orphan guard: ``python -m specsweep.executors.watchdog PGID STOP_S [SCRATCH]``, started by a Ray task.

A server runs in its own process group, so when the task's worker process dies (killed, OOM, the
task cancelled) nothing stops it. This small process (own session, parent = the worker) notices
that its parent is gone (it is re-parented) and stops the group: SIGTERM, ``STOP_S`` grace, SIGKILL.
It exits by itself once the group is gone (the normal teardown). After stopping an orphan it also
removes the dead task's scratch dir ``SCRATCH`` (its unsent log lines are lost with it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def guard(pgid: int, parent: int, stop_s: float, scratch: str | None = None, poll_s: float = 0.2) -> None:
    while _group_alive(pgid):
        if os.getppid() != parent:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + stop_s
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            return
        time.sleep(poll_s)


if __name__ == "__main__":
    guard(int(sys.argv[1]), os.getppid(), float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
