"""What admission adds to a pod template, and how it is taken back.

When a Workload is admitted, each of its PodSets learns the flavors it got: the flavors' ``nodeLabels`` become
the template's ``nodeSelector`` and their ``tolerations`` are appended, and the template is labelled with its
PodSet name. On eviction the template goes back to what the Workload recorded at creation. Both directions are
pure functions on JSON objects (dicts), read through the views of ``webhook.api``, and never modify their arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.api.constants import PODSET_LABEL
from webhook.api.copies import writable, writable_value
from webhook.api.views import ObjectView, PodTemplateView, WorkloadRecord, entries, section

JSON = dict[str, Any]

# Labels the Job controller owns on a Job's pod template; restoring a template must keep them.
JOB_CONTROLLER_LABELS = (
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
)


class PodSetMergeError(ValueError):
    """The admission cannot be applied to the template without overriding what the user set."""


@dataclass(frozen=True)
class PodSetInfo:
    """What admission injects into the pods of one PodSet."""

    name: str
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[JSON] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


def podset_infos(workload: WorkloadRecord, flavors: Mapping[str, ObjectView]) -> dict[str, PodSetInfo]:
    """PodSetInfo per PodSet name from a Workload's admission (``status.admission``) and the ResourceFlavors by
    name.

    A missing flavor is an error: releasing the job without its node labels would place it on the wrong nodes.
    """
    infos: dict[str, PodSetInfo] = {}
    for assignment in workload.assignments:
        name = assignment.raw["name"]
        selector: dict[str, str] = {}
        tolerations: list[JSON] = []
        for flavor_name in dict.fromkeys(assignment.flavors.values()):
            flavor = flavors.get(flavor_name)
            if flavor is None:
                raise PodSetMergeError(f"ResourceFlavor {flavor_name!r} assigned to podSet {name!r} does not exist")
            spec = flavor.spec
            for key, value in section(spec, "nodeLabels").items():
                if selector.get(key, value) != value:
                    raise PodSetMergeError(
                        f"flavors of podSet {name!r} disagree on node label {key!r}: {selector[key]!r} vs {value!r}"
                    )
                selector[key] = value
            for toleration in entries(spec, "tolerations"):
                if toleration not in tolerations:
                    tolerations.append(dict(toleration))
        infos[name] = PodSetInfo(
            name=name, node_selector=selector, tolerations=tuple(tolerations), labels={PODSET_LABEL: name}
        )
    return infos


def inject(original: PodTemplateView, info: PodSetInfo) -> JSON:
    """A copy of the template with the PodSet's node selector, tolerations and labels merged in."""
    result = writable(original.raw)
    metadata = result.setdefault("metadata", {})
    spec = result.setdefault("spec", {})
    metadata["labels"] = _merge_map(original.labels, info.labels, what="label")
    spec["nodeSelector"] = _merge_map(section(original.spec, "nodeSelector"), info.node_selector, what="nodeSelector")
    if not spec["nodeSelector"]:
        del spec["nodeSelector"]
    tolerations = list(entries(original.spec, "tolerations"))
    tolerations += [dict(t) for t in info.tolerations if t not in tolerations]
    if tolerations:
        spec["tolerations"] = tolerations
    return result


def restore(now: PodTemplateView, recorded: PodTemplateView) -> JSON:
    """A copy of the template ``now`` whose scheduling directives are those ``recorded`` (the Workload's record).

    Labels the Job controller added after creation are kept; everything admission injected is taken back.
    """
    result = writable(now.raw)
    metadata = result.setdefault("metadata", {})
    spec = result.setdefault("spec", {})
    labels = dict(recorded.labels)
    for key in JOB_CONTROLLER_LABELS:
        if key in now.labels:
            labels[key] = now.labels[key]
    _set_or_drop(metadata, "labels", labels)
    _set_or_drop(metadata, "annotations", dict(recorded.annotations))
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        _set_or_drop(spec, key, writable_value(recorded.spec.get(key)))
    if not metadata and "metadata" not in recorded.raw:
        del result["metadata"]  # injection added it: the template is given back as it was
    return result


def _merge_map(existing: Mapping[str, str], extra: Mapping[str, str], *, what: str) -> dict[str, str]:
    merged = dict(existing)
    for key, value in extra.items():
        if key in merged and merged[key] != value:
            raise PodSetMergeError(f"{what} {key}={merged[key]!r} conflicts with the admitted flavor's {value!r}")
        merged[key] = value
    return merged


def _set_or_drop(target: JSON, key: str, value: Any) -> None:
    if value:
        target[key] = value
    else:
        target.pop(key, None)
