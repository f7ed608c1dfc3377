"""tests.kubeapi resolves resource names as kubectl does, from an aggregated discovery document."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kubeapi import DISCOVERY, KubeApi


def _resource(plural: str, kind: str, *, singular: str, scope: str = "Namespaced", short: tuple[str, ...] = ()) -> Any:
    return {
        "resource": plural,
        "responseKind": {"group": "", "version": "", "kind": kind},
        "scope": scope,
        "singularResource": singular,
        "shortNames": list(short),
    }


CORE = {
    "items": [
        {
            "metadata": {"name": ""},
            "versions": [
                {
                    "version": "v1",
                    "resources": [
                        _resource("pods", "Pod", singular="pod", short=("po",)),
                        _resource("events", "Event", singular="event", short=("ev",)),
                        _resource("namespaces", "Namespace", singular="namespace", scope="Cluster"),
                    ],
                }
            ],
        }
    ]
}
GROUPS = {
    "items": [
        {
            "metadata": {"name": "events.k8s.io"},
            "versions": [{"version": "v1", "resources": [_resource("events", "Event", singular="event")]}],
        },
        {
            "metadata": {"name": "kueue.x-k8s.io"},
            "versions": [
                {
                    "version": "v1beta2",
                    "resources": [
                        _resource("workloads", "Workload", singular="workload", short=("wl",)),
                        _resource("clusterqueues", "ClusterQueue", singular="clusterqueue", scope="Cluster"),
                    ],
                },
                {"version": "v1beta1", "resources": [_resource("workloads", "Workload", singular="workload")]},
            ],
        },
    ]
}


class _Discovery:
    """Answers the two discovery reads (counting them) and records every other request."""

    def __init__(self) -> None:
        self.groups: dict[str, Any] = {"items": []}
        self.reads = 0
        self.requests: list[tuple[str, str, Any, str]] = []

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "", accept: str = "") -> Any:
        if path in ("/api", "/apis"):
            assert accept == DISCOVERY
            self.reads += 1
            return CORE if path == "/api" else self.groups
        self.requests.append((method, path, body, content_type))
        return {"items": [{"metadata": {"name": "x"}}]}

    def get(self, path: str) -> Any:
        return self.request("GET", path)


@pytest.fixture
def discovery() -> _Discovery:
    found = _Discovery()
    found.groups = GROUPS
    return found


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("pod", "/api/v1/namespaces/ns/pods/p"),
        ("po", "/api/v1/namespaces/ns/pods/p"),
        ("events", "/api/v1/namespaces/ns/events/p"),  # the core group before events.k8s.io, as kubectl
        ("events.events.k8s.io", "/apis/events.k8s.io/v1/namespaces/ns/events/p"),
        ("workload", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/p"),  # the preferred version
        ("wl", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/p"),
        ("workloads.kueue.x-k8s.io", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/p"),
        ("workloads.v1beta1.kueue.x-k8s.io", "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/p"),
        ("clusterqueue", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/p"),  # cluster-scoped: no namespace
        ("namespace", "/api/v1/namespaces/p"),
    ],
)
def test_a_name_resolves_to_the_path_kubectl_would_use(discovery: _Discovery, name: str, path: str) -> None:
    assert KubeApi(discovery).resource(name).path("p", "ns") == path  # type: ignore[arg-type]


def test_discovery_is_read_once_and_again_when_a_name_is_unknown(discovery: _Discovery) -> None:
    api = KubeApi(discovery)  # type: ignore[arg-type]
    discovery.groups = {"items": []}
    api.resource("pod")
    api.resource("pods")
    assert discovery.reads == 2  # /api and /apis, once
    discovery.groups = GROUPS  # a CRD installed since
    assert api.resource("workload").group == "kueue.x-k8s.io"
    assert discovery.reads == 4
    with pytest.raises(LookupError, match="nosuch"):
        api.resource("nosuch")


def test_list_items_carry_their_kind_and_apply_is_a_server_side_apply(discovery: _Discovery) -> None:
    api = KubeApi(discovery)  # type: ignore[arg-type]
    assert api.list("wl", "ns", selector="a=b") == [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "x"}}
    ]
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}}
    api.apply(queue)
    assert discovery.requests[-1] == (
        "PATCH",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq?fieldManager=kubectl&fieldValidation=Strict",
        queue,
        "application/apply-patch+yaml",
    )
    assert discovery.requests[0][1] == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads?labelSelector=a%3Db"
