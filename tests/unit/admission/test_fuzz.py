"""Hostile and malformed AdmissionReviews: the decoder and the routes answer 400 or a valid review, never 500,
never hang."""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any

import orjson
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.admission.builders import make_job, make_pod, review_body
from webhook.admission import review
from webhook.admission.endpoints import ENDPOINTS
from webhook.admission.options import AdmissionOptions
from webhook.admission.routes import build_app
from webhook.admission.view import StaticView

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=40)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=30,
)
KEYS = [
    "apiVersion",
    "kind",
    "request",
    "uid",
    "operation",
    "object",
    "oldObject",
    "userInfo",
    "metadata",
    "labels",
    "annotations",
    "spec",
    "suspend",
    "schedulingGates",
    "ownerReferences",
    "podSets",
    "resourceGroups",
    "status",
]


def valid_bodies() -> list[dict[str, Any]]:
    return [
        review_body(make_job()),
        review_body(make_job(suspend=False), operation="UPDATE", old=make_job(suspend=True)),
        review_body(make_pod(group="g", total="2")),
    ]


@st.composite
def corrupted(draw: st.DrawFn) -> bytes:
    """A valid review with one node somewhere replaced by an arbitrary value, or truncated, or padded."""
    body = draw(st.sampled_from(valid_bodies()))
    node: Any = body
    for _ in range(draw(st.integers(0, 4))):
        if not isinstance(node, dict) or not node:
            break
        k = draw(st.sampled_from(sorted(node)))
        if draw(st.booleans()) or not isinstance(node[k], dict):
            node[k] = draw(json_values)
            break
        node = node[k]
    if isinstance(node, dict) and draw(st.booleans()):
        node[draw(st.sampled_from(KEYS))] = draw(json_values)
    raw = orjson.dumps(body)
    mode = draw(st.sampled_from(["as-is", "truncate", "huge-string", "deep"]))
    if mode == "truncate":
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif mode == "huge-string":
        raw = raw.replace(b'"pi"', b'"' + b"a" * 200_000 + b'"', 1)
    elif mode == "deep":
        depth = draw(st.integers(100, 3000))
        raw = raw.replace(b'"spec":', b'"spec":' + b'{"a":' * depth + b"1" + b"}" * depth + b',"x":', 1)
    return raw


def check_answer(status: int, payload: Any, raw: bytes, *, mutating: bool) -> None:
    assert status in (200, 400), status
    if status == 400:
        assert isinstance(payload["reason"], str)
        return
    answer = payload["response"]
    assert payload["apiVersion"] == review.API_VERSION
    assert payload["kind"] == review.KIND
    assert answer["uid"] == review.uid_of(raw)
    assert isinstance(answer["allowed"], bool)
    if "patch" in answer:
        assert mutating
        assert answer["patchType"] == "JSONPatch"
        assert isinstance(orjson.loads(base64.b64decode(answer["patch"])), list)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=corrupted() | st.binary(max_size=200))
def test_decoder_raises_only_malformed_review(raw: bytes) -> None:
    reason = "decoded"
    try:
        review.decode(raw)
    except review.MalformedReview as exc:
        reason = exc.reason
    assert reason


EVERYTHING = AdmissionOptions(frameworks=frozenset({"batch/job", "pod"}), manage_jobs_without_queue_name=True)


async def post(path: str, raw: bytes) -> tuple[int, Any]:
    async with TestClient(TestServer(build_app(view=StaticView(), options=EVERYTHING))) as client:
        resp = await client.post(path, data=io.BytesIO(raw))
        return resp.status, orjson.loads(await resp.read())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=corrupted(), endpoint=st.sampled_from(ENDPOINTS))
def test_routes_answer_400_or_a_valid_review(raw: bytes, endpoint: Any) -> None:
    # A hang would show up as a timeout here, well before the test's own.
    status, payload = asyncio.run(asyncio.wait_for(post(endpoint.path, raw), timeout=10))
    check_answer(status, payload, raw, mutating=endpoint.mutating)
