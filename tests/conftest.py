"""The real control plane every integration and end-to-end test shares: etcd + kube-apiserver from Go modules.

The session fixture starts it once (CRDs installed) and stops it at the end. It is bare on purpose: no
kube-scheduler and no nodes, so the tests that play the kubelet (patching pod status) own their pods alone;
tests/e2e/test_placement.py starts its own cluster with kwok's simulated nodes. It never skips: when the binaries
are missing it builds them, and when that fails the tests fail with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.local.cluster import LocalCluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # /dev/shm keeps etcd off the disk: faster, and nothing is left behind if the machine is reset.
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path_factory.getbasetemp()
    state_dir = Path(base) / f"turnstile-it-{os.getpid()}"
    local = LocalCluster(state_dir)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def namespace(cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, named after it, deleted afterwards (without waiting)."""
    name = "t-" + "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"{name}-{os.urandom(2).hex()}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
