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


def test_outside_a_run_the_last_runs_signal_stops_nothing() -> None:
    """A run that ended on a signal leaves it recorded; code called outside any run (a caller's own
    ``run_config``, the next test on a worker) is not stopped by it."""
    with sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
    raise_if_interrupted()  # outside a run: a no-op


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


def _swallowing_import() -> None:
    """A Ctrl-C during an import whose KeyboardInterrupt an optional-import fallback swallows."""
    try:
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):  # the handler runs here
            pass
    except KeyboardInterrupt:
        pass


def test_a_ctrl_c_swallowed_while_the_commands_are_imported_ends_the_command_at_130(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI saw it once: a Ctrl-C 0.15 s after start, then the whole run and exit 0."""
    import specsweep.cli as cli

    real = cli.build_parser

    def build_parser() -> object:
        _swallowing_import()
        return real()

    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.getsignal(s) for s in stops}
    try:
        monkeypatch.setattr(cli, "build_parser", build_parser)
        assert cli.main(["sim", "predict", "--help"]) == 130  # ended before it parsed the arguments
        assert capsys.readouterr().err == "specsweep: interrupted\n"
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # ending at 130: no further Ctrl-C counts
        monkeypatch.setattr(cli, "build_parser", real)
        assert cli.main([]) == 2  # the next command (SIGINT still ignored) does not inherit the note
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert cli.main([]) == 2
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def test_a_ctrl_c_swallowed_before_the_run_stops_the_run_before_it_starts() -> None:
    """The command line's handler notes a Ctrl-C whose KeyboardInterrupt is lost on the way (a
    command's own imports, after the parser); the run then stops at once, and its own SIGINT
    handler records the next one."""
    import specsweep.cli as cli

    old = signal.signal(signal.SIGINT, cli._note_interrupt)
    try:
        cli._INTERRUPTS.clear()
        with sigterm_as_interrupt():  # nothing noted: the run goes on, and records its own Ctrl-Cs
            assert signal.getsignal(signal.SIGINT) is not cli._note_interrupt
        assert signal.getsignal(signal.SIGINT) is cli._note_interrupt
        _swallowing_import()
        assert cli._INTERRUPTS == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
            pytest.fail("the run started after a Ctrl-C")
        assert signal.getsignal(signal.SIGINT) is cli._note_interrupt  # handlers given back
    finally:
        cli._INTERRUPTS.clear()
        signal.signal(signal.SIGINT, old)
