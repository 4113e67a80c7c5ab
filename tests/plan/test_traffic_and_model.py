"""TRAFFIC.yaml errors, the mixture tail, the fleet model's Little's-law bookkeeping, routing."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from specsweep.cli import main
from specsweep.errors import ConfigError, UsageError
from specsweep.plan.fleet import mixture_p99
from specsweep.plan.traffic import parse_slo, parse_traffic


def test_shares_must_sum_to_one() -> None:
    with pytest.raises(ConfigError, match=r"shares must sum to 1, got 0\.9 \(chat=0\.6, rag=0\.3\)"):
        parse_traffic({"mix": {"chat": 0.6, "rag": 0.3}, "load": {"concurrency": 8}})


@pytest.mark.parametrize(
    ("load", "match"),
    [({"concurrency": 0}, "positive"), ({"concurrency": 2.5}, "integer"), ({"users": 3}, "request_rate"),
     ({"request_rate": "fast"}, "number")],
)  # fmt: skip
def test_bad_load(load: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_traffic({"mix": {"chat": 1.0}, "load": load})


def test_slo_parsing() -> None:
    assert parse_slo("ttft_p99_ms=2000,tpot_p99_ms=50") == {"ttft_p99_ms": 2000.0, "tpot_p99_ms": 50.0}
    with pytest.raises(UsageError, match="ttft_p99_ms=MS"):
        parse_slo("ttft=5")


def test_cli_bad_traffic_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference_results: Path
) -> None:
    t = tmp_path / "t.yaml"
    t.write_text("mix: {chat_short: 0.5, nonsense_domain: 0.5}\nload: {concurrency: 8}\n")
    assert main(["plan", str(reference_results), "--traffic", str(t)]) == 2
    err = capsys.readouterr().err
    assert "nonsense_domain" in err and "chat_short" in err and "long_context" in err


def test_mixture_p99() -> None:
    # one log-normal: its own p99 back
    assert mixture_p99([(1.0, 100.0, 300.0)]) == pytest.approx(300.0, rel=1e-6)
    # identical components: the same
    assert mixture_p99([(0.5, 100.0, 300.0), (0.5, 100.0, 300.0)]) == pytest.approx(300.0, rel=1e-6)
    # against sampling a two-component mixture
    rng = np.random.default_rng(0)
    parts = [(0.9, 50.0, 120.0), (0.1, 2000.0, 6000.0)]
    xs = []
    for w, mean, p99 in parts:
        from specsweep.plan.fleet import lognormal_params

        mu, s = lognormal_params(mean, p99)
        xs.append(rng.lognormal(mu, s, size=int(w * 400_000)))
    assert mixture_p99(parts) == pytest.approx(float(np.percentile(np.concatenate(xs), 99)), rel=0.02)
    assert math.isnan(mixture_p99([]))


def test_daily_profile_steps_and_peak() -> None:
    t = parse_traffic({"mix": {"chat": 1.0}, "load": {"concurrency_by_hour": {7: 40, 9: 120, 18: 30}}})
    assert t.concurrency == 120 and t.peak_hour == 9
    assert t.by_hour is not None and len(t.by_hour) == 24
    # each listed value holds until the next listed hour, wrapping at midnight
    assert [t.by_hour[h] for h in (0, 6, 7, 8, 9, 17, 18, 23)] == [30, 30, 40, 40, 120, 120, 30, 30]
    r = parse_traffic({"mix": {"chat": 1.0}, "load": {"request_rate_by_hour": {0: 2.5, 12: 10}}})
    assert r.request_rate == 10 and r.concurrency is None


@pytest.mark.parametrize(
    ("hours", "match"),
    [({24: 5}, "hour 24; expected an integer 0-23"), ({"9": 5}, "hour '9'"), ({3: 0}, "positive"),
     ({3: 2.5}, "integer"), ([5, 6], "mapping of hours")],
)  # fmt: skip
def test_daily_profile_errors(hours: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_traffic({"mix": {"chat": 1.0}, "load": {"concurrency_by_hour": hours}})
