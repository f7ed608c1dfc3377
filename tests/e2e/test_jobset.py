"""JobSet (jobset.x-k8s.io/v1alpha2) through Turnstile, on the real API server with our test CRD.

No JobSet controller runs: nothing creates the child Jobs, and the test writes the JobSet's status as the
controller would (``Completed``). What is shown is Turnstile's part: suspend, one pod set per replicated job
(replicas x parallelism), admission of all of them together, flavors injected into every replicated job,
quota freed on completion, preemption suspending it again with its templates restored.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.kindflow import KindUnderTest, run_lifecycle
from webhook.jobs.jobset import ADAPTER
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration
JSON = dict[str, Any]


def _replicated(name: str, *, replicas: int, parallelism: int) -> JSON:
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        }
    }
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"parallelism": parallelism, "completions": parallelism, "template": pod}},
    }


def jobset(namespace: str, name: str, queue: str, priority: str) -> JSON:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": priority},
        },
        "spec": {
            "replicatedJobs": [
                _replicated("leader", replicas=1, parallelism=1),
                _replicated("workers", replicas=2, parallelism=2),
            ]
        },
    }


def _templates(obj: JSON) -> dict[str, JSON]:
    return {r["name"]: r["template"]["spec"]["template"] for r in obj["spec"]["replicatedJobs"]}


JOBSET = KindUnderTest(
    kind=ADAPTER.kind,
    build=jobset,
    templates=_templates,
    pod_sets={"leader": 1, "workers": 4},  # workers: 2 replicas x parallelism 2
    finished_status={
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    },
)


def test_a_jobset_is_queued_admitted_finished_and_preempted(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    run_lifecycle(cluster, namespace, JOBSET)
