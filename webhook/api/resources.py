"""What one pod asks for: the effective requests of a pod spec, computed as the kube-scheduler does.

Owns: container requests defaulted from limits, init containers (plain and restartable sidecars), pod-level
resources and pod overhead, and the per-resource sums and maxima over ``ResourceList`` mappings.
Must not: know about quota, flavors or queues; it answers "how much does one pod need", nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api.quantity import InvalidQuantity, Quantity, parse_quantity
from webhook.api.wire import InvalidObject

ResourceList = Mapping[str, Quantity]

# Only these may be set at pod level (spec.resources), and they replace the containers' aggregate.
_POD_LEVEL_RESOURCES = ("cpu", "memory")


def add(a: ResourceList, b: ResourceList) -> dict[str, Quantity]:
    out = dict(a)
    for name, q in b.items():
        out[name] = out[name] + q if name in out else q
    return out


def maximum(a: ResourceList, b: ResourceList) -> dict[str, Quantity]:
    out = dict(a)
    for name, q in b.items():
        if name not in out or q > out[name]:
            out[name] = q
    return out


def scale(a: ResourceList, factor: int) -> dict[str, Quantity]:
    return {name: q * factor for name, q in a.items()}


def parse_resource_list(raw: object, where: str) -> dict[str, Quantity]:
    """A ``{name: quantity}`` map; errors name the field and the offending value."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidQuantity(raw, f"{where} must be a map of resource name to quantity")
    out: dict[str, Quantity] = {}
    for name, value in raw.items():
        try:
            out[str(name)] = parse_quantity(value)
        except InvalidQuantity as err:
            raise InvalidQuantity(value, f"{where}.{name}: {err}") from err
    return out


def effective_requests(resources: object, where: str) -> dict[str, Quantity]:
    """A container's (or pod's) requests, each missing request defaulted from its limit as the API server does."""
    if not isinstance(resources, Mapping):
        return {}
    limits = parse_resource_list(resources.get("limits"), f"{where}.limits")
    requests = parse_resource_list(resources.get("requests"), f"{where}.requests")
    return {**limits, **requests}


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Quantity]:
    """Per-pod requests of a pod spec (``template.spec``), following Kubernetes' ``PodRequests``.

    1. Regular containers run together: their requests add up.
    2. Restartable init containers (sidecars, ``restartPolicy: Always``) keep running, so they add to the
       regular containers too, and to every init container that starts after them.
    3. A plain init container runs alone (beside the sidecars started before it); the pod needs the maximum
       of the running sum and each init step.
    4. Pod-level ``resources`` (cpu, memory) replace the containers' aggregate where set.
    5. ``overhead`` (from the RuntimeClass) is added on top.
    """
    total: dict[str, Quantity] = {}
    for i, container in enumerate(_containers(pod_spec, "containers")):
        total = add(total, effective_requests(container.get("resources"), f"containers[{i}].resources"))

    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for i, container in enumerate(_containers(pod_spec, "initContainers")):
        req = effective_requests(container.get("resources"), f"initContainers[{i}].resources")
        if container.get("restartPolicy") == "Always":
            total = add(total, req)
            sidecars = add(sidecars, req)
            step = sidecars
        else:
            step = add(req, sidecars)
        init_peak = maximum(init_peak, step)
    total = maximum(total, init_peak)

    pod_level = effective_requests(pod_spec.get("resources"), "resources")
    for name in _POD_LEVEL_RESOURCES:
        if name in pod_level:
            total[name] = pod_level[name]

    overhead = parse_resource_list(pod_spec.get("overhead"), "overhead")
    return add(total, overhead)


def _containers(pod_spec: Mapping[str, Any], key: str) -> Iterable[Mapping[str, Any]]:
    items = pod_spec.get(key) or []
    if not isinstance(items, list):
        raise InvalidObject(key, f"must be a list, got {type(items).__name__}")
    return [c for c in items if isinstance(c, Mapping)]
