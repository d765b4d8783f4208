"""Canary assignment and shadow sampling, checked against the binomial and uniform laws they
must follow rather than against their own outputs."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from calipers.gateway import MirrorSampler, hash_key, in_canary, user_key
from calipers.gateway._routing import key_position


def within_binomial(count: int, n: int, p: float, z: float = 4.0) -> bool:
    return abs(count - n * p) <= z * math.sqrt(n * p * (1 - p))


def test_canary_share_of_users_is_the_fraction() -> None:
    users = [f"user-{i}" for i in range(20_000)]
    for fraction in (0.01, 0.1, 0.5):
        n_in = sum(in_canary(u, "salt", fraction) for u in users)
        assert within_binomial(n_in, len(users), fraction), (fraction, n_in)
    assert not any(in_canary(u, "salt", 0.0) for u in users[:1000])
    assert all(in_canary(u, "salt", 1.0) for u in users[:1000])


def test_key_positions_are_uniform() -> None:
    positions = [key_position(f"session-{i}", "s") for i in range(5000)]
    assert stats.kstest(positions, "uniform").pvalue > 1e-3


def test_assignment_is_sticky_and_growing_the_canary_keeps_its_users() -> None:
    users = [f"u{i}" for i in range(3000)]
    first = [in_canary(u, "s", 0.2) for u in users]
    assert first == [in_canary(u, "s", 0.2) for u in users]
    small = {u for u in users if in_canary(u, "s", 0.05)}
    large = {u for u in users if in_canary(u, "s", 0.2)}
    assert small < large


def test_a_new_salt_reshuffles_users_independently() -> None:
    users = [f"u{i}" for i in range(20_000)]
    a = {u for u in users if in_canary(u, "salt-a", 0.3)}
    b = {u for u in users if in_canary(u, "salt-b", 0.3)}
    assert within_binomial(len(a & b), len(users), 0.3 * 0.3)


def test_user_key_precedence() -> None:
    names = ("x-calipers-user", "x-session")
    body = {"user": "from-body"}
    assert user_key({"x-calipers-user": "h1", "x-session": "h2"}, body, names) == "h1"
    assert user_key({"x-calipers-user": "", "x-session": "h2"}, body, names) == "h2"
    assert user_key({}, body, names) == "from-body"
    assert user_key({}, {"user": ""}, names) is None
    assert user_key({}, {"user": 42}, names) is None
    assert user_key({}, None, names) is None


def test_hash_key_is_a_stable_salted_pseudonym() -> None:
    h = hash_key("alice@example.com", "s1")
    assert h == hash_key("alice@example.com", "s1")
    assert h != hash_key("alice@example.com", "s2")
    assert len(h) == 16 and "alice" not in h
    assert int(h, 16) >= 0


@pytest.mark.parametrize("fraction", [0.1, 0.37])
def test_mirror_sampling_rate(fraction: float) -> None:
    sample = MirrorSampler(fraction, seed=3)
    n = 20_000
    assert within_binomial(sum(sample() for _ in range(n)), n, fraction)
    again = MirrorSampler(fraction, seed=3)
    replay = MirrorSampler(fraction, seed=3)
    assert [again() for _ in range(200)] == [replay() for _ in range(200)]


def test_mirror_sampling_edges() -> None:
    assert not any(MirrorSampler(0.0)() for _ in range(1000))
    assert all(MirrorSampler(1.0)() for _ in range(1000))
