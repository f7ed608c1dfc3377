"""Our kueue.x-k8s.io CRDs at v1beta2 (the stored version), checked against the real kube-apiserver.

They install and are Established; every sample applies; the API server fills in Kueue's defaults; and the schema
(OpenAPI limits, enums, patterns and CEL rules) refuses what Kueue's API refuses, with a message a person can read.
Invalid objects are sent with `--dry-run=server`, so they go through the whole validation path and leave nothing
behind; objects that must really exist (immutability rules, printer columns) are deleted afterwards. No
Turnstile runs here, so v1beta1 (served through our conversion webhook) is covered by test_crds_v1beta1.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.local.cluster import LocalCluster

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "manifests" / "crds"
SAMPLES_DIR = REPO_ROOT / "manifests" / "samples"
GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"

Manifest = dict[str, Any]


# --------------------------------------------------------------------------------------------------------------
# Builders: each returns a valid object; a test changes one thing to make it invalid.


def resource_quota(
    name: str, nominal: int | str, *, borrowing: int | str | None = None, lending: int | str | None = None
) -> Manifest:
    quota: Manifest = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    if lending is not None:
        quota["lendingLimit"] = lending
    return quota


def flavor_quotas(name: str, *resources: Manifest) -> Manifest:
    return {"name": name, "resources": list(resources)}


def resource_group(covered: list[str], *flavors: Manifest) -> Manifest:
    return {"coveredResources": covered, "flavors": list(flavors)}


def cpu_memory_group(flavor: str = "default-flavor", *, cpu: int | str = 9, memory: str = "36Gi") -> Manifest:
    return resource_group(
        ["cpu", "memory"], flavor_quotas(flavor, resource_quota("cpu", cpu), resource_quota("memory", memory))
    )


def cluster_queue(
    name: str = "cq-under-test",
    *,
    groups: list[Manifest] | None = None,
    cohort: str | None = None,
    **spec: Any,
) -> Manifest:
    body: Manifest = {"namespaceSelector": {}, "resourceGroups": [cpu_memory_group()] if groups is None else groups}
    if cohort is not None:
        body["cohortName"] = cohort
    body.update(spec)
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def local_queue(name: str = "lq-under-test", *, cluster_queue: str = "cluster-queue", **spec: Any) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name},
        "spec": {"clusterQueue": cluster_queue, **spec},
    }


def resource_flavor(name: str = "rf-under-test", **spec: Any) -> Manifest:
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def priority_class(name: str = "wpc-under-test", **fields: Any) -> Manifest:
    return {"apiVersion": API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, **fields}


def pod_set(name: str | None = "main", *, count: int | None = 1, cpu: str = "1", **extra: Any) -> Manifest:
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        }
    }
    result: Manifest = {"template": template, **extra}
    if name is not None:
        result["name"] = name
    if count is not None:
        result["count"] = count
    return result


def workload(
    name: str = "wl-under-test", *, pod_sets: list[Manifest] | None = None, queue: str = "user-queue", **spec: Any
) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"queueName": queue, "podSets": [pod_set()] if pod_sets is None else pod_sets, **spec},
    }


def without(manifest: Manifest, *path: str | int) -> Manifest:
    """A copy of the manifest with the field at `path` removed."""
    result = copy.deepcopy(manifest)
    node: Any = result
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return result


def condition(type_: str, status: str = "True", reason: str | None = None) -> Manifest:
    return {
        "type": type_,
        "status": status,
        "reason": reason or type_,
        "message": f"{type_} for the test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


# --------------------------------------------------------------------------------------------------------------
# kubectl helpers


def unique(prefix: str) -> str:
    return f"{prefix}-{os.urandom(3).hex()}"


def dry_run_create(
    cluster: LocalCluster, manifest: Manifest, namespace: str = "default"
) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(manifest), check=False
    )


def create(cluster: LocalCluster, manifest: Manifest, namespace: str = "default") -> Manifest:
    done = cluster.kubectl("create", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(manifest))
    created: Manifest = json.loads(done.stdout)
    return created


def merge_patch(
    cluster: LocalCluster,
    resource: str,
    name: str,
    patch: Manifest,
    *,
    namespace: str = "default",
    status: bool = False,
) -> subprocess.CompletedProcess[str]:
    args = ["patch", resource, name, "-n", namespace, "--type=merge", "-p", json.dumps(patch)]
    if status:
        args.append("--subresource=status")
    return cluster.kubectl(*args, check=False)


def header(output: str) -> list[str]:
    """Column names of a `kubectl get` table (columns are separated by at least two spaces)."""
    first = output.splitlines()[0]
    return re.split(r"\s{2,}", first.strip())


@pytest.fixture
def cluster_scoped(cluster: LocalCluster) -> Iterator[list[tuple[str, str]]]:
    """Cluster-scoped objects a test creates, as (resource, name); deleted when it ends."""
    created: list[tuple[str, str]] = []
    yield created
    for resource, name in created:
        cluster.kubectl("delete", resource, name, "--ignore-not-found", "--wait=false", check=False)


# --------------------------------------------------------------------------------------------------------------
# The CRDs install


@pytest.mark.parametrize(
    ("plural", "scope", "short_names", "has_status"),
    [
        pytest.param("resourceflavors", "Cluster", ["flavor", "flavors", "rf"], False, id="resourceflavor"),
        pytest.param("clusterqueues", "Cluster", ["cq"], True, id="clusterqueue"),
        pytest.param("localqueues", "Namespaced", ["queue", "queues", "lq"], True, id="localqueue"),
        pytest.param("workloads", "Namespaced", ["kwl", "kueueworkload", "kueueworkloads"], True, id="workload"),
        pytest.param("workloadpriorityclasses", "Cluster", ["wpc"], False, id="workloadpriorityclass"),
        pytest.param("cohorts", "Cluster", ["co"], True, id="cohort"),
    ],
)
def test_crd_is_established_with_kueue_names(
    cluster: LocalCluster, plural: str, scope: str, short_names: list[str], has_status: bool
) -> None:
    crd = json.loads(cluster.kubectl("get", "crd", f"{plural}.{GROUP}", "-o", "json").stdout)

    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions.get("Established") == "True"
    assert conditions.get("NamesAccepted") == "True"
    assert crd["spec"]["scope"] == scope
    assert crd["status"]["acceptedNames"]["shortNames"] == short_names
    v1beta2, v1beta1 = crd["spec"]["versions"]
    assert (v1beta2["name"], v1beta2["served"], v1beta2["storage"]) == ("v1beta2", True, True)
    assert (v1beta1["name"], v1beta1["served"], v1beta1["storage"], v1beta1["deprecated"]) == (
        "v1beta1",
        True,
        False,
        True,
    )
    assert "use kueue.x-k8s.io/v1beta2" in v1beta1["deprecationWarning"]
    assert ("status" in v1beta2.get("subresources", {})) is has_status
    assert ("status" in v1beta1.get("subresources", {})) is has_status


@pytest.mark.parametrize(
    ("plural", "strategy"),
    [
        pytest.param("resourceflavors", "None", id="resourceflavor"),
        pytest.param("clusterqueues", "Webhook", id="clusterqueue"),
        pytest.param("localqueues", "Webhook", id="localqueue"),
        pytest.param("workloads", "Webhook", id="workload"),
        pytest.param("workloadpriorityclasses", "None", id="workloadpriorityclass"),
        pytest.param("cohorts", "Webhook", id="cohort"),
    ],
)
def test_crds_whose_versions_differ_convert_through_our_webhook(
    cluster: LocalCluster, plural: str, strategy: str
) -> None:
    crd = yaml.safe_load((CRD_DIR / f"{plural}.yaml").read_text())

    conversion = crd["spec"].get("conversion", {"strategy": "None"})

    assert conversion["strategy"] == strategy
    if strategy == "Webhook":
        assert conversion["webhook"]["conversionReviewVersions"] == ["v1"]
        assert conversion["webhook"]["clientConfig"]["service"] == {
            "namespace": "turnstile-system",
            "name": "turnstile-conversion-service",
            "path": "/convert",
            "port": 443,
        }


def test_crd_kustomization_builds_all_six(cluster: LocalCluster) -> None:
    on_disk = {p.name for p in CRD_DIR.glob("*.yaml") if p.name != "kustomization.yaml"}
    listed = yaml.safe_load((CRD_DIR / "kustomization.yaml").read_text())["resources"]

    built = list(yaml.safe_load_all(cluster.kubectl("kustomize", str(CRD_DIR)).stdout))

    assert set(listed) == on_disk
    assert sorted(d["metadata"]["name"] for d in built) == sorted(
        f"{plural}.{GROUP}"
        for plural in (
            "clusterqueues",
            "cohorts",
            "localqueues",
            "resourceflavors",
            "workloadpriorityclasses",
            "workloads",
        )
    )


# --------------------------------------------------------------------------------------------------------------
# The samples apply


@pytest.mark.parametrize(
    "sample",
    sorted(p.name for p in SAMPLES_DIR.glob("*.yaml") if p.name != "kustomization.yaml"),
)
def test_sample_passes_server_side_dry_run(cluster: LocalCluster, sample: str) -> None:
    done = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(SAMPLES_DIR / sample), check=False)
    assert done.returncode == 0, done.stderr
    assert "serverside-applied (server dry run)" in done.stdout


def test_sample_queue_objects_and_workload_apply_and_reapply_unchanged(cluster: LocalCluster) -> None:
    kustomize = ["-k", str(SAMPLES_DIR)]
    workload_file = ["-f", str(SAMPLES_DIR / "workload.yaml")]
    try:
        cluster.kubectl("apply", "--server-side", *kustomize)
        cluster.kubectl("apply", "--server-side", *workload_file)

        cq = json.loads(cluster.kubectl("get", "clusterqueue", "cluster-queue", "-o", "json").stdout)
        assert cq["spec"]["cohortName"] == "research"
        assert cq["spec"]["namespaceSelector"] == {}
        assert [g["coveredResources"] for g in cq["spec"]["resourceGroups"]] == [["cpu", "memory"], ["nvidia.com/gpu"]]
        lq = json.loads(cluster.kubectl("get", "localqueue", "user-queue", "-n", "default", "-o", "json").stdout)
        assert lq["spec"]["clusterQueue"] == "cluster-queue"
        spot = json.loads(cluster.kubectl("get", "resourceflavor", "spot", "-o", "json").stdout)
        assert spot["spec"]["nodeLabels"] == {"instance-type": "spot"}
        assert spot["spec"]["tolerations"][0]["effect"] == "NoSchedule"
        wpc = json.loads(cluster.kubectl("get", "workloadpriorityclass", "high-priority", "-o", "json").stdout)
        assert wpc["value"] == 10000

        wl = json.loads(cluster.kubectl("get", "workload", "training-run", "-n", "default", "-o", "json").stdout)
        workers, chief = wl["spec"]["podSets"]
        assert (workers["name"], workers["count"], chief["name"], chief["count"]) == ("workers", 4, "chief", 1)
        requests = workers["template"]["spec"]["containers"][0]["resources"]["requests"]
        assert requests == {"nvidia.com/gpu": 1, "cpu": "8", "memory": "16Gi"}
        # Fields our schema does not type are kept as written (preserve-unknown-fields).
        assert workers["template"]["spec"]["containers"][0]["args"] == ["pause"]
        assert wl["spec"]["priorityClassRef"] == {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high-priority",
        }
        assert (wl["spec"]["priority"], wl["spec"]["maximumExecutionTimeSeconds"]) == (10000, 7200)

        generation = wl["metadata"]["generation"]
        again = cluster.kubectl("apply", "--server-side", *kustomize).stdout
        assert "serverside-applied" in again
        cluster.kubectl("apply", "--server-side", *workload_file)
        wl = json.loads(cluster.kubectl("get", "workload", "training-run", "-n", "default", "-o", "json").stdout)
        assert wl["metadata"]["generation"] == generation
    finally:
        cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *workload_file, check=False)
        cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *kustomize, check=False)


# --------------------------------------------------------------------------------------------------------------
# Defaults


def test_cluster_queue_defaults(cluster: LocalCluster) -> None:
    done = dry_run_create(cluster, cluster_queue(fairSharing={}))
    assert done.returncode == 0, done.stderr
    spec = json.loads(done.stdout)["spec"]

    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["stopPolicy"] == "None"
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    assert spec["preemption"] == {
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
        "borrowWithinCohort": {"policy": "Never"},
    }
    assert spec["fairSharing"] == {"weight": 1}


def test_workload_defaults(cluster: LocalCluster) -> None:
    done = dry_run_create(cluster, workload(pod_sets=[pod_set(name=None, count=None)]))
    assert done.returncode == 0, done.stderr
    spec = json.loads(done.stdout)["spec"]

    [only] = spec["podSets"]
    assert (only["name"], only["count"]) == ("main", 1)
    assert spec["active"] is True
    assert "priorityClassRef" not in spec  # v1beta1's priorityClassSource default is gone with the field


def test_cluster_queue_without_spec_gets_the_defaults(cluster: LocalCluster) -> None:
    done = dry_run_create(cluster, without(cluster_queue(), "spec"))
    assert done.returncode == 0, done.stderr
    spec = json.loads(done.stdout)["spec"]

    assert (spec["queueingStrategy"], spec["stopPolicy"]) == ("BestEffortFIFO", "None")
    assert spec["preemption"]["withinClusterQueue"] == "Never"
    assert "namespaceSelector" not in spec  # unset selects no namespace; it must not be defaulted to {}


def test_local_queue_defaults(cluster: LocalCluster) -> None:
    done = dry_run_create(cluster, local_queue(fairSharing={}))
    assert done.returncode == 0, done.stderr
    spec = json.loads(done.stdout)["spec"]

    assert spec["stopPolicy"] == "None"
    assert spec["fairSharing"] == {"weight": 1}


# --------------------------------------------------------------------------------------------------------------
# Invalid objects are refused by the schema


def _groups(n: int) -> list[Manifest]:
    return [
        resource_group([f"example.com/r{i}"], flavor_quotas(f"flavor-{i}", resource_quota(f"example.com/r{i}", 1)))
        for i in range(n)
    ]


def _pod_sets(n: int) -> list[Manifest]:
    return [pod_set(f"set-{i}") for i in range(n)]


VALID = [
    pytest.param(cluster_queue(), id="cluster-queue"),
    pytest.param(cluster_queue(groups=_groups(16)), id="cluster-queue-16-groups"),
    pytest.param(
        cluster_queue(
            cohort="research",
            groups=[resource_group(["cpu"], flavor_quotas("a", resource_quota("cpu", "10", borrowing="2", lending=0)))],
        ),
        id="cluster-queue-limits-with-cohort",
    ),
    pytest.param(
        cluster_queue(
            cohort="research",
            groups=[
                resource_group(
                    ["cpu", "memory"],
                    flavor_quotas(
                        "a", resource_quota("cpu", "2", lending=2), resource_quota("memory", "1Gi", lending="1024Mi")
                    ),
                )
            ],
        ),
        id="cluster-queue-lending-limit-equal-to-nominal",
    ),
    pytest.param(
        cluster_queue(preemption={"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}),
        id="cluster-queue-borrow-preempt",
    ),
    pytest.param(local_queue(), id="local-queue"),
    pytest.param(resource_flavor(nodeLabels={f"k{i}": "v" for i in range(8)}), id="resource-flavor-8-labels"),
    pytest.param(
        resource_flavor(
            nodeTaints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}],
            tolerations=[
                {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                {"operator": "Exists"},
                {"key": "gone", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            ],
        ),
        id="resource-flavor-taints-tolerations",
    ),
    pytest.param(priority_class(value=100, description="d"), id="priority-class"),
    pytest.param(workload(), id="workload"),
    pytest.param(workload(pod_sets=_pod_sets(18)), id="workload-18-podsets"),
    pytest.param(workload(pod_sets=[pod_set(count=3, minCount=3)]), id="workload-mincount-equal-count"),
    pytest.param(
        workload(
            priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
            priority=5,
            maximumExecutionTimeSeconds=1,
        ),
        id="workload-priority",
    ),
    pytest.param(
        workload(
            priorityClassRef={"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "system-node-critical"},
            priority=5,
            preemptionGates=[{"name": "example.com/gate"}],
        ),
        id="workload-pod-priority-class-and-gate",
    ),
    pytest.param(
        cluster_queue(
            admissionChecksStrategy={"admissionChecks": [{"name": "prov", "onFlavors": ["default-flavor"]}]},
            concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}},
        ),
        id="cluster-queue-v1beta2-fields",
    ),
]


@pytest.mark.parametrize("manifest", VALID)
def test_valid_object_is_accepted(cluster: LocalCluster, manifest: Manifest) -> None:
    """The baselines the invalid cases below start from, and the edges they sit next to, are accepted."""
    done = dry_run_create(cluster, manifest)
    assert done.returncode == 0, done.stderr


INVALID = [
    # ClusterQueue
    pytest.param(
        cluster_queue(groups=[cpu_memory_group(cpu="-1")]),
        'nominalQuota: Invalid value: "-1": nominalQuota must be non-negative',
        id="negative-quota",
    ),
    pytest.param(
        cluster_queue(groups=[cpu_memory_group(cpu=-2)]),
        "nominalQuota: Invalid value: -2: nominalQuota must be non-negative",
        id="negative-quota-integer",
    ),
    pytest.param(
        cluster_queue(groups=[cpu_memory_group(cpu="lots")]),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota in body should match",
        id="quota-not-a-quantity",
    ),
    pytest.param(
        cluster_queue(
            cohort="c", groups=[resource_group(["cpu"], flavor_quotas("a", resource_quota("cpu", 1, borrowing="-1")))]
        ),
        "borrowingLimit must be non-negative",
        id="negative-borrowing-limit",
    ),
    pytest.param(
        cluster_queue(groups=_groups(17)),
        "spec.resourceGroups: Too many: 17: must have at most 16 items",
        id="more-than-16-resource-groups",
    ),
    pytest.param(
        cluster_queue(
            groups=[
                resource_group(
                    ["cpu"],
                    flavor_quotas("same", resource_quota("cpu", 1)),
                    flavor_quotas("same", resource_quota("cpu", 2)),
                )
            ]
        ),
        'spec.resourceGroups[0].flavors[1]: Duplicate value: {"name":"same"}',
        id="duplicate-flavor-in-group",
    ),
    pytest.param(
        cluster_queue(
            groups=[resource_group(["cpu"], flavor_quotas("a", resource_quota("cpu", 1), resource_quota("cpu", 2)))]
        ),
        'resources[1]: Duplicate value: {"name":"cpu"}',
        id="duplicate-resource-in-flavor",
    ),
    pytest.param(
        cluster_queue(groups=[resource_group(["cpu", "memory"], flavor_quotas("a", resource_quota("cpu", 1)))]),
        "flavors must have the same number of resources as the coveredResources",
        id="flavor-resources-fewer-than-covered",
    ),
    pytest.param(
        cluster_queue(
            groups=[
                resource_group(
                    ["cpu", "memory"],
                    flavor_quotas("a", resource_quota("memory", "1Gi"), resource_quota("cpu", 1)),
                )
            ]
        ),
        "each flavor must list the coveredResources, in the same order",
        id="flavor-resources-out-of-order",
    ),
    pytest.param(
        cluster_queue(groups=[resource_group(["cpu"], flavor_quotas("a", resource_quota("cpu", 4, borrowing=1)))]),
        "spec: Invalid value: borrowingLimit must be nil when cohortName is empty",
        id="borrowing-limit-without-cohort",
    ),
    pytest.param(
        cluster_queue(groups=[resource_group(["cpu"], flavor_quotas("a", resource_quota("cpu", 4, lending=1)))]),
        "spec: Invalid value: lendingLimit must be nil when cohortName is empty",
        id="lending-limit-without-cohort",
    ),
    pytest.param(
        cluster_queue(
            cohort="research",
            groups=[resource_group(["cpu"], flavor_quotas("a", resource_quota("cpu", 2, lending="2500m")))],
        ),
        "resources[0]: Invalid value: lendingLimit must be less than or equal to nominalQuota",
        id="lending-limit-above-nominal",
    ),
    pytest.param(
        cluster_queue(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}),
        "borrowWithinCohort.policy must be Never when reclaimWithinCohort is Never",
        id="borrow-preemption-without-reclaim",
    ),
    pytest.param(
        cluster_queue(flavorFungibility={"preference": "PreemptionOverBorrowing"}),
        "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
        id="fungibility-preference-without-try-next",
    ),
    pytest.param(
        cluster_queue(queueingStrategy="LIFO"),
        'spec.queueingStrategy: Unsupported value: "LIFO": supported values: "StrictFIFO", "BestEffortFIFO"',
        id="unknown-queueing-strategy",
    ),
    pytest.param(
        cluster_queue(cohort="Research_Team"),
        "spec.cohortName in body should match",
        id="cohort-not-a-dns-name",
    ),
    pytest.param(
        cluster_queue(admissionChecksStrategy={"admissionChecks": [{"name": ""}]}),
        "spec.admissionChecksStrategy.admissionChecks[0].name in body should be at least 1 chars long",
        id="admission-check-without-a-name",
    ),
    pytest.param(
        cluster_queue(flavorFungibility={"whenCanBorrow": "Borrow"}),
        'spec.flavorFungibility.whenCanBorrow: Unsupported value: "Borrow"',
        id="v1beta1-fungibility-alias",
    ),
    pytest.param(
        cluster_queue(concurrentAdmissionPolicy={"migration": {"mode": "Sometimes"}}),
        'spec.concurrentAdmissionPolicy.migration.mode: Unsupported value: "Sometimes"',
        id="unknown-migration-mode",
    ),
    pytest.param(
        without(cluster_queue(), "spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
        "nominalQuota: Required value",
        id="quota-without-nominal",
    ),
    pytest.param(
        cluster_queue(groups=[resource_group(["gpu cores"], flavor_quotas("a", resource_quota("gpu cores", 1)))]),
        "spec.resourceGroups[0].coveredResources[0] in body should match",
        id="resource-name-not-qualified",
    ),
    # LocalQueue
    pytest.param(
        local_queue(stopPolicy="Pause"),
        'spec.stopPolicy: Unsupported value: "Pause"',
        id="local-queue-unknown-stop-policy",
    ),
    # ResourceFlavor
    pytest.param(
        resource_flavor(nodeLabels={f"k{i}": "v" for i in range(9)}),
        "spec.nodeLabels: Too many: 9: must have at most 8 items",
        id="flavor-more-than-8-node-labels",
    ),
    pytest.param(
        resource_flavor(nodeTaints=[{"key": "k", "effect": "Sometimes"}]),
        "taint effect must be one of 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        id="flavor-taint-unknown-effect",
    ),
    pytest.param(
        resource_flavor(tolerations=[{"operator": "Equal", "value": "x"}]),
        "operator must be Exists when key is empty",
        id="flavor-toleration-no-key-not-exists",
    ),
    pytest.param(
        resource_flavor(tolerations=[{"key": "k", "operator": "Exists", "value": "x"}]),
        "value must be empty when operator is 'Exists'",
        id="flavor-toleration-exists-with-value",
    ),
    pytest.param(
        resource_flavor(
            tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
        ),
        "effect must be 'NoExecute' when tolerationSeconds is set",
        id="flavor-toleration-seconds-not-noexecute",
    ),
    pytest.param(
        resource_flavor(tolerations=[{"key": "k", "operator": "Gt", "value": "1"}]),
        "toleration operator must be 'Equal' (default) or 'Exists'",
        id="flavor-toleration-unknown-operator",
    ),
    pytest.param(
        resource_flavor(topologyName="datacenter"),
        "at least one nodeLabel is required when topologyName is set",
        id="flavor-topology-without-node-labels",
    ),
    # WorkloadPriorityClass
    pytest.param(without(priority_class(value=1), "value"), "value: Required value", id="priority-class-without-value"),
    # Workload
    pytest.param(
        workload(pod_sets=[]),
        "spec.podSets: Invalid value: 0: spec.podSets in body should have at least 1 items",
        id="workload-no-podsets",
    ),
    pytest.param(without(workload(), "spec", "podSets"), "spec.podSets: Required value", id="workload-podsets-missing"),
    pytest.param(without(workload(), "spec"), "spec: Required value", id="workload-without-spec"),
    pytest.param(
        workload(pod_sets=_pod_sets(19)),
        "spec.podSets: Too many: 19: must have at most 18 items",
        id="workload-more-than-18-podsets",
    ),
    pytest.param(
        workload(pod_sets=[pod_set("main"), pod_set("main")]),
        'spec.podSets[1]: Duplicate value: {"name":"main"}',
        id="workload-duplicate-podset",
    ),
    pytest.param(
        workload(pod_sets=[pod_set(count=2, minCount=3)]),
        "spec.podSets[0]: Invalid value: minCount should be positive and less or equal to count",
        id="workload-mincount-above-count",
    ),
    pytest.param(
        workload(pod_sets=[pod_set(count=2, minCount=0)]),
        "spec.podSets[0].minCount in body should be greater than or equal to 1",
        id="workload-mincount-zero",
    ),
    pytest.param(
        workload(pod_sets=[pod_set(count=-1)]),
        "spec.podSets[0].count in body should be greater than or equal to 0",
        id="workload-negative-count",
    ),
    pytest.param(
        workload(pod_sets=[pod_set("Workers")]),
        "spec.podSets[0].name in body should match",
        id="workload-podset-name-not-a-dns-label",
    ),
    pytest.param(
        workload(priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}),
        "priority should not be nil when priorityClassRef is set",
        id="workload-priority-class-without-priority",
    ),
    pytest.param(
        workload(
            priorityClassRef={"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass", "name": "x"}, priority=1
        ),
        "the scheduling.k8s.io group only has the PriorityClass kind",
        id="workload-priority-ref-kind-of-another-group",
    ),
    pytest.param(
        workload(priorityClassRef={"group": "kueue.x-k8s.io", "kind": "PriorityClass", "name": "x"}, priority=1),
        "the kueue.x-k8s.io group only has the WorkloadPriorityClass kind",
        id="workload-priority-ref-pod-kind-in-kueue-group",
    ),
    pytest.param(
        workload(preemptionGates=[{"name": ""}]),
        "spec.preemptionGates[0].name in body should be at least 1 chars long",
        id="workload-preemption-gate-without-a-name",
    ),
    pytest.param(
        workload(maximumExecutionTimeSeconds=0),
        "spec.maximumExecutionTimeSeconds in body should be greater than or equal to 1",
        id="workload-zero-execution-time",
    ),
    pytest.param(
        workload(priorityClassRef={"group": "example.com", "kind": "PriorityClass", "name": "x"}, priority=1),
        'spec.priorityClassRef.group: Unsupported value: "example.com"',
        id="workload-unknown-priority-group",
    ),
    pytest.param(
        workload(queue="User Queue"),
        "spec.queueName in body should match",
        id="workload-queue-not-a-dns-name",
    ),
    pytest.param(
        workload(pod_sets=[pod_set(cpu="one")]),
        "spec.podSets[0].template.spec.containers[0].resources.requests.cpu in body should match",
        id="workload-request-not-a-quantity",
    ),
    pytest.param(
        without(workload(), "spec", "podSets", 0, "template", "spec", "containers"),
        "spec.podSets[0].template.spec.containers: Required value",
        id="workload-template-without-containers",
    ),
]


@pytest.mark.parametrize(("manifest", "message"), INVALID)
def test_invalid_object_is_refused_with_a_readable_message(
    cluster: LocalCluster, manifest: Manifest, message: str
) -> None:
    done = dry_run_create(cluster, manifest)
    assert done.returncode != 0, f"accepted: {done.stdout[:500]}"
    assert "is invalid" in done.stderr
    assert message in done.stderr


# --------------------------------------------------------------------------------------------------------------
# Rules on updates (transition rules need a stored object)


def test_local_queue_cluster_queue_is_immutable(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, local_queue("team", cluster_queue="cq-one"), namespace)

    allowed = merge_patch(cluster, "localqueue", "team", {"spec": {"stopPolicy": "Hold"}}, namespace=namespace)
    assert allowed.returncode == 0, allowed.stderr
    refused = merge_patch(cluster, "localqueue", "team", {"spec": {"clusterQueue": "cq-two"}}, namespace=namespace)

    assert refused.returncode != 0
    assert 'spec.clusterQueue: Invalid value: "cq-two": clusterQueue is immutable' in refused.stderr
    stored = json.loads(cluster.kubectl("get", "lq", "team", "-n", namespace, "-o", "json").stdout)
    assert stored["spec"]["clusterQueue"] == "cq-one"


def _reserve_quota(cluster: LocalCluster, name: str, namespace: str, *, admitted: bool = False) -> None:
    conditions = [condition("QuotaReserved")]
    if admitted:
        conditions.append(condition("Admitted"))
    status = {
        "status": {
            "conditions": conditions,
            "admission": {
                "clusterQueue": "cluster-queue",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "1"}, "count": 1}
                ],
            },
        }
    }
    done = merge_patch(cluster, "workload", name, status, namespace=namespace, status=True)
    assert done.returncode == 0, done.stderr


def test_workload_queue_name_changes_until_quota_is_reserved(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, workload("job-a", queue="queue-one"), namespace)

    before = merge_patch(cluster, "workload", "job-a", {"spec": {"queueName": "queue-two"}}, namespace=namespace)
    assert before.returncode == 0, before.stderr
    _reserve_quota(cluster, "job-a", namespace)
    after = merge_patch(cluster, "workload", "job-a", {"spec": {"queueName": "queue-three"}}, namespace=namespace)

    assert after.returncode != 0
    assert "queueName is immutable while the workload has quota reserved" in after.stderr
    stored = json.loads(cluster.kubectl("get", "kwl", "job-a", "-n", namespace, "-o", "json").stdout)
    assert stored["spec"]["queueName"] == "queue-two"


def test_workload_execution_time_is_immutable_while_admitted(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, workload("job-b", maximumExecutionTimeSeconds=30), namespace)
    before = merge_patch(
        cluster, "workload", "job-b", {"spec": {"maximumExecutionTimeSeconds": 60}}, namespace=namespace
    )
    assert before.returncode == 0, before.stderr  # not admitted yet: the rule's guard does not hold
    _reserve_quota(cluster, "job-b", namespace, admitted=True)

    refused = merge_patch(
        cluster, "workload", "job-b", {"spec": {"maximumExecutionTimeSeconds": 120}}, namespace=namespace
    )

    assert refused.returncode != 0
    assert "maximumExecutionTimeSeconds is immutable while the workload is admitted" in refused.stderr


def test_reserved_workload_needs_one_assignment_per_podset(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, workload("job-c", pod_sets=[pod_set("a"), pod_set("b")]), namespace)
    status = {
        "status": {
            "conditions": [condition("QuotaReserved")],
            "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{"name": "a", "count": 1}]},
        }
    }

    not_reserved = copy.deepcopy(status)
    not_reserved["status"]["conditions"] = [condition("QuotaReserved", "False", reason="Pending")]
    accepted = merge_patch(cluster, "workload", "job-c", not_reserved, namespace=namespace, status=True)
    refused = merge_patch(cluster, "workload", "job-c", status, namespace=namespace, status=True)

    assert accepted.returncode == 0, accepted.stderr  # the count is checked only with quota reserved
    assert refused.returncode != 0
    assert "podSetAssignments must have the same number of podSets as the spec" in refused.stderr


def _with_topology(slices: list[Manifest]) -> Manifest:
    assignment = {"name": "main", "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "1"}, "count": 1}
    assignment["topologyAssignment"] = {"levels": ["rack", "kubernetes.io/hostname"], "slices": slices}
    return {
        "status": {
            "conditions": [condition("QuotaReserved")],
            "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [assignment]},
        }
    }


GOOD_SLICE: Manifest = {
    "domainCount": 2,
    "valuesPerLevel": [{"universal": "rack-1"}, {"individual": {"prefix": "node-", "roots": ["a", "b"]}}],
    "podCounts": {"individual": [1, 2]},
}


@pytest.mark.parametrize(
    ("slices", "message"),
    [
        pytest.param([GOOD_SLICE, {**GOOD_SLICE, "podCounts": {"universal": 3}}], None, id="valid-two-slices"),
        pytest.param(
            [{**GOOD_SLICE, "valuesPerLevel": [{"universal": "rack-1"}]}],
            "every slice must have one valuesPerLevel entry per level",
            id="values-per-level-short",
        ),
        pytest.param(
            [{**GOOD_SLICE, "podCounts": {"individual": [1]}}],
            "podCounts.individual must have domainCount items",
            id="pod-counts-short",
        ),
        pytest.param(
            [{**GOOD_SLICE, "valuesPerLevel": [{"universal": "r"}, {"individual": {"roots": ["a"]}}]}],
            "valuesPerLevel[].individual.roots must have domainCount items",
            id="roots-short",
        ),
        pytest.param(
            [{**GOOD_SLICE, "podCounts": {"universal": 1, "individual": [1, 1]}}],
            "exactly one of universal and individual must be set",
            id="pod-counts-both",
        ),
        pytest.param(
            [{**GOOD_SLICE, "valuesPerLevel": [{}, GOOD_SLICE["valuesPerLevel"][1]]}],
            "exactly one of universal and individual must be set",
            id="values-neither",
        ),
    ],
)
def test_topology_assignment_slices_follow_kueues_v1beta2_rules(
    cluster: LocalCluster, namespace: str, slices: list[Manifest], message: str | None
) -> None:
    create(cluster, workload("tas", queue="user-queue"), namespace)

    done = merge_patch(cluster, "workload", "tas", _with_topology(slices), namespace=namespace, status=True)

    if message is None:
        assert done.returncode == 0, done.stderr
        stored = json.loads(cluster.kubectl("get", "workload", "tas", "-n", namespace, "-o", "json").stdout)
        assert stored["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["slices"] == slices
    else:
        assert done.returncode != 0
        assert message in done.stderr


def test_workload_priority_class_ref_while_quota_is_reserved(cluster: LocalCluster, namespace: str) -> None:
    wpc = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "low"}
    create(cluster, workload("prio", priorityClassRef=wpc, priority=1), namespace)
    _reserve_quota(cluster, "prio", namespace)

    renamed = merge_patch(
        cluster, "workload", "prio", {"spec": {"priorityClassRef": {"name": "high"}}}, namespace=namespace
    )
    regrouped = merge_patch(
        cluster,
        "workload",
        "prio",
        {"spec": {"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass"}}},
        namespace=namespace,
    )
    removed = merge_patch(cluster, "workload", "prio", {"spec": {"priorityClassRef": None}}, namespace=namespace)

    assert renamed.returncode == 0, renamed.stderr  # a WorkloadPriorityClass may be renamed
    assert "priorityClassRef.group and priorityClassRef.kind are immutable" in regrouped.stderr
    assert "priorityClassRef cannot be added or removed while the workload has quota reserved" in removed.stderr


def test_workload_priority_class_ref_rules_hold_only_while_quota_is_reserved(
    cluster: LocalCluster, namespace: str
) -> None:
    pod_priority = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "batch"}
    create(cluster, workload("prio-pc", priorityClassRef=pod_priority, priority=1), namespace)

    def change(ref: Manifest | None) -> subprocess.CompletedProcess[str]:
        return merge_patch(cluster, "workload", "prio-pc", {"spec": {"priorityClassRef": ref}}, namespace=namespace)

    # No reservation yet: every rule's guard is false, so any change is let through.
    assert change({"name": "other"}).returncode == 0
    regrouped = change({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"})
    assert regrouped.returncode == 0, regrouped.stderr
    assert change(None).returncode == 0
    added = change(pod_priority)
    assert added.returncode == 0, added.stderr
    _reserve_quota(cluster, "prio-pc", namespace)

    renamed = change({"name": "other"})
    status_rewritten = merge_patch(
        cluster,
        "workload",
        "prio-pc",
        {"status": {"conditions": [condition("QuotaReserved")]}},
        namespace=namespace,
        status=True,
    )

    assert "priorityClassRef.name of a scheduling.k8s.io PriorityClass is immutable" in renamed.stderr
    assert status_rewritten.returncode == 0, status_rewritten.stderr  # a status write passes every rule
    stored = json.loads(cluster.kubectl("get", "kwl", "prio-pc", "-n", namespace, "-o", "json").stdout)
    assert stored["spec"]["priorityClassRef"] == pod_priority


def test_flavor_topology_name_is_immutable(cluster: LocalCluster, cluster_scoped: list[tuple[str, str]]) -> None:
    name = unique("tas-flavor")
    create(cluster, resource_flavor(name, nodeLabels={"pool": "tas"}, topologyName="datacenter"))
    cluster_scoped.append(("resourceflavor", name))

    refused = merge_patch(cluster, "resourceflavor", name, {"spec": {"topologyName": "rack"}})

    assert refused.returncode != 0
    assert "topologyName is immutable once set" in refused.stderr


# --------------------------------------------------------------------------------------------------------------
# Printer columns


def test_cluster_queue_printer_columns(cluster: LocalCluster, cluster_scoped: list[tuple[str, str]]) -> None:
    name = unique("printed-cq")
    create(cluster, cluster_queue(name, cohort="printing"))
    cluster_scoped.append(("clusterqueue", name))

    narrow = cluster.kubectl("get", "cq", name).stdout
    wide = cluster.kubectl("get", "cq", name, "-o", "wide").stdout

    assert header(narrow) == ["NAME", "COHORT", "PENDING WORKLOADS"]
    assert header(wide) == ["NAME", "COHORT", "STRATEGY", "PENDING WORKLOADS", "ADMITTED WORKLOADS"]
    assert re.split(r"\s+", wide.splitlines()[1].strip()) == [name, "printing", "BestEffortFIFO"]


def test_local_queue_printer_columns(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, local_queue("printed", cluster_queue="cluster-queue"), namespace)

    out = cluster.kubectl("get", "lq", "-n", namespace).stdout

    assert header(out) == ["NAME", "CLUSTERQUEUE", "PENDING WORKLOADS", "ADMITTED WORKLOADS"]
    assert re.split(r"\s+", out.splitlines()[1].strip()) == ["printed", "cluster-queue"]


def test_workload_printer_columns(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, workload("printed", queue="user-queue"), namespace)
    _reserve_quota(cluster, "printed", namespace, admitted=True)

    out = cluster.kubectl("get", "kwl", "-n", namespace).stdout

    assert header(out) == ["NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED", "AGE"]
    assert re.split(r"\s+", out.splitlines()[1].strip())[:4] == ["printed", "user-queue", "cluster-queue", "True"]


def test_workload_priority_class_printer_columns(cluster: LocalCluster, cluster_scoped: list[tuple[str, str]]) -> None:
    name = unique("printed-wpc")
    create(cluster, priority_class(name, value=4242))
    cluster_scoped.append(("workloadpriorityclass", name))

    out = cluster.kubectl("get", "wpc", name).stdout

    assert header(out) == ["NAME", "VALUE"]
    assert re.split(r"\s+", out.splitlines()[1].strip()) == [name, "4242"]


# --------------------------------------------------------------------------------------------------------------
# Round trips: what Turnstile and Kueue write comes back unchanged

FULL_POD_TEMPLATE: Manifest = {
    "metadata": {"labels": {"app": "trainer"}, "annotations": {"example.com/note": "kept"}},
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "trainer",
                "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                "args": ["pause"],
                "env": [{"name": "EPOCHS", "value": "3"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 1}},
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
            }
        ],
        "initContainers": [
            {
                "name": "sidecar",
                "image": "busybox",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "50m"}},
            }
        ],
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        },
        "nodeSelector": {"instance-type": "spot"},
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        "priorityClassName": "batch-low",
        "runtimeClassName": "gvisor",
        "overhead": {"cpu": "250m"},
        "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        "securityContext": {"runAsNonRoot": True},
        "terminationGracePeriodSeconds": 30,
    },
}


def test_workload_template_keeps_a_full_pod_spec(cluster: LocalCluster) -> None:
    manifest = workload(pod_sets=[{"name": "main", "count": 2, "template": FULL_POD_TEMPLATE}])

    done = dry_run_create(cluster, manifest)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["spec"]["podSets"][0]["template"] == FULL_POD_TEMPLATE


def test_workload_status_as_kueue_writes_it_round_trips(cluster: LocalCluster, namespace: str) -> None:
    create(cluster, workload("job-d", pod_sets=[pod_set("main", count=3)]), namespace)
    status: Manifest = {
        "conditions": [
            condition("QuotaReserved"),
            condition("Admitted"),
            condition("Evicted", "False", reason="QuotaReserved"),
        ],
        "admission": {
            "clusterQueue": "cluster-queue",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "on-demand", "memory": "on-demand"},
                    "resourceUsage": {"cpu": "3", "memory": "600Mi"},
                    "count": 3,
                }
            ],
        },
        "admissionChecks": [
            {
                "name": "prov",
                "state": "Ready",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "podSetUpdates": [{"name": "main", "nodeSelector": {"pool": "a"}}],
            }
        ],
        "requeueState": {"count": 2, "requeueAt": "2026-01-01T00:05:00Z"},
        "reclaimablePods": [{"name": "main", "count": 1}],
        "resourceRequests": [{"name": "main", "resources": {"cpu": "1"}}],
        "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]},
        "accumulatedPastExecutionTimeSeconds": 42,
        "preemptionGates": [
            {"name": "example.com/gate", "position": "Open", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ],
    }

    done = merge_patch(cluster, "workload", "job-d", {"status": status}, namespace=namespace, status=True)

    assert done.returncode == 0, done.stderr
    stored = json.loads(cluster.kubectl("get", "workload", "job-d", "-n", namespace, "-o", "json").stdout)
    assert stored["status"] == status


def test_cluster_queue_status_round_trips(cluster: LocalCluster, cluster_scoped: list[tuple[str, str]]) -> None:
    name = unique("status-cq")
    create(cluster, cluster_queue(name))
    cluster_scoped.append(("clusterqueue", name))
    usage = [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "3", "borrowed": "0"}]}]
    status: Manifest = {
        "conditions": [condition("Active", reason="Ready")],
        "flavorsReservation": usage,
        "flavorsUsage": usage,
        "pendingWorkloads": 4,
        "reservingWorkloads": 1,
        "admittedWorkloads": 1,
    }

    done = merge_patch(cluster, "clusterqueue", name, {"status": status}, status=True)

    assert done.returncode == 0, done.stderr
    stored = json.loads(cluster.kubectl("get", "clusterqueue", name, "-o", "json").stdout)
    assert stored["status"] == status
    wide = cluster.kubectl("get", "cq", name, "-o", "wide").stdout
    assert re.split(r"\s+", wide.splitlines()[1].strip())[-2:] == ["4", "1"]
