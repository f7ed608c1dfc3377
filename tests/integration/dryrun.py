"""Server-side dry runs of rendered manifests against the shared test cluster (overlays and the Helm chart)."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from webhook.localcluster import LocalCluster

Obj = dict[str, Any]


def dry_run(cluster: LocalCluster, objects: list[Obj]) -> subprocess.CompletedProcess[str]:
    """A server-side dry run of ``kubectl apply``; the CRDs, which the test cluster always has, are dry-run replaced:
    a local Turnstile may have pointed their conversion webhook at a ``url``, which apply would merge with the
    overlay's ``service`` into an invalid object, although a cluster installed from the overlay has no url."""
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    rest = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    if crds:
        done = cluster.kubectl("replace", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(crds), check=False)
        if done.returncode != 0 or not rest:
            return done
    return cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(rest), check=False)
