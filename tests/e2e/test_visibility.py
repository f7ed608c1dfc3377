"""Kueue's visibility API through the real API server's aggregation layer (``kubectl get --raw``), with its RBAC.

The API server proxies ``/apis/visibility.kueue.x-k8s.io/...`` to Turnstile's listener (an APIService, an
ExternalName Service to the loopback host), presenting the front proxy's client certificate and the user in
headers; Turnstile authorizes each request with a SubjectAccessReview, so only RBAC decides who sees what.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.e2e.kube import JSON, apply, cluster_queue, create, eventually, flavor, job, local_queue, priority_class
from tests.e2e.users import USER_ROLES
from webhook.jobs.naming import job_workload_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

API = "/apis/visibility.kueue.x-k8s.io"


def raw(cluster: LocalCluster, path: str, *, kubeconfig: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cluster.bin_dir / "kubectl"), f"--kubeconfig={kubeconfig or cluster.kubeconfig}", "get", "--raw", path],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def summary(cluster: LocalCluster, path: str, *, kubeconfig: str | None = None) -> JSON:
    done = raw(cluster, path, kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def names(body: JSON) -> list[tuple[str, int, int]]:
    return [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body["items"]]


def view_role_includes_visibility(cluster: LocalCluster) -> bool:
    role = json.loads(cluster.kubectl("get", "clusterrole", "view", "-o", "json").stdout)
    return any("localqueues/pendingworkloads" in r.get("resources", []) for r in role.get("rules") or [])


def test_pending_workloads_with_positions_and_rbac(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    cq = f"vis-{namespace}"
    apply(
        cluster,
        flavor("vis-flavor"),
        priority_class("vis-high", 1000),
        cluster_queue(cq, flavors={"vis-flavor": {"cpu": "1"}}),
        local_queue(namespace, "team-a", cq),
        local_queue(namespace, "team-b", cq),
    )
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(USER_ROLES))
    # 1. One job takes the whole quota; three wait: the high-priority one first, then the others by age.
    create(cluster, job(namespace, "running", queue="team-a"))
    eventually(
        lambda: (
            (j := json.loads(cluster.kubectl("get", "job", "running", "-n", namespace, "-o", "json").stdout))
            and j["spec"].get("suspend") is False
        ),
        what="the first job to start",
    )
    create(cluster, job(namespace, "old", queue="team-a"))
    time.sleep(1.1)  # creation timestamps have a resolution of one second
    create(cluster, job(namespace, "young", queue="team-b"))
    create(cluster, job(namespace, "urgent", queue="team-a", priority_class="vis-high"))
    workload = {n: job_workload_name(namespace, n) for n in ("old", "young", "urgent")}
    expected = [(workload["urgent"], 0, 0), (workload["old"], 1, 1), (workload["young"], 2, 0)]

    path = f"{API}/v1beta2/clusterqueues/{cq}/pendingworkloads"
    body = eventually(
        lambda: (b := summary(cluster, path)) and names(b) == expected and b,
        what="the three pending workloads in queue order",
    )
    # 2. Kueue's shape: kind and version, the workload's metadata with its owner, priority and LocalQueue.
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    urgent = body["items"][0]
    assert urgent["priority"] == 1000
    assert urgent["localQueueName"] == "team-a"
    assert urgent["metadata"]["namespace"] == namespace
    assert urgent["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert urgent["metadata"]["ownerReferences"][0]["name"] == "urgent"
    # v1beta1 answers the same; limit and offset window the list, positions stay absolute.
    assert names(summary(cluster, f"{API}/v1beta1/clusterqueues/{cq}/pendingworkloads")) == expected
    assert names(summary(cluster, f"{path}?limit=1&offset=1")) == expected[1:2]
    lq_path = f"{API}/v1beta2/namespaces/{namespace}/localqueues/team-a/pendingworkloads"
    assert names(summary(cluster, lq_path)) == expected[:2]
    assert names(summary(cluster, f"{lq_path}?offset=1")) == expected[1:2]
    missing = raw(cluster, f"{API}/v1beta2/clusterqueues/no-such-queue/pendingworkloads")
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr

    # 3. Someone with no rights is refused both lists.
    stranger = str(cluster.client_kubeconfig(f"stranger-{namespace}"))
    for refused_path in (path, lq_path):
        done = raw(cluster, refused_path, kubeconfig=stranger)
        assert done.returncode != 0
        assert "Forbidden" in done.stderr, done.stderr
        assert f'User "stranger-{namespace}"' in done.stderr, done.stderr

    # 4. `view` in the namespace shows its LocalQueue's list, not the ClusterQueue's (cluster-scoped).
    viewer_name = f"viewer-{namespace}"
    viewer = str(cluster.client_kubeconfig(viewer_name))
    cluster.kubectl(
        "create", "rolebinding", f"{viewer_name}-view", "--clusterrole=view", f"--user={viewer_name}", "-n", namespace
    )
    eventually(lambda: view_role_includes_visibility(cluster), what="view to aggregate Turnstile's rules")
    # The SubjectAccessReview answer is remembered for a few seconds; the binding is new, so poll.
    seen = eventually(
        lambda: (d := raw(cluster, lq_path, kubeconfig=viewer)).returncode == 0 and json.loads(d.stdout),
        timeout=30,
        what="the viewer to see the LocalQueue's list",
    )
    assert names(seen) == expected[:2]
    done = raw(cluster, path, kubeconfig=viewer)
    assert done.returncode != 0
    assert "Forbidden" in done.stderr
