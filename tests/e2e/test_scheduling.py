"""Scheduling decisions seen from the outside: quota, flavors, cohorts, preemption and queueing strategies.

Each test owns its namespace and its cluster-scoped objects (flavors, ClusterQueues, priority classes are named
after the namespace), drives the cluster with kubectl and reads the answers from the API server.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.kube import (
    JSON,
    admission_flavors,
    apply,
    cluster_queue,
    condition,
    create,
    events_about,
    eventually,
    finish_job_pods,
    flavor,
    get,
    is_true,
    job,
    job_pods,
    local_queue,
    priority_class,
    started,
    stopped,
    waiting,
    workload_of,
)
from webhook.jobs.naming import job_workload_name
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
ONE_GPU = {"cpu": "100m", GPU: "1"}


def _admitted(cluster: LocalCluster, namespace: str, job_name: str) -> JSON:
    return dict(
        eventually(
            lambda: (w := workload_of(cluster, namespace, job_name)) and is_true(w, "Admitted") and w,
            what=f"the Workload of {job_name} to be admitted",
        )
    )


def _status(cluster: LocalCluster, kind: str, name: str, namespace: str | None = None) -> JSON:
    return dict(get(cluster, kind, name, namespace).get("status") or {})


def _after_second_of(stamp: str) -> None:
    """Sleeps until the wall clock is past the second ``stamp`` (RFC 3339, seconds) names."""
    moment = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    wait = (moment + datetime.timedelta(seconds=1) - datetime.datetime.now(datetime.UTC)).total_seconds()
    if wait > 0:
        time.sleep(wait + 0.05)


def test_all_or_nothing_waits_for_the_whole_gang(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    gpus, cq = f"{namespace}-a100", f"{namespace}-gpu"
    apply(
        cluster,
        flavor(gpus, node_labels={"accelerator": "a100"}),
        cluster_queue(cq, flavors={gpus: {"cpu": "8", GPU: "4"}}),
        local_queue(namespace, "gpus", cq),
    )
    create(cluster, job(namespace, "holder", queue="gpus", requests=ONE_GPU))
    started(cluster, namespace, "holder")

    # 1. Four pods, one GPU each, with three free: nothing of it starts, and the Workload says why.
    create(cluster, job(namespace, "train", queue="gpus", parallelism=4, requests=ONE_GPU))
    wl = waiting(cluster, namespace, "train", text=GPU)
    message = str((condition(wl, "QuotaReserved") or {}).get("message"))
    assert f"{GPU} in flavor {gpus} needs 4, 3 free" in message
    assert get(cluster, "job", "train", namespace)["spec"]["suspend"] is True
    assert job_pods(cluster, namespace, "train") == []

    # 2. The user finds the reason on the Job too: its events and `kubectl describe`.
    eventually(
        lambda: any(
            e["reason"] == "Pending" and GPU in e["message"] for e in events_about(cluster, namespace, "train")
        ),
        what="a Pending event on the Job naming the GPU shortage",
    )
    described = cluster.kubectl("describe", "job", "train", "-n", namespace).stdout
    assert "Pending" in described
    assert f"{GPU} in flavor {gpus} needs 4" in described

    # 3. ... and from the CLI.
    answer = subprocess.run(
        [
            str(Path(sys.executable).parent / "turnstile"),
            "why",
            "train",
            "-n",
            namespace,
            f"--kubeconfig={cluster.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert job_workload_name(namespace, "train") in answer
    assert f"{GPU} in flavor {gpus} needs 4, 3 free" in answer

    # 4. Queue status counts one admitted and one pending, on both queues.
    def counters() -> bool:
        cq_status = _status(cluster, "clusterqueue", cq)
        lq_status = _status(cluster, "localqueue", "gpus", namespace)
        return all(
            (s.get("admittedWorkloads"), s.get("reservingWorkloads"), s.get("pendingWorkloads")) == (1, 1, 1)
            for s in (cq_status, lq_status)
        )

    eventually(counters, what="ClusterQueue and LocalQueue counters 1 admitted / 1 pending")
    usage = _status(cluster, "clusterqueue", cq)["flavorsUsage"]
    assert {"name": GPU, "total": "1", "borrowed": "0"} in usage[0]["resources"]

    # 5. The holder finishes: the whole gang starts at once, on the flavor's nodes.
    eventually(lambda: finish_job_pods(cluster, namespace, "holder") == 1, what="the holder's pod")
    running = started(cluster, namespace, "train")
    assert running["spec"]["template"]["spec"]["nodeSelector"] == {"accelerator": "a100"}
    assert running["spec"]["parallelism"] == 4
    eventually(lambda: len(job_pods(cluster, namespace, "train")) == 4, what="four pods of the gang")
    eventually(
        lambda: _status(cluster, "clusterqueue", cq).get("pendingWorkloads") == 0,
        what="nothing pending in the ClusterQueue",
    )


def test_second_flavor_when_the_first_is_full(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    on_demand, spot, cq = f"{namespace}-on-demand", f"{namespace}-spot", f"{namespace}-cq"
    apply(
        cluster,
        flavor(on_demand, node_labels={"pool": "on-demand"}),
        flavor(spot, node_labels={"pool": "spot"}),
        cluster_queue(cq, flavors={on_demand: {"cpu": "2"}, spot: {"cpu": "4"}}),
        local_queue(namespace, "q", cq),
    )
    create(cluster, job(namespace, "first", queue="q", parallelism=2))
    assert admission_flavors(_admitted(cluster, namespace, "first")) == {"cpu": on_demand}
    assert started(cluster, namespace, "first")["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "on-demand"}

    create(cluster, job(namespace, "second", queue="q", parallelism=2))
    assert admission_flavors(_admitted(cluster, namespace, "second")) == {"cpu": spot}
    assert started(cluster, namespace, "second")["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}


def test_cohort_borrowing_is_reclaimed_by_preemption(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    cpu, cohort = f"{namespace}-cpu", f"{namespace}-cohort"
    lender, borrower = f"{namespace}-lender", f"{namespace}-borrower"
    apply(
        cluster,
        flavor(cpu, node_labels={"pool": "shared"}),
        cluster_queue(borrower, flavors={cpu: {"cpu": "2"}}, cohort=cohort),
        cluster_queue(lender, flavors={cpu: {"cpu": "2"}}, cohort=cohort, preemption={"reclaimWithinCohort": "Any"}),
        local_queue(namespace, "borrower", borrower),
        local_queue(namespace, "lender", lender),
    )
    # 1. The borrower's queue runs a job twice its nominal quota on the lender's unused quota.
    original = create(cluster, job(namespace, "wide", queue="borrower", parallelism=4))
    started(cluster, namespace, "wide")
    eventually(
        lambda: (
            {"name": "cpu", "total": "4", "borrowed": "2"}
            in _status(cluster, "clusterqueue", borrower)["flavorsUsage"][0]["resources"]
        ),
        what="the borrower's ClusterQueue to show 2 cpu borrowed",
    )

    # 2. The lender's own work arrives: the borrowing workload is preempted, its job stopped and restored.
    create(cluster, job(namespace, "owner", queue="lender", parallelism=2))
    victim = eventually(
        lambda: (w := workload_of(cluster, namespace, "wide")) and is_true(w, "Preempted") and w,
        what="the borrowing workload to be preempted",
    )
    assert (condition(victim, "Preempted") or {}).get("reason") == "InCohortReclamation"
    assert (condition(victim, "Evicted") or {}).get("reason") == "Preempted"
    restored = stopped(cluster, namespace, "wide")
    assert restored["spec"]["template"] == original["spec"]["template"]

    # 3. The owner starts on its own quota; the victim is requeued and waits for quota it cannot borrow now.
    assert started(cluster, namespace, "owner")["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "shared"}
    requeued = waiting(cluster, namespace, "wide")
    assert is_true(requeued, "Requeued")
    assert get(cluster, "job", "wide", namespace)["spec"]["suspend"] is True


def test_priority_preemption_within_a_queue(cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str) -> None:
    cpu, cq = f"{namespace}-cpu", f"{namespace}-cq"
    low, high = f"{namespace}-low", f"{namespace}-high"
    apply(
        cluster,
        priority_class(low, 10),
        priority_class(high, 1000),
        flavor(cpu),
        cluster_queue(cq, flavors={cpu: {"cpu": "2"}}, preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue(namespace, "q", cq),
    )
    create(cluster, job(namespace, "batch", queue="q", parallelism=2, priority_class=low))
    started(cluster, namespace, "batch")
    assert (workload_of(cluster, namespace, "batch") or {})["spec"]["priority"] == 10

    # 1. The urgent job evicts the low-priority one.
    create(cluster, job(namespace, "urgent", queue="q", parallelism=2, priority_class=high))
    victim = eventually(
        lambda: (w := workload_of(cluster, namespace, "batch")) and is_true(w, "Preempted") and w,
        what="the low-priority workload to be preempted",
    )
    assert (condition(victim, "Preempted") or {}).get("reason") == "InClusterQueue"
    stopped(cluster, namespace, "batch")
    started(cluster, namespace, "urgent")

    # 2. The victim is requeued, waits, and runs again once the urgent job is done.
    waiting(cluster, namespace, "batch")
    eventually(lambda: finish_job_pods(cluster, namespace, "urgent") == 2, what="the urgent job's pods")
    started(cluster, namespace, "batch")
    assert is_true(_admitted(cluster, namespace, "batch"), "Admitted")


@pytest.mark.parametrize(
    ("strategy", "small_runs"),
    [
        pytest.param("StrictFIFO", False, id="strict-fifo-blocks"),
        pytest.param("BestEffortFIFO", True, id="best-effort"),
    ],
)
def test_head_that_does_not_fit(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str, strategy: str, small_runs: bool
) -> None:
    cpu, cq = f"{namespace}-cpu", f"{namespace}-cq"
    apply(
        cluster,
        flavor(cpu),
        cluster_queue(cq, flavors={cpu: {"cpu": "4"}}, strategy=strategy),
        local_queue(namespace, "q", cq),
    )
    create(cluster, job(namespace, "holder", queue="q", parallelism=2))
    started(cluster, namespace, "holder")
    create(cluster, job(namespace, "big", queue="q", parallelism=4))
    big = waiting(cluster, namespace, "big", text="needs 4")
    # Queues order by creationTimestamp, which has one-second resolution (then by uid, as in Kueue): make sure
    # the small job's Workload is younger than the big one's, not tied with it.
    _after_second_of(big["metadata"]["creationTimestamp"])
    create(cluster, job(namespace, "small", queue="q"))  # 1 cpu: it would fit in the 2 free

    if small_runs:
        started(cluster, namespace, "small")
        assert get(cluster, "job", "big", namespace)["spec"]["suspend"] is True
    else:
        waiting(cluster, namespace, "small", text=f"StrictFIFO: waiting behind {namespace}/")
        assert get(cluster, "job", "small", namespace)["spec"]["suspend"] is True
        # Once the holder is gone the head fits; the small job follows it.
        eventually(lambda: finish_job_pods(cluster, namespace, "holder") == 2, what="the holder's pods")
        started(cluster, namespace, "big")
        waiting(cluster, namespace, "small", text="needs 1")


def test_evicted_job_runs_again_on_another_flavor(
    cluster: LocalCluster, turnstile: LocalTurnstile, namespace: str
) -> None:
    flavor_a, flavor_b, cq = f"{namespace}-a", f"{namespace}-b", f"{namespace}-cq"
    low, mid, high = f"{namespace}-low", f"{namespace}-mid", f"{namespace}-high"
    apply(
        cluster,
        priority_class(low, 10),
        priority_class(mid, 100),
        priority_class(high, 1000),
        flavor(flavor_a, node_labels={"pool": "a"}),
        flavor(flavor_b, node_labels={"pool": "b"}),
        cluster_queue(
            cq,
            flavors={flavor_a: {"cpu": "2"}, flavor_b: {"cpu": "2"}},
            preemption={"withinClusterQueue": "LowerPriority"},
        ),
        local_queue(namespace, "q", cq),
    )
    # 1. The low-priority job (with a selector of its own) runs on flavor a, another job fills flavor b.
    original = create(
        cluster, job(namespace, "low", queue="q", parallelism=2, priority_class=low, node_selector={"disk": "ssd"})
    )
    assert started(cluster, namespace, "low")["spec"]["template"]["spec"]["nodeSelector"] == {
        "disk": "ssd",
        "pool": "a",
    }
    create(cluster, job(namespace, "mid", queue="q", parallelism=2, priority_class=mid))
    assert started(cluster, namespace, "mid")["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "b"}

    # 2. A high-priority job preempts the lowest: its template is exactly what the user wrote again.
    create(cluster, job(namespace, "high", queue="q", parallelism=2, priority_class=high))
    restored = stopped(cluster, namespace, "low")
    assert restored["spec"]["template"] == original["spec"]["template"]
    assert started(cluster, namespace, "high")["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
    assert get(cluster, "job", "mid", namespace)["spec"]["suspend"] is False

    # 3. Flavor b frees up: the evicted job runs again there, with b's selector and its own.
    eventually(lambda: finish_job_pods(cluster, namespace, "mid") == 2, what="the mid job's pods")
    assert admission_flavors(_admitted(cluster, namespace, "low")) == {"cpu": flavor_b}
    assert started(cluster, namespace, "low")["spec"]["template"]["spec"]["nodeSelector"] == {
        "disk": "ssd",
        "pool": "b",
    }
