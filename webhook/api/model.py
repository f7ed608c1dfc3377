"""The typed, immutable Workload the controller reads, the object an AdmissionReview carries as the admission
rules read it, and the Workload predicates and queue order, once.

Owns: ``Workload`` (with ``Metadata``, ``Spec``, ``Status``, ``Condition``, ``OwnerReference``) and ``KubeObject``
(``ObjectMeta`` and the spec fields the job and pod rules read) as frozen ``msgspec`` Structs holding only the
fields the rules read (unknown fields are ignored, so a decode does not walk ``managedFields`` or pod templates),
``decode_workload`` from the informer's dicts, and the
predicates every layer asks: finished, evicted, quota reserved, admitted, holds quota, and the order of a queue.
msgspec was chosen by ``bench/decode.py``: on a 50,000-Workload list it decodes ~8x faster than orjson builds the
dicts, and pydantic v2 was no faster than the dicts.
The Workload's Structs are left out of the garbage collector (``gc=False``): they hold only strings, numbers,
JSON-built dicts and each other, so they can never be part of a reference cycle, and the controller's cache keeps
one per Workload: tracked, decoding 50,000 of them set off a full collection of the heap (~2 s, ``bench.cache``).

The predicates are written over anything with ``type`` and ``status`` (this module's ``Condition``, the
scheduler's ``webhook.api.workload.Condition`` and the dicts of ``webhook.api.views.WorkloadRecord`` alike), so
every type of Workload answers with the same definition; none defines its own.

Two Workload types for two kinds of reader, on purpose:
- ``Workload`` here is what *decisions* read (evictions in ``webhook.core``, the Workload sync, the admitter's
  checks, the queue finalizers): decoded once per stored version (``ClusterCache.typed_workload``), typed, without
  pod templates or quantities;
- ``webhook.api.views.WorkloadRecord`` is the object *whole*, for what writes it back (the lifecycle
  transformations of ``webhook.jobs.workload`` copy it and change its status) or compares a job with the templates
  it recorded (the job adapters, and so the job and pod group syncs and the state machine they share).
One type could not serve both: decoding the templates and keeping every field a write must send back would make
the decode the scheduler pays for every Workload as costly as the object itself (``bench/decode.py``), and a
decode of only what decisions read would drop what a write must keep. The scheduler's
``webhook.api.workload.Workload`` (quantities parsed for quota arithmetic) is built from the object for a
snapshot, not kept. A reader takes one of them and does not mix them for the same question.
Must not: decide quota, do I/O, read the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

import msgspec

from webhook.api import constants, wire

TRUE = "True"
# (-priority, creation time, uid, namespace, name): compared as a tuple, smallest first.
QueueOrder = tuple[int, float, str, str, str]


class _Condition(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def status(self) -> str: ...


# A typed condition, or one as the API server's dict holds it: the hot paths that hold dicts ask the same
# predicates without decoding (a decode costs ~5x the lookup).
Conditions = Iterable[_Condition | Mapping[str, Any]]


def condition_true(conditions: Conditions, type_: str) -> bool:
    """The first condition of ``type_`` says True (a later duplicate is ignored, as Kueue's lookup does)."""
    for c in conditions:
        raw = type(c) is dict or isinstance(c, Mapping)  # the exact-type test first: an ABC check costs more
        kind, status = (c.get("type"), c.get("status")) if raw else (c.type, c.status)  # type: ignore[union-attr]
        if kind == type_:
            return bool(status == TRUE)
    return False


def raw_conditions(obj: Mapping[str, Any]) -> Conditions:
    """``status.conditions`` of an object as the API server serves it."""
    conditions: Conditions = (obj.get("status") or {}).get("conditions") or ()
    return conditions


def raw_has_admission(obj: Mapping[str, Any]) -> bool:
    """``status.admission`` is recorded on an object as the API server serves it (an empty one is none)."""
    return bool((obj.get("status") or {}).get("admission"))


def finished(conditions: Conditions) -> bool:
    return condition_true(conditions, constants.COND_FINISHED)


def evicted(conditions: Conditions) -> bool:
    return condition_true(conditions, constants.COND_EVICTED)


def quota_reserved(conditions: Conditions) -> bool:
    return condition_true(conditions, constants.COND_QUOTA_RESERVED)


def runs_admitted(*, has_admission: bool, conditions: Conditions) -> bool:
    """Holding quota with Admitted=True: the job may run (what the job reconciler releases it on)."""
    return holds_quota(has_admission=has_admission, conditions=conditions) and condition_true(
        conditions, constants.COND_ADMITTED
    )


def admitted(*, has_admission: bool, conditions: Conditions, has_checks: bool) -> bool:
    """Kueue's "admitted": Admitted=True, or (with no admission checks) a quota reservation with an admission.

    What the webhooks ask before letting a job run; unlike ``runs_admitted`` it does not look at Finished.
    """
    if condition_true(conditions, constants.COND_ADMITTED):
        return True
    return quota_reserved(conditions) and has_admission and not has_checks


def holds_quota(*, has_admission: bool, conditions: Conditions) -> bool:
    """It counts against its ClusterQueue: an admission is recorded and it has not finished.

    Deliberately conservative: an evicted workload keeps its ``status.admission`` (and its pods may still run)
    until the reconciler clears it, so it keeps counting until then, whatever its other conditions say.
    """
    return has_admission and not finished(conditions)


def queue_order(*, priority: int, created: datetime, uid: str, namespace: str, name: str) -> QueueOrder:
    """The order of a queue's pending workloads: highest priority, then oldest, then uid, namespace and name."""
    return (-priority, created.timestamp(), uid, namespace, name)


class Condition(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


class OwnerReference(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


class Metadata(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    deletion_timestamp: str | None = None
    finalizers: tuple[str, ...] = ()
    owner_references: tuple[OwnerReference, ...] = ()

    def controller_owner(self) -> OwnerReference | None:
        """The owner reference marked ``controller: true`` (the API server allows at most one)."""
        return next((o for o in self.owner_references if o.controller), None)


class Spec(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    queue_name: str = ""
    active: bool = True
    priority: int = 0
    maximum_execution_time_seconds: int | None = None


class Admission(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    # The assignments are not read here (the scheduler's view parses them): converting them would copy them whole.
    cluster_queue: str = ""


class RequeueState(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    count: int = 0
    requeue_at: str | None = None


class Status(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    conditions: tuple[Condition, ...] = ()
    admission: Admission | None = None
    admission_checks: tuple[dict[str, Any], ...] = ()
    requeue_state: RequeueState | None = None
    accumulated_past_execution_time_seconds: int = 0

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    @property
    def has_admission(self) -> bool:
        """``status.admission`` is recorded (an empty one, as a dict reads it, is none; the schema requires its
        clusterQueue, so one without is empty)."""
        return self.admission is not None and self.admission != Admission()

    @property
    def finished(self) -> bool:
        return finished(self.conditions)

    @property
    def evicted(self) -> bool:
        return evicted(self.conditions)

    @property
    def quota_reserved(self) -> bool:
        return quota_reserved(self.conditions)

    @property
    def holds_quota(self) -> bool:
        return holds_quota(has_admission=self.has_admission, conditions=self.conditions)

    @property
    def runs_admitted(self) -> bool:
        return runs_admitted(has_admission=self.has_admission, conditions=self.conditions)

    @property
    def admitted(self) -> bool:
        return admitted(
            has_admission=self.has_admission, conditions=self.conditions, has_checks=bool(self.admission_checks)
        )

    @property
    def requeue_count(self) -> int:
        return 0 if self.requeue_state is None else self.requeue_state.count


class Workload(msgspec.Struct, frozen=True, gc=False):
    metadata: Metadata = Metadata()
    spec: Spec = Spec()
    status: Status = Status()

    @property
    def key(self) -> tuple[str, str]:
        return (self.metadata.namespace, self.metadata.name)

    def controller_owner(self) -> OwnerReference | None:
        return self.metadata.controller_owner()


class ObjectMeta(Metadata, frozen=True, rename="camel"):
    """The metadata of any object an AdmissionReview carries, as the admission rules read it."""

    labels: Mapping[str, str] = {}
    annotations: Mapping[str, str] = {}


class SchedulingGate(msgspec.Struct, frozen=True):
    name: str


class ObjectSpec(msgspec.Struct, frozen=True, rename="camel"):
    """The fields of a spec the shared job and pod rules read: a Pod's scheduling gates (a kind without them, or
    whose gates live in a template, reads none)."""

    scheduling_gates: tuple[SchedulingGate, ...] = ()

    def gated(self, name: str) -> bool:
        return any(g.name == name for g in self.scheduling_gates)


class KubeObject(msgspec.Struct, frozen=True):
    """An object as an AdmissionReview carries it, typed for the rules that read it by name (labels, owner,
    deletion, gates); what only a kind knows is read by its adapter from the object as sent."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ObjectSpec = ObjectSpec()


def _convert(raw: Mapping[str, Any], kind: type[Any], path: str) -> Any:
    try:
        return msgspec.convert(raw if isinstance(raw, dict) else dict(raw), kind)
    except msgspec.ValidationError as err:
        raise wire.InvalidObject(path, str(err)) from err


def decode_workload(raw: Mapping[str, Any]) -> Workload:
    """The typed Workload of an object as the API server serves it (either version: the fields read are shared)."""
    workload: Workload = _convert(raw, Workload, "workload")
    return workload
