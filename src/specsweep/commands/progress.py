"""Progress shown while work runs: the two observers `specsweep run` shows a grid with (a rich live
display on a terminal, log lines otherwise; the duration estimate and the ETA they show are
specsweep.experiment.estimate's), `bench`'s live line, and the stages of a library call (`plan`).

External text (labels, scenario names, errors) reaches rich only through ``rich.markup.escape``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from typing import Any

from rich.markup import escape as markup_escape

from specsweep.console.terminal import plain
from specsweep.design import observe
from specsweep.experiment.config import Plan
from specsweep.experiment.estimate import (
    Eta,
    PlanEstimate,
    assumptions,
    cell_guess_s,
    estimate_plan,
    startup_guess_s,
    tpot_guess_s,
)

__all__ = [
    "BenchProgress",
    "Eta",
    "LiveObserver",
    "PlanEstimate",
    "QuietObserver",
    "StageProgress",
    "assumptions",
    "cell_guess_s",
    "estimate_plan",
    "startup_guess_s",
    "tpot_guess_s",
]

log = logging.getLogger("specsweep.run")


def escape(v: object) -> str:
    """External text for rich: secrets scrubbed, control characters escaped, markup escaped."""
    return markup_escape(plain(v))


def fmt_duration(s: float) -> str:
    n = max(0, round(s))
    h, rem = divmod(n, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


def _fmt(v: Any, nd: int = 1) -> str:
    return f"{v:.{nd}f}" if isinstance(v, (int, float)) else "-"


class _Clock:
    """Wall time of the current cell and server start, and the ETA model, shared by both observers."""

    def __init__(self) -> None:
        self.eta: Eta | None = None
        self.done = 0
        self.total = 0
        self._cell_t0 = self._srv_t0 = time.monotonic()
        self._restart = False

    def event(self, event: str, d: dict[str, Any]) -> None:
        now = time.monotonic()
        if event == "run_start":
            self.total = d["todo"]
            plan = d.get("plan")
            if isinstance(plan, Plan):
                todo = d.get("todo_runs")
                self.eta = Eta(plan, set(d.get("finished_cells") or ()), None if todo is None else list(todo),
                               d.get("launches"))  # fmt: skip
        elif event == "round_start" and d.get("todo_runs") is not None:  # the adaptive design's rounds
            self.total += d["runs"]
            if self.eta is not None:
                self.eta.add(d["todo_runs"], d["launches"])
        elif event == "server_start":
            self._srv_t0 = now
            self._restart = bool(d.get("restart"))
        elif event == "server_ready" and self.eta is not None:
            self.eta.server_ready(d["label"], now - self._srv_t0, self._restart)
            self._cell_t0 = now
        elif event == "cell_start":
            self._cell_t0 = now
        elif event == "cell_done":
            self.done += 1
            if self.eta is not None and "cell" in d:
                self.eta.cell_done(d["cell"], d.get("repeat", 0), now - self._cell_t0)
            self._cell_t0 = now

    def eta_text(self) -> str:
        return fmt_duration(self.eta.remaining_s()) if self.eta is not None else "?"


def round_text(d: dict[str, Any]) -> str:
    """A round as it starts: its launches and runs; for the adaptive design, why, how many cells are
    still undecided and what is left of the budget (the total is not known up front)."""
    r = d["round"]
    head = f"round {r}" if r is not None else "launches"
    text = f"{head}: {d['runs']} run(s) in {len(d['launches'])} launch(es)"
    state, settings = d.get("state"), d.get("settings")
    if d.get("reason"):
        text += f" ({d['reason']})"
    if state is not None and settings is not None:
        text += f"; {observe.undecided(state)} cell(s) undecided; spent {fmt_duration(state.spent_s)}"
        limit = observe.budget_s(state, settings)
        if limit is not None:
            text += f" of a {fmt_duration(limit)} budget"
    return text


def design_text(d: dict[str, Any]) -> str:
    """The adaptive design's end: how its cells stopped, and its time against a ``repeats: 3`` grid."""
    state = d["state"]
    kinds = Counter(c.status for c in state.cells)
    parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return (f"design finished after {d['rounds']} round(s): {parts}; spent {fmt_duration(state.spent_s)}, "
            f"the same grid with repeats: 3 about {fmt_duration(state.baseline_s)}")  # fmt: skip


class QuietObserver:
    """Log lines, one per event, each finished cell with the ETA: for logs and CI."""

    def __init__(self) -> None:
        self.clock = _Clock()

    @property
    def done(self) -> int:
        return self.clock.done

    def __call__(self, event: str, d: dict[str, Any]) -> None:
        self.clock.event(event, d)
        if event == "run_start" and d.get("adaptive"):
            log.info("adaptive design: round by round, each round only what is still undecided "
                     "(%d run(s) stored already)", d["finished"])  # fmt: skip
        elif event == "run_start":
            log.info("%d benchmark run(s) to do (%d already finished); estimated %s", d["todo"], d["finished"],
                     self.clock.eta_text())  # fmt: skip
        elif event == "server_start":
            log.info("%s server %s", "restarting" if d["restart"] else "starting", plain(d["label"]))
        elif event == "server_ready":
            log.info(
                "%s ready at %s in %.1f s (version %s)",
                plain(d["label"]),
                d["url"],
                d["startup_s"],
                d["version"],
            )
        elif event == "server_failed":
            log.error("%s failed to start: %s", plain(d["label"]), plain(d["error"]))
        elif event == "server_died":
            log.warning("%s died (exit code %s); restarting it", plain(d["label"]), d["returncode"])
        elif event == "cell_done":
            r = d["row"]
            extra = plain(r.get("error") or r.get("invalid_reason") or "")
            log.info(
                "[%d/%d] %s %s c=%s r%s: %s total_tok/s=%s mean_tpot_ms=%s %s; ETA %s",
                self.clock.done, self.clock.total, plain(r["label"]), plain(r["scenario"]), r["max_concurrency"], r["repeat"],
                r["status"], _fmt(r.get("total_throughput")), _fmt(r.get("mean_tpot_ms"), 2),
                extra.split("\n", 1)[0], self.clock.eta_text(),
            )  # fmt: skip
        elif event == "round_start":
            log.info("%s", plain(round_text(d)))
        elif event == "design_done":
            log.info("%s", design_text(d))
        elif event == "reports":
            log.info("writing the reports")
        elif event == "run_end":
            log.info("finished: %s", d["counts"])

    def close(self) -> None:
        pass


# finished-cells table: (header, row key, decimals); dropped from the right when the terminal is narrow
_COLUMNS = (
    ("scenario", "scenario", None), ("c", "max_concurrency", None), ("status", "status", None),
    ("tok/s", "total_throughput", 1), ("TPOT ms", "mean_tpot_ms", 2), ("TTFT ms", "mean_ttft_ms", 1),
    ("req/s", "request_throughput", 2), ("rep", "repeat", None),
)  # fmt: skip


class LiveObserver:
    """A rich live display: progress bar with the learned ETA, the current cell, the finished cells.
    The config label column is never truncated: on a narrow terminal the right-hand columns go."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console or Console(stderr=True)
        self.clock = _Clock()
        self.progress = Progress(
            TextColumn("[bold]grid"), BarColumn(bar_width=None), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"), console=self.console, expand=False,
        )  # fmt: skip
        self.task = self.progress.add_task("grid", total=None, eta="?")
        self.rows: deque[dict[str, Any]] = deque(maxlen=12)
        self.status = ""
        self.live = Live(self._render(), console=self.console, refresh_per_second=4)
        self.live.start()

    def table(self) -> Any:
        from rich.table import Table

        labels = [str(r["label"]) for r in self.rows] or ["config"]
        width = max(len(x) for x in [*labels, "config"])
        budget = self.console.width - width - 4  # borders and padding of the first column
        cols = []
        for head, key, nd in _COLUMNS:
            w = max([len(head), *(len(_cell(r, key, nd)) for r in self.rows)]) + 3
            if budget - w < 0:
                break
            budget -= w
            cols.append((head, key, nd))
        t = Table(title="finished cells (latest)", expand=False)
        t.add_column("config", no_wrap=True, min_width=width)
        for head, _key, nd in cols:
            t.add_column(head, justify="left" if nd is None else "right", no_wrap=True)
        for r in self.rows:
            color = {"ok": "green", "invalid": "yellow"}.get(str(r["status"]), "red")
            cells = [
                f"[{color}]{escape(str(r['status']))}[/]" if key == "status" else escape(_cell(r, key, nd))
                for _h, key, nd in cols
            ]
            t.add_row(escape(str(r["label"])), *cells)
        return t

    def _render(self) -> Any:
        from rich.console import Group

        return Group(self.progress, escape(self.status), self.table())

    def __call__(self, event: str, d: dict[str, Any]) -> None:
        self.clock.event(event, d)
        if event == "run_start":
            self.progress.update(self.task, total=d["todo"])
        elif event == "round_start":
            self.progress.update(self.task, total=self.clock.total)
            self.console.print(escape(round_text(d)))
        elif event == "design_done":
            self.console.print(escape(design_text(d)))
        elif event == "server_start":
            self.status = f"{'restarting' if d['restart'] else 'starting'} server {d['label']} ..."
        elif event == "server_ready":
            self.status = f"{d['label']} ready in {d['startup_s']:.1f} s (version {d['version']})"
        elif event in ("server_failed", "server_died"):
            msg = f"{event.replace('_', ' ')}: {d['label']}"
            self.console.print(f"[red]{escape(msg)}[/] {escape(str(d.get('error', '')))}")
        elif event == "cell_start":
            c = d["cell"]
            self.status = (
                f"running {c.label} · {c.scenario} · concurrency {c.max_concurrency} · repeat {d['repeat']}"
            )
        elif event == "cell_done":
            self.rows.append(d["row"])
            self.progress.advance(self.task)
            self.status = ""
        elif event == "reports":
            self.status = "writing the reports ..."
        elif event == "run_end":
            self.status = "finished: " + ", ".join(f"{n} {k}" for k, n in sorted(d["counts"].items()))
        self.progress.update(self.task, eta=self.clock.eta_text())
        self.live.update(self._render())

    def close(self) -> None:
        self.live.stop()


def _cell(r: dict[str, Any], key: str, nd: int | None) -> str:
    v = r.get(key)
    return _fmt(v, nd) if nd is not None else ("-" if v is None else str(v))


def eta_progress(console: Any = None, bar_width: int = 40) -> tuple[Any, Any]:
    """(console, rich Progress) of a bar with done / total, the elapsed time and the ETA from the
    steps' rate; transient: gone once stopped. The console: stderr unless given."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = console or Console(stderr=True)
    progress = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=bar_width), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=True,
    )  # fmt: skip
    return console, progress


class BenchProgress:
    """`specsweep bench`'s live line on a terminal: requests done / total with elapsed time and an
    ETA from the finished requests' rate. ``advance()`` is the per-request hook for the client's
    runner; without calls it still shows the run is alive (elapsed time, requests planned)."""

    def __init__(self, total: int, what: str, console: Any = None) -> None:
        self.console, self.progress = eta_progress(console)
        self.task = self.progress.add_task(escape(what), total=total)

    def advance(self, n: int = 1) -> None:
        self.progress.advance(self.task, n)

    def __enter__(self) -> BenchProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


class StageProgress:
    """A rich display of a library call's stages (``specsweep.console.tracking``): per stage a bar of its
    steps, the elapsed time and, when the stage knows its total, the ETA from the steps' rate. For
    ``specsweep plan`` on a terminal (callers show nothing otherwise)."""

    def __init__(self, console: Any = None) -> None:
        self.console, self.progress = eta_progress(console, bar_width=20)  # short names: 80 columns
        self.task: Any = None

    def stage(self, name: str, total: int | None) -> None:
        if self.task is not None:  # the previous stage is done, whatever it counted
            done = self.progress.tasks[-1].completed
            self.progress.update(self.task, total=done or 1, completed=done or 1)
        self.task = self.progress.add_task(escape(name), total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None:
            self.progress.advance(self.task, n)

    def __enter__(self) -> StageProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
