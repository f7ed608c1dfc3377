"""How the local cluster tells that a process it stops has gone."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from webhook.local.cluster import _zombie


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_a_zombie_is_told_apart_from_a_live_process() -> None:
    # A child not waited for stays a zombie: the case of a cluster's processes that init reaps late.
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert not _zombie(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _state(child.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _state(child.pid) == "Z"
        assert _zombie(child.pid)
        assert not _zombie(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert not _zombie(child.pid), "a reaped process is no zombie either"
