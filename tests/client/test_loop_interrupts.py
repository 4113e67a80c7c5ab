"""A stop signal that lands inside one of the client loop's tasks stops the run without a traceback.

CI saw it once: a SIGHUP landed while the benchmark task built its HTTP session; the run stopped
cleanly (exit 130, manifest "interrupted"), but asyncio then printed the task's traceback as
"Task exception was never retrieved"."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from specsweep.client import kstamp


async def _sub_task_raises(exc: BaseException) -> None:
    async def sub() -> None:
        await asyncio.sleep(0)
        raise exc

    task = asyncio.ensure_future(sub())
    await asyncio.wait(
        {task}
    )  # waited on, its result never read: as ``_watch`` leaves it when a signal lands


def test_an_interrupt_inside_a_task_stops_the_loop_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(KeyboardInterrupt):
        kstamp.run(_sub_task_raises(KeyboardInterrupt()))
    gc.collect()  # the done task goes, and asyncio would log it now
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


def test_any_other_lost_task_error_is_still_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        kstamp.run(_sub_task_raises(ValueError("lost")))
        gc.collect()
    msgs = [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert msgs and "ValueError" in caplog.text
