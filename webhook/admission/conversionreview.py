"""ConversionReview ``apiextensions.k8s.io/v1``: the API server's request to convert CRD objects, and our answer.

Owns: ``answer`` (request body in, response body out) for the ``/convert`` route. The API server checks that the
response echoes the request's uid and returns one object per input, in the same order, at the desired apiVersion;
it pairs them by position. Any object that cannot be converted fails the whole review (``result.status:
Failure`` with a message naming the object), as a partial answer would be paired wrongly. A body without a uid to
echo raises ``MalformedReview`` (the route answers HTTP 400).
Must not: hold conversion rules (``webhook.api.conversion`` does), or know HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, NotRequired, TypedDict

import orjson

from webhook.admission.review import MalformedReview
from webhook.api.conversion import VERSIONS, ConversionError, convert

API_VERSION: Final = "apiextensions.k8s.io/v1"
KIND: Final = "ConversionReview"
_MAX_UID: Final = 128


class ResultWire(TypedDict):
    status: Literal["Success", "Failure"]
    message: NotRequired[str]


class ConversionResponseWire(TypedDict):
    uid: str
    convertedObjects: list[dict[str, Any]]
    result: ResultWire


class ConversionReviewWire(TypedDict):
    apiVersion: str
    kind: str
    response: ConversionResponseWire


def answer(body: bytes) -> bytes:
    """The encoded ConversionReview response to an encoded request."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedReview(f"the body is not JSON: {exc}") from exc
    request = review.get("request") if isinstance(review, Mapping) else None
    uid = request.get("uid") if isinstance(request, Mapping) else None
    if not isinstance(request, Mapping) or not isinstance(uid, str) or not 0 < len(uid) <= _MAX_UID:
        raise MalformedReview(f"expected a {API_VERSION} {KIND} with a request.uid")
    try:
        converted = _convert_all(review, request)
    except ConversionError as exc:
        return orjson.dumps(_review(uid, [], {"status": "Failure", "message": str(exc)}))
    return orjson.dumps(_review(uid, converted, {"status": "Success"}))


def _convert_all(review: Mapping[str, Any], request: Mapping[str, Any]) -> list[dict[str, Any]]:
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise ConversionError(f"expected apiVersion {API_VERSION} and kind {KIND}")
    desired = request.get("desiredAPIVersion")
    if desired not in VERSIONS:
        raise ConversionError(f"cannot convert to {desired!r}: expected one of {', '.join(VERSIONS)}")
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise ConversionError("request.objects must be a list")
    converted = []
    for i, obj in enumerate(objects):
        if not isinstance(obj, Mapping):
            raise ConversionError(f"request.objects[{i}] is not an object")
        try:
            converted.append(convert(obj, desired))
        except ConversionError as exc:
            raise ConversionError(f"request.objects[{i}]: {exc}") from exc
    return converted


def _review(uid: str, objects: list[dict[str, Any]], result: ResultWire) -> ConversionReviewWire:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "response": {"uid": uid, "convertedObjects": objects, "result": result},
    }
