"""Rendering Turnstile's Mutating/ValidatingWebhookConfigurations as plain dicts (pure: no I/O, no client), their
namespace and object selectors typed as label selectors are on the wire (``selector.LabelSelectorWire``).

Used for the manifests under ``manifests/webhook`` (service-based clientConfig) and by ``turnstile cluster up
--webhook-url`` and the integration tests (url-based clientConfig for a ``turnstile serve`` on the host).

Failing closed is scoped to what must: for Jobs and Pods, the objects that name a queue (or carry
``kueue.x-k8s.io/managed``) get ``failurePolicy: Fail``; the others get a twin webhook with ``Ignore`` (only
defaulting is lost while Turnstile is down, and the reconciler suspends whatever slipped through) — unless
``manageJobsWithoutQueueName`` is on, where every job is managed and both fail closed. The namespace selector
always leaves out ``kube-system`` and Turnstile's own namespace, and for Jobs and Pods it is the configured
namespace policy (``managedJobsNamespaceSelector``, ``namespaceOptInLabel``: ``namespace_selector_for``), so a
namespace Turnstile does not manage never depends on Turnstile being up. Only the integrations that are on get
webhooks (two per job kind of ``webhook.jobs.registry``): a webhook for an integration that is off would answer
nothing useful and, failing closed, block pods. An ``objectSelector`` is matched against the old and the new
object, so removing the queue label is still seen by the fail-closed webhook.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from webhook.admission.endpoints import ENDPOINTS, Endpoint
from webhook.admission.selector import LabelSelectorWire, RequirementWire
from webhook.api import constants as c
from webhook.core.namespace_policy import DEFAULT_OWN_NAMESPACE, KUBE_SYSTEM, NAME_LABEL, NamespacePolicy
from webhook.jobs.registry import DEFAULT_FRAMEWORKS

DEFAULT_TIMEOUT_SECONDS = 5
DEFAULT_NAME = "turnstile"


@dataclass(frozen=True)
class ServiceRef:
    name: str = "turnstile-webhook-service"
    namespace: str = DEFAULT_OWN_NAMESPACE
    port: int = 443


def default_namespace_selector(own_namespace: str = DEFAULT_OWN_NAMESPACE) -> LabelSelectorWire:
    return {"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": [KUBE_SYSTEM, own_namespace]}]}


def namespace_selector_for(policy: NamespacePolicy) -> LabelSelectorWire:
    """The namespaceSelector that matches exactly the namespaces ``policy`` manages (protected ones excluded)."""
    expressions: list[RequirementWire] = [
        {"key": NAME_LABEL, "operator": "NotIn", "values": sorted({KUBE_SYSTEM, policy.own_namespace})}
    ]
    for req in policy.selector.requirements:
        expr: RequirementWire = {"key": req.key, "operator": req.operator}
        if req.operator in ("In", "NotIn"):
            expr["values"] = sorted(req.values)
        if expr not in expressions:
            expressions.append(expr)
    if policy.opt_in_label is not None:
        expressions.append({"key": policy.opt_in_label, "operator": "In", "values": ["true"]})
    return {"matchExpressions": expressions}


def _exists(label: str) -> LabelSelectorWire:
    return {"matchExpressions": [{"key": label, "operator": "Exists"}]}


def _absent(label: str) -> LabelSelectorWire:
    return {"matchExpressions": [{"key": label, "operator": "DoesNotExist"}]}


def _variants(endpoint: Endpoint, *, manage_without_queue_name: bool) -> list[tuple[str, LabelSelectorWire, str]]:
    """(name, objectSelector, failurePolicy) of each webhook serving ``endpoint``."""
    if not endpoint.workload_kind:
        return [(endpoint.name, {}, "Fail")]
    if endpoint.through_pods and not endpoint.mutating:
        # Only managed pods carry rules worth failing closed for (the gate, the group).
        return [(endpoint.name, _exists(c.MANAGED_LABEL), "Fail")]
    prefix, _, rest = endpoint.name.partition(".")
    unqueued_policy = "Fail" if manage_without_queue_name else "Ignore"
    return [
        (endpoint.name, _exists(c.QUEUE_NAME_LABEL), "Fail"),
        (f"{prefix}-unqueued.{rest}", _absent(c.QUEUE_NAME_LABEL), unqueued_policy),
    ]


def render_webhook_configurations(
    *,
    ca_bundle: bytes | None,
    url: str | None = None,
    service: ServiceRef | None = None,
    namespace_selector: LabelSelectorWire | None = None,
    workload_namespace_selector: LabelSelectorWire | None = None,
    frameworks: frozenset[str] = DEFAULT_FRAMEWORKS,
    manage_jobs_without_queue_name: bool = False,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
    name: str = DEFAULT_NAME,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (mutating, validating) configurations.

    Give exactly one of ``url`` (e.g. ``https://127.0.0.1:9443``; each webhook's path is appended) or
    ``service``. ``ca_bundle`` is the PEM of the CA that signed the serving certificate (None leaves it out,
    for cert-manager's injector to fill).
    """
    if (url is None) == (service is None):
        raise ValueError("give exactly one of url or service")
    if not 1 <= timeout_seconds <= 30:
        raise ValueError("timeoutSeconds must be between 1 and 30")
    selector = dict(namespace_selector) if namespace_selector is not None else default_namespace_selector()
    job_selector = dict(workload_namespace_selector) if workload_namespace_selector is not None else selector
    bundle = base64.b64encode(ca_bundle).decode("ascii") if ca_bundle is not None else None
    mutating: list[dict[str, Any]] = []
    validating: list[dict[str, Any]] = []
    for endpoint in ENDPOINTS:
        if endpoint.framework is not None and endpoint.framework not in frameworks:
            continue
        client: dict[str, Any]
        if url is not None:
            client = {"url": url.rstrip("/") + endpoint.path}
        else:
            assert service is not None
            client = {
                "service": {
                    "name": service.name,
                    "namespace": service.namespace,
                    "path": endpoint.path,
                    "port": service.port,
                }
            }
        if bundle is not None:
            client["caBundle"] = bundle
        variants = _variants(endpoint, manage_without_queue_name=manage_jobs_without_queue_name)
        for hook_name, object_selector, failure_policy in variants:
            hook: dict[str, Any] = {
                "name": hook_name,
                "admissionReviewVersions": ["v1"],
                "clientConfig": dict(client),
                "failurePolicy": failure_policy,
                "matchPolicy": "Equivalent",
                "namespaceSelector": job_selector if endpoint.workload_kind else selector,
                "objectSelector": object_selector,
                "rules": [
                    {
                        "apiGroups": [endpoint.group],
                        "apiVersions": list(endpoint.versions),
                        "operations": list(endpoint.operations),
                        "resources": list(endpoint.resources),
                        "scope": "*",
                    }
                ],
                "sideEffects": "None",
                "timeoutSeconds": timeout_seconds,
            }
            if endpoint.mutating:
                hook["reinvocationPolicy"] = "IfNeeded" if endpoint.workload_kind else "Never"
                mutating.append(hook)
            else:
                validating.append(hook)
    api = "admissionregistration.k8s.io/v1"
    return (
        {"apiVersion": api, "kind": "MutatingWebhookConfiguration", "metadata": {"name": name}, "webhooks": mutating},
        {
            "apiVersion": api,
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": validating,
        },
    )
