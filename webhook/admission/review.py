"""AdmissionReview ``admission.k8s.io/v1``: decoding a request body and encoding a response body.

Decoding checks the envelope the API server promises (apiVersion, kind, a request with a uid, kind, operation
and objects of the right shapes) and raises ``MalformedReview`` for anything else; the route turns that into
HTTP 400 with the reason. Each object is decoded once, when a rule first reads it, into the typed ``KubeObject``
(its metadata, a Pod's gates), and viewed once (``Reviewed``, an ``ObjectView`` of ``webhook.api.views``): the
kinds' adapters read that view as any other, the queue and Workload rules through its checked accessors; the
patch reads the object as sent.
Encoding follows what the API server verifies: the uid echoed, the exact apiVersion/kind, a base64 JSONPatch with
``patchType: JSONPatch`` only on mutating responses, never a patch on validating ones. Must not: apply any policy.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar

import msgspec
import orjson

from webhook.admission.verdict import Verdict
from webhook.api.model import KubeObject
from webhook.api.views import ObjectView, Raw

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
# A uid is a UUID (36 characters); anything much longer is not from an API server.
_MAX_UID = 128
# Warnings longer than this may be truncated by clients (API server's guidance: keep under 120, never over 256).
_MAX_WARNING = 256
_NONE: Mapping[str, Any] = {}


class MalformedReview(ValueError):
    """The body is not an AdmissionReview v1 request we can answer; ``reason`` says why (sent back with 400)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Wire shapes (what the API server sends and expects back).
class GroupVersionKindWire(TypedDict):
    group: str
    version: str
    kind: str


class UserInfoWire(TypedDict, total=False):
    username: str
    uid: str
    groups: list[str]


class AdmissionRequestWire(TypedDict):
    uid: str
    kind: GroupVersionKindWire
    resource: NotRequired[dict[str, str]]
    subResource: NotRequired[str]
    name: NotRequired[str]
    namespace: NotRequired[str]
    operation: str
    userInfo: NotRequired[UserInfoWire]
    object: NotRequired[dict[str, Any] | None]
    oldObject: NotRequired[dict[str, Any] | None]
    dryRun: NotRequired[bool]


class StatusWire(TypedDict, total=False):
    code: int
    message: str


class AdmissionResponseWire(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[StatusWire]
    patch: NotRequired[str]
    patchType: NotRequired[Literal["JSONPatch"]]
    warnings: NotRequired[list[str]]


class AdmissionReviewWire(TypedDict):
    apiVersion: str
    kind: str
    response: AdmissionResponseWire


class _CheckedReads:
    """Reads of an object under review as sent, for the rules that check a schema field by field. Custom
    resources and hostile callers can send anything, so each read checks the shape of what it returns and raises
    ``MalformedReview`` (HTTP 400) naming the path otherwise. Shared by ``Reviewed`` and ``Entry``."""

    __slots__ = ()
    raw: Raw

    def mapping(self, *path: str) -> Raw:
        """The object at ``path`` (empty when it or a parent is absent or null)."""
        current: Any = self.raw
        for i, part in enumerate(path):
            current = current.get(part)
            if current is None:
                return _NONE
            if not isinstance(current, dict):
                raise MalformedReview(f"{'.'.join(path[: i + 1])} must be an object")
        return current  # type: ignore[no-any-return]

    def sequence(self, *path: str) -> list[Any]:
        """The list at ``path`` (empty when it or a parent is absent or null); its parents checked as ``mapping``
        checks them, in the same walk (the rules read a dozen lists a review)."""
        current: Any = self.raw
        last = len(path) - 1
        for i, part in enumerate(path):
            current = current.get(part)
            if current is None:
                return []
            if i < last and not isinstance(current, dict):
                raise MalformedReview(f"{'.'.join(path[: i + 1])} must be an object")
        if not isinstance(current, list):
            raise MalformedReview(f"{'.'.join(path)} must be a list")
        return current

    def dicts(self, *path: str) -> list[Entry]:
        """The entries of the list at ``path`` that are objects (entries of another shape skipped)."""
        return [Entry(entry) for entry in self.sequence(*path) if isinstance(entry, dict)]


class Reviewed(ObjectView, _CheckedReads, frozen=True):
    """An object under review, viewed: the job adapters read it as any ``ObjectView``, the queue and Workload
    rules through its checked reads."""


class Entry(msgspec.Struct, _CheckedReads, frozen=True):
    """An object entry of one of the lists of an object under review (a pod set, a container), read the same way;
    its paths are relative to the entry."""

    raw: Raw


_T = TypeVar("_T")


class _once(Generic[_T]):  # lower case: read as a decorator, like the cached_property it replaces
    """A property computed on first read and kept in the instance: ``functools.cached_property`` without the lock
    Python 3.11 takes on every first read (3.12 dropped it), ~1 us a view or object of a review on the webhook's
    path. A request is read by the one thread answering it."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self._func = func
        self._name = func.__name__

    def __get__(self, instance: object, owner: type | None = None) -> _T:
        if instance is None:
            return self  # type: ignore[return-value]  # read on the class (introspection)
        value = self._func(instance)
        instance.__dict__[self._name] = value  # a non-data descriptor: the next read finds the instance's own
        return value


@dataclass(frozen=True)
class Request:
    """The parts of an AdmissionRequest the policies read, checked for shape.

    The objects come as sent (``raw_object``, ``raw_old_object``: empty when the review has none, as
    ``has_object`` and ``has_old_object`` say) and typed (``object``, ``old_object``: None then), decoded once, on
    first use: the job and pod rules read the typed view; the queue and Workload rules check their schema field by
    field on the object as sent and never pay for a decode they do not read."""

    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str
    name: str
    sub_resource: str
    username: str
    groups: tuple[str, ...]
    dry_run: bool
    has_object: bool
    has_old_object: bool
    raw_object: Mapping[str, Any]
    raw_old_object: Mapping[str, Any]

    @_once
    def object(self) -> KubeObject | None:
        return _typed(self.raw_object, "object") if self.has_object else None

    @_once
    def old_object(self) -> KubeObject | None:
        return _typed(self.raw_old_object, "oldObject") if self.has_old_object else None

    @_once
    def view(self) -> Reviewed:
        """The object viewed (empty when the review has none)."""
        return Reviewed.of(self.raw_object)

    @_once
    def old_view(self) -> Reviewed:
        return Reviewed.of(self.raw_old_object)


def _str(raw: Mapping[str, Any], field: str, where: str, *, default: str | None = None) -> str:
    value = raw.get(field, default)
    if not isinstance(value, str):
        raise MalformedReview(f"{where}.{field} must be a string")
    return value


def _object(raw: Mapping[str, Any], field: str) -> dict[str, Any] | None:
    value = raw.get(field)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedReview(f"request.{field} must be an object or null")
    return value


def _typed(obj: Mapping[str, Any], field: str) -> KubeObject:
    try:
        return msgspec.convert(obj, KubeObject)
    except msgspec.ValidationError as err:  # "Expected `str`, got `int` - at `$.metadata.labels[...]`"
        raise MalformedReview(str(err).replace("`$", f"`request.{field}")) from None


def decode(body: bytes) -> Request:
    """Parses and checks an AdmissionReview v1 request body."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedReview(f"body is not valid JSON: {exc}") from None
    if not isinstance(review, dict):
        raise MalformedReview("body must be a JSON object (an AdmissionReview)")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise MalformedReview(f"expected apiVersion {API_VERSION} and kind {KIND}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("request must be an object")
    uid = _str(request, "uid", "request")
    if not uid or len(uid) > _MAX_UID:
        raise MalformedReview(f"request.uid must be a non-empty string of at most {_MAX_UID} characters")
    gvk = request.get("kind")
    if not isinstance(gvk, dict):
        raise MalformedReview("request.kind must be an object with group, version and kind")
    operation = _str(request, "operation", "request")
    if operation not in OPERATIONS:
        raise MalformedReview(f"request.operation must be one of {', '.join(sorted(OPERATIONS))}")
    user = request.get("userInfo", {})
    if not isinstance(user, dict):
        raise MalformedReview("request.userInfo must be an object")
    groups = user.get("groups", [])
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise MalformedReview("request.userInfo.groups must be a list of strings")
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise MalformedReview("request.dryRun must be a boolean")
    obj, old = _object(request, "object"), _object(request, "oldObject")
    return Request(
        uid=uid,
        group=_str(gvk, "group", "request.kind", default=""),
        version=_str(gvk, "version", "request.kind"),
        kind=_str(gvk, "kind", "request.kind"),
        operation=operation,
        namespace=_str(request, "namespace", "request", default=""),
        name=_str(request, "name", "request", default=""),
        sub_resource=_str(request, "subResource", "request", default=""),
        username=_str(user, "username", "request.userInfo", default=""),
        groups=tuple(groups),
        dry_run=dry_run,
        has_object=obj is not None,
        has_old_object=old is not None,
        raw_object=_NONE if obj is None else obj,
        raw_old_object=_NONE if old is None else old,
    )


def uid_of(body: bytes) -> str | None:
    """The request uid of a body that may not decode fully; None when there is none to echo."""
    try:
        review = orjson.loads(body)
        uid = review["request"]["uid"]
    except (orjson.JSONDecodeError, TypeError, KeyError):
        return None
    return uid if isinstance(uid, str) and 0 < len(uid) <= _MAX_UID else None


def response(uid: str, verdict: Verdict, *, mutating: bool) -> AdmissionReviewWire:
    answer: AdmissionResponseWire = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        answer["status"] = {"code": verdict.code, "message": verdict.message}
    if mutating and verdict.allowed and verdict.patch:
        answer["patch"] = base64.b64encode(orjson.dumps(list(verdict.patch))).decode("ascii")
        answer["patchType"] = "JSONPatch"
    if verdict.warnings:
        answer["warnings"] = [w[:_MAX_WARNING] for w in verdict.warnings]
    return {"apiVersion": API_VERSION, "kind": KIND, "response": answer}


def encode(uid: str, verdict: Verdict, *, mutating: bool) -> bytes:
    return orjson.dumps(response(uid, verdict, mutating=mutating))
