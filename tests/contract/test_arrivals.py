"""The open-loop arrival generator (contract/arrivals.py): seeded, the named process at the offered rate,
a schedule bounded by a duration, and the tests that say whether a level offered it."""

from __future__ import annotations

import statistics

import pytest

from llm_call_anatomy.contract.arrivals import arrival_times, ks_critical, ks_exponential, rate_z


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def test_poisson_arrivals_are_seeded_exponential_and_last_the_duration():
    times = arrival_times(50.0, until_s=60.0, seed=13)
    assert times == arrival_times(50.0, until_s=60.0, seed=13) != arrival_times(50.0, until_s=60.0, seed=14)
    assert times[0] == 0.0 and 59.0 < times[-1] < 60.0
    assert abs(rate_z(len(times), 50.0, 60.0)) < 3.29  # about 3,000 arrivals, within the Poisson noise
    d = ks_exponential(gaps(times), 50.0)
    assert d < ks_critical(len(times) - 1)


def test_constant_and_gamma_arrivals_keep_the_rate_with_their_own_spread():
    constant = gaps(arrival_times(10.0, 101, process="constant"))
    assert all(g == pytest.approx(0.1) for g in constant)
    bursty = gaps(arrival_times(10.0, 20_000, process="gamma", burstiness=0.25, seed=3))
    assert statistics.mean(bursty) == pytest.approx(0.1, rel=0.05)
    cv2 = statistics.variance(bursty) / statistics.mean(bursty) ** 2
    assert cv2 == pytest.approx(4.0, rel=0.15)  # 1 / burstiness: clumps and lulls
    assert ks_exponential(bursty, 10.0) > ks_critical(len(bursty))  # not Poisson


def test_n_and_until_bound_the_schedule_and_bad_input_is_refused():
    assert len(arrival_times(1000.0, 5, until_s=60.0)) == 5
    with pytest.raises(ValueError, match="arrival process"):
        arrival_times(1.0, 3, process="uniform")
    with pytest.raises(ValueError, match="rate"):
        arrival_times(0.0, 3)
    with pytest.raises(ValueError, match="give n"):
        arrival_times(1.0)


def test_the_rate_test_counts_in_the_process_s_own_noise():
    assert rate_z(110, 100.0, 1.0) == pytest.approx(1.0)  # Poisson: sd = sqrt(100)
    assert rate_z(110, 100.0, 1.0, "constant") == pytest.approx(10.0)  # a metronome has no noise to hide in
    assert abs(rate_z(32, 32.0, 1.0)) < 3.29
