"""A job's priority, resolved as Kueue does: WorkloadPriorityClass label, then pod PriorityClass, then default.

Pure: the caller passes the classes it knows (from the cache), read through their views (``PriorityClass``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from webhook.api.constants import POD_PRIORITY_CLASS_SOURCE, PRIORITY_CLASS_LABEL, WORKLOAD_PRIORITY_CLASS_SOURCE
from webhook.api.views import BatchJob, ObjectView, PodTemplateView, PriorityClass, view_of


@dataclass(frozen=True)
class Priority:
    value: int
    class_name: str | None = None
    source: str = ""


def resolve(
    job: ObjectView,
    *,
    workload_priority_classes: Mapping[str, PriorityClass],
    priority_classes: Iterable[PriorityClass],
    template: PodTemplateView | None = None,
) -> Priority:
    """1. ``kueue.x-k8s.io/priority-class`` names a WorkloadPriorityClass; 2. the pod template's
    ``priorityClassName`` names a PriorityClass; 3. the cluster's ``globalDefault`` PriorityClass (the lowest if
    several); 4. zero. A named class that does not exist falls through to the next rule.

    ``template`` is the pod template whose class counts (the kind adapter's ``priority_template``); without it,
    a batch Job's template."""
    view = view_of(BatchJob, job)
    wpc_name = view.labels.get(PRIORITY_CLASS_LABEL)
    if wpc_name and (wpc := workload_priority_classes.get(wpc_name)) is not None:
        return Priority(wpc.value, wpc_name, WORKLOAD_PRIORITY_CLASS_SOURCE)
    classes = {pc.metadata.get("name"): pc for pc in priority_classes}
    pc_name = (view.template if template is None else template).priority_class_name
    if pc_name and (pc := classes.get(pc_name)) is not None:
        return Priority(pc.value, pc_name, POD_PRIORITY_CLASS_SOURCE)
    defaults = sorted((pc.value, name) for name, pc in classes.items() if name and pc.global_default)
    if defaults:
        value, name = defaults[0]
        return Priority(value, name, POD_PRIORITY_CLASS_SOURCE)
    return Priority(0)
