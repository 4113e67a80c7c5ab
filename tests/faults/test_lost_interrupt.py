"""A Ctrl-C (or SIGTERM) whose KeyboardInterrupt Python swallows still stops the grid: raised while a
weakref callback runs, the exception is printed as "Exception ignored" and lost, and the run would
go on; the signal is recorded, and the grid checks between cells (executors.signals)."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from specsweep.executors.signals import raise_if_interrupted, sigterm_as_interrupt


class _Obj:
    pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost exception
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_lost_in_a_weakref_callback_is_still_raised_between_cells(sig: int) -> None:
    swallowed = []

    def callback(_ref: object) -> None:
        try:
            os.kill(os.getpid(), sig)
            for _ in range(1000):  # the handler runs here, inside the callback
                pass
        finally:
            swallowed.append(True)

    with sigterm_as_interrupt():
        raise_if_interrupted()  # nothing yet
        obj = _Obj()
        ref = weakref.ref(obj, callback)
        del obj
        gc.collect()
        assert swallowed == [True] and ref() is None  # the callback ran: its KeyboardInterrupt was lost
        with pytest.raises(KeyboardInterrupt):
            raise_if_interrupted()


def test_a_new_run_starts_without_the_last_ones_signal() -> None:
    with sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
    with sigterm_as_interrupt():
        raise_if_interrupted()  # no stale signal from the run before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# A child process whose command catches a Ctrl-C that CPython also saw "unhandled" inside PyRun_*
# (as when the signal lands during an import that runs Python code from C): the command returns 130.
CHILD = """
import ctypes, sys
import specsweep.cli as cli

def main(argv=None):
    ctypes.pythonapi.PyRun_SimpleString(b"raise KeyboardInterrupt")  # sets CPython's flag
    return 130

cli.main = main
cli.entry()
"""


def test_an_interrupt_seen_inside_c_code_does_not_turn_exit_130_into_death_by_sigint(tmp_path: Path) -> None:
    (tmp_path / "child.py").write_text(
        CHILD
    )  # run as `python -m`, as the tests run specsweep: CPython checks
    p = subprocess.run(  # its flag on that path (a script file exits through Py_Exit before the check)
        [sys.executable, "-m", "child"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert p.returncode == 130, (p.returncode, p.stderr[-1000:])  # was -2 (killed by its own SIGINT)
