"""End-to-end fixtures: Turnstile running as a real process in front of the shared control plane.

Package-scoped: the webhook configurations exist only while the e2e tests run, so the schema-level integration
tests see the API server without Turnstile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile


@pytest.fixture(scope="package")
def turnstile(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTurnstile]:
    # The pod integration is on so the pod webhooks can be shown; Job pods are left alone (their owner is managed).
    local = LocalTurnstile(
        cluster,
        Path(tmp_path_factory.mktemp("turnstile")),
        config={"integrations": {"frameworks": ["batch/job", "pod"]}},
    )
    local.start()
    try:
        yield local
    finally:
        local.unregister()
        local.stop()
        if local.process is not None and local.process.returncode not in (0, None):
            print(local.log_file.read_text()[-5000:])
