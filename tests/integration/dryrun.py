"""Server-side dry runs of rendered manifests against the shared test cluster (overlays and the Helm chart)."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from webhook.local.cluster import LocalCluster

Obj = dict[str, Any]


def dry_run(cluster: LocalCluster, objects: list[Obj]) -> subprocess.CompletedProcess[str]:
    """A server-side dry run of ``kubectl apply``; the CRDs, which the test cluster always has, are dry-run replaced:
    a local Turnstile may have pointed their conversion webhook at a ``url``, which apply would merge with the
    overlay's ``service`` into an invalid object, although a cluster installed from the overlay has no url."""
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    rest = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    runs = [
        cluster.kubectl(verb, "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(part), check=False)
        for verb, part in (("replace", crds), ("apply", rest))
        if part
    ]
    failed = next((run for run in runs if run.returncode != 0), None)
    return subprocess.CompletedProcess(
        args=[run.args for run in runs],
        returncode=failed.returncode if failed else 0,
        stdout="".join(run.stdout for run in runs),
        stderr="".join(run.stderr for run in runs),
    )
