"""Jobs a CronJob creates, and Jobs that name a prebuilt Workload, through Turnstile.

A CronJob is not an integration of its own (as in Kueue): the Jobs it creates carry the queue label of its
jobTemplate and are queued like any other. The local cluster runs kube-controller-manager's cronjob controller,
but its schedule has a one-minute granularity; the test creates the Job from the CronJob with
``kubectl create job --from=cronjob/...``, which builds it as the controller does (the jobTemplate's labels and
spec, a controller owner reference to the CronJob).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.kube import (
    WORKLOAD,
    apply,
    cluster_queue,
    create,
    eventually,
    flavor,
    get,
    is_true,
    job,
    local_queue,
    maybe_get,
    started,
    workload_of,
)
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration
JSON = dict[str, Any]


def _queue(cluster: LocalCluster, namespace: str, pool: str) -> None:
    cq = f"cq-{namespace}"
    apply(
        cluster,
        flavor(f"fl-{namespace}", node_labels={"pool": pool}),
        cluster_queue(cq, flavors={f"fl-{namespace}": {"cpu": "2"}}),
        local_queue(namespace, "q", cq),
    )


def test_the_jobs_of_a_cronjob_are_queued(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    _queue(cluster, namespace, "cron")
    template = job(namespace, "unused", queue="q")
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": namespace},
        "spec": {
            "schedule": "0 3 1 1 *",  # the test creates its Job; the controller would only in January
            "jobTemplate": {"metadata": {"labels": template["metadata"]["labels"]}, "spec": template["spec"]},
        },
    }
    create(cluster, cronjob)
    created = json.loads(
        cluster.kubectl("create", "job", "-n", namespace, "--from=cronjob/nightly", "run-1", "-o", "json").stdout
    )
    [owner] = created["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["controller"]) == ("CronJob", True)
    assert created["spec"]["suspend"] is True  # suspended by the webhook although its owner is a CronJob
    wl = eventually(
        lambda: (w := workload_of(cluster, namespace, "run-1")) and is_true(w, "Admitted") and w,
        what="the CronJob's Job's Workload to be admitted",
    )
    assert wl["spec"]["queueName"] == "q"
    assert started(cluster, namespace, "run-1")["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "cron"}


def _prebuilt(namespace: str, name: str, cpu: str) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                            ],
                        }
                    },
                }
            ],
        },
    }


def test_a_job_runs_under_the_prebuilt_workload_it_names(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    _queue(cluster, namespace, "prebuilt")
    prebuilt = {"kueue.x-k8s.io/prebuilt-workload-name": "mine"}
    # 1. The Job comes first: it waits, suspended, and no Workload is made for it.
    created = create(cluster, job(namespace, "uses-mine", queue="q", labels=prebuilt))
    assert created["spec"]["suspend"] is True
    assert created["metadata"]["annotations"]["turnstile.x-k8s.io/workload-name"] == "mine"
    # 2. The user's Workload appears: it becomes the Job's (owner reference), is admitted, the Job runs.
    create(cluster, _prebuilt(namespace, "mine", "1"))
    started(cluster, namespace, "uses-mine")
    wl = get(cluster, WORKLOAD, "mine", namespace)
    [owner] = wl["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "uses-mine", True)
    assert workload_of(cluster, namespace, "uses-mine") is None  # no Workload of Turnstile's own naming
    # 3. A prebuilt Workload that does not describe its Job is finished OutOfSync; the Job stays suspended.
    create(cluster, _prebuilt(namespace, "wrong", "2"))
    create(cluster, job(namespace, "uses-wrong", queue="q", labels={"kueue.x-k8s.io/prebuilt-workload-name": "wrong"}))
    finished = eventually(
        lambda: (w := maybe_get(cluster, WORKLOAD, "wrong", namespace)) and is_true(w, "Finished") and w,
        what="the out-of-sync prebuilt Workload to be finished",
    )
    reasons = {c["type"]: c.get("reason") for c in finished["status"]["conditions"]}
    assert reasons["Finished"] == "OutOfSync"
    assert get(cluster, "job", "uses-wrong", namespace)["spec"]["suspend"] is True
