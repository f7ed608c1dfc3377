"""The one state machine every job reconciler runs: the generic part of reconciling a job of any kind.

``webhook.jobs.steps`` decides the next step from the Workload and what the job is doing; ``StateMachine`` takes
it, with every write all kinds share: the Workload created (priority resolved, ``CreatedWorkload`` on the job),
finished (the quota goes back), failed to start (the admitted flavors cannot be applied), its PodsReady kept
current, its quota given back once an evicted job has stopped. What a step does to the job itself is the job's
``Mechanism``, one per way of holding a job back: suspended as a whole (``jobsync``: unsuspend with the flavors,
suspend then restore the template) or gated pod by pod (``podsync``: ungate with the flavors, delete the running
pods). Everything before the step (which Workload, created or adopted, kept in step with the job) is the
mechanism's reconciler's.
Must not: know a kind or a mechanism; decide anything itself (``webhook.jobs.steps`` does).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from webhook.api.views import ObjectView, PodTemplateView, WorkloadRecord
from webhook.controller.cache import ClusterCache
from webhook.controller.events import EventRecorder, EventType
from webhook.jobs import workload as wl_life
from webhook.jobs.adapter import Finish
from webhook.jobs.podset import PodSetInfo, PodSetMergeError, podset_infos
from webhook.jobs.priority import Priority, resolve
from webhook.jobs.steps import JobState, Step, next_step
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.objects import Object
from webhook.kube.resources import WORKLOAD


class Mechanism(Protocol):
    """One job (or pod group) as the state machine sees it: what it is doing, and what each step does to it."""

    @property
    def state(self) -> JobState: ...

    @property
    def subjects(self) -> Sequence[ObjectView]:
        """What events about it are recorded on: the job, or the group's pods."""
        ...

    def ended(self) -> Finish:
        """Whether it has ended, and how (step 3's message)."""
        ...

    async def let_go(self, workload: WorkloadRecord) -> None:
        """Its Workload has finished: nothing of the job holds on to it any more (a finalizer)."""
        ...

    async def restore(self, workload: WorkloadRecord) -> None:
        """4. Stopped: its templates back as the Workload recorded them, once the API server allows it."""
        ...

    async def fits(self, workload: WorkloadRecord, now: datetime.datetime) -> bool:
        """5. Admitted: whether it still fits the admission; when it does not, it has been dealt with."""
        ...

    async def release(self, workload: WorkloadRecord, infos: Mapping[str, PodSetInfo], now: datetime.datetime) -> None:
        """5. Let it run with the admitted flavors; ``PodSetMergeError`` when they cannot be applied."""
        ...

    def pods_ready(self, workload: WorkloadRecord) -> bool: ...

    async def stop(self, workload: WorkloadRecord, now: datetime.datetime) -> None:
        """6. Running without admission: stop it (an evicted Workload's quota goes back now or at step 7)."""
        ...


class StateMachine:
    def __init__(
        self, kube: Kube, cache: ClusterCache, *, events: EventRecorder, track_pods_ready: bool = False
    ) -> None:
        self._kube = kube
        self._cache = cache
        self._events = events
        self._track_pods_ready = track_pods_ready  # waitForPodsReady: keep the Workload's PodsReady current

    async def take_step(self, workload: WorkloadRecord, job: Mechanism, now: datetime.datetime) -> None:
        """Steps 3-7 for a job that has its Workload."""
        step = next_step(workload, job.state)
        if step is Step.FINISH:
            # 3. Finished: the quota goes back.
            if not workload.finished:
                end = job.ended()
                workload = await self.write_status(
                    wl_life.finished(workload, succeeded=end.succeeded, message=end.message, now=now)
                )
                await self.tell(job.subjects, type="Normal", reason="Finished", message=end.message, now=now)
            await job.let_go(workload)
        elif step is Step.CLOSED:
            await job.let_go(workload)
        elif step is Step.RESTORE:
            # 4. Stopped but its templates not yet restored: nothing else happens to the job before that.
            await job.restore(workload)
        elif step in (Step.RELEASE, Step.TRACK):
            # 5. Admitted: released (if it still fits), then its PodsReady kept current.
            if not await job.fits(workload, now):
                return
            if step is Step.RELEASE:
                await self._release(workload, job, now)
            elif self._track_pods_ready:
                body = wl_life.pods_ready(workload, ready=job.pods_ready(workload), now=now)
                if body is not None:
                    await self.write_status(body)
        elif step is Step.STOP:
            # 6. Running without admission (never admitted, or evicted): stop.
            await job.stop(workload, now)
        elif step is Step.GIVE_BACK:
            # 7. Evicted and stopped, no pod of it left running: the quota goes back, the Workload is requeued.
            await self.write_status(wl_life.released(workload, now=now))

    async def _release(self, workload: WorkloadRecord, job: Mechanism, now: datetime.datetime) -> None:
        flavors = {f.name: f for f in self._cache.resource_flavors()}
        try:
            await job.release(workload, podset_infos(workload, flavors), now)
        except PodSetMergeError as exc:
            await self.write_status(wl_life.failed_to_start(workload, message=str(exc), now=now))
            await self.tell(job.subjects, type="Warning", reason="FailedToStart", message=str(exc), now=now)

    # -- the writes every kind shares ---------------------------------------------------------------------------

    def priority(self, obj: ObjectView, *, template: PodTemplateView) -> Priority:
        return resolve(
            obj,
            workload_priority_classes={w.name: w for w in self._cache.workload_priority_classes()},
            priority_classes=self._cache.priority_classes(),
            template=template,
        )

    async def create_workload(self, body: Object, *, subjects: Iterable[ObjectView]) -> Object | None:
        """Step 1's Workload; None when it exists already (the cache has not seen it yet: the next pass will)."""
        try:
            created = await self._kube.create(WORKLOAD, body)
        except errors.AlreadyExists:
            return None
        self._cache.observe(WORKLOAD, created)
        message = f"Created Workload: {created['metadata']['name']}"
        await self.tell(subjects, type="Normal", reason="CreatedWorkload", message=message)
        return created

    async def write_status(self, body: Object) -> WorkloadRecord:
        """Writes a Workload's status; the Workload written, as the next step reads it."""
        result = await self._kube.replace_status(WORKLOAD, body)
        self._cache.observe(WORKLOAD, result)
        return WorkloadRecord.of(result)

    async def tell(
        self,
        subjects: Iterable[ObjectView],
        *,
        type: EventType,
        reason: str,
        message: str,
        now: datetime.datetime | None = None,
    ) -> None:
        for subject in subjects:
            await self._events.record(subject, type=type, reason=reason, message=message, now=now)
