import asyncio

from webhook.controller.keyqueue import KeyQueue


def test_duplicates_collapse_and_order_is_first_arrival() -> None:
    queue: KeyQueue[str] = KeyQueue()
    for key in ["a", "b", "a", "c", "b"]:
        queue.put(key)
    assert len(queue) == 3
    assert "a" in queue
    assert queue.drain() == ["a", "b", "c"]
    assert queue.get_nowait() is None


async def test_get_waits_for_a_key() -> None:
    queue: KeyQueue[str] = KeyQueue()
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.put("x")
    assert await asyncio.wait_for(waiter, 2) == "x"
    assert len(queue) == 0


async def test_a_key_taken_can_be_queued_again() -> None:
    queue: KeyQueue[str] = KeyQueue()
    queue.put("x")
    assert await asyncio.wait_for(queue.get(), 2) == "x"
    queue.put("x")
    assert queue.get_nowait() == "x"
