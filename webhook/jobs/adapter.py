"""The integration seam: what one job kind must tell Turnstile so the shared webhook rules, the watches, the
generic job reconciler and RBAC can manage it (Kueue's ``GenericJob``).

Owns: ``JobKind`` (the kind's API coordinates), ``Problem`` (a kind-specific admission complaint, pure), and the
``JobAdapter`` protocol every kind module implements. An adapter is a module-level object of pure functions over
the kind's object, read through its typed view (``webhook.api.views``, of the kind's ``view``), which the
caller makes once at its edge (the controller's cache, the object under review): an adapter never sees a dict,
never does I/O and never decides *when* to act. What it returns
to be written (a released job, say) is a copy of the whole object.
Must not: know HTTP, the client, or any other kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.api.views import ObjectView, PodTemplateView, WorkloadRecord
from webhook.jobs.poddefaults import PodDefaults
from webhook.jobs.podset import PodSetInfo

JSON = dict[str, Any]


@dataclass(frozen=True)
class JobKind:
    """Where a kind lives in the API: group ("" for core), version, plural and kind."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True)
class Problem:
    """Something wrong with a job that only its kind knows about; the webhook reports it as an invalid field."""

    path: str
    value: str | None  # None: the field is forbidden to change, whatever its value
    message: str


@dataclass(frozen=True)
class Finish:
    """Whether the job has ended, and how (the Workload's Finished condition carries the message)."""

    done: bool
    succeeded: bool = False
    message: str = ""


class JobAdapter(Protocol):
    """One job kind. ``framework`` is Kueue's integration name (``integrations.frameworks`` in the config).

    A kind managed through its pods (pod groups) is reconciled by the pod group sync; every other kind is a
    ``SuspendableAdapter``."""

    @property
    def framework(self) -> str: ...

    @property
    def kind(self) -> JobKind: ...

    @property
    def view(self) -> type[ObjectView]:
        """The typed view its objects are read through (``webhook.api.views``): the controller takes each object's
        view of this kind from the cache, once per version, and hands it to the functions below."""
        ...

    @property
    def managed_through_pods(self) -> bool:
        """Its pods are gated one by one (pod groups) instead of the object being suspended as a whole."""
        ...

    @property
    def pod_owner(self) -> bool:
        """Only labels its pod template (Deployment): its pods are the ``pod`` integration's, one by one; the kind
        itself is neither watched nor reconciled."""
        ...

    @property
    def children(self) -> tuple[JobKind, ...]:
        """Kinds this kind's controller creates; their objects are left to this kind while it is enabled."""
        ...

    def priority_template(self, job: ObjectView) -> PodTemplateView:
        """The pod template whose ``priorityClassName`` gives the job's pod priority (Kueue: the first template)."""
        ...


class PodOwnerAdapter(JobAdapter, Protocol):
    """A kind managed through the pods its controller creates (Deployment, StatefulSet): its webhook stamps the
    pod template so those pods reach the pod webhook as queued pods; it is never suspended itself."""

    def template_stamp(self, obj: ObjectView, namespace: str) -> tuple[dict[str, str], dict[str, str]]:
        """The labels and annotations its pod template gets beyond the queue and priority labels (a pod group's
        name and size, say)."""
        ...

    def pod_group(self, obj: ObjectView, namespace: str) -> str:
        """The pod group its pods form (the name of their one Workload), or "" when they are admitted one by one."""
        ...

    def update_problems(self, old: ObjectView, new: ObjectView, *, admitted: bool) -> list[Problem]:
        """What this kind refuses on an update of a managed object; ``admitted``: its pod group's Workload is."""
        ...

    @property
    def sizes_group(self) -> bool:
        """Its pods form one pod group whose size the live object gives (``group_size``): its objects are watched
        (read only), since a resize may come through a subresource (``/scale``) no webhook of the kind sees."""
        ...

    def group_size(self, obj: ObjectView) -> int:
        """How many pods its pod group has now (a StatefulSet's ``spec.replicas``); only when ``sizes_group``."""
        ...


class SuspendableAdapter(JobAdapter, Protocol):
    """A kind suspended and released as a whole through ``spec.suspend`` (batch Job, JobSet, Ray, ...): the
    generic job reconciler and the shared job webhook rules drive it."""

    def pod_sets(self, job: ObjectView, defaults: PodDefaults) -> list[JSON]:
        """The Workload's ``spec.podSets``: names, counts, templates as the API server will admit the pods."""
        ...

    def pod_count(self, job: ObjectView) -> int:
        """All the pods that run at once (what a resize changes)."""
        ...

    def is_suspended(self, job: ObjectView) -> bool: ...

    def suspended(self, job: ObjectView) -> JSON:
        """Step 1 of stopping: suspended and marked as stopping."""
        ...

    def is_stopping(self, job: ObjectView) -> bool:
        """Suspended by ``suspended`` but its templates not yet ``restored``."""
        ...

    def template_mutable(self, job: ObjectView) -> bool:
        """Whether the API server accepts a restored template now."""
        ...

    def has_active_pods(self, job: ObjectView) -> bool:
        """Pods of a suspended job still running: the quota stays held until they are gone."""
        ...

    def released(self, job: ObjectView, infos: Mapping[str, PodSetInfo], counts: Mapping[str, int]) -> JSON:
        """Unsuspended, each pod set's flavor injected (``counts``: the admitted count per pod set)."""
        ...

    def restored(self, job: ObjectView, workload: WorkloadRecord) -> JSON:
        """Step 2 of stopping: the templates (and counts) as the Workload recorded them."""
        ...

    def finished(self, job: ObjectView) -> Finish: ...

    def pods_ready(self, job: ObjectView) -> bool: ...

    def matches_workload(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> bool:
        """Whether the pending ``workload`` still describes ``job`` (pod sets, counts, containers)."""
        ...

    def admission_mismatch(self, job: ObjectView, workload: WorkloadRecord, defaults: PodDefaults) -> str | None:
        """Why the admitted ``workload`` does not cover ``job`` as it is now; None when it does."""
        ...

    def shape_changed(self, old: ObjectView, new: ObjectView) -> bool:
        """The pods the job runs may differ between ``old`` and ``new`` (their number or their templates)."""
        ...

    def create_problems(self, job: ObjectView, *, managed: bool) -> list[Problem]:
        """What this kind refuses on creation (beyond the shared label rules); ``managed``: whether Turnstile
        queues this job (a kind may refuse some things only then, e.g. Ray's autoscaling)."""
        ...

    def update_problems(self, old: ObjectView, new: ObjectView, *, managed: bool) -> list[Problem]:
        """What this kind refuses on update (beyond the shared rules)."""
        ...
