"""One exception tree for everything a user can get wrong or a run can meet.

    SpecsweepError                 (exit code 2 unless stated)
    ├── UsageError                 bad flag or argument value
    ├── ConfigError                bad experiment / scenario / profile file (names file and key path)
    ├── DataError                  bad input data: result files to import, datasets, records
    ├── ServerError                a server failed to launch, become ready, or died (exit 3)
    ├── BenchError                 a benchmark could not run at all (unreachable, all failed) (exit 4)
    └── MissingDependency          an optional extra is needed (names the pip command)

Every message names the bad value and what would have been accepted.

Exit codes of the ``specsweep`` command (docs/getting-started.md lists them for users):

    0    done
    1    done, but something measured failed: ``run`` has failed cells, ``preflight`` a failed check,
         or ``run`` could not write its run dir (finished cells kept)
    2    a SpecsweepError: bad flag, experiment, data, or a missing optional dependency; or a
         broken install (``broken_install``: a declared dependency gone missing)
    3    ServerError (reserved: ``run`` records a failed server's cells as data and exits 1)
    4    BenchError
    5    ``bench`` measured, but its self-check marked the measurement invalid (the client's
         own timing could be off by more than the contract allows; the result, written in full,
         says why under ``invalid_reason``): not an error, and not a number to trust
    6    ``run`` measured (every finished cell is stored) but a report could not be written; it
         prints why and the command that writes it later (``specsweep report RUN_DIR``)
    130  interrupted (Ctrl-C, SIGTERM or SIGHUP); finished work is kept
"""

from __future__ import annotations

EXIT_INVALID_MEASUREMENT = 5
EXIT_REPORT_FAILED = 6
EXIT_INTERRUPTED = 130


class SpecsweepError(Exception):
    exit_code = 2


class UsageError(SpecsweepError):
    pass


class ConfigError(SpecsweepError):
    def __init__(self, message: str, *, file: str | None = None, path: str | None = None) -> None:
        where = ""
        if file:
            where = f"{file}: "
        if path:
            where += f"at '{path}': "
        super().__init__(where + message)
        self.file = file
        self.path = path


class DataError(SpecsweepError):
    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        where = []
        if file:
            where.append(str(file) + (f":{line}" if line is not None else ""))
        if field:
            where.append(f"field '{field}'")
        super().__init__((", ".join(where) + ": " if where else "") + message)
        self.file = file
        self.line = line
        self.field = field


class ServerError(SpecsweepError):
    exit_code = 3


class BenchError(SpecsweepError):
    exit_code = 4


class MissingDependency(SpecsweepError):
    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs an optional dependency: pip install 'specsweep[{extra}]'")
        self.extra = extra


def broken_install(e: ModuleNotFoundError) -> str | None:
    """The one line for a declared dependency gone missing (a broken install), or None when ``e`` is
    not that (no name, or a module of specsweep itself: a bug to show in full)."""
    if not e.name or e.name.split(".")[0] == "specsweep":
        return None
    name = e.name.split(".")[0]  # the package to install (scipy, not scipy.spatial)
    return (
        f"the module {name!r} that specsweep needs is not installed; reinstall specsweep with its "
        "dependencies (pip install specsweep, or pip install -e . in a checkout)"
    )


def one_of(value: object, accepted: object) -> str:
    """Standard wording: "got 'x'; expected one of: a, b, c"."""
    if isinstance(accepted, (list, tuple, set, frozenset, dict)):
        acc = ", ".join(sorted(str(a) for a in accepted))
    else:
        acc = str(accepted)
    return f"got {value!r}; expected one of: {acc}"
