"""Hierarchical cohorts and fair sharing, end to end on the real API server.

The tree tests run on the shared cluster and Turnstile. Fair sharing and admission fair sharing are switches of
Turnstile's configuration that change every cohort's preemption and ordering, so their tests share a Turnstile of
their own on a cluster of their own (~15 s more, once for the module).
The cluster has no kubelet: the tests finish Jobs by marking their pods Succeeded, as a kubelet would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import (
    JSON,
    apply,
    cluster_queue,
    create,
    eventually,
    finish_job_pods,
    flavor,
    get,
    is_true,
    items,
    job,
    local_queue,
    waiting,
)
from webhook.api.quantity import parse_quantity
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parents[1] / "fixtures" / "kueue-examples"


def cpu_groups(flavor_name: str, nominal: str, **limits: str) -> list[JSON]:
    quota = {"name": "cpu", "nominalQuota": nominal} | limits
    return [{"coveredResources": ["cpu"], "flavors": [{"name": flavor_name, "resources": [quota]}]}]


def cohort(name: str, *, parent: str | None = None, groups: list[JSON] | None = None, version: str = "v1beta2") -> JSON:
    spec: JSON = {}
    if parent:
        spec["parentName"] = parent
    if groups:
        spec["resourceGroups"] = groups
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def admitted_in(cluster: LocalCluster, namespace: str) -> dict[str, list[str]]:
    """Admitted, unfinished Workloads per ClusterQueue, read from the API server."""
    out: dict[str, list[str]] = {}
    for wl in items(cluster, "workloads.kueue.x-k8s.io", namespace):
        if is_true(wl, "Admitted") and not is_true(wl, "Finished"):
            cq = wl["status"]["admission"]["clusterQueue"]
            out.setdefault(cq, []).append(wl["metadata"]["ownerReferences"][0]["name"])
    return out


def submit(cluster: LocalCluster, namespace: str, queue: str, names: list[str]) -> None:
    """All the Jobs in one request, so that Turnstile sees them together."""
    body = {"apiVersion": "v1", "kind": "List", "items": [job(namespace, n, queue=queue) for n in names]}
    cluster.kubectl("create", "-f", "-", input=json.dumps(body))


def test_borrowing_through_the_tree_stops_at_a_departments_limit(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    f, org, dept_a, dept_b = f"{namespace}-cpu", f"{namespace}-org", f"{namespace}-a", f"{namespace}-b"
    # organisation (4 cpu of its own) -> dept-a (may borrow 1 from it), dept-b -> four ClusterQueues of 1 cpu.
    apply(
        cluster,
        flavor(f),
        cohort(org, groups=cpu_groups(f, "4")),
        cohort(dept_a, parent=org, groups=cpu_groups(f, "0", borrowingLimit="1")),
        cohort(dept_b, parent=org, version="v1beta1"),  # the deprecated version converts like the others
        *(
            cluster_queue(f"{namespace}-{q}", flavors={f: {"cpu": "1"}}, cohort=dept)
            for q, dept in (("a1", dept_a), ("a2", dept_a), ("b1", dept_b), ("b2", dept_b))
        ),
        local_queue(namespace, "a1", f"{namespace}-a1"),
        local_queue(namespace, "b1", f"{namespace}-b1"),
    )
    assert get(cluster, "cohorts.v1beta2.kueue.x-k8s.io", dept_b)["spec"] == {"parentName": org}

    # 1. dept-a holds 2 (a1 + a2) and may borrow 1 more: 3 of a1's 4 Jobs run, the 4th waits.
    submit(cluster, namespace, "a1", [f"a-{i}" for i in range(4)])
    eventually(lambda: len(admitted_in(cluster, namespace).get(f"{namespace}-a1", [])) == 3, what="3 admitted in a1")
    pending = [f"a-{i}" for i in range(4) if f"a-{i}" not in admitted_in(cluster, namespace)[f"{namespace}-a1"]]
    (late,) = pending
    waiting(cluster, namespace, late, text="cpu")

    # 2. What dept-a could not take is still there for dept-b: 4 + 2 + 2 in all, 3 used, 5 left.
    submit(cluster, namespace, "b1", [f"b-{i}" for i in range(6)])
    eventually(lambda: len(admitted_in(cluster, namespace).get(f"{namespace}-b1", [])) == 5, what="5 admitted in b1")
    assert len(admitted_in(cluster, namespace)[f"{namespace}-a1"]) == 3

    # 3. Closing a cycle is refused, with the path in the message.
    done = cluster.kubectl(
        "apply", "--server-side", "-f", "-", input=json.dumps(cohort(org, parent=dept_a)), check=False
    )
    assert done.returncode != 0
    assert f"would make a cycle of Cohorts ({org} -> {dept_a} -> {org})" in done.stderr


# -- fair sharing -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fair_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, LocalTurnstile]]:
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path_factory.getbasetemp()
    local = LocalCluster(Path(base) / f"turnstile-fair-{os.getpid()}")
    local.start()
    try:
        # The fairSharing configuration of Kueue's preemption documentation (both strategies), and
        # admissionFairSharing as its documentation configures it, with times short enough for a test: usage
        # sampled every second, halved every minute.
        config: dict[str, Any] = yaml.safe_load((EXAMPLES / "fair-sharing-config.yaml").read_text())
        config["admissionFairSharing"] = {
            "usageHalfLifeTime": "60s",
            "usageSamplingInterval": "1s",
            "resourceWeights": {"cpu": 2.0, "memory": 1.0},
        }
        fair = LocalTurnstile(local, Path(tmp_path_factory.mktemp("turnstile-fair")), config=config)
        fair.start()
        try:
            yield local, fair
        finally:
            fair.unregister()
            fair.stop()
    finally:
        local.stop()


@pytest.mark.timeout(240)  # includes starting the cluster of its own
def test_weights_one_and_two_share_a_saturated_cohort_one_to_two(
    fair_cluster: tuple[LocalCluster, LocalTurnstile],
) -> None:
    cluster, _ = fair_cluster
    namespace = "fair"
    cluster.kubectl("create", "namespace", namespace)
    preemption = {"reclaimWithinCohort": "Any"}
    light, heavy = (
        cluster_queue("light", flavors={"cpu": {"cpu": "0"}}, cohort="shared", preemption=preemption),
        (cluster_queue("heavy", flavors={"cpu": {"cpu": "0"}}, cohort="shared", preemption=preemption)),
    )
    light["spec"]["fairSharing"] = {"weight": "1"}
    heavy["spec"]["fairSharing"] = {"weight": "2"}
    apply(
        cluster,
        flavor("cpu"),
        cohort("shared", groups=cpu_groups("cpu", "12")),
        light,
        heavy,
        local_queue(namespace, "light", "light"),
        local_queue(namespace, "heavy", "heavy"),
    )
    created = {"light": 0, "heavy": 0}

    def top_up() -> None:
        """Keep 16 unfinished Jobs in each queue: more than either can run, so both stay saturated."""
        for queue in ("light", "heavy"):
            active = sum(
                1
                for j in items(cluster, "jobs", namespace)
                if j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue and not j["status"].get("succeeded")
            )
            missing = max(0, 16 - active)
            names = [f"{queue}-{created[queue] + i}" for i in range(missing)]
            created[queue] += missing
            if names:
                submit(cluster, namespace, queue, names)

    served = {"light": 0, "heavy": 0}
    finished: set[str] = set()
    for _ in range(2):
        top_up()
        # Admissions and fair preemptions settle at the weighted split of the cohort's 12 cpu: 4 and 8.
        state = eventually(
            lambda: (
                (a := admitted_in(cluster, namespace))
                and not finished.intersection(*a.values())
                and len(a.get("light", [])) == 4
                and len(a.get("heavy", [])) == 8
                and a
            ),
            timeout=40,
            what="4 Jobs admitted in light and 8 in heavy",
        )
        # Both at 4/12 and 8/12/2 of the cohort's lendable cpu: 333.3 thousandths, written rounded up.
        eventually(
            lambda: (
                [get(cluster, "clusterqueue", q)["status"].get("fairSharing") for q in ("light", "heavy")]
                == [{"weightedShare": 334}] * 2
            ),
            what="status.fairSharing.weightedShare 334 on both queues",
        )
        for queue, jobs in state.items():
            for name in jobs:
                finish_job_pods(cluster, namespace, name)
                served[queue] += 1
                finished.add(name)
    ratio = served["heavy"] / served["light"]
    assert abs(ratio - 2) <= 0.2, served
    assert get(cluster, "cohort", "shared")["status"]["fairSharing"] == {"weightedShare": 0}


def test_kueue_style_cohort_tree_applies_and_limits_as_documented(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    tree = EXAMPLES / "cohort-tree.yaml"
    cluster.kubectl("apply", "--server-side", "-f", str(tree))
    try:
        apply(cluster, local_queue(namespace, "training", "example-research-training"))
        # research holds 4 + 2 of its queues and may borrow 4 from the organisation: 10 cpu for training at most.
        create(cluster, job(namespace, "wide", queue="training", parallelism=10))
        eventually(lambda: admitted_in(cluster, namespace).get("example-research-training") == ["wide"], what="wide")
        create(cluster, job(namespace, "one-more", queue="training"))
        waiting(cluster, namespace, "one-more", text="cpu")
    finally:
        cluster.kubectl("delete", "jobs", "--all", "-n", namespace, "--wait=true", check=False)
        cluster.kubectl("delete", "-f", str(tree), "--wait=false", check=False)


def _submit_cpu(cluster: LocalCluster, namespace: str, queue: str, names: list[str], cpu: str) -> None:
    jobs = [job(namespace, n, queue=queue, requests={"cpu": cpu}) for n in names]
    cluster.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": jobs}))


@pytest.mark.timeout(240)  # includes starting the cluster of its own, if this test runs first
def test_admission_fair_sharing_lets_a_new_local_queue_overtake_a_heavy_one(
    fair_cluster: tuple[LocalCluster, LocalTurnstile],
) -> None:
    """Kueue's admission-fair-sharing example, unchanged: one StrictFIFO ClusterQueue of 9 cpu in
    UsageBasedAdmissionFairSharing mode, LocalQueues lq-a and lq-b of weight 1 in namespace default."""
    cluster, _ = fair_cluster
    example = EXAMPLES / "admission-fair-sharing-setup.yaml"
    cluster.kubectl("apply", "--server-side", "-f", str(example))
    ns = "default"
    try:
        # 1. lq-a fills the queue (3 Jobs of 3 cpu) and queues two more behind them.
        _submit_cpu(cluster, ns, "lq-a", [f"a-{i}" for i in range(5)], "3")
        eventually(lambda: len(admitted_in(cluster, ns).get("cluster-queue", [])) == 3, what="3 of lq-a's admitted")
        running_a = sorted(admitted_in(cluster, ns)["cluster-queue"])

        # 2. Its decayed usage shows in its status, as the documentation's observability section says.
        def consumed(lq: str) -> float:
            status = get(cluster, "localqueue", lq, ns).get("status", {})
            cpu = status.get("fairSharing", {}).get("admissionFairSharingStatus", {}).get("consumedResources", {})
            return float(parse_quantity(cpu["cpu"]).nano) / 1e9 if "cpu" in cpu else 0.0

        eventually(lambda: consumed("lq-a") > 0, what="lq-a's consumedResources")

        # 3. lq-b arrives later with two Jobs: under plain StrictFIFO lq-a's older Jobs would go first.
        _submit_cpu(cluster, ns, "lq-b", ["b-0", "b-1"], "3")
        eventually(
            lambda: (
                {"b-0", "b-1"}
                <= {w["metadata"]["ownerReferences"][0]["name"] for w in items(cluster, "workloads.kueue.x-k8s.io", ns)}
            ),
            what="lq-b's Workloads",
        )
        for done in running_a[:2]:
            finish_job_pods(cluster, ns, done)
        eventually(
            lambda: {"b-0", "b-1"} <= set(admitted_in(cluster, ns).get("cluster-queue", [])), what="lq-b's admitted"
        )
        admitted_a = {n for n in admitted_in(cluster, ns)["cluster-queue"] if n.startswith("a-")}
        assert admitted_a == set(running_a[2:]), admitted_a  # none of lq-a's waiting Jobs went before lq-b's
        assert consumed("lq-b") < consumed("lq-a")
    finally:
        cluster.kubectl("delete", "jobs", "--all", "-n", ns, "--wait=true", check=False)
        cluster.kubectl("delete", "-f", str(example), "--wait=false", check=False)
