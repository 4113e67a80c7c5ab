"""Progress of a grid: the duration estimate, an ETA that learns from finished cells, and the two
observers `specsweep run` shows it with (a rich live display on a terminal, log lines otherwise).

The estimate is a workload model, stated in ``assumptions()``: a cell's requests run in
ceil(num_prompts / concurrency) closed-loop rounds; a round takes prefill + mean output tokens x
the time per output token (TPOT), TPOT growing with load as (1 + c/16); every server starts once.
For llama.cpp the TPOT and start time follow from the model file's size (a CPU decode step reads
the weights once: size / 10 GB/s, plus 1 ms; loading reads them at 1 GB/s, plus 1 s); for other
engines they are fixed guesses (GPU engines: 5 ms/token at c=1, 300 s start). Speculation is
ignored (it only shortens runs). The ETA then scales the remaining guesses by what the finished
cells and starts actually took (``Eta``), and ``--resume`` skips finished cells.

External text (labels, scenario names, errors) reaches rich only through ``rich.markup.escape``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape as markup_escape

from specsweep.adaptive import observe
from specsweep.config import Cell, Plan, ServerConfig
from specsweep.terminal import plain
from specsweep.workload.lengths import length_bounds

log = logging.getLogger("specsweep.run")


def escape(v: object) -> str:
    """External text for rich: secrets scrubbed, control characters escaped, markup escaped."""
    return markup_escape(plain(v))


CPU_BANDWIDTH_B_PER_S = 10e9  # a decode step reads every weight once (memory bound)
LOAD_B_PER_S = 1e9  # model load from the page cache / disk
STARTUP_GUESS_S = {"sim": 3.0, "url": 0.0, "command": 300.0, "vllm": 300.0, "sglang": 300.0, "llamacpp": 30.0}
TPOT_GUESS_MS = {"sim": 5.0, "url": 5.0, "command": 5.0, "vllm": 5.0, "sglang": 5.0, "llamacpp": 40.0}
PREFILL_S_PER_TOKEN = 0.00002  # 50k tokens/s at c=1 (GPU); CPU engines: TPOT / 8 per token


def _model_bytes(cfg: ServerConfig) -> int | None:
    path = cfg.spec.model
    try:
        return os.path.getsize(path) if path and os.path.isfile(path) else None
    except OSError:
        return None


def tpot_guess_s(cfg: ServerConfig) -> float:
    """Seconds per output token of one request at concurrency 1."""
    kind = cfg.spec.kind
    if kind == "llamacpp" and (size := _model_bytes(cfg)) is not None:
        return size / CPU_BANDWIDTH_B_PER_S + 0.001
    tpot = TPOT_GUESS_MS.get(kind, 5.0) / 1000
    if kind == "sim":
        tpot /= float(cfg.params.get("time_scale", cfg.spec.time_scale or 1.0))
    return tpot


def startup_guess_s(cfg: ServerConfig) -> float:
    if cfg.spec.kind == "llamacpp" and (size := _model_bytes(cfg)) is not None:
        return size / LOAD_B_PER_S + 1.0
    return STARTUP_GUESS_S.get(cfg.spec.kind, 60.0)


def cell_guess_s(plan: Plan, cfg: ServerConfig, cell: Cell) -> float:
    """One repeat of one cell: rounds x (prefill + mean output x TPOT(c)) + warmup + cooldown."""
    sc = plan.scenarios[cell.scenario]
    lo, hi = length_bounds(sc.output_len, sc.range_ratio, sc.range_mode)
    ilo, ihi = length_bounds(sc.input_len, sc.range_ratio, sc.range_mode)
    load = 1 + cell.max_concurrency / 16
    tpot = tpot_guess_s(cfg) * load
    cpu = cfg.spec.kind == "llamacpp"
    prefill = (ilo + ihi) / 2 * (tpot / 8 if cpu else PREFILL_S_PER_TOKEN * load)
    rounds = math.ceil(cell.num_prompts / cell.max_concurrency)
    c = plan.experiment.client
    warm = (
        math.ceil(c.warmup_requests / cell.max_concurrency) * 32 * tpot + c.warmup_sleep_s
        if c.warmup_requests
        else 0.0
    )
    return rounds * (prefill + (lo + hi) / 2 * tpot) + warm + plan.experiment.cooldown_s


def assumptions(plan: Plan) -> list[str]:
    """What the estimate assumes, one line per server config, in words."""
    out = []
    for cfg in plan.configs:
        size = _model_bytes(cfg) if cfg.spec.kind == "llamacpp" else None
        basis = (
            f"from the model file ({size / 1e6:.0f} MB)"
            if size is not None
            else f"a fixed guess for '{cfg.spec.kind}'"
        )
        out.append(
            f"{cfg.label}: start {startup_guess_s(cfg):.0f} s, {tpot_guess_s(cfg) * 1000:.1f} ms per output token "
            f"at concurrency 1, x(1 + c/16) under load ({basis})"
        )
    out.append(
        "closed-loop rounds of ceil(num_prompts / concurrency) requests of mean length; speculation ignored"
    )
    return out


@dataclass
class PlanEstimate:
    total_s: float
    todo: int  # benchmark runs (cell x repeat) still to do
    skipped: int  # finished already (resume)
    scale: float = 1.0  # measured / guessed, from finished cells (1.0 without any)


def estimate_plan(
    plan: Plan, finished: Iterable[tuple[str, int]] = (), rows: Iterable[dict[str, Any]] = ()
) -> PlanEstimate:
    """The remaining duration: guesses for the cells not finished (and their servers' starts),
    scaled by measured / guessed bench time of the finished cells' rows (``duration``) if any."""
    done = set(finished)
    by_id = {c.cell_id: (cfg, c) for cfg in plan.configs for c in plan.cells[cfg.label]}
    meas = guess = 0.0
    for r in rows:
        hit = by_id.get(str(r.get("cell_id")))
        d = r.get("duration")
        if hit and isinstance(d, (int, float)) and d > 0 and r.get("status") == "ok":
            meas, guess = meas + d, guess + cell_guess_s(plan, *hit)
    scale = meas / guess if meas > 0 and guess > 0 else 1.0
    total, todo = 0.0, 0
    interleaved = plan.experiment.run_order == "interleaved"
    for cfg in plan.configs:
        n = plan.todo(done, cfg.label)
        if n:  # interleaved: a launch per round with work (a blocked run: one)
            launches = len({r for _c, r in n}) if interleaved else 1
            total += startup_guess_s(cfg) * launches + sum(cell_guess_s(plan, cfg, c) for c, _r in n) * scale
            todo += len(n)
    skipped = sum(1 for c in by_id for r in range(plan.experiment.repeats) if (c, r) in done)
    return PlanEstimate(total, todo, skipped, scale)


@dataclass
class Eta:
    """Remaining time of a running grid: the guesses left, scaled by measured / guessed time of the
    cells (and server starts) finished so far, per config when that config has finished cells.

    ``todo``: the runs to make ((cell, repeat), default: the plan's unfinished ones) and ``launches``:
    the server launches to make, by label in order (default: one per config with work). The adaptive
    design adds each round's as it is decided (``add``)."""

    plan: Plan
    finished: set[tuple[str, int]] = field(default_factory=set)
    todo: list[tuple[Cell, int]] | None = None
    launches: list[str] | None = None
    _spent: dict[str, list[float]] = field(default_factory=dict)  # label -> [measured, guessed]
    _startup: list[float] = field(default_factory=lambda: [0.0, 0.0])

    def __post_init__(self) -> None:
        if self.todo is None:
            self.todo = self.plan.todo(self.finished)
        if self.launches is None:
            self.launches = list(dict.fromkeys(c.label for c, _r in self.todo))

    def add(self, runs: Iterable[tuple[Cell, int]], launches: Iterable[str]) -> None:
        """More work: a round the adaptive design decided on."""
        assert self.todo is not None and self.launches is not None
        self.todo.extend(runs)
        self.launches.extend(launches)

    def _cfg(self, label: str) -> ServerConfig | None:
        return next((c for c in self.plan.configs if c.label == label), None)

    def cell_done(self, cell: Cell, repeat: int, seconds: float) -> None:
        self.finished.add((cell.cell_id, repeat))
        cfg = self._cfg(cell.label)
        if cfg is not None and seconds > 0:
            s = self._spent.setdefault(cell.label, [0.0, 0.0])
            s[0] += seconds
            s[1] += cell_guess_s(self.plan, cfg, cell)

    def server_ready(self, label: str, seconds: float, restart: bool = False) -> None:
        """A launch made (a restart after a death is not one of the planned launches)."""
        cfg = self._cfg(label)
        assert self.launches is not None
        if cfg is not None and label in self.launches and not restart:
            self.launches.remove(label)
            self._startup[0] += seconds
            self._startup[1] += startup_guess_s(cfg)

    def _scale(self, label: str) -> float:
        s = self._spent.get(label)
        if s and s[1] > 0:
            return s[0] / s[1]
        tot = [sum(v[0] for v in self._spent.values()), sum(v[1] for v in self._spent.values())]
        return tot[0] / tot[1] if tot[1] > 0 else 1.0

    def remaining_s(self) -> float:
        assert self.todo is not None and self.launches is not None
        su = self._startup[0] / self._startup[1] if self._startup[1] > 0 else 1.0
        by_label = {c.label: c for c in self.plan.configs}
        total = sum(startup_guess_s(by_label[x]) * su for x in self.launches if x in by_label)
        for c, r in self.todo:
            cfg = by_label.get(c.label)
            if cfg is not None and (c.cell_id, r) not in self.finished:
                total += cell_guess_s(self.plan, cfg, c) * self._scale(c.label)
        return total


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
            log.info("adaptive design: the first pass, then only what is still undecided, round by round "
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


class BenchProgress:
    """`specsweep bench`'s live line on a terminal: requests done / total with elapsed time and an
    ETA from the finished requests' rate. ``advance()`` is the per-request hook for the client's
    runner; without calls it still shows the run is alive (elapsed time, requests planned)."""

    def __init__(self, total: int, what: str, console: Any = None) -> None:
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

        self.console = console or Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=self.console, transient=True,
        )  # fmt: skip
        self.task = self.progress.add_task(escape(what), total=total)

    def advance(self, n: int = 1) -> None:
        self.progress.advance(self.task, n)

    def __enter__(self) -> BenchProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
