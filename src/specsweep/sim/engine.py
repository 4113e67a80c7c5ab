"""A discrete-event continuous-batching engine with speculative decoding, in virtual time.

One implementation behind ``sim serve`` (driven by the wall clock) and ``sim predict`` (virtual time).
Each call to :meth:`Engine.step` is one engine iteration:

1. admit waiting requests (FIFO; a request is admissible ``admit_delay_steps`` iterations after it
   arrived, which models the server's input pipeline) while the running batch has room (``max_batch``) and the KV cache
   can reserve ``prompt + max_tokens + k`` tokens for them (reservation, so no preemption is needed);
2. chunked prefill: up to ``prefill_chunk`` prompt tokens, oldest admitted request first; a request
   whose prefill completes emits its first output token at the end of this iteration;
3. decode + verify every sequence that already has its first token (with ``mixed_prefill`` off,
   SGLang's default, only in iterations without prefill work): the accepted prefix length
   a in 0..k is sampled from the survival profile (P(a >= i) = S_i) and the sequence emits
   min(a + 1, remaining) tokens as one emission.

The iteration's time is the profile's cost model applied to its feature vector (:data:`FEATURES`),
so, for a closed-loop workload, the sequence of iterations does not depend on the cost parameters and
every timing metric is linear in them (``sim fit`` uses that).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from specsweep.sim.profile import Profile

# Step features, in the order of profile.COST_PARAMS: time_ms = sum(theta_i * feature_i).
FEATURES = (
    "one",
    "verified_tokens",
    "ctx_k",
    "prefill_tokens",
    "prefill_attn_k",
    "admits",
    "cliff",
    "draft",
    "moe",
)


@dataclass(slots=True)
class Emission:
    rid: Hashable
    n_tokens: int
    finished: bool
    first: bool  # the first output tokens of this request


@dataclass(slots=True)
class Step:
    start: float  # virtual seconds
    end: float
    emissions: list[Emission]
    admitted: list[Hashable]
    features: tuple[float, ...] = ()  # see FEATURES


@dataclass
class Counters:
    """Cumulative engine counters (what a real server's /metrics would export)."""

    k: int = 0
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    requests_running: int = 0
    requests_waiting: int = 0
    kv_usage: float = 0.0
    requests_finished: int = 0
    requests_aborted: int = 0
    steps: int = 0


@dataclass(slots=True)
class _Req:
    rid: Hashable
    prompt: int
    max_tokens: int
    arrival: float
    ready_step: int = 0
    prefilled: int = 0
    reserved: int = 0
    curve: int = 0  # index of the request's acceptance curve (0: the profile's default survival)


class Engine:
    def __init__(self, profile: Profile, seed: int = 0) -> None:
        self.profile = profile
        self.k = profile.k
        self.now = 0.0
        self._rng = np.random.default_rng(seed)
        self._theta = profile.cost_vector()
        self._waiting: deque[_Req] = deque()
        self._prefilling: list[_Req] = []  # admitted, prompt not fully prefilled, FIFO
        # decoding sequences as parallel lists (swap-remove keeps them dense); per-step work is one
        # vectorised draw plus one O(batch) loop that has to build the emissions anyway
        self._d_rid: list[Hashable] = []
        self._d_ctx: list[int] = []  # prompt + generated
        self._d_rem: list[int] = []  # tokens still to generate
        self._d_res: list[int] = []  # reserved KV tokens
        self._n = 0
        self._ctx_sum = 0  # sum of _d_ctx
        self._prefilled_sum = 0  # prompt tokens prefilled by requests still prefilling
        self._neg_surv = [-s for s in profile.survival]  # increasing: a = #{i: S_i > u}
        # per-category curves (index 0 is the default); _d_curve holds each decoding sequence's index
        self._curve_of = {c: i + 1 for i, c in enumerate(profile.category_survival)}
        self._neg_curves = [self._neg_surv] + [[-x for x in v] for v in profile.category_survival.values()]
        self._d_curve: list[int] = []
        self._where: dict[Hashable, str] = {}  # rid -> "w" | "p" | "d"
        self._kv_reserved = 0
        self.counters = Counters(k=self.k, accepted_per_pos=[0] * self.k)

    # ---- requests -----------------------------------------------------------------------------
    def kv_need(self, prompt_tokens: int, max_tokens: int) -> int:
        """KV tokens reserved for a request: prompt + max_tokens + the k draft lookahead."""
        return max(1, prompt_tokens) + max_tokens + self.k

    def fits(self, prompt_tokens: int, max_tokens: int) -> bool:
        """Whether the request could ever run (alone) within the KV-cache capacity."""
        return self.kv_need(prompt_tokens, max_tokens) <= self.profile.kv_tokens

    def add(self, rid: Hashable, prompt_tokens: int, max_tokens: int, category: str | None = None) -> None:
        """A request arrives at ``self.now``. Raises ValueError if it can never fit (reply 400).

        ``category``: the request's domain; its acceptance follows the profile's curve for it."""
        if rid in self._where:
            raise ValueError(f"request id {rid!r} is already in the engine")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if not self.fits(prompt_tokens, max_tokens):
            raise ValueError(
                f"request needs {self.kv_need(prompt_tokens, max_tokens)} KV tokens "
                f"(prompt {prompt_tokens} + max_tokens {max_tokens} + k {self.k}); "
                f"the engine holds {self.profile.kv_tokens}"
            )
        ready = self.counters.steps + self.profile.admit_delay_steps
        curve = self._curve_of.get(category, 0) if category is not None else 0
        self._waiting.append(
            _Req(rid, max(1, int(prompt_tokens)), int(max_tokens), self.now, ready, curve=curve)
        )
        self._where[rid] = "w"
        self.counters.requests_waiting = len(self._waiting)

    def abort(self, rid: Hashable) -> None:
        """The client went away: drop the request wherever it is and free its KV (unknown: no-op)."""
        where = self._where.pop(rid, None)
        if where is None:
            return
        if where == "w":
            self._waiting = deque(r for r in self._waiting if r.rid != rid)
        elif where == "p":
            for i, r in enumerate(self._prefilling):
                if r.rid == rid:
                    self._kv_reserved -= r.reserved
                    self._prefilled_sum -= r.prefilled
                    del self._prefilling[i]
                    break
        else:
            self._remove_decoding(self._d_rid.index(rid))
        self.counters.requests_aborted += 1
        self._update_gauges()

    def advance_to(self, t: float) -> None:
        """Idle time passes. Only valid while idle; a time in the past is a no-op."""
        if not self.idle:
            raise RuntimeError("advance_to() while requests are pending; call step()")
        if t > self.now:
            self.now = t

    @property
    def idle(self) -> bool:
        return not self._waiting and not self._prefilling and self._n == 0

    @property
    def num_running(self) -> int:
        return len(self._prefilling) + self._n

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    @property
    def kv_reserved(self) -> int:
        return self._kv_reserved

    def kv_used(self) -> int:
        """KV tokens actually in use: prefilled prompt + generated + draft lookahead."""
        return self._ctx_sum + self._n * self.k + self._prefilled_sum

    # ---- one iteration ------------------------------------------------------------------------
    def step(self) -> Step | None:
        if self.idle:
            return None
        p = self.profile
        k = self.k
        c = self.counters
        start = self.now
        emissions: list[Emission] = []

        # 1. admission
        admitted: list[Hashable] = []
        while self._waiting and len(self._prefilling) + self._n < p.max_batch:
            r = self._waiting[0]
            if r.ready_step > c.steps:
                break
            need = self.kv_need(r.prompt, r.max_tokens)
            if self._kv_reserved + need > p.kv_tokens:
                break
            self._waiting.popleft()
            r.reserved = need
            self._kv_reserved += need
            self._prefilling.append(r)
            self._where[r.rid] = "p"
            admitted.append(r.rid)

        # 2. decode + verify the sequences that already have their first token; without mixed prefill
        # (SGLang's default) an iteration with prefill work is a prefill batch and decoding waits
        n = self._n if (p.mixed_prefill or not self._prefilling) else 0
        ctx_sum = self._ctx_sum if n else 0
        if n:
            if k:
                u = self._rng.random(n)
                if len(self._neg_curves) > 1 and any(self._d_curve):
                    curves = self._neg_curves
                    acc = [
                        bisect_left(curves[ci], -x) for ci, x in zip(self._d_curve, u.tolist(), strict=True)
                    ]
                elif n > 32:
                    acc = np.searchsorted(self._neg_surv, -u, side="left").tolist()
                else:
                    neg = self._neg_surv
                    acc = [bisect_left(neg, -x) for x in u.tolist()]
            else:
                acc = [0] * n
            rids, ctx, rem = self._d_rid, self._d_ctx, self._d_rem
            hist = [0] * (k + 1)
            gen = 0
            done: list[int] = []
            for i in range(n):
                a = acc[i]
                hist[a] += 1
                left = rem[i]
                e = a + 1
                if e >= left:
                    e = left
                    done.append(i)
                rem[i] = left - e
                ctx[i] += e
                gen += e
                emissions.append(Emission(rids[i], e, e == left, False))
            self._ctx_sum += gen
            c.generation_tokens_total += gen
            if k:
                c.num_drafts += n
                c.num_draft_tokens += n * k
                tail = 0
                for j in range(k, 0, -1):  # accepted_per_pos[j-1] counts sequences with a >= j
                    tail += hist[j]
                    c.accepted_per_pos[j - 1] += tail
                    c.num_accepted_tokens += hist[j] * j
            for i in reversed(done):
                self._where.pop(rids[i], None)
                self._remove_decoding(i)
                c.requests_finished += 1

        # 3. chunked prefill (requests finishing prefill join the decoding set after this step)
        budget = p.prefill_chunk
        if p.chunk_includes_decode:  # at least 1/8 of it, so admitted requests cannot starve
            budget = max(budget - n * (k + 1), budget // 8, 1)
        prefill_tokens = 0
        attn = 0  # sum over chunks of chunk * (context after the chunk): attention is per sequence
        completed = 0
        for r in self._prefilling:
            if budget <= 0:
                break
            take = min(budget, r.prompt - r.prefilled)
            r.prefilled += take
            self._prefilled_sum += take
            attn += take * r.prefilled
            budget -= take
            prefill_tokens += take
            if r.prefilled == r.prompt:
                completed += 1
        c.prompt_tokens_total += prefill_tokens
        if completed:
            still: list[_Req] = []
            for r in self._prefilling:
                if r.prefilled < r.prompt:
                    still.append(r)
                    continue
                self._prefilled_sum -= r.prefilled
                finished = r.max_tokens == 1
                emissions.append(Emission(r.rid, 1, finished, True))
                c.generation_tokens_total += 1
                if finished:
                    self._where.pop(r.rid, None)
                    self._kv_reserved -= r.reserved
                    c.requests_finished += 1
                else:
                    self._append_decoding(r)
            self._prefilling = still

        verified = n * (k + 1)
        graph_tokens = verified + prefill_tokens if p.graph_counts_prefill else verified
        feats = (
            1.0,
            float(verified),
            ctx_sum / 1000.0,
            float(prefill_tokens),
            attn / 1000.0,
            1.0 if admitted else 0.0,
            1.0 if graph_tokens > p.graph_cap else 0.0,
            float(p.draft_steps) if n else 0.0,
            1.0 - math.exp(-verified / p.moe_n0),
        )
        t_ms = sum(a * b for a, b in zip(self._theta, feats, strict=False))
        self.now = start + t_ms / 1000.0
        c.steps += 1
        self._update_gauges()
        return Step(start, self.now, emissions, admitted, feats)

    # ---- internals ----------------------------------------------------------------------------
    def _append_decoding(self, r: _Req) -> None:
        self._d_rid.append(r.rid)
        self._d_ctx.append(r.prompt + 1)
        self._d_rem.append(r.max_tokens - 1)
        self._d_res.append(r.reserved)
        self._d_curve.append(r.curve)
        self._ctx_sum += r.prompt + 1
        self._n += 1
        self._where[r.rid] = "d"

    def _remove_decoding(self, i: int) -> None:
        self._kv_reserved -= self._d_res[i]
        self._ctx_sum -= self._d_ctx[i]
        last = self._n - 1
        if i != last:
            self._d_rid[i] = self._d_rid[last]
            self._d_ctx[i] = self._d_ctx[last]
            self._d_rem[i] = self._d_rem[last]
            self._d_res[i] = self._d_res[last]
            self._d_curve[i] = self._d_curve[last]
        self._d_rid.pop()
        self._d_curve.pop()
        self._d_ctx.pop()
        self._d_rem.pop()
        self._d_res.pop()
        self._n = last

    def _update_gauges(self) -> None:
        c = self.counters
        c.requests_running = len(self._prefilling) + self._n
        c.requests_waiting = len(self._waiting)
        c.kv_usage = min(1.0, self.kv_used() / self.profile.kv_tokens)
