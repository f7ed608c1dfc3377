"""A job's priority, resolved as Kueue does: WorkloadPriorityClass label, then pod PriorityClass, then default.

Pure: the caller passes the classes it knows (from the cache).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api.constants import POD_PRIORITY_CLASS_SOURCE, PRIORITY_CLASS_LABEL, WORKLOAD_PRIORITY_CLASS_SOURCE
from webhook.api.views import BatchJob, ObjectView, view_of


@dataclass(frozen=True)
class Priority:
    value: int
    class_name: str | None = None
    source: str = ""


def resolve(
    job: ObjectView,
    *,
    workload_priority_classes: Mapping[str, Mapping[str, Any]],
    priority_classes: Iterable[Mapping[str, Any]],
    template_spec: Mapping[str, Any] | None = None,
) -> Priority:
    """1. ``kueue.x-k8s.io/priority-class`` names a WorkloadPriorityClass; 2. the pod template's
    ``priorityClassName`` names a PriorityClass; 3. the cluster's ``globalDefault`` PriorityClass (the lowest if
    several); 4. zero. A named class that does not exist falls through to the next rule.

    ``template_spec`` is the pod spec whose class counts (the kind adapter's ``priority_template``); without it,
    a batch Job's template."""
    view = view_of(BatchJob, job)
    wpc_name = view.labels.get(PRIORITY_CLASS_LABEL)
    if wpc_name and (wpc := workload_priority_classes.get(wpc_name)) is not None:
        return Priority(int(wpc.get("value", 0)), wpc_name, WORKLOAD_PRIORITY_CLASS_SOURCE)
    classes = {ObjectView.of(pc).metadata.get("name"): pc for pc in priority_classes}
    if template_spec is None:
        template_spec = view.template.spec
    pc_name = template_spec.get("priorityClassName")
    if pc_name and (pc := classes.get(pc_name)) is not None:
        return Priority(int(pc.get("value", 0)), pc_name, POD_PRIORITY_CLASS_SOURCE)
    defaults = sorted(
        (int(pc.get("value", 0)), name) for name, pc in classes.items() if name and pc.get("globalDefault")
    )
    if defaults:
        value, name = defaults[0]
        return Priority(value, name, POD_PRIORITY_CLASS_SOURCE)
    return Priority(0)
