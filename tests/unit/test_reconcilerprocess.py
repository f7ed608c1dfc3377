"""The reconciler in a child process: restarted when it ends, stopped on request, never a zombie leader."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from webhook.config import load_config
from webhook.metrics import Metrics
from webhook.reconcilerprocess import ReconcilerProcess
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
