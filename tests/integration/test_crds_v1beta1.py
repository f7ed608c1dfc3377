"""kueue.x-k8s.io/v1beta1, still served: through our conversion webhook on the real kube-apiserver.

The v1beta1 samples (tests/fixtures/v1beta1-samples, the samples as written before v1beta2) apply unchanged and
come back as written; both versions read the same objects; v1beta1's own schema rules still hold; fields that
only v1beta2 has are invisible to v1beta1 clients. And without a conversion webhook (Turnstile down), v1beta2
keeps working while v1beta1 reads of the converted kinds fail with the API server's conversion error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conversionserver import ConversionServer, restore_committed_conversion
from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
V1BETA1_SAMPLES = REPO_ROOT / "tests" / "fixtures" / "v1beta1-samples"
V1, V2 = "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"

Manifest = dict[str, Any]


@pytest.fixture(scope="module")
def converting(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConversionServer]:
    with ConversionServer(cluster, tmp_path_factory.mktemp("conversion")) as server:
        yield server


def get(cluster: LocalCluster, resource: str, name: str, version: str, namespace: str = "default") -> Manifest:
    plural = f"{resource}.{version}.kueue.x-k8s.io"
    got: Manifest = json.loads(cluster.kubectl("get", plural, name, "-n", namespace, "-o", "json").stdout)
    return got


def dry_run(cluster: LocalCluster, manifest: Manifest) -> Any:
    return cluster.kubectl(
        "create", "--dry-run=server", "-n", "default", "-o", "json", "-f", "-", input=json.dumps(manifest), check=False
    )


def _written_fields(written: Any, stored: Any) -> Any:
    """The part of ``stored`` that ``written`` names (the API server adds defaults and metadata)."""
    if isinstance(written, dict):
        return {k: _written_fields(v, stored.get(k)) for k, v in written.items()}
    if isinstance(written, list) and isinstance(stored, list):
        return [_written_fields(w, s) for w, s in zip(written, stored, strict=False)]
    return stored


PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "Workload": "workloads",
    "WorkloadPriorityClass": "workloadpriorityclasses",
}
SAMPLES = sorted(p.name for p in V1BETA1_SAMPLES.glob("*.yaml"))


def test_v1beta1_samples_apply_unchanged_and_round_trip(cluster: LocalCluster, converting: ConversionServer) -> None:
    files = [arg for name in SAMPLES for arg in ("-f", str(V1BETA1_SAMPLES / name))]
    documents = [d for name in SAMPLES for d in yaml.safe_load_all((V1BETA1_SAMPLES / name).read_text())]
    try:
        first = cluster.kubectl("apply", "--server-side", *files)
        assert "serverside-applied" in first.stdout

        for written in documents:
            resource = PLURALS[written["kind"]]
            name, namespace = written["metadata"]["name"], written["metadata"].get("namespace", "default")
            as_v1 = get(cluster, resource, name, "v1beta1", namespace)
            assert as_v1["apiVersion"] == V1
            assert _written_fields(written, as_v1) == written, f"{written['kind']} {name} changed on the way"

        cq = get(cluster, "clusterqueues", "cluster-queue", "v1beta2")
        assert cq["spec"]["cohortName"] == "research"
        assert "cohort" not in cq["spec"]
        wl = get(cluster, "workloads", "training-run", "v1beta2")
        assert wl["spec"]["priorityClassRef"] == {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high-priority",
        }
        generation = wl["metadata"]["generation"]
        cluster.kubectl("apply", "--server-side", *files)
        assert get(cluster, "workloads", "training-run", "v1beta2")["metadata"]["generation"] == generation
    finally:
        cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *files, check=False)


def test_both_versions_list_the_same_cluster_queues(cluster: LocalCluster, converting: ConversionServer) -> None:
    names = ["both-a", "both-b"]
    for name in names:
        body = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {"cohortName": "shared"}}
        cluster.kubectl("create", "-f", "-", input=json.dumps(body))
    try:
        v1 = cluster.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "-o", "json")
        v2 = cluster.kubectl("get", "clusterqueues.v1beta2.kueue.x-k8s.io", "-o", "json")
        table = cluster.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", *names).stdout

        as_v1 = {i["metadata"]["name"]: i for i in json.loads(v1.stdout)["items"] if i["metadata"]["name"] in names}
        as_v2 = {i["metadata"]["name"]: i for i in json.loads(v2.stdout)["items"] if i["metadata"]["name"] in names}
        assert sorted(as_v1) == sorted(as_v2) == names
        assert {n: (o["apiVersion"], o["spec"]["cohort"]) for n, o in as_v1.items()} == dict.fromkeys(
            names, (V1, "shared")
        )
        assert {n: (o["apiVersion"], o["spec"]["cohortName"]) for n, o in as_v2.items()} == dict.fromkeys(
            names, (V2, "shared")
        )
        assert {n: o["metadata"]["uid"] for n, o in as_v1.items()} == {
            n: o["metadata"]["uid"] for n, o in as_v2.items()
        }
        assert "shared" in table  # the v1beta1 Cohort printer column reads spec.cohort
        assert "is deprecated; use kueue.x-k8s.io/v1beta2" in v1.stderr
    finally:
        cluster.kubectl("delete", "clusterqueue", *names, "--ignore-not-found", "--wait=false", check=False)


def test_v1beta1_writes_are_normalised_as_kueue_does(cluster: LocalCluster, converting: ConversionServer) -> None:
    body = {
        "apiVersion": V1,
        "kind": "ClusterQueue",
        "metadata": {"name": "normalised"},
        "spec": {"admissionChecks": ["prov"], "flavorFungibility": {"whenCanBorrow": "Borrow"}},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(body))
    try:
        as_v2 = get(cluster, "clusterqueues", "normalised", "v1beta2")
        as_v1 = get(cluster, "clusterqueues", "normalised", "v1beta1")

        assert as_v2["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
        assert as_v2["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
        assert "admissionChecks" not in as_v1["spec"]
        assert as_v1["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
    finally:
        cluster.kubectl("delete", "clusterqueue", "normalised", "--ignore-not-found", "--wait=false", check=False)


def pod_priority_workload(name: str, **spec: Any) -> Manifest:
    """A v1beta2 Workload in default whose priority comes from the pod PriorityClass ``batch``."""
    return {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": "user-queue",
            "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "batch"},
            "priority": 3,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
            **spec,
        },
    }


def test_v1beta2_only_fields_are_invisible_at_v1beta1(cluster: LocalCluster, converting: ConversionServer) -> None:
    body = pod_priority_workload("gated", preemptionGates=[{"name": "example.com/gate"}])
    cluster.kubectl("create", "-f", "-", input=json.dumps(body))
    try:
        as_v1 = get(cluster, "workloads", "gated", "v1beta1")
        as_v2 = get(cluster, "workloads", "gated", "v1beta2")

        assert "preemptionGates" not in as_v1["spec"]
        assert (as_v1["spec"]["priorityClassSource"], as_v1["spec"]["priorityClassName"]) == (
            "scheduling.k8s.io/priorityclass",
            "batch",
        )
        assert as_v2["spec"]["preemptionGates"] == [{"name": "example.com/gate"}]  # still stored
    finally:
        cluster.kubectl("delete", "workload", "gated", "-n", "default", "--ignore-not-found", check=False)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        pytest.param(
            {"kind": "ClusterQueue", "spec": {"cohort": "Research_Team"}},
            "spec.cohort in body should match",
            id="cohort-not-a-dns-name",
        ),
        pytest.param(
            {
                "kind": "ClusterQueue",
                "spec": {"admissionChecks": ["a"], "admissionChecksStrategy": {"admissionChecks": [{"name": "b"}]}},
            },
            "admissionChecks and admissionChecksStrategy cannot be used together",
            id="admission-checks-twice",
        ),
        pytest.param(
            {
                "kind": "Workload",
                "spec": {
                    "priorityClassSource": "example.com/priority",
                    "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
                },
            },
            'spec.priorityClassSource: Unsupported value: "example.com/priority"',
            id="unknown-priority-source",
        ),
        pytest.param(
            {
                "kind": "Workload",
                "spec": {
                    "priorityClassName": "high",
                    "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
                },
            },
            "priority should not be nil when priorityClassName is set",
            id="priority-class-without-priority",
        ),
    ],
)
def test_v1beta1_schema_rules_still_hold(
    cluster: LocalCluster, converting: ConversionServer, manifest: Manifest, message: str
) -> None:
    done = dry_run(cluster, {"apiVersion": V1, "metadata": {"name": "refused"}, **manifest})

    assert done.returncode != 0, done.stdout[:300]
    assert message in done.stderr


def test_v1beta1_priority_fields_are_immutable_while_quota_is_reserved(
    cluster: LocalCluster, converting: ConversionServer
) -> None:
    body = pod_priority_workload("pinned")
    plural = "workloads.v1beta1.kueue.x-k8s.io"

    def patch_v1(spec: Manifest) -> Any:
        return cluster.kubectl(
            "patch", plural, "pinned", "-n", "default", "--type=merge", "-p", json.dumps({"spec": spec}), check=False
        )

    cluster.kubectl("create", "-f", "-", input=json.dumps(body))
    try:
        renamed_before = patch_v1({"priorityClassName": "renamed"})
        reserved = {
            "status": {
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "True",
                        "reason": "QuotaReserved",
                        "message": "test",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1}]},
            }
        }
        cluster.kubectl(
            "patch",
            "workload",
            "pinned",
            "-n",
            "default",
            "--type=merge",
            "--subresource=status",
            "-p",
            json.dumps(reserved),
        )
        renamed_after = patch_v1({"priorityClassName": "batch"})
        resourced_after = patch_v1({"priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"})

        assert renamed_before.returncode == 0, renamed_before.stderr  # no reservation: the rules do not apply
        assert "priorityClassName is immutable while the workload has quota reserved" in renamed_after.stderr
        assert "priorityClassSource is immutable while the workload has quota reserved" in resourced_after.stderr
        assert get(cluster, "workloads", "pinned", "v1beta1")["spec"]["priorityClassName"] == "renamed"
    finally:
        cluster.kubectl("delete", "workload", "pinned", "-n", "default", "--ignore-not-found", check=False)


@pytest.fixture
def turnstile_down(cluster: LocalCluster) -> None:
    """The CRDs as committed, with no server behind their conversion webhook (no Turnstile in this cluster)."""
    restore_committed_conversion(cluster)


def test_without_turnstile_v1beta2_works_and_v1beta1_reads_fail_with_a_conversion_error(
    cluster: LocalCluster, turnstile_down: None
) -> None:
    body = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "no-turnstile"}, "spec": {"cohortName": "c"}}
    created = cluster.kubectl("create", "-f", "-", input=json.dumps(body), check=False)
    try:
        assert created.returncode == 0, created.stderr
        patched = cluster.kubectl(
            "patch",
            "clusterqueues.v1beta2.kueue.x-k8s.io",
            "no-turnstile",
            "--type=merge",
            "-p",
            '{"spec": {"stopPolicy": "Hold"}}',
            check=False,
        )
        assert patched.returncode == 0, patched.stderr
        assert get(cluster, "clusterqueues", "no-turnstile", "v1beta2")["spec"]["stopPolicy"] == "Hold"

        as_v1 = cluster.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "no-turnstile", check=False)
        wpc = cluster.kubectl("get", "workloadpriorityclasses.v1beta1.kueue.x-k8s.io", check=False)

        assert as_v1.returncode != 0
        assert "conversion webhook for kueue.x-k8s.io/v1beta2, Kind=ClusterQueue failed" in as_v1.stderr
        assert wpc.returncode == 0, wpc.stderr  # no webhook for the kinds whose versions are the same
    finally:
        cluster.kubectl("delete", "clusterqueue", "no-turnstile", "--ignore-not-found", "--wait=false", check=False)
