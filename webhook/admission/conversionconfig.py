"""Where the API server finds Turnstile's conversion webhook: the CRDs that use it and their ``clientConfig``.

Owns: ``CONVERTED_CRDS`` (ClusterQueue, LocalQueue, Workload and Cohort, whose v1beta1 and v1beta2 schemas differ, as in
Kueue) and the patches that point their ``spec.conversion.webhook.clientConfig`` at ``/convert`` with a caBundle:
a url for a Turnstile running outside the cluster (``turnstile cluster up --with-turnstile``), the in-cluster
Service otherwise (``turnstile certs`` for the self-managed overlay). The cert-manager overlay needs none of
this: cainjector fills the caBundle of CRDs annotated ``cert-manager.io/inject-ca-from``.
Must not: do I/O; callers apply the patches.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from webhook.admission.registration import ServiceRef
from webhook.admission.routes import CONVERT_PATH
from webhook.api import constants

CONVERTED_CRDS: Final = tuple(
    f"{plural}.{constants.GROUP}" for plural in ("clusterqueues", "localqueues", "workloads", "cohorts")
)
# The Service the committed CRDs name: the webhook pods, published before they are Ready (manifests/webhook/service).
CONVERSION_SERVICE: Final = ServiceRef(name="turnstile-conversion-service")


def client_config(*, ca_bundle: bytes, url: str | None = None, service: ServiceRef | None = None) -> dict[str, Any]:
    """The clientConfig of the conversion webhook: exactly one of a base ``url`` or an in-cluster ``service``."""
    if (url is None) == (service is None):
        raise ValueError("exactly one of url and service is needed")
    bundle = base64.b64encode(ca_bundle).decode("ascii")
    if url is not None:
        # A merge patch: null removes the Service reference the committed CRDs carry.
        return {"url": url.rstrip("/") + CONVERT_PATH, "caBundle": bundle, "service": None}
    assert service is not None
    where = {"namespace": service.namespace, "name": service.name, "path": CONVERT_PATH, "port": service.port}
    return {"service": where, "caBundle": bundle}


def conversion_patch(*, ca_bundle: bytes, url: str | None = None, service: ServiceRef | None = None) -> dict[str, Any]:
    """A JSON merge patch for one of ``CONVERTED_CRDS`` that routes its conversions to this Turnstile."""
    webhook = {
        "conversionReviewVersions": ["v1"],
        "clientConfig": client_config(ca_bundle=ca_bundle, url=url, service=service),
    }
    return {"spec": {"conversion": {"strategy": "Webhook", "webhook": webhook}}}


def crd_patches(*, ca_bundle: bytes, namespace: str = CONVERSION_SERVICE.namespace) -> list[dict[str, Any]]:
    """Kustomize patches (one partial CRD each) carrying the caBundle, for the self-managed overlay."""
    service = ServiceRef(name=CONVERSION_SERVICE.name, namespace=namespace, port=CONVERSION_SERVICE.port)
    return [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            **conversion_patch(ca_bundle=ca_bundle, service=service),
        }
        for name in CONVERTED_CRDS
    ]
