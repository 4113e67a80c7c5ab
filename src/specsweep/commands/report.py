"""`specsweep report RUN_DIR... --kind sweep|compare --lang zh|en --format md|html|json|table -o FILE`."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser(
        "report",
        help="write a sweep or compare report from run dirs",
        description="Analyse run dirs (or results folders holding them) and write a report: sweep = one "
        "method with one parameter varied; compare = methods against each other, each at its best config "
        "per cell. Verdicts are t tests on log values with each config's own run-to-run noise, measured "
        "from its repeats and A/A runs (an assumed 10% where nothing measures it, said in the report), "
        "drift in run order taken out; runs of the adaptive design are judged by its sequential rule. "
        "See docs/statistics.md.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument(
        "--kind",
        choices=["sweep", "compare"],
        help="default: the kind the run's experiment names (report: kind:), else compare when the results "
        "hold several methods, sweep for one (or with --method)",
    )
    p.add_argument("--lang", choices=["zh", "en"], default="en")
    p.add_argument("--format", choices=["md", "html", "json", "table"],
                   help="default: from the -o file's suffix (.html, .htm, .json, .txt), else md")  # fmt: skip
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.add_argument("--method", help="sweep: the method whose configs to compare")
    p.add_argument("--baseline", metavar="LABEL", help="config label without speculation to compare against")
    p.add_argument(
        "--min-effect",
        type=float,
        default=0.0,
        metavar="PCT",
        help="smallest gain (percent) counted as a win",
    )
    p.add_argument("--lossless", metavar="JSON", help="a check-lossless result to show in the report")
    p.add_argument("--plots-dir", metavar="DIR", help="also write every plot as a file (for slides)")
    p.add_argument("--plots-format", choices=["png", "svg"], default="png")
    p.set_defaults(func=_run)


SUFFIX_FORMATS = {".html": "html", ".htm": "html", ".json": "json", ".txt": "table", ".md": "md"}


def output_format(fmt: str | None, output: str | None) -> str:
    """``--format`` as given; else the one the ``-o`` file's suffix names (``X.html`` is HTML, never
    Markdown in a .html file); else md."""
    if fmt:
        return fmt
    from pathlib import Path

    return SUFFIX_FORMATS.get(Path(output).suffix.lower(), "md") if output else "md"


def _run(args: argparse.Namespace) -> int:
    from specsweep.report import build_view, render, write_report
    from specsweep.store.paths import output_dir, output_file, write_failed

    args.format = output_format(args.format, args.output)

    if args.output:  # checked before the analysis: a folder or read-only place is one line, at once
        output_file(args.output, "-o")
    if args.plots_dir:
        output_dir(args.plots_dir, "--plots-dir")
    lossless = None
    if args.lossless:
        from specsweep.report.build.lossless import load_lossless_view

        lossless = load_lossless_view(args.lossless)
    view = build_view(
        args.run_dirs,
        args.kind or "auto",
        method=args.method,
        baseline=args.baseline,
        min_effect=args.min_effect / 100.0,
        lossless=lossless,
    )
    if args.plots_dir:
        from specsweep.report.plots import export_plots

        try:
            plots = export_plots(view, args.plots_dir, args.plots_format, args.lang)
        except OSError as e:
            raise write_failed(e, args.plots_dir, "plots to") from e
        for plot in plots:
            print(f"wrote {plot}", file=sys.stderr)
    if args.format == "table" and not args.output:
        from specsweep.report.table import print_table

        print_table(view, args.lang)
        return 0
    if args.output:
        try:
            path = write_report(view, args.output, args.format, args.lang)
        except OSError as e:
            raise write_failed(e, args.output, "the report") from e
        print(f"wrote {path}", file=sys.stderr)
    else:
        try:
            sys.stdout.write(render(view, args.format, args.lang))
            sys.stdout.flush()
        except OSError as e:
            raise write_failed(e, "<stdout>", "the report to") from e
    return 0
