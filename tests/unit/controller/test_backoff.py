import pytest

from webhook.controller.backoff import Backoff


def test_delays_double_until_the_cap_without_jitter() -> None:
    backoff = Backoff(initial=1, cap=5, jitter=0)
    assert [backoff.next() for _ in range(5)] == [1, 2, 4, 5, 5]


@pytest.mark.parametrize("draw", [0.0, 0.999])
def test_jitter_shortens_at_most_by_its_share(draw: float) -> None:
    backoff = Backoff(initial=2, cap=30, jitter=0.5, random=lambda: draw)
    delay = backoff.next()
    assert 1.0 <= delay <= 2.0
    assert delay == pytest.approx(2 * (1 - 0.5 * draw))


def test_reset_starts_over() -> None:
    backoff = Backoff(initial=1, cap=100, jitter=0)
    backoff.next()
    backoff.next()
    backoff.reset()
    assert backoff.next() == 1


def test_a_long_outage_stays_capped() -> None:
    backoff = Backoff(initial=1, cap=30, jitter=0)
    for _ in range(2000):
        delay = backoff.next()
    assert delay == 30


def test_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(initial=10, cap=1)
