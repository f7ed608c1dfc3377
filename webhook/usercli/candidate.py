"""A job that does not exist yet, as the Workload the reconciler would create for it, for ``turnstile fit``.

Owns: reading a manifest (a batch/v1 Job, any other kind of the registry suspended as a whole -- JobSet, RayJob,
... --, or a Workload) into a typed ``Workload`` exactly as the reconciler would build it (the kind's adapter: pod
sets, queue name, priority resolved from the classes), and
``fit_text``, the answer of ``core.fit`` in words.
Must not: do I/O (the caller reads the file and lists the classes) or decide anything (``core.fit`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api.constants import QUEUE_NAME_LABEL
from webhook.api.views import ObjectView, PriorityClass
from webhook.api.workload import Workload, parse_workload
from webhook.core.fit import ADMITTED, PREEMPTING, FitAnswer
from webhook.jobs import batch_job, priority, registry, suspendable
from webhook.jobs.adapter import SuspendableAdapter
from webhook.jobs.naming import job_workload_name
from webhook.jobs.poddefaults import PodDefaults

Obj = Mapping[str, Any]


class NotAJob(ValueError):
    """The manifest is not something ``fit`` can place; the message says why."""


def candidate_workload(
    manifest: object,
    *,
    namespace: str,
    workload_priority_classes: Iterable[Obj] = (),
    priority_classes: Iterable[Obj] = (),
) -> tuple[str, Workload]:
    """``(subject, workload)`` for a Job or Workload manifest (a document as read from YAML: anything until
    checked); ``namespace`` when the manifest names none."""
    if not isinstance(manifest, Mapping):
        raise NotAJob("the file does not hold a Kubernetes object")
    kind, api_version = manifest.get("kind"), str(manifest.get("apiVersion", ""))
    meta = dict(ObjectView.of(manifest).metadata)  # a copy: the candidate's name and namespace are filled in
    meta["namespace"] = meta.get("namespace") or namespace
    name = meta.get("name") or meta.get("generateName")
    if not name:
        raise NotAJob(f"the {kind or 'object'} has no metadata.name")
    meta["name"] = str(name)
    if kind == "Workload" and api_version.startswith("kueue.x-k8s.io/"):
        try:
            return f"Workload {meta['namespace']}/{meta['name']}", parse_workload(dict(manifest) | {"metadata": meta})
        except ValueError as exc:
            raise NotAJob(f"the Workload is not valid: {exc}") from None
    adapter = _suspendable(api_version, str(kind or ""))
    if adapter is None:
        kinds = ", ".join(f"{a.kind.api_version} {a.kind.kind}" for a in _SUSPENDABLE)
        raise NotAJob(f"turnstile fit places a Workload or one of {kinds}; not a {api_version} {kind}")
    job = dict(manifest) | {"metadata": meta | {"uid": meta.get("uid") or "turnstile-fit-candidate"}}
    view = adapter.view.of(job)
    if not view.label(QUEUE_NAME_LABEL):
        raise NotAJob(f"the {kind} has no {QUEUE_NAME_LABEL} label: name the LocalQueue it is for")
    wpcs = {str(w.metadata.get("name", "")): w for w in map(PriorityClass.of, workload_priority_classes)}
    classes = [PriorityClass.of(p) for p in priority_classes]
    if adapter is not batch_job.ADAPTER:
        return _other_kind(adapter, view, wpcs, classes)
    resolved = priority.resolve(view, workload_priority_classes=wpcs, priority_classes=classes)
    try:
        body = batch_job.workload_for(
            view,
            priority=resolved.value,
            priority_class_name=resolved.class_name,
            priority_class_source=resolved.source,
        )
        body["metadata"]["name"] = job_workload_name(meta["namespace"], meta["name"])
        return f"Job {meta['namespace']}/{meta['name']}", parse_workload(body)
    except (ValueError, KeyError, TypeError) as exc:
        raise NotAJob(f"the Job's pod template cannot be read: {exc}") from None


# Kinds managed through their pods (pod groups, Deployments, StatefulSets) have no Workload of their own to place.
_SUSPENDABLE = registry.suspendable(registry.names())


def _suspendable(api_version: str, kind: str) -> SuspendableAdapter | None:
    return next((a for a in _SUSPENDABLE if (a.kind.api_version, a.kind.kind) == (api_version, kind)), None)


def _other_kind(
    adapter: SuspendableAdapter, view: ObjectView, wpcs: Mapping[str, PriorityClass], classes: list[PriorityClass]
) -> tuple[str, Workload]:
    template = adapter.priority_template(view)
    resolved = priority.resolve(view, workload_priority_classes=wpcs, priority_classes=classes, template=template)
    subject = f"{adapter.kind.kind} {view.key}"
    try:
        body = suspendable.workload_for(
            view,
            kind=adapter.kind,
            pod_sets=adapter.pod_sets(view, PodDefaults()),
            priority=resolved.value,
            priority_class_name=resolved.class_name,
            priority_class_source=resolved.source,
        )
        body["metadata"]["name"] = suspendable.job_workload_name(view, adapter.kind)
        return subject, parse_workload(body)
    except (ValueError, KeyError, TypeError) as exc:
        raise NotAJob(f"the {adapter.kind.kind}'s pod templates cannot be read: {exc}") from None


def _flavors(answer: FitAnswer) -> str:
    parts = []
    for pod_set, flavors in answer.flavors:
        parts.append(f"{pod_set}: " + ", ".join(f"{r}={f}" for r, f in flavors))
    return "; ".join(parts) or "-"


def fit_text(subject: str, answer: FitAnswer, *, exists: bool = False) -> str:
    """What ``turnstile fit`` prints (``exists``: about a workload that is already there, as ``why`` shows it)."""
    would = "is" if exists else "would be"
    if answer.verdict == ADMITTED:
        head = f"{subject} {would} admitted now to ClusterQueue {answer.cluster_queue}"
        if answer.borrowing:
            head += ", borrowing from its cohort"
        if answer.partial_count is not None:
            head += f", with {answer.partial_count} pods (minCount)"
        return "\n".join([head, f"  Flavors:   {_flavors(answer)}"])
    if answer.verdict == PREEMPTING:
        lines = [f"{subject} {would} admitted to ClusterQueue {answer.cluster_queue} once these are preempted:"]
        lines += [f"  - {v.namespace}/{v.name} ({v.reason}, ClusterQueue {v.cluster_queue})" for v in answer.victims]
        lines.append(f"  Flavors:   {_flavors(answer)}")
        return "\n".join(lines)
    where = f" in ClusterQueue {answer.cluster_queue}" if answer.cluster_queue else ""
    lines = [f"{subject} {'waits' if exists else 'would wait'}{where}"]
    if answer.position is not None:
        lines.append(f"  Position:  {answer.position} of {answer.queue_length}")
    lines.append(f"  Reason:    {answer.reason}: {answer.message}")
    for s in answer.missing:
        if s.needed:
            extra = f" ({s.note})" if s.note else ""
            lines.append(
                f"  Missing:   {s.resource} in flavor {s.flavor}: needs {s.needed}, {s.available} free, "
                f"{s.missing} short{extra}"
            )
        else:
            lines.append(f"  Missing:   {s.resource}{' in flavor ' + s.flavor if s.flavor else ''}: {s.note}")
    return "\n".join(lines)
