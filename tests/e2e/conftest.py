"""End-to-end fixtures: Turnstile running as a real process in front of the shared control plane.

The e2e tests have a control plane of their own (``cluster`` here overrides the root one), so Turnstile can stay up
for the whole session: the schema-level integration tests' API server never has its webhooks in front of it, and a
pytest-xdist worker that moves between e2e and integration modules does not restart Turnstile each time.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sessioncluster import started_cluster
from webhook.jobs import registry
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

THIRD_PARTY_CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds-third-party"
FETCH_CRDS = Path(__file__).resolve().parents[2] / "hack" / "third-party-crds.sh"


def fetched_crds() -> Path:
    """KubeRay's CRDs from their Go module, cached outside the repo (fetched on first use, like the control
    plane's binaries: a test that needs them never skips)."""
    done = subprocess.run(["bash", str(FETCH_CRDS)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{FETCH_CRDS} failed: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from started_cluster(tmp_path_factory, "e2e")


@pytest.fixture(scope="session")
def turnstile(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTurnstile]:
    # Every integration of the registry is on (the pod one too, so the pod webhooks can be shown; Job pods are left
    # alone, their owner is managed), with the third-party CRDs their kinds need (our own test schemas, and those
    # hack/third-party-crds.sh fetches from Go modules). No third-party controller runs: the tests play its part.
    cluster.install_crds(directory=THIRD_PARTY_CRDS)
    cluster.install_crds(directory=fetched_crds())
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
