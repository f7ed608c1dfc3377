import os
import pickle
import subprocess
import sys

import pytest

from webhook.kube import resources as r


@pytest.mark.parametrize(
    ("resource", "namespace", "name", "sub", "path"),
    [
        pytest.param(r.JOB, "ns", "j", "", "/apis/batch/v1/namespaces/ns/jobs/j", id="namespaced-object"),
        pytest.param(r.JOB, None, None, "", "/apis/batch/v1/jobs", id="all-namespaces"),
        pytest.param(r.POD, "ns", None, "", "/api/v1/namespaces/ns/pods", id="core-group"),
        pytest.param(r.NAMESPACE, None, "team-a", "", "/api/v1/namespaces/team-a", id="cluster-scoped"),
        pytest.param(
            r.WORKLOAD,
            "ns",
            "wl",
            "status",
            "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status",
            id="status-subresource",
        ),
        pytest.param(
            r.CLUSTER_QUEUE, None, "cq", "", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq", id="crd-cluster"
        ),
    ],
)
def test_paths(resource: r.Resource, namespace: str | None, name: str | None, sub: str, path: str) -> None:
    assert resource.path(namespace=namespace, name=name, subresource=sub) == path


def test_names_are_escaped() -> None:
    assert r.JOB.path(namespace="ns", name="a/b") == "/apis/batch/v1/namespaces/ns/jobs/a%2Fb"


def test_cluster_scoped_kind_refuses_a_namespace() -> None:
    with pytest.raises(ValueError, match="cluster-scoped"):
        r.NAMESPACE.path(namespace="x", name="y")


def test_api_version() -> None:
    assert r.POD.api_version == "v1"
    assert r.WORKLOAD.api_version == "kueue.x-k8s.io/v1beta2"
    assert r.LEASE.api_version == "coordination.k8s.io/v1"


def test_a_resource_hashes_and_compares_in_c() -> None:
    # It keys every store and work queue of the controller: no Python-level __hash__/__eq__ on that path.
    assert type(r.JOB).__hash__ is tuple.__hash__
    assert type(r.JOB).__eq__ is tuple.__eq__
    assert r.Resource("batch", "v1", "jobs", "Job", namespaced=True, has_status=True) == r.JOB
    assert {r.JOB: 1}[r.Resource("batch", "v1", "jobs", "Job", namespaced=True, has_status=True)] == 1
    assert r.JOB != r.POD
    assert str(r.JOB) == "jobs.batch"


def test_a_resource_pickled_to_a_process_with_other_string_hashes_keys_its_entries_there() -> None:
    # The webhook hands objects to worker processes; nothing hashed here may travel with a resource.
    program = (
        "import pickle, sys\n"
        "from webhook.kube import resources as r\n"
        "index = pickle.loads(sys.stdin.buffer.read())\n"
        "assert index[r.WORKLOAD] == 'workloads' and index[r.JOB] == 'jobs', index\n"
        "sys.stdout.buffer.write(pickle.dumps({r.LOCAL_QUEUE: 'localqueues'}))\n"
    )
    sent = pickle.dumps({r.WORKLOAD: "workloads", r.JOB: "jobs"})
    env = os.environ | {"PYTHONHASHSEED": str(hash("seed") % 1000 + 1)}
    done = subprocess.run(
        [sys.executable, "-c", program], input=sent, capture_output=True, env=env, check=True, timeout=60
    )
    assert pickle.loads(done.stdout)[r.LOCAL_QUEUE] == "localqueues"
