"""Command line: parse arguments, make one library call, map SpecsweepError to an exit code.

Each sub-command lives in ``specsweep.commands.<name>`` with ``register(subparsers)``; a command's
handler takes the parsed namespace and returns an exit code. Heavy imports stay inside handlers so
``specsweep --help`` is fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import signal
import sys
import types
import warnings
from collections.abc import Sequence

from specsweep import __version__
from specsweep.errors import SpecsweepError, broken_install

COMMANDS = ("bench", "run", "sim", "report", "importcmd", "lossless", "plan", "preflight", "calibrate")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag as one clear line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")  # "specsweep run: ...", "specsweep: ..."
        sys.stderr.write(f"  (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specsweep", description="Benchmark and choose speculative-decoding setups.")
    parser.add_argument("--version", action="version", version=f"specsweep {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"specsweep.commands.{name}").register(sub)
    return parser


# what ends a command the way Ctrl-C does, and is ignored once it ends on one (SIGHUP: a closed
# terminal or SSH session; ``executors.signals``)
_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _ignore_stops() -> None:
    with contextlib.suppress(ValueError):  # off the main thread: nothing to set
        for s in _STOPS:
            signal.signal(s, signal.SIG_IGN)


_INTERRUPTS: list[int] = []  # Ctrl-Cs seen by _note_interrupt


def _note_interrupt(signum: int, frame: types.FrameType | None) -> None:
    """Python's own Ctrl-C handler, remembering that it ran: a KeyboardInterrupt that lands inside a
    C extension's import comes out as another error (ImportError: 'PyCapsule_Import could not import
    module "datetime"'), which is an interrupt all the same; one caught by an optional-import fallback
    is gone. A run (``executors.signals.sigterm_as_interrupt``) reads the notes from ``noted``."""
    _INTERRUPTS.append(signum)
    signal.default_int_handler(signum, frame)


_note_interrupt.noted = _INTERRUPTS  # type: ignore[attr-defined]


def main(argv: Sequence[str] | None = None) -> int:
    noting = False
    _INTERRUPTS.clear()  # a caller in the same process: this command's notes, not the last one's
    with contextlib.suppress(ValueError):  # off the main thread: nothing to set
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _note_interrupt)
            noting = True
    try:
        try:  # a Ctrl-C while the sub-commands are imported (the first ~0.6 s) is an interrupt too
            parser = build_parser()
        except KeyboardInterrupt:
            return _interrupted()
        except Exception:
            if _INTERRUPTS:
                return _interrupted()
            raise
        if _INTERRUPTS:  # noted, then swallowed on the way
            return _interrupted()
        return _main(parser, argv)
    finally:  # a caller in the same process (a test, a notebook) gets Python's own handler back
        if noting and signal.getsignal(signal.SIGINT) is _note_interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _interrupted() -> int:
    # ending on an interrupt: a further Ctrl-C or SIGTERM cannot turn exit 130 into death by the
    # signal (executors.signals.stopping, not imported here: the package is slow to import)
    _ignore_stops()
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        sys.stderr.write("specsweep: interrupted\n")
    return 130


def _main(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    warnings.formatwarning = lambda msg, cat, *a, **k: f"warning: {msg}\n"
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except SpecsweepError as e:
        from specsweep.console.terminal import (
            plain,  # every known secret scrubbed, control characters escaped
        )

        sys.stderr.write(f"specsweep: error: {plain(e)}\n")
        return e.exit_code
    except ModuleNotFoundError as e:  # a broken install: a declared dependency is gone (optional
        why = broken_install(e)  # extras raise MissingDependency)
        if why is None:
            raise
        sys.stderr.write(f"specsweep: error: {why}\n")
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except Exception:
        if _INTERRUPTS:  # an interrupt that a C extension's import turned into another error
            return _interrupted()
        raise


def forget_unhandled_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" flag. A Ctrl-C that lands while a C extension
    runs Python code through PyRun_* (at some imports) sets it even when specsweep then catches the
    interrupt and exits 130 on purpose; at exit, CPython would then kill the process with SIGINT
    instead of returning that code. PyRun_SimpleString resets the flag (and runs nothing here)."""
    with contextlib.suppress(Exception):  # not CPython: no such flag
        import ctypes

        ctypes.pythonapi.PyRun_SimpleString(b"")


def entry() -> None:
    """The ``specsweep`` command: ``main``, then its exit code, whatever signal comes once it is
    decided (the work is done and stored; a late Ctrl-C cannot turn the code into death by a signal)."""
    try:
        code = main()
    except KeyboardInterrupt:  # landed between main's own handlers (while an error is printed)
        code = _interrupted()
    _ignore_stops()
    forget_unhandled_interrupt()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
