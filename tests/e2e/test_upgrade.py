"""Upgrading in place from the v1beta1-only CRDs loses nothing: admissions, running Jobs and quota accounting.

A cluster of its own (the shared one has today's CRDs) gets the previous CRDs (tests/fixtures/crds-v1beta1-only,
v1beta1 the only and storage version) and the state the previous Turnstile leaves behind, stored as v1beta1: a
ClusterQueue in a cohort, a LocalQueue with its old ``flavorUsage`` status, two Jobs running (released with the
flavor's node labels) and their admitted Workloads. No Turnstile runs while that state is written: it is built
with Turnstile's own builders (``workload_for``, ``admitted``, ``released``) and converted to v1beta1, which is
what the previous version wrote. Then, as the README's upgrade steps say: apply the new CRDs, start Turnstile,
run ``turnstile migrate-storage``. Afterwards every object is stored as v1beta2 (the API server reads them all
with the conversion webhook unreachable), ``storedVersions`` is ``[v1beta2]``, no Workload lost its admission, no
Job was suspended, and the quota the two held is counted exactly once (a Job that fits only if it is, runs; one
more that would not fit, waits).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kube import eventually, get, is_true, job
from webhook.api.conversion import V1BETA1, convert
from webhook.api.views import ObjectView, WorkloadRecord
from webhook.jobs import batch_job
from webhook.jobs import workload as wl_life
from webhook.jobs.naming import job_workload_name
from webhook.jobs.podset import podset_infos
from webhook.local.cluster import REPO_ROOT, ClusterError, LocalCluster
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

OLD_CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds-v1beta1-only"
NEW_CRDS = REPO_ROOT / "manifests" / "crds"
PLURALS = ("resourceflavors", "workloadpriorityclasses", "clusterqueues", "localqueues", "workloads")
CRDS = [f"{p}.kueue.x-k8s.io" for p in PLURALS]
NS, CQ, FLAVOR = "upgrade", "upgrade-cq", "upgrade-flavor"
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

JSON = dict[str, Any]


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster started with the previous CRDs instead of today's. (It used to start with today's and delete them
    first: twice in CI that deletion of five empty CRDs did not finish within 120 s.)"""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path_factory.getbasetemp()
    local = LocalCluster(Path(base) / f"turnstile-upgrade-{os.getpid()}", crds=OLD_CRDS)
    try:
        local.start()
    except ClusterError:  # a free port taken by another process between choosing it and binding: once more
        local.stop()
        local = LocalCluster(Path(base) / f"turnstile-upgrade-{os.getpid()}-again", crds=OLD_CRDS)
        local.start()
    try:
        yield local
    finally:
        local.stop()


def _create(cluster: LocalCluster, obj: JSON) -> JSON:
    done = cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj))
    return dict(json.loads(done.stdout))


def _previous_turnstile_state(cluster: LocalCluster) -> list[str]:
    """What the previous Turnstile leaves behind (two admitted, running Jobs), written as v1beta1; the Job names."""
    cluster.kubectl("create", "namespace", NS)
    flavor = {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
    flavor["spec"] = {"nodeLabels": {"pool": "upgrade"}}
    quota = {"name": "cpu", "nominalQuota": "4"}
    group = {"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [quota]}]}
    cq = {"apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": CQ}}
    cq["spec"] = {"namespaceSelector": {}, "cohort": "upgraded", "resourceGroups": [group]}
    lq = {"apiVersion": V1BETA1, "kind": "LocalQueue", "metadata": {"name": "queue", "namespace": NS}}
    lq["spec"] = {"clusterQueue": CQ}
    for obj in (flavor, cq, lq):
        _create(cluster, obj)
    # Resources name their version: kubectl's discovery cache may still hold the CRDs the fixture replaced.
    usage = [{"name": FLAVOR, "resources": [{"name": "cpu", "total": "2"}]}]
    lq_status = {"admittedWorkloads": 2, "reservingWorkloads": 2, "pendingWorkloads": 0, "flavorUsage": usage}
    cluster.kubectl(
        "patch", "localqueues.v1beta1.kueue.x-k8s.io", "queue", "-n", NS, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": lq_status}),
    )  # fmt: skip

    names = []
    for name in ("old-a", "old-b"):
        body = job(NS, name, queue="queue", requests={"cpu": "1"})
        body["spec"]["suspend"] = True
        body["metadata"]["annotations"] = {"turnstile.x-k8s.io/workload-name": job_workload_name(NS, name)}
        created = _create(cluster, body)
        workload = convert(batch_job.workload_for(created, priority=0), V1BETA1)
        stored = _create(cluster, workload)
        admission = {
            "clusterQueue": CQ,
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": FLAVOR}, "resourceUsage": {"cpu": "1"}, "count": 1}
            ],
        }
        admitted = wl_life.admitted(stored, admission, now=NOW)
        status = convert(admitted, V1BETA1)["status"]
        status["accumulatedPastExexcutionTimeSeconds"] = 5
        cluster.kubectl(
            "patch", "workloads.v1beta1.kueue.x-k8s.io", stored["metadata"]["name"], "-n", NS,
            "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
        )  # fmt: skip
        infos = podset_infos(WorkloadRecord.of(admitted), {FLAVOR: ObjectView.of(flavor)})
        released = batch_job.released(get(cluster, "job", name, NS), infos)
        cluster.kubectl("replace", "-f", "-", input=json.dumps(released))
        names.append(name)
    return names


def _stored_versions(cluster: LocalCluster) -> dict[str, list[str]]:
    crds = json.loads(cluster.kubectl("get", "crd", *CRDS, "-o", "json").stdout)["items"]
    return {c["metadata"]["name"]: c["status"]["storedVersions"] for c in crds}


def _workloads(cluster: LocalCluster) -> dict[str, JSON]:
    listed = json.loads(cluster.kubectl("get", "workloads.v1beta2.kueue.x-k8s.io", "-n", NS, "-o", "json").stdout)
    return {w["metadata"]["name"]: w for w in listed["items"]}


@pytest.mark.timeout(240)
def test_upgrade_in_place_keeps_admissions_running_jobs_and_quota(old_cluster: LocalCluster, tmp_path: Path) -> None:
    cluster = old_cluster
    # 1. The previous Turnstile's state, stored as v1beta1.
    names = _previous_turnstile_state(cluster)
    generations = {n: get(cluster, "job", n, NS)["metadata"]["generation"] for n in names}
    assert all(get(cluster, "job", n, NS)["spec"]["suspend"] is False for n in names)
    assert set(map(tuple, _stored_versions(cluster).values())) == {("v1beta1",)}

    # 2. The new CRDs: v1beta2 becomes the storage version, the v1beta1 objects stay as they are in etcd.
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(NEW_CRDS))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", *CRDS)
    assert set(map(tuple, _stored_versions(cluster).values())) == {("v1beta1", "v1beta2")}

    # 3. Turnstile (re)started: it reads everything as v1beta2, converting through its own webhook.
    turnstile = LocalTurnstile(cluster, tmp_path / "turnstile")
    turnstile.start()
    try:
        workloads = _workloads(cluster)
        assert len(workloads) == 2
        for w in workloads.values():
            assert is_true(w, "Admitted"), w["status"]
            assert w["status"]["accumulatedPastExecutionTimeSeconds"] == 5
        lq = get(cluster, "localqueues.v1beta2.kueue.x-k8s.io", "queue", NS)
        assert "flavorUsage" not in lq.get("status", {})
        eventually(
            lambda: (get(cluster, "clusterqueue", CQ).get("status") or {}).get("admittedWorkloads") == 2,
            what="Turnstile to count the two admitted Workloads",
        )

        # 4. turnstile migrate-storage: every object rewritten, storedVersions [v1beta2].
        migrated = subprocess.run(
            [sys.executable, "-m", "webhook", "migrate-storage", f"--kubeconfig={cluster.kubeconfig}"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert migrated.returncode == 0, migrated.stderr
        assert "Workload: 2 rewritten" in migrated.stdout
        assert "ClusterQueue: 1 rewritten" in migrated.stdout
        assert set(map(tuple, _stored_versions(cluster).values())) == {("v1beta2",)}

        # 5. Stored as v1beta2 for real: with the conversion webhook unreachable, v1beta2 reads still work.
        dead = {"url": "https://127.0.0.1:1/convert", "service": None}
        for crd in CRDS[2:]:
            cluster.kubectl(
                "patch", "crd", crd, "--type=merge",
                "-p", json.dumps({"spec": {"conversion": {"webhook": {"clientConfig": dead}}}}),
            )  # fmt: skip
        for plural in PLURALS:
            read = cluster.kubectl("get", f"{plural}.v1beta2.kueue.x-k8s.io", "-A", "-o", "name", check=False)
            assert read.returncode == 0, f"{plural}: {read.stderr}"
        assert cluster.kubectl("get", "workloads.v1beta1.kueue.x-k8s.io", "-A", check=False).returncode != 0
        turnstile.register_conversion(turnstile.ca_pem, force=True)

        # 6. Nothing lost: still admitted, Jobs never suspended (a suspension bumps the generation), quota once.
        for w in _workloads(cluster).values():
            assert is_true(w, "Admitted")
        for n in names:
            current = get(cluster, "job", n, NS)
            assert (current["spec"]["suspend"], current["metadata"]["generation"]) == (False, generations[n])
        _create(cluster, job(NS, "fits-exactly", queue="queue", requests={"cpu": "2"}))
        eventually(
            lambda: get(cluster, "job", "fits-exactly", NS)["spec"].get("suspend") is False,
            what="a Job of the 2 free CPUs to run",
        )
        _create(cluster, job(NS, "one-too-many", queue="queue", requests={"cpu": "1"}))
        waiting = eventually(
            lambda: (
                (w := _workloads(cluster).get(job_workload_name(NS, "one-too-many")))
                and (w.get("status") or {}).get("conditions")
                and w
            ),
            what="the last Job's Workload to be evaluated",
        )
        assert not is_true(waiting, "QuotaReserved")
        assert get(cluster, "job", "one-too-many", NS)["spec"]["suspend"] is True
        cq_status = eventually(
            lambda: (s := get(cluster, "clusterqueue", CQ).get("status") or {}).get("admittedWorkloads") == 3 and s,
            what="the ClusterQueue to count three admitted Workloads",
        )
        assert cq_status["flavorsUsage"][0]["resources"][0]["total"] == "4"
    finally:
        turnstile.stop()
