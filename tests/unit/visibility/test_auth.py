"""Who the front proxy vouches for, and SubjectAccessReviews asked once per question within their lifetime."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from webhook.kube.resources import SUBJECT_ACCESS_REVIEW, Resource
from webhook.visibility.auth import (
    Attributes,
    FrontProxy,
    Identity,
    NotConfigured,
    SubjectAccessReviewer,
    common_name,
    front_proxy_from_config_map,
    identify,
)

TRUST = FrontProxy(client_ca_pem="PEM", allowed_names=("front-proxy-client",))
HEADERS = [("X-Remote-User", "alice"), ("X-Remote-Group", "devs"), ("X-Remote-Group", "system:authenticated")]


def test_the_front_proxy_vouches_for_the_user_and_groups() -> None:
    who = identify(dict(HEADERS), peer_cn="front-proxy-client", trust=TRUST, all_headers=HEADERS)
    assert who == Identity("alice", ("devs", "system:authenticated"))


@pytest.mark.parametrize(
    "peer_cn", [pytest.param(None, id="no-client-certificate"), pytest.param("mallory", id="name-not-allowed")]
)
def test_headers_without_the_front_proxy_certificate_count_for_nothing(peer_cn: str | None) -> None:
    assert identify(dict(HEADERS), peer_cn=peer_cn, trust=TRUST, all_headers=HEADERS) is None


def test_no_user_header_is_no_identity() -> None:
    assert identify({}, peer_cn="front-proxy-client", trust=TRUST) is None


def test_common_name_from_ssl_peercert() -> None:
    peercert = {"subject": ((("organizationName", "x"),), (("commonName", "front-proxy-client"),))}
    assert common_name(peercert) == "front-proxy-client"
    assert common_name({}) is None


def test_trust_read_from_the_api_servers_config_map() -> None:
    trust = front_proxy_from_config_map(
        {
            "data": {
                "requestheader-client-ca-file": "-----BEGIN CERTIFICATE-----",
                "requestheader-allowed-names": '["front-proxy-client"]',
                "requestheader-username-headers": '["X-Remote-User"]',
                "requestheader-group-headers": '["X-Remote-Group"]',
                "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
            }
        }
    )
    assert trust.allowed_names == ("front-proxy-client",)
    assert trust.username_headers == ("X-Remote-User",)
    with pytest.raises(NotConfigured, match="aggregation layer"):
        front_proxy_from_config_map({"data": {"client-ca-file": "x"}})


class ReviewingKube:
    """Our Kube protocol's ``create``, answering SubjectAccessReviews: only ``alice`` may."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []

    async def create(self, resource: Resource, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        assert resource == SUBJECT_ACCESS_REVIEW
        self.reviews.append(body)
        return body | {"status": {"allowed": body["spec"]["user"] == "alice", "reason": "rbac"}}


WHAT = Attributes("get", "visibility.kueue.x-k8s.io", "v1beta2", "localqueues", "pendingworkloads", "lq", "team")


def test_reviews_are_asked_with_the_request_attributes_and_remembered() -> None:
    kube = ReviewingKube()
    clock = [0.0]
    reviewer = SubjectAccessReviewer(kube, ttl=10, clock=lambda: clock[0])  # type: ignore[arg-type]

    async def ask(user: str) -> bool:
        return (await reviewer.allowed(Identity(user, ("g",)), WHAT))[0]

    assert asyncio.run(ask("alice")) is True
    assert asyncio.run(ask("bob")) is False
    assert asyncio.run(ask("alice")) is True
    assert len(kube.reviews) == 2  # alice's second answer came from memory
    assert kube.reviews[0]["spec"]["resourceAttributes"] == {
        "verb": "get",
        "group": "visibility.kueue.x-k8s.io",
        "version": "v1beta2",
        "resource": "localqueues",
        "subresource": "pendingworkloads",
        "name": "lq",
        "namespace": "team",
    }
    clock[0] = 11.0
    asyncio.run(ask("alice"))
    assert len(kube.reviews) == 3  # expired: asked again


def test_forbidden_message_names_the_scope() -> None:
    assert WHAT.describe().endswith('in the namespace "team"')
    cluster_scoped = Attributes("get", "g", "v", "clusterqueues", "pendingworkloads", "cq")
    assert cluster_scoped.describe().endswith("at the cluster scope")
