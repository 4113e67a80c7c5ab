"""The read-age sample stays bounded on long runs and stays an even sample of the reads."""

from __future__ import annotations

import itertools

import pytest

from specsweep import kstamp


def test_read_age_sample_is_bounded_and_even(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kstamp, "_AGES_CAP", 64)
    kstamp.read_ages_start()
    for age in range(1000):
        kstamp._note_age(age)
    ages = kstamp.read_ages_stop()
    assert 32 <= len(ages) < 64
    assert ages == sorted(ages) and ages[0] == 0 and ages[-1] >= 900  # spread over the whole run
    gaps = {b - a for a, b in itertools.pairwise(ages)}
    assert gaps == {16}  # every 16th read once the sample was thinned four times
    kstamp._note_age(5)  # after stop nothing is kept
    assert kstamp.read_ages_stop() == []
