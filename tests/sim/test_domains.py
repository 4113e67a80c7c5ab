"""Per-domain acceptance in the simulator: profile curves, the engine per request, predict, fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from specsweep.sim import domains
from specsweep.sim.engine import Engine
from specsweep.sim.predict import predict_cell
from specsweep.sim.profile import Profile
from specsweep.workload.scenarios import Scenario


def _profile(**kw: object) -> Profile:
    return Profile(name="p", k=3, survival=[0.2, 0.04, 0.008], **kw)  # type: ignore[arg-type]


def test_profile_checks_each_category_curve() -> None:
    with pytest.raises(ValidationError, match=r"category_survival.code has 2 entries"):
        _profile(category_survival={"code": [0.9, 0.8]})
    with pytest.raises(ValidationError, match="non-increasing"):
        _profile(category_survival={"code": [0.5, 0.9, 0.1]})
    p = _profile(category_survival={"code": [0.9, 0.81, 0.73]})
    assert (
        p.survival_for("code")[0] == 0.9
        and p.survival_for("chat") == p.survival
        and p.survival_for(None) == p.survival
    )


def test_engine_uses_the_request_category_curve() -> None:
    eng = Engine(_profile(category_survival={"code": [1.0, 1.0, 1.0]}), seed=3)
    eng.add("c", 8, 41, category="code")
    eng.add("x", 8, 41, category="chat")  # not listed: the default (low) curve
    tokens: dict[str, list[int]] = {"c": [], "x": []}
    while not eng.idle:
        st = eng.step()
        assert st is not None
        for em in st.emissions:
            tokens[str(em.rid)].append(em.n_tokens)
    assert tokens["c"][1:] == [4] * 10  # every draft accepted: k + 1 tokens per step
    assert sum(tokens["x"][1:]) / len(tokens["x"][1:]) < 1.6


def test_predict_with_a_dataset_reports_acceptance_per_category(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    rows = [{"prompt": f"def f{i}(x): return x", "category": "code"} for i in range(4)]
    rows += [{"prompt": f"tell me about day {i}", "category": "chat"} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sc = Scenario(name="d", input_len=64, output_len=48, dataset="jsonl", dataset_path=str(data))
    row = predict_cell(_profile(category_survival={"code": [0.9, 0.81, 0.73]}), sc, 4, num_prompts=16, seed=1)
    per = row["per_category"]
    assert set(per) == {"code", "chat"} and per["code"]["completed"] == 8
    assert per["code"]["accept_length"] > 2.5 > 1.5 > per["chat"]["accept_length"]


def test_fit_rate_recovers_a_known_rate_over_several_k() -> None:
    pts = [(3, domains.expected_length(0.7, 3)), (5, domains.expected_length(0.7, 5))]
    assert domains.fit_rate(pts) == pytest.approx(0.7, abs=1e-3)
    rows = [
        {"method": "ngram", "params": {"spec_tokens": 3}, "per_category": {"code": {"accept_length": pts[0][1]},
                                                                            "chat": {"accept_length": None}}},
        {"method": "ngram", "params": {"spec_tokens": 5}, "per_category": {"code": {"accept_length": pts[1][1]}}},
        {"method": "none", "params": {}, "per_category": {"code": {"accept_length": 1.0}}},
    ]  # fmt: skip
    points = domains.category_points(rows, lambda r: r["params"].get("spec_tokens", 0))
    assert points == {"code": pts}
    curves = domains.category_survival(points, 4)
    assert (
        list(curves) == ["code"]
        and curves["code"][0] == pytest.approx(0.7, abs=1e-3)
        and len(curves["code"]) == 4
    )


def test_sim_fit_writes_category_curves_from_run_dirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specsweep.sim.fit_cli import with_domain_acceptance
    from specsweep.store.run_dir import RunDir

    rd = RunDir.create(tmp_path, "r", {"name": "r"}, "20260101-000000")
    for k, cat, a in [(3, "coding", 0.8), (5, "coding", 0.8), (3, "chat", 0.4)]:
        rd.append_summary({"label": f"ng{k}", "scenario": f"s@{cat}", "max_concurrency": 1, "method": "ngram",
                           "params": {"spec_tokens": k}, "status": "ok",
                           "per_category": {cat: {"accept_length": domains.expected_length(a, k)}}})  # fmt: skip
    prof = with_domain_acceptance(_profile(), [tmp_path])
    assert sorted(prof.category_survival) == ["chat", "coding"]
    assert prof.category_survival["coding"][0] == pytest.approx(0.8, abs=2e-3)
    assert prof.category_survival["chat"][2] == pytest.approx(0.4**3, abs=2e-3)
    assert "acceptance coding: E(3) = " in capsys.readouterr().out
