"""The real control plane every integration and end-to-end test shares: etcd + kube-apiserver from Go modules.

The session fixture starts it once (CRDs installed) and stops it at the end; the e2e tests get one of their own
(tests/e2e/conftest.py), so Turnstile's webhooks never sit in front of the schema-level integration tests. It is
bare on purpose: no kube-scheduler and no nodes, so the tests that play the kubelet (patching pod status) own
their pods alone; tests/e2e/test_placement.py starts its own cluster with kwok's simulated nodes. It never skips:
when the binaries are missing it builds them, and when that fails the tests fail with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sessioncluster import fresh_namespace, started_cluster
from webhook.local.cluster import LocalCluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from started_cluster(tmp_path_factory, "it")


@pytest.fixture
def namespace(cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, named after it, deleted afterwards (without waiting)."""
    yield from fresh_namespace(cluster, request, "t-")
