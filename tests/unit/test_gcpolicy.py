"""FreezeSurvivors: survivors of a full collection are frozen; everything is thawed now and then."""

from __future__ import annotations

import gc

from webhook.gcpolicy import Callback, FreezeSurvivors


class FakeCollector:
    def __init__(self) -> None:
        self.callbacks: list[Callback] = []
        self.calls: list[str] = []

    def freeze(self) -> None:
        self.calls.append("freeze")

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")

    def collected(self, generation: int) -> None:
        for callback in list(self.callbacks):
            callback("start", {"generation": generation})
            callback("stop", {"generation": generation, "collected": 0, "uncollectable": 0})


def test_only_a_full_collection_freezes_what_it_found_alive() -> None:
    collector, now = FakeCollector(), [0.0]
    FreezeSurvivors(collector=collector, clock=lambda: now[0]).install()
    collector.collected(0)
    collector.collected(1)
    assert collector.calls == []
    collector.collected(2)
    assert collector.calls == ["freeze"]


def test_everything_is_thawed_once_per_interval_so_frozen_cycles_are_walked_again() -> None:
    collector, now = FakeCollector(), [0.0]
    policy = FreezeSurvivors(collector=collector, clock=lambda: now[0], thaw_every=300)
    policy.install()
    policy.install()  # installing twice adds one hook
    for t in (10.0, 299.0, 300.0, 310.0, 599.0, 600.0):
        now[0] = t
        collector.collected(2)
    assert collector.calls == ["freeze", "freeze", "unfreeze", "freeze", "freeze", "unfreeze"]
    assert (policy.frozen, policy.thawed) == (4, 2)
    policy.uninstall()
    collector.collected(2)
    assert len(collector.calls) == 6


def test_with_the_real_collector_the_survivors_leave_the_generations_until_thawed() -> None:
    policy = FreezeSurvivors()
    gc.collect()
    gc.unfreeze()
    policy.install()
    try:
        kept = [{"n": i} for i in range(1000)]
        gc.collect()
        assert gc.get_freeze_count() >= len(kept)
        assert policy.frozen == 1
    finally:
        policy.uninstall()
        gc.unfreeze()
    gc.collect()
    assert gc.get_freeze_count() == 0
