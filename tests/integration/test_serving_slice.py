"""`turnstile run` on a real API server: its serving thread runs with the short time slice, nothing else does."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.unit.test_schedslice import kernel_takes_custom_slices
from webhook import schedslice
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.timeout(180)


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def _threads(pid: int) -> set[int]:
    return {int(task.name) for task in Path(f"/proc/{pid}/task").glob("*")}


def test_the_serving_thread_has_the_short_slice_and_the_other_threads_and_children_the_default(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    if not kernel_takes_custom_slices():
        pytest.skip("this kernel has no custom slices for fair threads (Linux 6.12)")
    default: list[tuple[int, int] | None] = []
    probe = threading.Thread(target=lambda: default.append(schedslice.current_slice()))
    probe.start()
    probe.join()
    local = LocalTurnstile(cluster, tmp_path / "turnstile")
    local.start(register=False)
    try:
        assert local.process is not None
        pid = local.process.pid
        # The review worker and the reconciler start once the webhook's cache has synced.
        deadline = time.monotonic() + 90
        while len(_children(pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        children = _children(pid)
        assert len(children) == 2, children
        serving = schedslice.current_slice(pid)
        assert serving is not None
        assert serving[0] == int(schedslice.SERVING_SLICE_SECONDS * 1e9)
        others = {tid: schedslice.current_slice(tid) for tid in _threads(pid) - {pid}}
        others |= {tid: schedslice.current_slice(tid) for child in children for tid in _threads(child)}
        assert others
        assert default[0] is not None
        assert all(found is None or found[0] == default[0][0] for found in others.values()), others
    finally:
        local.stop()
