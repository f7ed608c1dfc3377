"""The control plane a test session starts: one per name and process (each pytest-xdist worker gets its own)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.local.cluster import LocalCluster


def started_cluster(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[LocalCluster]:
    """A fresh local control plane for the session, stopped at its end (per pid: xdist workers get one each)."""
    # /dev/shm keeps etcd off the disk: faster, and nothing is left behind if the machine is reset.
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path_factory.getbasetemp()
    local = LocalCluster(Path(base) / f"turnstile-{name}-{os.getpid()}")
    local.start()
    try:
        yield local
    finally:
        local.stop()
