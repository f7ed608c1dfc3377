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
