import asyncio

import pytest

from webhook.controller.supervisor import Supervisor, TaskCrashed


async def forever() -> None:
    await asyncio.Event().wait()


async def crash_soon() -> None:
    await asyncio.sleep(0)
    raise ValueError("boom")


async def test_a_crash_wakes_the_waiter_with_the_task_name(caplog: pytest.LogCaptureFixture) -> None:
    async with Supervisor() as tasks:
        tasks.spawn(forever(), name="watch:jobs")
        tasks.spawn(crash_soon(), name="watch:pods")
        with pytest.raises(TaskCrashed) as caught:
            await asyncio.wait_for(tasks.wait(), 2)
    assert caught.value.task_name == "watch:pods"
    assert isinstance(caught.value.__cause__, ValueError)
    assert "watch:pods" in caplog.text, "the crash is logged the moment it happens"


async def test_exit_cancels_the_rest_and_reraises_an_unwaited_crash() -> None:
    tasks = Supervisor()
    await tasks.__aenter__()
    started = tasks.spawn(forever(), name="long")
    tasks.spawn(crash_soon(), name="short")
    await asyncio.sleep(0.01)
    with pytest.raises(TaskCrashed):
        await tasks.__aexit__(None, None, None)
    assert started.cancelled()


async def test_clean_exit_cancels_running_tasks() -> None:
    async with Supervisor() as tasks:
        task = tasks.spawn(forever(), name="long")
        assert tasks.names == ["long"]
    assert task.cancelled()


async def test_wait_returns_when_everything_finished() -> None:
    async with Supervisor() as tasks:
        tasks.spawn(asyncio.sleep(0), name="quick")
        await asyncio.wait_for(tasks.wait(), 2)


async def test_names_are_unique_among_running_tasks() -> None:
    async with Supervisor() as tasks:
        tasks.spawn(forever(), name="same")
        with pytest.raises(ValueError, match="already running"):
            tasks.spawn(forever(), name="same")


async def test_wait_sees_a_crash_whose_done_callback_has_not_run_yet() -> None:
    async def dies_at_once() -> None:
        raise KeyError("bug")

    async with Supervisor() as tasks:
        task = tasks.spawn(dies_at_once(), name="dies")
        # Polling on purpose (an Event would be set by a callback, which is what must not have run yet): we
        # resume right after the task's last step, before its done callback.
        while not task.done():  # noqa: ASYNC110
            await asyncio.sleep(0)
        with pytest.raises(TaskCrashed) as caught:
            await tasks.wait()
    assert caught.value.task_name == "dies"
