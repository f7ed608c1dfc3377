"""The /convert route: ConversionReview v1 in, converted objects out in request order, uid echoed, failures named."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from webhook.admission.options import AdmissionOptions
from webhook.admission.routes import MAX_BODY_BYTES, Readiness, build_app
from webhook.admission.view import StaticView

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
V1, V2 = "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"


@pytest.fixture
async def client(aiohttp_client: ClientFactory) -> TestClient[Any, Any]:
    app = build_app(view=StaticView(), options=AdmissionOptions(), readiness=Readiness(tls_serving=True))
    return await aiohttp_client(app)


def cluster_queue(name: str, cohort: str) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {"cohort": cohort}}


def review(objects: list[Any], desired: str = V2, uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002") -> bytes:
    request = {"uid": uid, "desiredAPIVersion": desired, "objects": objects}
    return orjson.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request})


async def post(client: TestClient[Any, Any], body: bytes) -> tuple[int, Any]:
    resp = await client.post("/convert", data=io.BytesIO(body))
    return resp.status, await resp.json()


async def test_objects_come_back_converted_in_request_order_with_the_uid(client: TestClient[Any, Any]) -> None:
    objects = [cluster_queue(f"cq-{i}", f"cohort-{i}") for i in range(5)]

    status, answer = await post(client, review(objects, uid="abc"))

    assert status == 200
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert (response["uid"], response["result"]) == ("abc", {"status": "Success"})
    assert [(o["apiVersion"], o["metadata"]["name"], o["spec"]) for o in response["convertedObjects"]] == [
        (V2, f"cq-{i}", {"cohortName": f"cohort-{i}"}) for i in range(5)
    ]


async def test_one_bad_object_fails_the_review_and_names_it(client: TestClient[Any, Any]) -> None:
    objects = [cluster_queue("fine", "c"), {"apiVersion": V1, "kind": "Topology", "metadata": {"name": "x"}}]

    status, answer = await post(client, review(objects, uid="u1"))

    assert status == 200
    response = answer["response"]
    assert response["uid"] == "u1"
    assert response["convertedObjects"] == []
    assert response["result"]["status"] == "Failure"
    assert "request.objects[1]" in response["result"]["message"]
    assert "Topology" in response["result"]["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(review([], desired="kueue.x-k8s.io/v9"), "cannot convert to", id="unknown-desired-version"),
        pytest.param(review(["not-an-object"]), "request.objects[0] is not an object", id="object-not-a-map"),
        pytest.param(
            orjson.dumps(
                {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {"uid": "u"}}
            ),
            "expected apiVersion apiextensions.k8s.io/v1",
            id="old-review-version",
        ),
        pytest.param(
            orjson.dumps(
                {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "ConversionReview",
                    "request": {"uid": "u", "desiredAPIVersion": V2},
                }
            ),
            "request.objects must be a list",
            id="no-objects",
        ),
    ],
)
async def test_a_review_that_cannot_be_answered_is_a_failure_result(
    client: TestClient[Any, Any], body: bytes, message: str
) -> None:
    status, answer = await post(client, body)

    assert status == 200
    assert answer["response"]["result"]["status"] == "Failure"
    assert message in answer["response"]["result"]["message"]
    assert answer["response"]["uid"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{not json", id="garbage"),
        pytest.param(b"", id="empty"),
        pytest.param(orjson.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}), id="no-uid"),
    ],
)
async def test_a_body_without_a_uid_to_echo_is_400(client: TestClient[Any, Any], body: bytes) -> None:
    status, answer = await post(client, body)

    assert status == 400
    assert answer["reason"]


async def test_a_conversion_may_be_larger_than_an_admission_review(client: TestClient[Any, Any]) -> None:
    big = cluster_queue("big", "c") | {"metadata": {"name": "big", "annotations": {"a": "x" * MAX_BODY_BYTES}}}

    status, answer = await post(client, review([big]))

    assert status == 200
    assert answer["response"]["result"] == {"status": "Success"}
    admission = await client.post("/validate/batch/v1/jobs", data=io.BytesIO(b" " * (MAX_BODY_BYTES + 1)))
    assert admission.status == 413
