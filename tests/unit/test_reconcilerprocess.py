"""The reconciler in a child process: restarted when it ends, stopped on request, never a zombie leader."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
import yaml

from webhook.config import load_config
from webhook.controller.leader import LostLeadership
from webhook.metrics import Metrics
from webhook.reconcilerprocess import ReconcilerProcess, run_loop
from webhook.runoptions import RunOptions

pytestmark = pytest.mark.timeout(60)


def _options(kubeconfig: Path) -> RunOptions:
    return RunOptions(
        config=load_config(None), cert_file=Path("unused"), key_file=Path("unused"), kubeconfig=kubeconfig
    )


def _unreachable(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


async def _eventually(predicate: object, seconds: float) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0.1)


async def test_a_child_that_exits_is_started_again(tmp_path: Path) -> None:
    process = ReconcilerProcess(_options(tmp_path / "missing"), Metrics(), json_logs=False, backoff=(0.05, 0.1))
    task = asyncio.create_task(process.run())
    try:
        await _eventually(lambda: process.restarts >= 1, 45)
    finally:
        await process.stop()
        task.cancel()
    assert process.role == "follower"


async def test_stop_ends_a_running_child_gracefully(tmp_path: Path) -> None:
    """A child that cannot reach its API server keeps retrying (a candidate waits); stop() still ends it."""
    process = ReconcilerProcess(_options(_unreachable(tmp_path)), Metrics(), json_logs=False)
    task = asyncio.create_task(process.run())
    try:
        await _eventually(lambda: process.pid is not None, 20)
        await asyncio.sleep(2.0)  # let it get going
        assert process.restarts == 0, "an unreachable API server is waited for, not a crash"
        child = process.child
        await process.stop(grace=20)
        assert not child.is_alive()
        assert child.exitcode == 0
    finally:
        task.cancel()


async def test_a_lost_lease_kills_the_child_at_once_and_starts_a_fresh_one(tmp_path: Path) -> None:
    """The elector (in this process) reports a renewal past the deadline: the child, which may be writing, is
    SIGKILLed at once rather than asked, the role drops to follower, and a new child (a new identity) starts."""
    metrics = Metrics()
    process = ReconcilerProcess(_options(_unreachable(tmp_path)), metrics, json_logs=False, backoff=(0.05, 0.1))
    task = asyncio.create_task(process.run())
    try:
        await _eventually(lambda: process.pid is not None, 20)
        first = process.child
        process._lead()  # as the elector would on winning
        assert process.role == "leader"
        process._lose(LostLeadership("could not renew"))
        assert process.role == "follower"
        await _eventually(lambda: not first.is_alive(), 10)
        assert first.exitcode == -signal.SIGKILL
        await _eventually(lambda: process.restarts >= 1 and process.child is not first, 20)
        assert process.child.is_alive()
    finally:
        await process.stop(grace=20)
        task.cancel()


def test_the_reconciler_runs_on_uvloops_event_loop() -> None:
    seen: list[str] = []

    async def probe() -> None:
        seen.append(type(asyncio.get_running_loop()).__module__)

    run_loop(probe())
    assert len(seen) == 1
    assert seen[0].startswith("uvloop")
