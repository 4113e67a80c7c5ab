"""``specsweep plan --validate``: replay the traffic mix against each planned fleet on the simulator.

Per option, every pool instance is a real ``specsweep sim serve`` process (the config's profile, bound
to 127.0.0.1, time-scaled) and the replay client sends the mix over localhost HTTP: closed loop with the
load's requests in flight, prompts as token ids of the scenario's sampled lengths. The routing rule is
applied by the replay client itself (pool by input tokens, then the instance with the fewest requests in
flight - what LiteLLM's tag routing with least-busy does): a test harness, not a production router.

At most ``MAX_REPLAY_SERVERS`` simulator processes run at once: an option whose fleet needs more is
not replayed, and says so (``skipped``), rather than start a process per instance of a large fleet.

Figures are in virtual time (wall x time scale). Throughput counts the tokens of the requests completed
while every client slot was busy (the steady state, without the drain); p99 TTFT / TPOT are over all
completed requests.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import aiohttp
import numpy as np

from specsweep.client import kstamp
from specsweep.console import tracking
from specsweep.errors import BenchError
from specsweep.plan import fleetsim
from specsweep.plan.options import Option
from specsweep.plan.planner import Plan
from specsweep.sim.serve import SubprocessServer

MAX_MODEL_LEN = 1 << 17
MAX_REPLAY_SERVERS = 32  # simulator processes one replay starts (one per instance of the option's fleet)


@dataclass
class Sent:
    index: int  # order of sending
    pool: str
    prompt: int
    output: int
    t_send: float = 0.0
    t_first: float | None = None
    t_end: float | None = None
    ok: bool = False


def route(opt: Option, n_input: int) -> str:
    """The pool a request goes to under the option's rules (input-token bounds; else the first pool)."""
    return fleetsim.route(opt.rules, opt.pools[0].name, n_input)


def requests_for(plan: Plan, n: int, seed: int) -> list[tuple[str, int, int]]:
    """n (scenario, input tokens, output tokens), as the engine-model prediction draws them."""
    return fleetsim.draw_requests(plan.cells, plan.mix, n, seed)


async def _one(session: aiohttp.ClientSession, url: str, s: Sent, model: str) -> None:
    body = {"model": model, "prompt": [7] * s.prompt, "max_tokens": s.output, "stream": True,
            "ignore_eos": True, "temperature": 0}  # fmt: skip
    s.t_send = time.perf_counter()
    async with session.post(url + "/v1/completions", json=body) as resp:
        if resp.status != 200:
            await resp.read()
            return
        async for chunk in resp.content.iter_any():
            if s.t_first is None and b"data:" in chunk and b'"text"' in chunk:
                s.t_first = time.perf_counter()
    s.t_end = time.perf_counter()
    s.ok = s.t_first is not None


async def _drive(opt: Option, urls: dict[str, list[str]], reqs: list[tuple[str, int, int]], in_flight: int,
                 model: str) -> tuple[list[Sent], float, float]:  # fmt: skip
    queue = list(reversed(reqs))
    busy = {u: 0 for us in urls.values() for u in us}
    sent: list[Sent] = []
    t0 = time.perf_counter()
    drained: list[float] = []
    conn = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:

        async def worker() -> None:
            while queue:
                _sc, n_in, n_out = queue.pop()
                pool = route(opt, n_in)
                url = min(urls[pool], key=lambda u: busy[u])
                s = Sent(len(sent), pool, n_in, n_out)
                sent.append(s)
                busy[url] += 1
                try:
                    await _one(session, url, s, model)
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    s.ok = False
                finally:
                    busy[url] -= 1
                    tracking.advance()
            drained.append(time.perf_counter())

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return sent, t0, min(drained) if drained else time.perf_counter()


def figures(
    sent: list[Sent], t0: float, t_steady_end: float, time_scale: float, warmup: int
) -> dict[str, float]:
    """Throughput over the steady state; tails over the requests sent after the first ``warmup``."""
    done = [s for s in sent if s.ok and s.t_end is not None and s.t_first is not None]
    if not done:
        raise BenchError("replay: no request completed")
    steady = [s for s in done if (s.t_end or 0) <= t_steady_end]
    span = max(t_steady_end - t0, 1e-9) * time_scale
    tail = [s for s in done if s.index >= warmup] or done
    ttft = [((s.t_first or 0) - s.t_send) * time_scale * 1000 for s in tail]
    tpot = [
        ((s.t_end or 0) - (s.t_first or 0)) * time_scale * 1000 / (s.output - 1) for s in tail if s.output > 1
    ]
    return {
        "total_throughput": round(sum(s.prompt + s.output for s in steady) / span, 1),
        "p99_ttft_ms": round(float(np.percentile(ttft, 99)), 1),
        "p99_tpot_ms": round(float(np.percentile(tpot, 99)), 2) if tpot else math.nan,
        "completed": len(done),
        "failed": len(sent) - len(done),
    }


def replay_option(
    plan: Plan, opt: Option, *, time_scale: float, n_requests: int, seed: int = 0
) -> dict[str, Any]:
    in_flight = max(1, round(plan.in_flight))
    servers = sum(p.instances for p in opt.pools)
    if servers > MAX_REPLAY_SERVERS:
        return {"skipped": f"its fleet needs {servers} simulator processes; --validate starts at most "
                           f"{MAX_REPLAY_SERVERS} at once"}  # fmt: skip
    reqs = requests_for(plan, max(n_requests, 2 * in_flight), seed)
    with ExitStack() as stack:
        urls: dict[str, list[str]] = {}
        model = "sim-model"
        for p in opt.pools:
            prof = plan.cells.profile_name(p.config)
            if prof is None:
                return {"skipped": f"no simulator profile for {p.config}"}
            for i in range(p.instances):
                srv = stack.enter_context(SubprocessServer(
                    "--profile", prof, "--port", "0", "--host", "127.0.0.1", "--time-scale", str(time_scale),
                    "--seed", str(seed + i), "--served-model-name", model, "--max-model-len", str(MAX_MODEL_LEN),
                    startup_timeout_s=60.0))  # fmt: skip
                urls.setdefault(p.name, []).append(srv.url)
        sent, t0, t_end = kstamp.run(_drive(opt, urls, reqs, in_flight, model))
    out: dict[str, Any] = figures(sent, t0, t_end, time_scale, in_flight)
    # the servers keep virtual time only while the host keeps up: a loaded host skews the replay
    out["host"] = {"load_1min": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
    return out


def tolerance(plan: Plan, opt: Option, view: dict[str, Any], n_requests: int) -> dict[str, dict[str, float]]:
    """Stated uncertainty (a fraction) of the option's predicted figures against a replay of
    ``n_requests`` on the simulator, computed per figure from three parts that add in log:

    - calibration: the prediction scales the engine model to the measured cells; the replay runs the
      uncalibrated simulator, so it is expected to differ by that factor (|log(predicted / simulator
      only)|, 0 for an option resting on simulated cells only);
    - short_run: the prediction is the long run (fleetsim.predict_requests); a replay of fewer requests
      is more start ramp: |log(mean of virtual runs of the replay's size / simulator only)|;
    - sampling: one replay is one draw; the 95% prediction interval of such a draw, from virtual runs
      of the same size (fleetsim.replay_spread).

    Returns {figure: {"total", "calibration", "short_run", "sampling"}}.
    """
    in_flight = max(1, round(plan.in_flight))
    n = max(n_requests, 2 * in_flight)
    spread = fleetsim.replay_spread(plan.cells, opt, plan.mix, in_flight, n)
    em = opt.extra.get("engine_model")
    sim_only = em.get("simulator_only", {}) if isinstance(em, dict) else {}
    out = {}
    for k, (mean_log, sp) in spread.items():
        pred, raw = view.get(k), sim_only.get(k)
        cal = short = 0.0
        if isinstance(pred, (int, float)) and isinstance(raw, (int, float)) and pred > 0 and raw > 0:
            cal = abs(math.log(pred / raw))
            short = abs(mean_log - math.log(raw)) if math.isfinite(mean_log) else 0.0
        total = math.expm1(cal + short + math.log1p(sp)) if math.isfinite(sp) else math.nan
        out[k] = {"total": round(total, 3), "calibration": round(math.expm1(cal), 3),
                  "short_run": round(math.expm1(short), 3), "sampling": round(sp, 3)}  # fmt: skip
    return out


def validate_plan(plan: Plan, view: dict[str, Any], *, time_scale: float, n_requests: int) -> None:
    """Adds ``replayed`` (figures, tolerance, within) to each option of the JSON view."""
    n = max(n_requests, 2 * max(1, round(plan.in_flight)))  # what replay_option sends per option
    tracking.stage("replay (requests)", n * len(view["options"]))
    for o_view in view["options"]:
        opt = plan.option(o_view["name"])
        rep = replay_option(plan, opt, time_scale=time_scale, n_requests=n_requests)
        if "skipped" not in rep:
            parts = tolerance(plan, opt, o_view, n_requests)
            tol = {k: v["total"] for k, v in parts.items()}
            within = {}
            for k, t in tol.items():
                pred, got = o_view.get(k), rep.get(k)
                if isinstance(pred, (int, float)) and isinstance(got, (int, float)) and pred > 0:
                    within[k] = abs(math.log(got / pred)) <= math.log1p(t)
            rep.update(tolerance=tol, tolerance_parts=parts, within_each=within, within=all(within.values()) if within else False,
                       time_scale=time_scale)  # fmt: skip
        o_view["replayed"] = rep
