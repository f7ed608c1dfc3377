"""What the API server will add to a job's pods before they exist: LimitRange defaults and RuntimeClass overhead.

A Workload must ask for what the pods will really request, or a job without requests in a namespace whose
LimitRange defaults them is admitted at 0 and runs at the default. As Kueue's ``AdjustResources`` does, the pod
templates recorded in a Workload are adjusted here first, the way the API server's admission plugins will
adjust the pods:
1. ``RuntimeClass``: a template naming a class with ``overhead.podFixed`` gets it as ``spec.overhead``;
2. ``LimitRanger``: every container (and init container) missing a limit or a request for a resource gets the
   ``default`` / ``defaultRequest`` of the namespace's ``Container`` LimitRange items (the API server has already
   copied ``default`` into a missing ``defaultRequest`` when it stored the LimitRange).
Requests still missing are then taken from limits by ``webhook.api.resources``, as the API server does.
Pure: the caller passes the namespace's LimitRanges and the RuntimeClasses it knows, as views
(``webhook.api.views``); the template adjusted is a copy, read and written as the dict it will be sent as.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.api.copies import writable
from webhook.api.views import ObjectView, PodTemplateView, entries, section

JSON = dict[str, Any]


@dataclass(frozen=True)
class PodDefaults:
    """The LimitRanges of one namespace and the cluster's RuntimeClass overheads."""

    limit_ranges: Sequence[ObjectView] = ()
    overheads: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # RuntimeClass -> podFixed

    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever what ``apply`` does could change (for callers that remember results)."""
        ranges = tuple((lr.metadata.get("uid"), lr.metadata.get("resourceVersion")) for lr in self.limit_ranges)
        overheads = tuple(
            sorted(
                (name, tuple(sorted((str(r), str(q)) for r, q in fixed.items())))
                for name, fixed in self.overheads.items()
            )
        )
        return ranges, overheads

    def container_defaults(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(default limits, default requests) of the ``Container`` items; the first LimitRange naming a
        resource wins, as the API server's LimitRanger applies them in order."""
        limits: dict[str, Any] = {}
        requests: dict[str, Any] = {}
        for lr in self.limit_ranges:
            for item in entries(lr.spec, "limits"):
                if item.get("type") != "Container":
                    continue
                for name, value in section(item, "default").items():
                    limits.setdefault(name, value)
                for name, value in section(item, "defaultRequest").items():
                    requests.setdefault(name, value)
        return limits, requests

    def apply(self, template: PodTemplateView) -> JSON:
        """A copy of the pod template as the API server will admit its pods."""
        result = writable(template.raw)
        spec = result.get("spec")
        if not isinstance(spec, dict):
            return result
        runtime_class = spec.get("runtimeClassName")
        if runtime_class and not spec.get("overhead") and self.overheads.get(runtime_class):
            spec["overhead"] = dict(self.overheads[runtime_class])
        default_limits, default_requests = self.container_defaults()
        if not default_limits and not default_requests:
            return result
        for key in ("initContainers", "containers"):
            for container in entries(spec, key):
                if isinstance(container, dict):
                    _default_container(container, default_limits, default_requests)
        return result


def _default_container(container: JSON, limits: Mapping[str, Any], requests: Mapping[str, Any]) -> None:
    resources = container.get("resources")
    resources = dict(resources) if isinstance(resources, Mapping) else {}
    stated_limits = section(resources, "limits")
    own_limits = dict(stated_limits)
    own_requests = dict(section(resources, "requests"))
    for name, value in limits.items():
        own_limits.setdefault(name, value)
    for name, value in requests.items():
        # A request the container does not state comes from its own limit first (API defaulting runs before
        # the LimitRanger), then from the LimitRange.
        if name not in own_requests and name not in stated_limits:
            own_requests[name] = value
    if own_limits:
        resources["limits"] = own_limits
    if own_requests:
        resources["requests"] = own_requests
    if resources:
        container["resources"] = resources


def runtime_overheads(runtime_classes: Sequence[ObjectView]) -> dict[str, Mapping[str, Any]]:
    """RuntimeClass name -> its ``overhead.podFixed`` (classes without overhead are left out; a RuntimeClass has
    no ``spec``: ``overhead`` is a top-level field)."""
    out: dict[str, Mapping[str, Any]] = {}
    for rc in runtime_classes:
        fixed = section(section(rc.raw, "overhead"), "podFixed")
        if fixed:
            out[str(rc.metadata.get("name", ""))] = dict(fixed)
    return out
