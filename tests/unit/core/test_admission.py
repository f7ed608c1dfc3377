"""All-or-nothing admission, flavors, cohorts, limits: one scenario per rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.core.builders import (
    NOW,
    admitted,
    cluster_queue,
    cpu_queue,
    flavor,
    group,
    local_queue,
    pod_set,
    q,
    quota,
    snapshot,
    workload,
)
from webhook.api import constants
from webhook.api.clusterqueue import TRY_NEXT_FLAVOR, ClusterQueue, FlavorFungibility
from webhook.api.flavor import Taint, Toleration
from webhook.api.selector import LabelSelector, Requirement
from webhook.api.workload import Workload
from webhook.core.decisions import SchedulingResult, admission_status
from webhook.core.demand import DemandCache, total_requests, workload_demand
from webhook.core.scheduler import schedule
from webhook.core.snapshot import Snapshot


def run(cqs: list[ClusterQueue], wls: list[Workload], **kw: object) -> SchedulingResult:
    return schedule(snapshot(cqs, wls, **kw), now=NOW)  # type: ignore[arg-type]


def names(result: SchedulingResult) -> list[str]:
    return [a.workload[1] for a in result.admitted]


def pending(result: SchedulingResult, name: str) -> tuple[str, str]:
    p = next(p for p in result.pending if p.workload[1] == name)
    return p.reason, p.message


# The user's example: 4 workers x (1 GPU, 8 CPU, 16Gi) + 1 chief x (4 CPU, 8Gi).
def training_job(name: str = "train") -> Workload:
    return workload(
        name,
        pod_set("workers", 4, gpu=1, cpu=8, memory="16Gi"),
        pod_set("chief", 1, cpu=4, memory="8Gi"),
        queue="gpus",
    )


def gpu_queue(*, gpu: int = 4, cpu: int = 36, memory: str = "72Gi") -> ClusterQueue:
    return cluster_queue(
        "gpus", group(("a100", [quota("nvidia.com/gpu", gpu), quota("cpu", cpu), quota("memory", memory)]))
    )


def test_training_job_needs_exactly_4_gpu_36_cpu_72gi() -> None:
    assert total_requests(workload_demand(training_job())) == {
        "nvidia.com/gpu": q(4).nano,
        "cpu": q(36).nano,
        "memory": q("72Gi").nano,
    }


def test_training_job_admitted_whole_when_exactly_enough() -> None:
    result = run([gpu_queue()], [training_job()])
    (decision,) = result.admitted
    assert admission_status(decision) == {
        "clusterQueue": "gpus",
        "podSetAssignments": [
            {
                "name": "workers",
                "flavors": {"cpu": "a100", "memory": "a100", "nvidia.com/gpu": "a100"},
                "resourceUsage": {"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": "4"},
                "count": 4,
            },
            {
                "name": "chief",
                "flavors": {"cpu": "a100", "memory": "a100"},
                "resourceUsage": {"cpu": "4", "memory": "8Gi"},
                "count": 1,
            },
        ],
    }
    assert not decision.partial


@pytest.mark.parametrize(
    ("cq", "short"),
    [
        pytest.param(gpu_queue(gpu=3), "nvidia.com/gpu in flavor a100 needs 4, 3 free", id="one-gpu-short"),
        pytest.param(gpu_queue(cpu=35), "cpu in flavor a100 needs 36, 35 free", id="one-cpu-short"),
        pytest.param(gpu_queue(memory="71Gi"), "memory in flavor a100 needs 72Gi, 71Gi free", id="one-gi-short"),
    ],
)
def test_training_job_not_admitted_at_all_when_any_resource_is_short(cq: ClusterQueue, short: str) -> None:
    result = run([cq], [training_job()])
    assert result.admitted == ()
    reason, message = pending(result, "train")
    assert reason == constants.REASON_EXCEEDS_MAX_QUOTA
    assert short.split(",")[0] in message


def test_training_job_waits_whole_while_quota_is_in_use() -> None:
    holder = admitted(workload("holder", pod_set(gpu=1), queue="gpus"), "gpus", flavor_name="a100")
    result = run([gpu_queue()], [holder, training_job()])
    assert result.admitted == ()
    reason, message = pending(result, "train")
    assert reason == constants.REASON_WAITING_FOR_QUOTA
    assert "nvidia.com/gpu in flavor a100 needs 4, 3 free (nominal 4, 1 in use)" in message
    assert "position 1 of 1 in ClusterQueue gpus" in message


@pytest.mark.parametrize(
    ("cqs", "wls", "admitted_names", "borrowing"),
    [
        pytest.param([cpu_queue("main", 4)], [workload("a", cpu=4)], ["a"], False, id="fits-within-nominal"),
        pytest.param([cpu_queue("main", 4)], [workload("a", cpu=5)], [], False, id="exceeds-nominal-without-cohort"),
        pytest.param(
            [cpu_queue("main", 4, cohort="c"), cpu_queue("other", 4, cohort="c")],
            [workload("a", cpu=6)],
            ["a"],
            True,
            id="borrows-from-cohort",
        ),
        pytest.param(
            [cpu_queue("main", 4, cohort="c", borrowing=1), cpu_queue("other", 4, cohort="c")],
            [workload("a", cpu=6)],
            [],
            False,
            id="borrowing-limit-caps",
        ),
        pytest.param(
            [cpu_queue("main", 4, cohort="c", borrowing=2), cpu_queue("other", 4, cohort="c")],
            [workload("a", cpu=6)],
            ["a"],
            True,
            id="borrowing-limit-reached-exactly",
        ),
        pytest.param(
            [cpu_queue("main", 0, cohort="c"), cpu_queue("other", 10, cohort="c", lending=3)],
            [workload("a", cpu=4)],
            [],
            False,
            id="lending-limit-keeps-the-rest",
        ),
        pytest.param(
            [cpu_queue("main", 0, cohort="c"), cpu_queue("other", 10, cohort="c", lending=3)],
            [workload("a", cpu=3)],
            ["a"],
            True,
            id="lending-limit-lent-exactly",
        ),
        pytest.param(
            [cpu_queue("main", 4, cohort="c")],
            [workload("a", cpu=5)],
            [],
            False,
            id="cohort-of-one-lends-nothing",
        ),
        pytest.param(
            [cpu_queue("main", 4)],
            [workload("a", cpu=2), workload("b", cpu=2, age=1), workload("c", cpu=1, age=2)],
            ["a", "b"],
            False,
            id="admits-every-fitting-workload-in-one-pass",
        ),
        pytest.param(
            [cpu_queue("main", "1500m")],
            [workload("a", cpu="500m"), workload("b", cpu="1", age=1)],
            ["a", "b"],
            False,
            id="milli-cpu-exact",
        ),
    ],
)
def test_quota_rules(cqs: list[ClusterQueue], wls: list[Workload], admitted_names: list[str], borrowing: bool) -> None:
    result = run(cqs, wls)
    assert names(result) == admitted_names
    assert any(a.borrowing for a in result.admitted) is borrowing


def test_lending_limit_counts_what_the_lender_uses_itself() -> None:
    # other: nominal 10, lends at most 3; it uses 8 itself, so only 2 of its lendable 3 are free.
    holder = admitted(workload("holder", cpu=8, queue="other"), "other")
    cqs = [cpu_queue("main", 0, cohort="c"), cpu_queue("other", 10, cohort="c", lending=3)]
    result = run(cqs, [holder, workload("a", cpu=3)])
    assert names(result) == []
    assert "cohort c has 2 to lend" in pending(result, "a")[1]
    assert names(run(cqs, [holder, workload("a", cpu=2)])) == ["a"]


def two_flavor_queue(fungibility: FlavorFungibility | None = None, *, cohort: str | None = "c") -> ClusterQueue:
    return cluster_queue(
        "main",
        group(("spot", [quota("cpu", 2)]), ("on-demand", [quota("cpu", 8)])),
        cohort=cohort,
        fungibility=fungibility,
    )


@pytest.mark.parametrize(
    ("cq", "cpu", "flavor_name", "borrowing"),
    [
        pytest.param(two_flavor_queue(), 2, "spot", False, id="first-flavor-when-it-fits"),
        pytest.param(two_flavor_queue(cohort=None), 4, "on-demand", False, id="next-flavor-when-first-too-small"),
        pytest.param(two_flavor_queue(), 4, "spot", True, id="may-stop-search-borrows-in-first-flavor"),
        pytest.param(
            two_flavor_queue(FlavorFungibility(when_can_borrow=TRY_NEXT_FLAVOR)),
            4,
            "on-demand",
            False,
            id="try-next-flavor-avoids-borrowing",
        ),
    ],
)
def test_flavor_order_and_fungibility(cq: ClusterQueue, cpu: int, flavor_name: str, borrowing: bool) -> None:
    lender = cpu_queue("lender", 10, cohort="c", flavor_name="spot")
    result = run([cq, lender], [workload("a", cpu=cpu)])
    (decision,) = result.admitted
    assert decision.pod_sets[0].flavors == {"cpu": flavor_name}
    assert decision.borrowing is borrowing


def test_pod_sets_of_one_workload_share_a_flavor_quota() -> None:
    # Each pod set alone fits in spot (2 CPU), together they do not: both go to on-demand.
    cq = two_flavor_queue(cohort=None)
    wl = workload("a", pod_set("x", 1, cpu=2), pod_set("y", 1, cpu=2))
    (decision,) = run([cq], [wl]).admitted
    assert [p.flavors["cpu"] for p in decision.pod_sets] == ["spot", "on-demand"]


@pytest.mark.parametrize(
    ("tolerations", "selector", "flavor_name"),
    [
        pytest.param((), {}, "plain", id="tainted-flavor-skipped"),
        pytest.param((Toleration("gpu", "Exists"),), {}, "tainted", id="tolerated-taint-used"),
        pytest.param((Toleration("gpu", "Exists"),), {"zone": "b"}, "plain", id="selector-mismatch-skipped"),
    ],
)
def test_flavor_eligibility(tolerations: tuple[Toleration, ...], selector: dict[str, str], flavor_name: str) -> None:
    cq = cluster_queue("main", group(("tainted", [quota("cpu", 4)]), ("plain", [quota("cpu", 4)])))
    flavors = [flavor("tainted", node_labels={"zone": "a"}, node_taints=(Taint("gpu", "NoSchedule"),)), flavor("plain")]
    ps = replace(pod_set(cpu=1), tolerations=tolerations, node_selector=selector)
    (decision,) = run([cq], [workload("a", ps)], flavors=flavors).admitted
    assert decision.pod_sets[0].flavors == {"cpu": flavor_name}


@pytest.mark.parametrize(
    ("wl", "reason", "text"),
    [
        pytest.param(
            workload("a", pod_set(gpu=1)),
            constants.REASON_NO_MATCHING_FLAVOR,
            "nvidia.com/gpu is not covered",
            id="resource-not-covered",
        ),
        pytest.param(
            workload("a", queue="nope"),
            constants.REASON_MISCONFIGURED,
            "LocalQueue nope doesn't exist",
            id="missing-local-queue",
        ),
        pytest.param(
            workload("a", cpu=9),
            constants.REASON_EXCEEDS_MAX_QUOTA,
            "more than the 4 the ClusterQueue can ever use",
            id="exceeds-max",
        ),
    ],
)
def test_reasons_for_workloads_that_cannot_fit(wl: Workload, reason: str, text: str) -> None:
    result = run([cpu_queue("main", 4)], [wl])
    assert result.admitted == ()
    got_reason, message = pending(result, "a")
    assert got_reason == reason
    assert text in message


def test_all_flavors_tainted_is_no_matching_flavor() -> None:
    cq = cluster_queue("main", group(("tainted", [quota("cpu", 4)])))
    flavors = [flavor("tainted", node_taints=(Taint("gpu", "NoExecute", "x"),))]
    result = run([cq], [workload("a", cpu=1)], flavors=flavors)
    reason, message = pending(result, "a")
    assert reason == constants.REASON_NO_MATCHING_FLAVOR
    assert "flavor tainted not eligible: untolerated taint gpu=x:NoExecute" in message


def test_namespace_selector_must_match() -> None:
    cq = replace(
        cpu_queue("main", 4), namespace_selector=LabelSelector((Requirement("team", "In", frozenset({"ml"})),))
    )
    snap = snapshot([cq], [workload("a")])
    result = schedule(snap, now=NOW)
    assert pending(result, "a")[0] == constants.REASON_MISCONFIGURED
    labelled = Snapshot(snap.cluster_queues, snap.flavors, snap.local_queues, snap.workloads, {"team": {"team": "ml"}})
    assert names(schedule(labelled, now=NOW)) == ["a"]


def test_nil_namespace_selector_admits_nothing() -> None:
    cq = replace(cpu_queue("main", 4), namespace_selector=None)
    assert pending(run([cq], [workload("a")]), "a")[0] == constants.REASON_MISCONFIGURED


@pytest.mark.parametrize(
    ("cq", "lq_stop", "reason"),
    [
        pytest.param(cpu_queue("main", 4, stop="Hold"), "None", constants.REASON_SUSPENDED, id="cluster-queue-stopped"),
        pytest.param(cpu_queue("main", 4), "HoldAndDrain", constants.REASON_SUSPENDED, id="local-queue-stopped"),
    ],
)
def test_stopped_queues_admit_nothing(cq: ClusterQueue, lq_stop: str, reason: str) -> None:
    lq = replace(local_queue("main"), stop_policy=lq_stop)
    result = run([cq], [workload("a")], local_queues=[lq])
    assert result.admitted == ()
    assert pending(result, "a")[0] == reason


def test_missing_flavor_makes_the_queue_misconfigured() -> None:
    result = run([cpu_queue("main", 4)], [workload("a")], flavors=[])
    assert pending(result, "a") == (
        constants.REASON_MISCONFIGURED,
        "ClusterQueue main uses ResourceFlavor default, which does not exist",
    )


@pytest.mark.parametrize(
    ("count", "min_count", "nominal", "admitted_count"),
    [
        pytest.param(10, 4, 7, 7, id="largest-count-that-fits"),
        pytest.param(10, 4, 10, 10, id="whole-when-it-fits"),
        pytest.param(10, 4, 4, 4, id="exactly-min-count"),
        pytest.param(10, 4, 3, None, id="below-min-count-pending"),
    ],
)
def test_partial_admission(count: int, min_count: int, nominal: int, admitted_count: int | None) -> None:
    result = run([cpu_queue("main", nominal)], [workload("a", pod_set(count=count, min_count=min_count, cpu=1))])
    if admitted_count is None:
        assert result.admitted == ()
        return
    (decision,) = result.admitted
    assert decision.pod_sets[0].count == admitted_count
    assert decision.pod_sets[0].resource_usage == {"cpu": q(admitted_count)}
    assert decision.partial is (admitted_count < count)


def test_partial_admission_keeps_the_other_pod_sets_whole() -> None:
    wl = workload("a", pod_set("driver", 1, cpu=2), pod_set("workers", 8, min_count=2, cpu=1))
    (decision,) = run([cpu_queue("main", 6)], [wl]).admitted
    assert [(p.name, p.count) for p in decision.pod_sets] == [("driver", 1), ("workers", 4)]


def test_pods_resource_counts_one_per_pod() -> None:
    cq = cluster_queue("main", group(("default", [quota("cpu", 100), quota("pods", 3)])))
    result = run([cq], [workload("a", pod_set(count=2, cpu=1)), workload("b", pod_set(count=2, cpu=1), age=1)])
    assert names(result) == ["a"]
    assert result.admitted[0].pod_sets[0].resource_usage == {"cpu": q(2), "pods": q(2)}


def test_a_demand_cache_kept_from_pass_to_pass_decides_as_a_fresh_one() -> None:
    # The same Workload objects in two passes (as the reconciler keeps them), the second after quota was used.
    waiting = [workload(f"w{i}", cpu=c, age=i) for i, c in enumerate((1, 2, 1, 3))]
    demands = DemandCache()
    first = schedule(snapshot([cpu_queue("main", 3)], waiting), now=NOW, demands=demands)
    assert len(demands) == len(waiting)
    held = [admitted(w, "main") for w in waiting if any(a.workload == w.key for a in first.admitted)]
    rest = [w for w in waiting if all(a.workload != w.key for a in first.admitted)]
    second = snapshot([cpu_queue("main", 5)], held + rest)
    assert schedule(second, now=NOW, demands=demands) == schedule(second, now=NOW)
    copy = replace(rest[0], name="copy", pod_sets=tuple(list(rest[0].pod_sets)))
    assert demands.of(rest[0]) is demands.of(copy), "equal demands are one object"
