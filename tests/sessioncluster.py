"""The control plane a test session starts: one per name and process (each pytest-xdist worker gets its own)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kubeapi import api
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


def fresh_namespace(cluster: LocalCluster, request: pytest.FixtureRequest, prefix: str) -> Iterator[str]:
    """A namespace for one test, named after it (``prefix``, the test's name, a random suffix), deleted afterwards
    without waiting."""
    name = prefix + "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"{name}-{os.urandom(2).hex()}"
    api(cluster).create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    api(cluster).delete("namespace", name)
