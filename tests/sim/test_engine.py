"""Engine invariants: tokens, limits, acceptance statistics, determinism, abort, admission delay."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.sim.engine import Engine, Step
from specsweep.sim.profile import Profile, load_profile


def _profile(**kw: object) -> Profile:
    base = load_profile("toy").model_dump()
    base.update(kw)
    return Profile(**base)


def _run(eng: Engine, max_steps: int = 200_000) -> list[Step]:
    steps = []
    while not eng.idle:
        st_ = eng.step()
        assert st_ is not None
        steps.append(st_)
        assert len(steps) < max_steps
    return steps


@st.composite
def _case(draw: st.DrawFn) -> tuple[Profile, list[tuple[int, int, int]]]:
    k = draw(st.integers(0, 4))
    surv = sorted(draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k)), reverse=True)
    prof = _profile(
        k=k, survival=surv,
        max_batch=draw(st.integers(1, 6)),
        kv_tokens=draw(st.integers(700, 3000)),
        prefill_chunk=draw(st.integers(1, 400)),
        chunk_includes_decode=draw(st.booleans()),
        admit_delay_steps=draw(st.integers(0, 3)),
    )  # fmt: skip
    # (arrival step, prompt tokens, max tokens)
    reqs = draw(
        st.lists(
            st.tuples(st.integers(0, 30), st.integers(1, 300), st.integers(1, 300)), min_size=1, max_size=12
        )
    )
    return prof, reqs


@settings(max_examples=40, deadline=None)
@given(_case(), st.integers(0, 2**16))
def test_invariants(case: tuple[Profile, list[tuple[int, int, int]]], seed: int) -> None:
    prof, reqs = case
    eng = Engine(prof, seed=seed)
    pending = sorted(enumerate(reqs), key=lambda x: x[1][0])
    want = {i: m for i, (_, _, m) in enumerate(reqs)}
    got: dict[int, int] = {}
    firsts: dict[int, int] = {}
    finished: set[int] = set()
    step_no = 0
    last_end = 0.0
    while pending or not eng.idle:
        while pending and pending[0][1][0] <= step_no:
            i, (_, p, m) = pending.pop(0)
            eng.add(i, p, m)
        if eng.idle:
            step_no += 1
            continue
        s = eng.step()
        assert s is not None
        step_no += 1
        assert s.start == last_end and s.end > s.start
        last_end = s.end
        assert eng.num_running <= prof.max_batch
        assert eng.kv_reserved <= prof.kv_tokens
        assert eng.kv_used() <= eng.kv_reserved
        assert 0.0 <= eng.counters.kv_usage <= 1.0
        seen = set()
        for em in s.emissions:
            rid = int(em.rid)  # type: ignore[call-overload]
            assert rid not in seen  # one emission per sequence per iteration
            seen.add(rid)
            assert rid not in finished
            assert 1 <= em.n_tokens <= prof.k + 1
            if em.first:
                assert rid not in firsts and em.n_tokens == 1
                firsts[rid] = step_no
            else:
                assert rid in firsts
            got[rid] = got.get(rid, 0) + em.n_tokens
            if em.finished:
                finished.add(rid)
                assert got[rid] == want[rid]
    assert got == want
    assert finished == set(want)
    c = eng.counters
    assert c.requests_finished == len(reqs)
    assert c.generation_tokens_total == sum(want.values())
    assert c.prompt_tokens_total == sum(p for _, p, _ in reqs)
    assert eng.kv_reserved == 0 and eng.kv_used() == 0


def test_tokens_per_step_match_survival() -> None:
    surv = [0.8, 0.55, 0.3, 0.1]
    prof = _profile(k=4, survival=surv, max_batch=32, kv_tokens=10**7)
    eng = Engine(prof, seed=3)
    for i in range(32):
        eng.add(i, 10, 2000)
    _run(eng)
    c = eng.counters
    assert c.num_drafts > 20_000
    assert c.num_draft_tokens == 4 * c.num_drafts
    # E[accepted + 1] = 1 + sum(S); per position i: P(a >= i) = S_i
    assert 1 + c.num_accepted_tokens / c.num_drafts == pytest.approx(1 + sum(surv), rel=0.02)
    for i, s in enumerate(surv):
        assert c.accepted_per_pos[i] / c.num_drafts == pytest.approx(s, abs=0.01)


def test_no_speculation_emits_one_token_per_step() -> None:
    eng = Engine(_profile(k=0, survival=[]), seed=0)
    eng.add("a", 5, 20)
    steps = _run(eng)
    ems = [e for s in steps for e in s.emissions]
    assert [e.n_tokens for e in ems] == [1] * 20
    assert ems[0].first and ems[-1].finished
    assert eng.counters.num_drafts == 0


def test_deterministic_by_seed() -> None:
    def trace(seed: int) -> list[tuple[float, list[tuple[object, int]]]]:
        eng = Engine(load_profile("toy"), seed=seed)
        for i in range(10):
            eng.add(i, 50 + i, 100)
        return [(s.end, [(e.rid, e.n_tokens) for e in s.emissions]) for s in _run(eng)]

    assert trace(7) == trace(7)
    assert trace(7) != trace(8)


def test_first_token_at_end_of_prefill_then_chunks() -> None:
    prof = _profile(prefill_chunk=100, admit_delay_steps=0)
    eng = Engine(prof, seed=0)
    eng.add("r", 250, 10)  # three prefill iterations (100 + 100 + 50)
    steps = _run(eng)
    assert [bool(s.emissions) for s in steps[:3]] == [False, False, True]
    assert steps[0].admitted == ["r"] and steps[1].admitted == []
    assert steps[2].emissions[0].first
    assert sum(e.n_tokens for s in steps for e in s.emissions) == 10


def test_admission_delay_runs_empty_iterations_costing_t0() -> None:
    prof = _profile(admit_delay_steps=3)
    eng = Engine(prof, seed=0)
    eng.add("r", 10, 2)
    steps = _run(eng)
    assert [s.admitted for s in steps[:4]] == [[], [], [], ["r"]]
    for s in steps[:3]:
        assert s.emissions == []
        assert (s.end - s.start) * 1000 == pytest.approx(prof.t0_ms)


def test_batch_limit_queues_and_kv_limit_queues() -> None:
    eng = Engine(_profile(max_batch=2, kv_tokens=10**6), seed=0)
    for i in range(5):
        eng.add(i, 10, 50)
    eng.step()
    assert eng.num_running == 2 and eng.num_waiting == 3
    eng = Engine(_profile(max_batch=8, kv_tokens=1000), seed=0)
    for i in range(3):
        eng.add(i, 300, 100)  # each reserves 300 + 100 + k = 403 tokens: two fit in 1000
    eng.step()
    assert eng.num_running == 2 and eng.num_waiting == 1


def test_add_rejects_what_can_never_fit_and_duplicates() -> None:
    eng = Engine(_profile(kv_tokens=1000), seed=0)
    assert not eng.fits(900, 200)
    with pytest.raises(ValueError, match="KV tokens"):
        eng.add("big", 900, 200)
    eng.add("a", 10, 10)
    with pytest.raises(ValueError, match="already"):
        eng.add("a", 10, 10)
    with pytest.raises(ValueError, match="max_tokens"):
        eng.add("b", 10, 0)


def test_abort_frees_slot_and_kv_everywhere() -> None:
    eng = Engine(_profile(max_batch=2, kv_tokens=10**6, prefill_chunk=50), seed=0)
    eng.add("dec", 10, 500)
    eng.add("pre", 400, 500)
    eng.add("wait", 10, 500)
    eng.step()
    eng.step()  # "dec" is decoding, "pre" still prefilling, "wait" queued
    eng.abort("dec")
    eng.abort("pre")
    eng.abort("wait")
    eng.abort("unknown")  # no-op
    assert eng.idle and eng.kv_reserved == 0
    assert eng.counters.requests_aborted == 3
    assert eng.step() is None


def test_advance_to_only_when_idle() -> None:
    eng = Engine(load_profile("toy"), seed=0)
    eng.advance_to(5.0)
    assert eng.now == 5.0
    eng.advance_to(1.0)  # the past: no-op
    assert eng.now == 5.0
    eng.add("a", 10, 10)
    with pytest.raises(RuntimeError):
        eng.advance_to(9.0)
    s = eng.step()
    assert s is not None and s.start == 5.0


def test_step_time_follows_the_cost_model() -> None:
    prof = _profile(k=2, survival=[0.5, 0.2], t0_ms=1.0, c_tok_ms=0.1, c_kv_ms=0.0, prefill_ms_per_tok=0.01,
                    prefill_ms_per_tok2=0.002, admit_ms=3.0, cliff_ms=7.0, graph_cap=5, moe_ms=0.0,
                    prefill_chunk=1000, admit_delay_steps=0)  # fmt: skip
    eng = Engine(prof, seed=0)
    eng.add("a", 100, 50)
    eng.add("b", 100, 50)
    s1 = eng.step()  # admits both, prefills 200 tokens: A = 100*100 + 100*100
    assert s1 is not None
    assert (s1.end - s1.start) * 1000 == pytest.approx(1.0 + 0.01 * 200 + 0.002 * 20_000 / 1000 + 3.0)
    s2 = eng.step()  # two sequences decode: N = 2 * 3 = 6 > graph_cap 5 -> cliff
    assert s2 is not None
    assert (s2.end - s2.start) * 1000 == pytest.approx(1.0 + 0.1 * 6 + 7.0)


def test_graph_cap_counts_prefill_tokens_only_when_told() -> None:
    """vLLM picks a CUDA graph by the step's total scheduled tokens: a decode step under the cap that
    also prefills a chunk runs eager (pays the cliff) with graph_counts_prefill, not without it."""
    costs = {}
    for counts in (False, True):
        prof = _profile(k=1, survival=[0.5], t0_ms=1.0, c_tok_ms=0.0, c_kv_ms=0.0, prefill_ms_per_tok=0.0,
                        prefill_ms_per_tok2=0.0, admit_ms=0.0, cliff_ms=7.0, graph_cap=50, moe_ms=0.0,
                        prefill_chunk=1000, admit_delay_steps=0, graph_counts_prefill=counts)  # fmt: skip
        eng = Engine(prof, seed=0)
        eng.add("a", 10, 100)
        s0 = eng.step()  # prefill 10 tokens alone: under the cap either way
        assert s0 is not None and (s0.end - s0.start) * 1000 == pytest.approx(1.0)
        eng.add("b", 60, 5)
        s1 = eng.step()  # a verifies 2 tokens (under the cap) while b prefills 60: 62 > 50
        assert s1 is not None and s1.features[1] == 2.0 and s1.features[3] == 60.0
        costs[counts] = (s1.end - s1.start) * 1000
        s2 = eng.step()  # a and b decode: 4 tokens, no prefill: graphs again
        assert s2 is not None and (s2.end - s2.start) * 1000 == pytest.approx(1.0)
    assert costs == {False: pytest.approx(1.0), True: pytest.approx(8.0)}


def test_unmixed_prefill_pauses_decoding_while_a_prompt_is_prefilled() -> None:
    """SGLang's default: an iteration with prefill work is a prefill batch; decoding waits for it."""
    for mixed in (True, False):
        prof = _profile(prefill_chunk=100, admit_delay_steps=0, k=0, survival=[], mixed_prefill=mixed)
        eng = Engine(prof, seed=0)
        eng.add("a", 10, 50)
        _ = [eng.step() for _ in range(3)]  # a prefilled and decoding
        eng.add("b", 250, 5)  # three prefill iterations
        steps = [eng.step() for _ in range(3)]
        a_tokens = [sum(e.n_tokens for e in s.emissions if e.rid == "a") for s in steps if s]
        assert a_tokens == ([1, 1, 1] if mixed else [0, 0, 0]), mixed
        for s in steps:
            assert s is not None and s.features[1] == (1.0 if mixed else 0.0)  # verified tokens
        nxt = eng.step()
        assert nxt is not None and {e.rid for e in nxt.emissions} == {"a", "b"}
        _run(eng)
