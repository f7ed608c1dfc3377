"""The HTTP routes: denials are 200, malformed reviews 400, oversized bodies 413, health and readiness."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.unit.admission.builders import make_job, make_pod, review_body
from webhook.admission.options import AdmissionOptions
from webhook.admission.routes import MAX_BODY_BYTES, Readiness, build_app
from webhook.admission.view import StaticView

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]


@pytest.fixture
def view() -> StaticView:
    return StaticView()


@pytest.fixture
async def client(aiohttp_client: ClientFactory, view: StaticView) -> TestClient[Any, Any]:
    app = build_app(view=view, options=AdmissionOptions(), readiness=Readiness(tls_serving=True))
    return await aiohttp_client(app)


async def test_mutation_is_a_patch(client: TestClient[Any, Any]) -> None:
    resp = await client.post("/mutate/batch/v1/jobs", data=orjson.dumps(review_body(make_job())))
    assert resp.status == 200
    answer = (await resp.json())["response"]
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"


async def test_denial_is_http_200_with_allowed_false(client: TestClient[Any, Any]) -> None:
    body = review_body(make_job(suspend=False), operation="UPDATE", old=make_job(suspend=True))
    resp = await client.post("/validate/batch/v1/jobs", data=orjson.dumps(body))
    assert resp.status == 200
    answer = (await resp.json())["response"]
    assert answer["allowed"] is False
    assert "spec.suspend" in answer["status"]["message"]


@pytest.mark.parametrize(
    ("path", "data"),
    [
        pytest.param("/mutate/batch/v1/jobs", b"{not json", id="garbage"),
        pytest.param("/mutate/batch/v1/jobs", orjson.dumps(review_body(make_pod())), id="pod-sent-to-job-path"),
        pytest.param("/validate/batch/v1/jobs", b"", id="empty-body"),
        pytest.param(
            "/validate/batch/v1/jobs",
            orjson.dumps(review_body({"metadata": {"labels": ["x"]}}, kind="Job")),
            id="labels-not-a-map",
        ),
    ],
)
async def test_malformed_review_is_400_with_a_reason(client: TestClient[Any, Any], path: str, data: bytes) -> None:
    resp = await client.post(path, data=data)
    assert resp.status == 400
    assert (await resp.json())["reason"]


async def test_body_over_3_mib_is_413(client: TestClient[Any, Any]) -> None:
    resp = await client.post("/validate/batch/v1/jobs", data=io.BytesIO(b" " * (MAX_BODY_BYTES + 1)))
    assert resp.status == 413


async def test_body_just_under_3_mib_is_read(client: TestClient[Any, Any]) -> None:
    job = make_job(annotations={"big": "x" * (MAX_BODY_BYTES - 2048)})
    resp = await client.post("/validate/batch/v1/jobs", data=io.BytesIO(orjson.dumps(review_body(job))))
    assert resp.status == 200


async def test_healthz(client: TestClient[Any, Any]) -> None:
    assert (await client.get("/healthz")).status == 200


async def test_readyz_waits_for_the_cache(client: TestClient[Any, Any], view: StaticView) -> None:
    view.is_synced = False
    resp = await client.get("/readyz")
    assert resp.status == 503
    assert "cache" in await resp.text()
    view.is_synced = True
    assert (await client.get("/readyz")).status == 200


async def test_readyz_waits_for_tls(aiohttp_client: ClientFactory) -> None:
    client = await aiohttp_client(build_app(view=StaticView(), options=AdmissionOptions()))
    resp = await client.get("/readyz")
    assert resp.status == 503
    assert "TLS" in await resp.text()


async def test_a_policy_bug_fails_closed_not_500(client: TestClient[Any, Any], view: StaticView) -> None:
    def broken(namespace: str, name: str) -> bool:
        raise RuntimeError("cache exploded")

    view.workload_is_admitted = broken  # type: ignore[method-assign]
    body = review_body(make_job(suspend=False), operation="UPDATE", old=make_job(suspend=True))
    resp = await client.post("/validate/batch/v1/jobs", data=orjson.dumps(body))
    assert resp.status == 200
    answer = (await resp.json())["response"]
    assert answer["allowed"] is False
    assert "internal error" in answer["status"]["message"]


async def test_every_review_is_observed_with_its_status(aiohttp_client: ClientFactory) -> None:
    seen: list[tuple[str, int]] = []
    app = build_app(
        view=StaticView(),
        options=AdmissionOptions(),
        readiness=Readiness(tls_serving=True),
        observe=lambda path, status, seconds: seen.append((path, status)) if seconds >= 0 else None,
    )
    client = await aiohttp_client(app)
    await client.post("/mutate/batch/v1/jobs", data=orjson.dumps(review_body(make_job())))
    await client.post("/mutate/batch/v1/jobs", data=b"{not json")
    await client.post("/mutate/batch/v1/jobs", data=io.BytesIO(b" " * (MAX_BODY_BYTES + 1)))
    await client.get("/healthz")
    assert seen == [("/mutate/batch/v1/jobs", 200), ("/mutate/batch/v1/jobs", 400), ("/mutate/batch/v1/jobs", 413)]


async def test_a_path_of_an_integration_that_is_off_allows_unchanged(client: TestClient[Any, Any]) -> None:
    # AdmissionOptions() has only batch/job on: a queue-labelled pod (a Job's pod) passes untouched.
    pod = make_pod()
    pod["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "q"
    resp = await client.post("/mutate/v1/pods", data=orjson.dumps(review_body(pod)))
    assert resp.status == 200
    answer = (await resp.json())["response"]
    assert answer["allowed"] is True
    assert "patch" not in answer


async def test_an_unknown_path_is_404(client: TestClient[Any, Any]) -> None:
    resp = await client.post("/mutate/v1/secrets", data=orjson.dumps(review_body(make_pod())))
    assert resp.status == 404
