"""Read-only typed views of the Kubernetes objects the job adapters read.

Owns: ``ObjectView`` (any object: the metadata every object has, its key, its ``spec`` and ``status`` as mappings),
``ObjectKey`` (where an object lives: namespace and name; ``webhook.kube.objects`` names it too),
``PodTemplateView``, and the views of the kinds read by more than their name: ``BatchJob`` (a batch/v1 Job's
counts and states as the Job controller reports them), ``PriorityClass`` (its value, for a PriorityClass and a
WorkloadPriorityClass alike), ``ConfigMap`` (its data), ``Pod`` (gates, phase, readiness, deletion) and
``WorkloadRecord`` (a Workload whole, as what writes it or compares a job with it reads it: its pod sets with their
templates as recorded, its admission's assignments, conditions, activeness and requeue state; the split with
``webhook.api.model.Workload``, which decisions read, is explained there).
The views are frozen ``msgspec`` Structs (the style of ``webhook.api.model``; a Struct is built ~3x faster than a
frozen slotted dataclass). A view wraps the object as the API server sends it and splits it once into its
sections; its accessors read with the tolerance of the ``.get(...) or {}`` code they replace (a missing, null or
empty section reads as empty), which a typed decode would not (``msgspec.convert`` refuses a label that is not a
string, which a manifest read from YAML may hold). The object stays reachable as ``raw``: writes copy it whole
(a job is written back with every field the API server sent, which a decode of the fields we read would drop).
``bench/jobviews.py`` measures it on 50,000 Jobs: wrapping ~0.6 us a Job; wrapping and a reconcile pass's reads
~3.3 us, beside ~2.1 us for the dict reads and ~2.5 us for a ``msgspec`` decode of the same fields and its reads
(the accessors are Python calls; the decode runs in C).
Views are made once, at the edge: the controller takes each cached object's view from the cache
(``ClusterCache.view``, one per stored version), the admission webhook from the object under review
(``Request.view``), the CLI and the dashboard from what they read; below that, functions take views, never
dicts, but for the few called from outside those edges with the object as sent (``ObjectLike``). ``view_of``
reads a view as another kind (a generic ``ObjectView`` as a ``BatchJob``) without splitting the object again.
Must not: modify the object it wraps, decide anything about admission or quota, do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import msgspec

from webhook.api import model

Raw = Mapping[str, Any]
_CONTAINER_KEYS = ("containers", "initContainers")
TERMINAL_PHASES = ("Succeeded", "Failed")


def section(obj: Raw, key: str) -> Raw:
    """``obj[key]`` as a mapping; missing or null reads as empty (a new dict each time, as ``or {}`` gave: it may
    be copied or serialized like any section, and writing into it changes nothing)."""
    value = obj.get(key)
    return value if value else {}


def entries(obj: Raw, key: str) -> Sequence[Any]:
    """``obj[key]`` as a list; missing or null reads as empty."""
    value = obj.get(key)
    return value if value else ()


class ObjectKey(NamedTuple):
    """Where an object lives: namespace ("" for cluster-scoped kinds) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class _Described(msgspec.Struct, frozen=True):
    """What an object and a pod template share: ``metadata`` with labels and annotations, and a ``spec``."""

    raw: Raw
    metadata: Raw
    spec: Raw

    @property
    def labels(self) -> Mapping[str, str]:
        return section(self.metadata, "labels")

    @property
    def annotations(self) -> Mapping[str, str]:
        return section(self.metadata, "annotations")


class ObjectView(_Described, frozen=True):
    """Any object: its metadata by name, its ``spec`` and ``status`` as the API server sent them."""

    status: Raw

    @classmethod
    def of(cls: type[_View], raw: Raw) -> _View:
        return cls(raw, section(raw, "metadata"), section(raw, "spec"), section(raw, "status"))

    @property
    def name(self) -> str:
        """``metadata.name``; a KeyError when it has none (only objects the API server stored are named)."""
        name: str = self.metadata["name"]
        return name

    @property
    def namespace(self) -> str:
        namespace: str = self.metadata["namespace"]
        return namespace

    @property
    def uid(self) -> str:
        uid: str = self.metadata["uid"]
        return uid

    @property
    def key(self) -> ObjectKey:
        """Where it lives (the cache's key for it); an unnamed object's name reads as ""."""
        meta = self.metadata
        return ObjectKey(meta.get("namespace") or "", meta.get("name") or "")

    def label(self, key: str) -> str | None:
        """A label's value; None when it is missing or empty."""
        value = self.labels.get(key)
        return str(value) if value else None

    @property
    def owner_references(self) -> Sequence[Raw]:
        return entries(self.metadata, "ownerReferences")

    def controlled_by(self, uid: object) -> bool:
        """An owner reference with ``uid`` is marked ``controller``."""
        return any(o.get("uid") == uid and o.get("controller") for o in self.owner_references)

    @property
    def has_controller(self) -> bool:
        return any(o.get("controller") for o in self.owner_references)

    @property
    def conditions(self) -> Sequence[Raw]:
        """``status.conditions`` as sent."""
        return entries(self.status, "conditions")

    def condition(self, type_: str) -> Raw | None:
        """The first condition of ``type_``, or None."""
        return next((c for c in self.conditions if c.get("type") == type_), None)

    def condition_true(self, type_: str) -> bool:
        """The first condition of ``type_`` says True (False when there is none)."""
        found = self.condition(type_)
        return found is not None and found.get("status") == "True"


_View = TypeVar("_View", bound=ObjectView)
# A view, or the object as the API server sent it: taken only by the few functions that callers outside the
# controller and the webhook call with the object as sent (``turnstile fit``, test set-ups): a batch Job's Workload,
# its release, a Workload's admission; what the CLI shows of the objects it read (``webhook.usercli.views``); the
# front proxy's trust, from its ConfigMap. Each views it once, on entry. Everything else takes a view.
ObjectLike = ObjectView | Raw


def view_of(kind: type[_View], obj: ObjectLike) -> _View:
    """``obj`` itself when it is already a view of ``kind``; the same object read as ``kind`` when it is a view of
    another kind, from the sections it already split (nothing is split again); else a new view of the object."""
    if isinstance(obj, kind):
        return obj
    if isinstance(obj, ObjectView):
        return kind(obj.raw, obj.metadata, obj.spec, obj.status)
    return kind.of(obj)


class PodTemplateView(_Described, frozen=True):
    """A pod template (``metadata`` and ``spec`` of the pods a job creates)."""

    @classmethod
    def of(cls, raw: Raw | None) -> PodTemplateView:
        raw = raw or {}
        return cls(raw, section(raw, "metadata"), section(raw, "spec"))

    @property
    def containers(self) -> tuple[Any, Any]:
        """``containers`` and ``initContainers`` as sent (None when absent): the part admission never edits."""
        return (self.spec.get("containers"), self.spec.get("initContainers"))

    @property
    def container_resources(self) -> tuple[list[Raw], list[Raw]]:
        """The ``resources`` of each container and of each init container."""
        containers, init = ([section(c, "resources") for c in entries(self.spec, k)] for k in _CONTAINER_KEYS)
        return containers, init

    @property
    def priority_class_name(self) -> str | None:
        """The pods' ``priorityClassName``; None when missing or empty."""
        value = self.spec.get("priorityClassName")
        return str(value) if value else None


# -- the kinds read by more than their metadata ----------------------------------------------------------------


class BatchJob(ObjectView, frozen=True):
    """A batch/v1 Job as the API server sent it."""

    @property
    def suspend(self) -> bool:
        return bool(self.spec.get("suspend"))

    @property
    def parallelism(self) -> int:
        value = self.spec.get("parallelism")
        return 1 if value is None else int(value)

    @property
    def completions(self) -> int | None:
        value = self.spec.get("completions")
        return None if value is None else int(value)

    @property
    def pod_count(self) -> int:
        """Pods that run at once: parallelism, capped by completions when set (Kueue's PodSet count)."""
        parallelism, completions = self.parallelism, self.completions
        return parallelism if completions is None else min(parallelism, completions)

    @property
    def template(self) -> PodTemplateView:
        return PodTemplateView.of(self.spec.get("template"))

    @property
    def active(self) -> int:
        return int(self.status.get("active") or 0)

    @property
    def ready(self) -> int:
        return int(self.status.get("ready") or 0)

    @property
    def succeeded(self) -> int:
        return int(self.status.get("succeeded") or 0)

    @property
    def uncounted_succeeded(self) -> int:
        """Pods that succeeded but that the Job controller has not counted yet (between its two status writes)."""
        return len(entries(section(self.status, "uncountedTerminatedPods"), "succeeded"))

    @property
    def started(self) -> bool:
        """``status.startTime`` is set: the Job controller started it (and has not cleared it on suspension)."""
        return bool(self.status.get("startTime"))

    def has_condition(self, type_: str) -> bool:
        """Some condition of ``type_`` says True."""
        return any(c.get("type") == type_ and c.get("status") == "True" for c in self.conditions)


class PriorityClass(ObjectView, frozen=True):
    """A scheduling.k8s.io PriorityClass or a WorkloadPriorityClass: both hold their ``value`` (and a PriorityClass
    its ``globalDefault``) at the top level, without a spec."""

    @property
    def value(self) -> int:
        return int(self.raw.get("value", 0))

    @property
    def global_default(self) -> bool:
        return bool(self.raw.get("globalDefault"))


class ConfigMap(ObjectView, frozen=True):
    """A v1 ConfigMap: its ``data`` at the top level, without a spec."""

    @property
    def data(self) -> Mapping[str, str]:
        return section(self.raw, "data")


class Pod(ObjectView, frozen=True):
    """A Pod as the API server sent it."""

    @property
    def scheduling_gates(self) -> Sequence[Mapping[str, Any]]:
        return entries(self.spec, "schedulingGates")

    def gated(self, gate: str) -> bool:
        """The pod waits behind the scheduling gate named ``gate``."""
        return any(g.get("name") == gate for g in self.scheduling_gates)

    @property
    def phase(self) -> str | None:
        phase: str | None = self.status.get("phase")
        return phase

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed: its containers will not run again."""
        return self.phase in TERMINAL_PHASES

    @property
    def ready(self) -> bool:
        """Its ``Ready`` condition says True."""
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in entries(self.status, "conditions"))

    @property
    def deletion_timestamp(self) -> str | None:
        """When it was deleted (it stays while its containers stop), or None."""
        value = self.metadata.get("deletionTimestamp")
        return str(value) if value else None

    @property
    def deletion_grace_seconds(self) -> int:
        return int(self.metadata.get("deletionGracePeriodSeconds") or 0)


class _PodSetEntry(msgspec.Struct, frozen=True):
    """An entry of a list keyed by pod set name."""

    raw: Raw

    @property
    def name(self) -> Any:
        """As recorded (None when absent: the schema defaults it, a hand-written object may not)."""
        return self.raw.get("name")

    def name_or(self, default: str) -> Any:
        return self.raw.get("name", default)


class RecordedPodSet(_PodSetEntry, frozen=True):
    @property
    def count(self) -> Any:
        """As recorded (None when absent)."""
        return self.raw.get("count")

    @property
    def template(self) -> PodTemplateView:
        return PodTemplateView.of(self.raw.get("template"))


class AssignedPodSet(_PodSetEntry, frozen=True):
    @property
    def count(self) -> int:
        """The admitted pod count; 0 when not recorded (the pod set's own count then applies)."""
        return int(self.raw.get("count") or 0)

    @property
    def flavors(self) -> Mapping[str, str]:
        """The flavor assigned per resource."""
        return section(self.raw, "flavors")

    @property
    def resource_usage(self) -> Mapping[str, Any]:
        """Quantity per resource charged for ``count`` pods, as written."""
        return section(self.raw, "resourceUsage")


class WorkloadRecord(ObjectView, frozen=True):
    """A Workload as the API server sent it, whole: what the job adapters compare a job with (its pod sets and
    their templates) and what the lifecycle writes start from (a write copies the object whole). The predicates
    are ``webhook.api.model``'s, asked of the conditions as sent."""

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """``status.conditions`` as sent, in a new list (the lifecycle functions build the next list from it)."""
        return list(entries(self.status, "conditions"))

    @property
    def active(self) -> bool:
        """``spec.active``; a Workload is active unless it says otherwise."""
        return bool(self.spec.get("active", True))

    @property
    def queue_name(self) -> str:
        """``spec.queueName``: its LocalQueue ("" when missing)."""
        return str(self.spec.get("queueName") or "")

    @property
    def priority(self) -> int:
        """``spec.priority``; 0 when missing or not a number."""
        try:
            return int(self.spec.get("priority") or 0)
        except (TypeError, ValueError):
            return 0

    @property
    def priority_class_name(self) -> str:
        """The class its priority comes from: v1beta2's ``priorityClassRef.name``, else v1beta1's
        ``priorityClassName``; "" when none."""
        ref = self.spec.get("priorityClassRef")
        name = ref.get("name") if isinstance(ref, Mapping) else self.spec.get("priorityClassName")
        return str(name or "")

    @property
    def admitted_to(self) -> str | None:
        """``status.admission.clusterQueue``: the ClusterQueue that admitted it; None without an admission."""
        value = section(self.status, "admission").get("clusterQueue")
        return str(value) if value else None

    @property
    def requeue_state(self) -> Raw:
        return section(self.status, "requeueState")

    @property
    def pod_sets(self) -> tuple[RecordedPodSet, ...]:
        return tuple(RecordedPodSet(p) for p in entries(self.spec, "podSets"))

    @property
    def assignments(self) -> tuple[AssignedPodSet, ...]:
        return tuple(AssignedPodSet(a) for a in entries(section(self.status, "admission"), "podSetAssignments"))

    @property
    def has_admission(self) -> bool:
        """``status.admission`` is recorded (an empty one is none)."""
        return model.raw_has_admission(self.raw)

    @property
    def finished(self) -> bool:
        return model.finished(entries(self.status, "conditions"))

    @property
    def evicted(self) -> bool:
        return model.evicted(entries(self.status, "conditions"))

    @property
    def holds_quota(self) -> bool:
        return model.holds_quota(has_admission=self.has_admission, conditions=entries(self.status, "conditions"))

    @property
    def runs_admitted(self) -> bool:
        return model.runs_admitted(has_admission=self.has_admission, conditions=entries(self.status, "conditions"))
