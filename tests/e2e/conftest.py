"""End-to-end fixtures: Turnstile running as a real process in front of the shared control plane.

Package-scoped: the webhook configurations exist only while the e2e tests run, so the schema-level integration
tests see the API server without Turnstile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.jobs import registry
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

THIRD_PARTY_CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds-third-party"


@pytest.fixture(scope="package")
def turnstile(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTurnstile]:
    # Every integration of the registry is on (the pod one too, so the pod webhooks can be shown; Job pods are left
    # alone, their owner is managed), with the third-party CRDs their kinds need (our own test schemas, and those
    # hack/third-party-crds.sh fetches from Go modules). No third-party controller runs: the tests play its part.
    cluster.install_crds(directory=THIRD_PARTY_CRDS)
    local = LocalTurnstile(
        cluster,
        Path(tmp_path_factory.mktemp("turnstile")),
        config={"integrations": {"frameworks": list(registry.names())}},
    )
    local.start()
    try:
        yield local
    finally:
        local.unregister()
        local.stop()
        if local.process is not None and local.process.returncode not in (0, None):
            print(local.log_file.read_text()[-5000:])
