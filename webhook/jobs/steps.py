"""The one state machine every job kind goes through: given what its Workload says and what the job is doing,
the next thing to do (Kueue's ``jobframework`` reconciler order).

A kind suspended as a whole (``JobSync``) and a pod group (``PodGroupSync``) answer the same questions about
themselves (ended? something waiting to run? something running without admission? pods still active?) and do
what the step says in their own way: suspending a Job is setting ``spec.suspend``, stopping a pod group is
deleting its running pods; releasing a Job is unsuspending it with the flavors, releasing a pod group is
ungating its pods. Pure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from webhook.api.views import WorkloadRecord


class Step(enum.Enum):
    FINISH = "finish"  # the job ended: its Workload finishes (quota back)
    CLOSED = "closed"  # its Workload finished already: nothing more runs on it
    RESTORE = "restore"  # stopped, its templates not yet restored
    RELEASE = "release"  # admitted, and something waits to run: let it, with the flavors
    TRACK = "track"  # admitted and all released: keep the Workload's PodsReady current
    STOP = "stop"  # something runs without admission (never admitted, or evicted)
    GIVE_BACK = "give_back"  # evicted and stopped, no pod left running: the quota goes back
    WAIT = "wait"  # nothing to do until something changes


@dataclass(frozen=True)
class JobState:
    """What the job says about itself."""

    done: bool  # it ended (succeeded or failed)
    waiting: bool  # something of it waits for admission to run (a suspended Job, a gated pod)
    running: bool  # something of it runs (an unsuspended Job, an ungated pod that has not ended)
    active_pods: bool  # pods of it still hold nodes (a stopped Job's pods being removed)
    stopping: bool = False  # stopped, its templates still to be restored (kinds suspended as a whole)


def next_step(workload: WorkloadRecord, job: JobState) -> Step:
    """The next step for a job that has its Workload (creating the Workload is before this)."""
    if job.done:
        return Step.FINISH
    if workload.finished:
        return Step.CLOSED
    if job.stopping:
        return Step.RESTORE
    evicted = workload.evicted
    if workload.runs_admitted and not evicted:
        return Step.RELEASE if job.waiting else Step.TRACK
    if job.running:
        return Step.STOP
    if evicted and workload.holds_quota and not job.active_pods:
        return Step.GIVE_BACK
    return Step.WAIT
