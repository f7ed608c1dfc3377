"""The objects that put the visibility API behind the API server: one APIService per version, and its Service.

Owns: ``api_services`` (what ``turnstile cluster up`` applies, and what manifests/visibility/ spells out statically)
and ``external_name_service`` for a Turnstile running outside the cluster: the aggregation layer routes to a
Service, Endpoints may not hold loopback addresses, and an ExternalName Service is resolved by name, so it can
point the API server at ``localhost``.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from webhook.visibility.summary import GROUP, VERSIONS

__all__ = ["GROUP", "SERVICE", "VERSIONS", "api_services", "external_name_service"]

SERVICE: Final = "turnstile-visibility"


def api_services(*, namespace: str, service: str, port: int, ca_bundle: bytes | None) -> list[dict[str, Any]]:
    """``ca_bundle`` None: left for cert-manager's cainjector to fill."""
    out = []
    for priority, version in zip((100, 90), VERSIONS, strict=True):
        spec: dict[str, Any] = {
            "group": GROUP,
            "version": version,
            "groupPriorityMinimum": 100,
            "versionPriority": priority,
            "service": {"name": service, "namespace": namespace, "port": port},
        }
        if ca_bundle is not None:
            spec["caBundle"] = base64.b64encode(ca_bundle).decode()
        out.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{version}.{GROUP}", "labels": {"app.kubernetes.io/name": "turnstile"}},
                "spec": spec,
            }
        )
    return out


def external_name_service(*, namespace: str, host: str = "localhost", port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace, "labels": {"app.kubernetes.io/name": "turnstile"}},
        "spec": {"type": "ExternalName", "externalName": host, "ports": [{"name": "https", "port": port}]},
    }
