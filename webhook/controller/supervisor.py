"""Named, supervised background tasks: none may die silently.

Owns: ``Supervisor``, which starts tasks by name, logs a crash at once with its traceback, wakes whoever waits
on ``wait()``, and on exit cancels and awaits every task, re-raising the first crash nobody has seen yet.
Must not: restart tasks; a task that wants to survive errors retries inside itself (as ``Informer`` does).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self

log = logging.getLogger(__name__)


class TaskCrashed(RuntimeError):
    """A supervised task raised; ``__cause__`` is its exception and ``task_name`` says which task."""

    def __init__(self, task_name: str) -> None:
        super().__init__(f"background task {task_name!r} crashed")
        self.task_name = task_name


class Supervisor:
    """Use as ``async with Supervisor() as tasks: tasks.spawn(coro, name="watch:jobs"); await tasks.wait()``."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._crashes: list[tuple[str, BaseException]] = []
        self._changed = asyncio.Event()
        self._reported = False  # a crash already raised by wait() is not raised again on exit

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
        if exc is None and self._crashes and not self._reported:
            name, error = self._crashes[0]
            raise TaskCrashed(name) from error

    @property
    def names(self) -> list[str]:
        return [name for name, task in self._tasks.items() if not task.done()]

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Start ``coro`` as a task called ``name`` (unique among the running ones)."""
        running = self._tasks.get(name)
        if running is not None and not running.done():
            coro.close()
            raise ValueError(f"a task named {name!r} is already running")
        task = asyncio.create_task(coro, name=name)
        self._tasks[name] = task
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("background task %r crashed", task.get_name(), exc_info=error)
            self._crashes.append((task.get_name(), error))
        self._changed.set()

    async def wait(self) -> None:
        """Return when every task has finished; raise ``TaskCrashed`` as soon as one crashes."""
        while True:
            if self._crashes:
                self._reported = True
                name, error = self._crashes[0]
                raise TaskCrashed(name) from error
            if all(task.done() for task in self._tasks.values()):
                return
            self._changed.clear()
            await self._changed.wait()

    async def close(self) -> None:
        """Cancel every task and wait until all have stopped."""
        tasks = [task for task in self._tasks.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
