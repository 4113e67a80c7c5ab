"""Argument errors are one line naming the command once (issue 28 defect 11: the top-level parser
printed "specsweep specsweep: error:"), and a dataset without its file says where to get it."""

from __future__ import annotations

import pytest

from specsweep.cli import main


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["--no-such-flag"], "specsweep: error: unrecognized arguments: --no-such-flag"),
        (["no-such-command"], "specsweep: error: argument COMMAND: invalid choice: 'no-such-command'"),
        (["sim", "fit"], "specsweep sim fit: error: the following arguments are required"),
        (["report", "--kind", "nope", "x"], "specsweep report: error: argument --kind: invalid choice"),
    ],
)
def test_argument_errors_name_the_command_once(
    argv: list[str], prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.startswith(prefix), err
    assert "specsweep specsweep" not in err and "specsweep fit:" not in err


def test_file_dataset_without_a_path_says_where_to_get_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.warns(UserWarning, match="no --tokenizer given"):
        rc = main(["bench", "--base-url", "http://127.0.0.1:9", "--dataset-name", "spec-bench"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "needs --dataset-path" in err and "question.jsonl of https://github.com/hemingkx/Spec-Bench" in err


def test_an_interrupt_that_an_import_turned_into_another_error_exits_130(monkeypatch, capsys) -> None:
    """A Ctrl-C that lands inside a C extension's import comes out as an ImportError ('PyCapsule_Import
    could not import module "datetime"', seen in CI at 0.3 s): still an interrupt, exit 130, no
    traceback. Before: the ImportError's traceback and exit 1."""
    import signal

    from specsweep import cli

    def parser_interrupted():
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise ImportError('PyCapsule_Import could not import module "datetime"') from None

    monkeypatch.setattr(cli, "build_parser", parser_interrupted)
    monkeypatch.setattr(cli, "_INTERRUPTS", [])
    monkeypatch.setattr(cli, "_ignore_stops", lambda: None)  # the test process keeps its signals
    old = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert cli.main(["--version"]) == 130
    finally:
        signal.signal(signal.SIGINT, old)
    assert "interrupted" in capsys.readouterr().err


def test_main_gives_python_its_own_ctrl_c_handler_back() -> None:
    """main() notes Ctrl-Cs while it runs; a caller in the same process (a test worker, a notebook)
    keeps Python's own handler afterwards (tests/faults/test_lost_interrupt.py saw it leak)."""
    import signal

    from specsweep import cli

    old = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with pytest.raises(SystemExit):
            cli.main(["--version"])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, old)
