"""The user/admin CLI: views from plain dicts, tables and JSON, and the commands against the in-memory fake."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from tests.doubles.fakekube import FakeKube
from webhook.api import constants
from webhook.cli import build_parser
from webhook.kube import resources as r
from webhook.kube.errors import Forbidden
from webhook.usercli import commands, render, views

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def ts(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_cq(
    name: str,
    *,
    quota: dict[tuple[str, str], str],
    reserved: dict[tuple[str, str], str] | None = None,
    used: dict[tuple[str, str], str] | None = None,
    cohort: str = "",
    stop_policy: str | None = None,
    counts: tuple[int, int, int] = (0, 0, 0),
    borrowing_limit: str | None = None,
) -> dict[str, Any]:
    flavors: dict[str, list[dict[str, Any]]] = {}
    for (flavor, resource), nominal in quota.items():
        entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
        if borrowing_limit is not None:
            entry["borrowingLimit"] = borrowing_limit
        flavors.setdefault(flavor, []).append(entry)
    covered = sorted({res for _, res in quota})

    def usage(values: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for (flavor, resource), total in values.items():
            out.setdefault(flavor, []).append({"name": resource, "total": total, "borrowed": "0"})
        return [{"name": f, "resources": res} for f, res in out.items()]

    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": covered, "flavors": [{"name": f, "resources": res} for f, res in flavors.items()]}
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    pending, reserving, admitted = counts
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": ""}],
            "flavorsReservation": usage(reserved or {}),
            "flavorsUsage": usage(used or {}),
            "pendingWorkloads": pending,
            "reservingWorkloads": reserving,
            "admittedWorkloads": admitted,
        },
    }


def make_lq(namespace: str, name: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


def make_workload(
    namespace: str,
    name: str,
    *,
    queue: str = "user-queue",
    priority: int = 0,
    minutes_ago: float = 1,
    state: str = "pending",
    message: str = "",
    owner: tuple[str, str, str] | None = None,  # kind, name, uid
    cpu: str = "1",
    count: int = 1,
    cluster_queue: str = "cq",
) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = []
    status: dict[str, Any] = {"conditions": conditions}
    if state == "pending" and message:
        conditions.append(
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": message,
                "lastTransitionTime": ts(0),
            }
        )
    if state in ("reserved", "admitted", "finished"):
        conditions.append({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""})
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": []}
    if state in ("admitted", "finished"):
        conditions.append({"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""})
    if state == "finished":
        conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done"})
    meta: dict[str, Any] = {"namespace": namespace, "name": name, "creationTimestamp": ts(minutes_ago)}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1], "uid": owner[2], "controller": True}
        ]
    return {
        "apiVersion": constants.API_VERSION,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": queue,
            "priority": priority,
            "active": state != "inactive",
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
                }
            ],
        },
        "status": status,
    }


# -- views: pure ----------------------------------------------------------------------------------------


def test_cluster_queue_quota_picture() -> None:
    cq = make_cq(
        "cq",
        cohort="org",
        quota={("on-demand", "cpu"): "8", ("on-demand", "memory"): "32Gi"},
        reserved={("on-demand", "cpu"): "6"},
        used={("on-demand", "cpu"): "4"},
        counts=(3, 2, 1),
        borrowing_limit="2",
    )
    view = views.cluster_queue_view(cq)
    assert (view.name, view.cohort, view.active, view.stop_policy) == ("cq", "org", True, "None")
    assert (view.pending, view.reserving, view.admitted) == (3, 2, 1)
    cpu, memory = view.quota
    assert (cpu.flavor, cpu.resource, cpu.nominal, cpu.reserved, cpu.used, cpu.reserved_percent) == (
        "on-demand",
        "cpu",
        "8",
        "6",
        "4",
        75,
    )
    assert cpu.borrowing_limit == "2"
    assert cpu.lending_limit is None
    assert (memory.nominal, memory.reserved, memory.reserved_percent) == ("32Gi", "0", 0)


def test_local_queue_reads_its_v1beta2_flavors_usage_field() -> None:
    lq = make_lq("team-a", "user-queue", "cq")
    lq["status"] = {
        "pendingWorkloads": 2,
        "flavorsReservation": [{"name": "spot", "resources": [{"name": "cpu", "total": "3"}]}],
        "flavorsUsage": [{"name": "spot", "resources": [{"name": "cpu", "total": "1"}]}],
    }
    view = views.local_queue_view(lq)
    assert view.pending == 2
    assert view.usage == (views.UsageRow(flavor="spot", resource="cpu", reserved="3", used="1"),)


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        pytest.param(make_workload("ns", "a"), ("Pending", "PendingEvaluation"), id="not-yet-evaluated"),
        pytest.param(
            make_workload("ns", "a", message="insufficient quota for cpu in flavor on-demand"),
            ("Pending", "Pending"),
            id="pending-with-reason",
        ),
        pytest.param(make_workload("ns", "a", state="reserved"), ("QuotaReserved", "QuotaReserved"), id="reserved"),
        pytest.param(make_workload("ns", "a", state="admitted"), ("Admitted", "Admitted"), id="admitted"),
        pytest.param(make_workload("ns", "a", state="finished"), ("Finished", "Succeeded"), id="finished"),
        pytest.param(make_workload("ns", "a", state="inactive"), ("Inactive", "Deactivated"), id="deactivated"),
    ],
)
def test_workload_state(workload: dict[str, Any], expected: tuple[str, str]) -> None:
    state, reason, _ = views.workload_state(workload)
    assert (state, reason) == expected


def test_positions_order_by_priority_then_age_across_namespaces() -> None:
    lqs = [make_lq("a", "user-queue", "cq"), make_lq("b", "user-queue", "cq"), make_lq("c", "other", "cq2")]
    wls = [
        make_workload("a", "old-low", priority=0, minutes_ago=30),
        make_workload("b", "new-high", priority=100, minutes_ago=1),
        make_workload("a", "new-low", priority=0, minutes_ago=5),
        make_workload("b", "old-high", priority=100, minutes_ago=10),
        make_workload("a", "running", priority=1000, state="admitted"),
        make_workload("c", "alone", queue="other"),
        make_workload("a", "lost", queue="no-such-queue"),
    ]
    got = {
        (v.namespace, v.name): (v.position, v.pending_in_cluster_queue)
        for v in views.workload_views(wls, local_queues=lqs, now=NOW)
    }
    assert got == {
        ("b", "old-high"): (1, 4),
        ("b", "new-high"): (2, 4),
        ("a", "old-low"): (3, 4),
        ("a", "new-low"): (4, 4),
        ("a", "running"): (None, None),
        ("c", "alone"): (1, 1),
        ("a", "lost"): (None, None),  # no LocalQueue: no ClusterQueue to be in
    }


def test_listing_puts_pending_first_in_queue_order() -> None:
    lqs = [make_lq("a", "user-queue", "cq")]
    wls = [
        make_workload("a", "running", state="admitted"),
        make_workload("a", "second", minutes_ago=1),
        make_workload("a", "first", minutes_ago=2),
    ]
    ordered = views.sort_for_listing(views.workload_views(wls, local_queues=lqs, now=NOW))
    assert [v.name for v in ordered] == ["first", "second", "running"]


def test_find_workload_by_annotation_then_by_owner() -> None:
    job = {"metadata": {"name": "train", "namespace": "ns", "uid": "u-1", "annotations": {}}}
    owned = make_workload("ns", "job-train-1", owner=("Job", "train", "u-1"))
    other = make_workload("ns", "job-other", owner=("Job", "other", "u-2"))
    assert views.find_workload_for(job, [other, owned]) is owned
    job["metadata"]["annotations"] = {constants.WORKLOAD_NAME_ANNOTATION: "job-other"}
    assert views.find_workload_for(job, [other, owned]) is other
    assert views.find_workload_for({"metadata": {"uid": "u-9"}}, [other, owned]) is None


def test_explain_a_pending_job() -> None:
    job = {
        "metadata": {"name": "train", "namespace": "a", "labels": {constants.QUEUE_NAME_LABEL: "user-queue"}},
        "spec": {"suspend": True},
    }
    me = make_workload(
        "a",
        "job-train",
        priority=0,
        minutes_ago=1,
        count=4,
        cpu="500m",
        message="couldn't assign flavors to pod set main: "
        "insufficient unused quota for cpu in flavor on-demand, 2 more needed",
    )
    ahead = [make_workload("b", f"w{i}", priority=10, minutes_ago=5 + i) for i in range(3)]
    behind = make_workload("a", "later", priority=0, minutes_ago=0)
    report = views.explain(
        "Job a/train",
        job=job,
        workload=me,
        local_queue=make_lq("a", "user-queue", "cq"),
        cluster_queue=make_cq("cq", quota={("on-demand", "cpu"): "4"}, reserved={("on-demand", "cpu"): "3"}),
        peers=[me, *ahead, behind],
        local_queues=[make_lq("b", "user-queue", "cq")],
        now=NOW,
        ahead_limit=2,
    )
    assert report.workload is not None
    assert (report.workload.position, report.workload.pending_in_cluster_queue) == (4, 5)
    assert [w.name for w in report.ahead] == ["w2", "w1"]  # the oldest first, cut at ahead_limit
    assert report.pod_sets == (views.PodSetView(name="main", count=4, per_pod={"cpu": "500m"}, total={"cpu": "2"}),)
    assert report.notes == ()
    text = render.why_text(report)
    assert "Position:  4 of 5 pending in ClusterQueue cq" in text
    assert "insufficient unused quota for cpu in flavor on-demand, 2 more needed" in text
    assert "pod set main: 4 x (cpu=500m) = cpu=2" in text
    assert "3/4" in text  # the queue's reservation against its nominal quota


@pytest.mark.parametrize(
    ("job", "local_queue", "cluster_queue", "note"),
    [
        pytest.param(
            {"metadata": {"labels": {}}, "spec": {"suspend": True}},
            True,
            True,
            "has no kueue.x-k8s.io/queue-name label",
            id="no-queue-label",
        ),
        pytest.param(
            {"metadata": {"labels": {constants.QUEUE_NAME_LABEL: "q"}}, "spec": {"suspend": False}},
            True,
            True,
            "is not suspended",
            id="running-unsuspended",
        ),
        pytest.param(None, False, False, "LocalQueue a/user-queue does not exist", id="missing-local-queue"),
        pytest.param(None, True, False, "ClusterQueue cq does not exist", id="missing-cluster-queue"),
    ],
)
def test_explain_notes(job: dict[str, Any] | None, local_queue: bool, cluster_queue: bool, note: str) -> None:
    report = views.explain(
        "Job a/train",
        job=job,
        workload=make_workload("a", "wl"),
        local_queue=make_lq("a", "user-queue", "cq") if local_queue else None,
        cluster_queue=make_cq("cq", quota={("f", "cpu"): "1"}) if cluster_queue else None,
        peers=[],
        local_queues=[],
        now=NOW,
    )
    assert any(note in n for n in report.notes), report.notes


def test_explain_a_stopped_cluster_queue() -> None:
    report = views.explain(
        "Workload a/wl",
        job=None,
        workload=make_workload("a", "wl"),
        local_queue=make_lq("a", "user-queue", "cq"),
        cluster_queue=make_cq("cq", quota={("f", "cpu"): "1"}, stop_policy="Hold"),
        peers=[],
        local_queues=[],
        now=NOW,
    )
    assert report.notes == ("ClusterQueue cq is stopped (Hold): an admin resumes it",)


def test_explain_without_a_workload() -> None:
    report = views.explain(
        "Job a/x", job=None, workload=None, local_queue=None, cluster_queue=None, peers=[], local_queues=[], now=NOW
    )
    assert report.workload is None
    assert "no Workload found for Job a/x" in render.why_text(report)


# -- render ---------------------------------------------------------------------------------------------


def test_table_aligns_columns_and_marks_empty_cells() -> None:
    assert render.table(["A", "LONGER"], [["x", ""], ["yyyy", 3]]).splitlines() == [
        "A      LONGER",
        "x      -",
        "yyyy   3",
    ]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(5, "5s", id="s"),
        pytest.param(125, "2m", id="m"),
        pytest.param(7300, "2h", id="h"),
        pytest.param(200000, "2d", id="d"),
    ],
)
def test_age(seconds: int, text: str) -> None:
    assert render.age(seconds) == text


def test_json_and_yaml_use_camel_case() -> None:
    view = views.workload_views([make_workload("a", "w")], local_queues=[make_lq("a", "user-queue", "cq")], now=NOW)
    data = json.loads(render.dump(view, "json"))
    assert data[0]["pendingInClusterQueue"] == 1
    assert data[0]["clusterQueue"] == "cq"
    assert yaml.safe_load(render.dump(view, "yaml")) == data


# -- commands against the fake --------------------------------------------------------------------------


@pytest.fixture
def kube() -> FakeKube:
    # Every write a minute later than the one before: creation order is queue order at equal priority.
    clock = iter(NOW - timedelta(minutes=60) + timedelta(minutes=i) for i in range(1000))
    return FakeKube(clock=lambda: next(clock))


async def put(kube: FakeKube, resource: r.Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """Create ``obj`` and then write its status, as the reconciler would."""
    status = obj.get("status")
    namespace = obj["metadata"].get("namespace")
    created = await kube.create(resource, {k: v for k, v in obj.items() if k != "status"}, namespace=namespace)
    if status and resource.has_status:
        created = await kube.patch_status(
            resource, created["metadata"]["name"], {"status": status}, namespace=namespace
        )
    return created


async def cluster_with_a_queue(kube: FakeKube) -> None:
    await put(
        kube,
        r.CLUSTER_QUEUE,
        make_cq("cq", quota={("on-demand", "cpu"): "4"}, reserved={("on-demand", "cpu"): "4"}, counts=(2, 1, 1)),
    )
    await put(kube, r.LOCAL_QUEUE, make_lq("a", "user-queue", "cq"))
    await put(kube, r.LOCAL_QUEUE, make_lq("b", "user-queue", "cq"))
    await put(kube, r.WORKLOAD, make_workload("a", "running", state="admitted", cpu="4"))
    await put(
        kube,
        r.WORKLOAD,
        make_workload("b", "first", message="insufficient unused quota for cpu in flavor on-demand, 1 more needed"),
    )
    job = await put(
        kube,
        r.JOB,
        {
            "metadata": {"namespace": "a", "name": "train", "labels": {constants.QUEUE_NAME_LABEL: "user-queue"}},
            "spec": {"suspend": True, "template": {"spec": {"containers": []}}},
        },
    )
    await put(
        kube,
        r.WORKLOAD,
        make_workload(
            "a",
            "job-train",
            owner=("Job", "train", job["metadata"]["uid"]),
            message="insufficient unused quota for cpu in flavor on-demand, 1 more needed",
        ),
    )


async def test_queues_command(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    text = await commands.queues(kube, namespace=None)
    assert "CLUSTERQUEUE" in text
    assert "4/4" in text
    assert "100%" in text
    local_rows = [line.split()[:3] for line in text.split("NAMESPACE")[1].splitlines()[1:]]
    assert local_rows == [["a", "user-queue", "cq"], ["b", "user-queue", "cq"]]
    data = json.loads(await commands.queues(kube, namespace="b", fmt="json"))
    assert [q["namespace"] for q in data["localQueues"]] == ["b"]
    assert data["clusterQueues"][0]["quota"][0]["reservedPercent"] == 100


async def test_queues_without_permission_to_list_cluster_queues(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    kube.faults.fail_next("list", resource=r.CLUSTER_QUEUE, error=Forbidden("403 Forbidden", status=403))
    text = await commands.queues(kube, namespace="a")
    assert "Note: you may not list ClusterQueues" in text
    assert "user-queue" in text


async def test_workloads_command_shows_positions(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    rows = json.loads(await commands.workloads(kube, namespace="a", pending_only=True, now=NOW, fmt="json"))
    # "first" (namespace b) was created before job-train, so job-train is second in the ClusterQueue.
    assert [(w["name"], w["position"], w["pendingInClusterQueue"]) for w in rows] == [("job-train", 2, 2)]
    text = await commands.workloads(kube, namespace=None, pending_only=False, now=NOW)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [line.split()[1] for line in lines[1:]] == ["first", "job-train", "running"]


async def test_workloads_positions_when_only_the_namespace_is_visible(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    kube.faults.fail_next("list", resource=r.WORKLOAD, error=Forbidden("403 Forbidden", status=403))
    kube.faults.fail_next("list", resource=r.LOCAL_QUEUE, error=Forbidden("403 Forbidden", status=403))
    text = await commands.workloads(kube, namespace="a", pending_only=True, now=NOW)
    assert "1/1" in text  # only its own namespace's workloads count
    assert "positions count only the workloads of namespace a" in text


async def test_why_command(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    text = await commands.why(kube, "train", namespace="a", now=NOW)
    assert text.startswith("Job a/train -> Workload a/job-train")
    assert "insufficient unused quota for cpu in flavor on-demand, 1 more needed" in text
    assert "Position:  2 of 2 pending in ClusterQueue cq" in text
    data = yaml.safe_load(await commands.why(kube, "workload/job-train", namespace="a", now=NOW, fmt="yaml"))
    assert data["workload"]["position"] == 2
    assert data["ahead"][0]["name"] == "first"


async def test_why_unknown_job(kube: FakeKube) -> None:
    with pytest.raises(commands.CommandError, match="job 'nope' not found in namespace 'a'"):
        await commands.why(kube, "nope", namespace="a", now=NOW)


@pytest.mark.parametrize(
    ("drain", "expected"),
    [pytest.param(False, "Hold", id="hold"), pytest.param(True, "HoldAndDrain", id="drain")],
)
async def test_stop_and_resume_a_cluster_queue(kube: FakeKube, drain: bool, expected: str) -> None:
    await cluster_with_a_queue(kube)
    policy: commands.StopPolicy = "HoldAndDrain" if drain else "Hold"
    assert await commands.set_stop_policy(kube, "cq", policy=policy) == f"clusterqueue/cq stopped ({expected})"
    assert (await kube.get(r.CLUSTER_QUEUE, "cq"))["spec"]["stopPolicy"] == expected
    assert await commands.set_stop_policy(kube, "cq", policy="None") == "clusterqueue/cq resumed"
    assert (await kube.get(r.CLUSTER_QUEUE, "cq"))["spec"]["stopPolicy"] == "None"


async def test_stop_a_local_queue_and_dry_run(kube: FakeKube) -> None:
    await cluster_with_a_queue(kube)
    out = await commands.set_stop_policy(kube, "user-queue", policy="Hold", local_queue_namespace="a", dry_run=True)
    assert out == "localqueue/user-queue -n a stopped (Hold) (dry run)"
    assert "stopPolicy" not in (await kube.get(r.LOCAL_QUEUE, "user-queue", namespace="a"))["spec"]
    await commands.set_stop_policy(kube, "user-queue", policy="Hold", local_queue_namespace="a")
    assert (await kube.get(r.LOCAL_QUEUE, "user-queue", namespace="a"))["spec"]["stopPolicy"] == "Hold"
    with pytest.raises(commands.CommandError, match="localqueue 'user-queue' not found in namespace 'c'"):
        await commands.set_stop_policy(kube, "user-queue", policy="Hold", local_queue_namespace="c")


# -- argument parsing and kubeconfig --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["workloads", "-A", "--pending"], {"all_namespaces": True, "pending": True}, id="workloads"),
        pytest.param(
            ["why", "train", "-n", "team-a", "-o", "json"],
            {"target": "train", "namespace": "team-a", "output": "json"},
            id="why",
        ),
        pytest.param(["stop", "cq", "--drain"], {"name": "cq", "drain": True, "local_queue": False}, id="stop-drain"),
        pytest.param(
            ["resume", "lq", "--local-queue", "-n", "x"],
            {"name": "lq", "local_queue": True, "namespace": "x"},
            id="resume-lq",
        ),
        pytest.param(["queues", "-o", "yaml"], {"output": "yaml", "namespace": None}, id="queues"),
    ],
)
def test_parser(argv: list[str], expected: dict[str, Any]) -> None:
    args = build_parser().parse_args(argv)
    assert {k: getattr(args, k) for k in expected} == expected


def test_default_namespace_comes_from_the_context(tmp_path: Any) -> None:
    config = tmp_path / "config"
    config.write_text(
        yaml.safe_dump(
            {
                "current-context": "one",
                "contexts": [
                    {"name": "one", "context": {"cluster": "c", "namespace": "team-a"}},
                    {"name": "two", "context": {"cluster": "c"}},
                ],
            }
        )
    )
    assert commands.default_namespace(config, None) == "team-a"
    assert commands.default_namespace(config, "two") == "default"


def test_kubeconfig_path_prefers_the_flag_then_the_environment(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    present = tmp_path / "present"
    present.write_text("{}")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{present}")
    assert commands.kubeconfig_path("/explicit") == type(present)("/explicit")
    assert commands.kubeconfig_path(None) == present
