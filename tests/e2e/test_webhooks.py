"""The admission webhooks as the API server calls them: what users and GitOps tools see through kubectl."""

from __future__ import annotations

import http.client
import json
import re
import ssl
import time
from typing import Any

import pytest

from tests.e2e.kube import JSON, cluster_queue, create, eventually, get, job
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration


def test_apply_twice_changes_nothing_the_second_time(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    manifest = json.dumps(job(namespace, "gitops", queue="user-queue"))
    cluster.kubectl("apply", "-f", "-", input=manifest)
    # The Job controller writes the new Job's status just after the create: compare from once that is done.
    first = eventually(lambda: _unchanged_for(cluster, namespace, "gitops", 0.5), what="the new Job to settle")
    assert first["spec"]["suspend"] is True
    again = cluster.kubectl("apply", "-f", "-", input=manifest)
    assert "unchanged" in again.stdout
    time.sleep(1.0)  # time for anything the second apply set off to write
    assert (
        get(cluster, "job", "gitops", namespace)["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    )


def _unchanged_for(cluster: LocalCluster, namespace: str, name: str, seconds: float) -> JSON | None:
    """The Job, if nothing wrote it during ``seconds``; None otherwise."""
    before = get(cluster, "job", name, namespace)
    time.sleep(seconds)
    after = get(cluster, "job", name, namespace)
    return after if after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"] else None


def test_unmanaged_namespaces_pass_untouched(cluster: LocalCluster, turnstile: LocalTurnstile) -> None:
    for ns in ("kube-system", "turnstile-system"):
        answer = create(cluster, job(ns, "untouched", queue="user-queue"), "--dry-run=server")
        assert answer["spec"].get("suspend") is False, ns
        assert "turnstile.x-k8s.io/workload-name" not in (answer["metadata"].get("annotations") or {})


def test_kube_system_works_while_turnstile_is_stopped(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    turnstile.stop()
    try:
        answer = create(cluster, job("kube-system", "while-down", queue="user-queue"), "--dry-run=server")
        assert answer["spec"].get("suspend") is False
        # A job without a queue label is not failed closed either (only defaulting is lost).
        unlabelled = job(namespace, "plain", queue="x")
        del unlabelled["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        assert create(cluster, unlabelled, "--dry-run=server")["metadata"]["name"] == "plain"
        # A job that names a queue is refused rather than let through unsuspended.
        refused = cluster.kubectl(
            "create",
            "--dry-run=server",
            "-f",
            "-",
            input=json.dumps(job(namespace, "q", queue="user-queue")),
            check=False,
        )
        assert refused.returncode != 0
        assert "turnstile" in refused.stderr
    finally:
        turnstile.start()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param(
            lambda cq: cq["spec"]["resourceGroups"].append(
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "other", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                }
            ),
            "spec.resourceGroups[1].coveredResources[0]",
            id="resource-in-two-groups",
        ),
        pytest.param(
            lambda cq: cq["spec"]["resourceGroups"].append(
                {
                    "coveredResources": ["memory"],
                    "flavors": [{"name": "f-bad", "resources": [{"name": "memory", "nominalQuota": "1"}]}],
                }
            ),
            "spec.resourceGroups[1].flavors[0].name",
            id="flavor-in-two-groups",
        ),
    ],
)
def test_bad_cluster_queues_are_refused_naming_the_field(
    cluster: LocalCluster, turnstile: LocalTurnstile, change: Any, field: str
) -> None:
    cq = cluster_queue("cq-refused", flavors={"f-bad": {"cpu": "1"}})
    change(cq)
    refused = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(cq), check=False)
    assert refused.returncode != 0
    assert field in refused.stderr


def test_invalid_queue_names_are_refused(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    bad = job(namespace, "badq", queue="Not_A_Valid_Name")
    refused = cluster.kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert "kueue.x-k8s.io/queue-name" in refused.stderr


def _pod(namespace: str, name: str, *, group: str, total: str | None) -> dict[str, Any]:
    annotations = {"kueue.x-k8s.io/pod-group-total-count": total} if total is not None else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/pod-group-name": group},
            "annotations": annotations,
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }


def test_a_pod_group_is_gated_and_the_gate_cannot_be_removed(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    for i in range(3):
        pod = create(cluster, _pod(namespace, f"worker-{i}", group="trio", total="3"))
        assert {"name": "kueue.x-k8s.io/admission"} in pod["spec"]["schedulingGates"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    ungate = cluster.kubectl(
        "patch",
        "pod",
        "worker-0",
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/spec/schedulingGates"}]',
        check=False,
    )
    assert ungate.returncode != 0
    assert "kueue.x-k8s.io/admission" in ungate.stderr
    assert get(cluster, "pod", "worker-0", namespace)["spec"]["schedulingGates"]


def test_an_incomplete_pod_group_is_refused(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    refused = cluster.kubectl(
        "create", "-f", "-", input=json.dumps(_pod(namespace, "lonely", group="g", total=None)), check=False
    )
    assert refused.returncode != 0
    assert "pod-group-total-count" in refused.stderr


def _errors(text: str, path: str, reason: str) -> float:
    found = re.search(
        rf'^turnstile_webhook_errors_total\{{(?=[^}}]*path="{re.escape(path)}")(?=[^}}]*reason="{reason}")[^}}]*\}} '
        r"([0-9.e+]+)$",
        text,
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


def test_webhook_errors_are_counted_on_the_replicas_metrics(turnstile: LocalTurnstile) -> None:
    """The webhooks answer in the process the operator scrapes (the reconciler is a child process since issue 18):
    a malformed review and an unknown path each show up in turnstile_webhook_errors_total there."""
    path = "/validate/batch/v1/jobs"
    before = turnstile.metrics()
    context = ssl.create_default_context(cadata=turnstile.ca_pem.decode())
    for target, expected in ((path, 400), ("/no/such/route", 404)):
        conn = http.client.HTTPSConnection("127.0.0.1", turnstile.port, context=context, timeout=30)
        try:
            conn.request(
                "POST", target, body=b'{"kind": "AdmissionReview"', headers={"Content-Type": "application/json"}
            )
            assert conn.getresponse().status == expected
        finally:
            conn.close()
    after = turnstile.metrics()
    assert _errors(after, path, "malformed") == _errors(before, path, "malformed") + 1
    assert _errors(after, "unknown", "unknown-route") == _errors(before, "unknown", "unknown-route") + 1
