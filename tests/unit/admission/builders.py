"""Builders for the objects and reviews the admission tests send: read as specifications, not JSON blobs."""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch
import orjson

from webhook.admission import review
from webhook.admission.verdict import Verdict
from webhook.api import constants as c

NAMESPACE = "team-a"
TURNSTILE_USER = "system:serviceaccount:turnstile-system:turnstile"


def make_job(
    name: str = "pi",
    *,
    queue: str | None = "user-queue",
    suspend: bool | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    parallelism: int | None = None,
    completions: int | None = None,
    owner_kind: str | None = None,
    owner_api_version: str = "batch/v1",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    all_labels = dict(labels or {})
    if queue is not None:
        all_labels[c.QUEUE_NAME_LABEL] = queue
    if all_labels:
        meta["labels"] = all_labels
    if annotations:
        meta["annotations"] = dict(annotations)
    if owner_kind:
        meta["ownerReferences"] = [
            {"apiVersion": owner_api_version, "kind": owner_kind, "name": "parent", "uid": "u-1", "controller": True}
        ]
    spec: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}
    }
    if suspend is not None:
        spec["suspend"] = suspend
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def make_pod(
    name: str = "p-0",
    *,
    queue: str | None = "user-queue",
    group: str | None = None,
    total: str | None = None,
    managed: bool = False,
    gated: bool = False,
    owner_kind: str | None = None,
) -> dict[str, Any]:
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    if queue is not None:
        labels[c.QUEUE_NAME_LABEL] = queue
    if group is not None:
        labels[c.POD_GROUP_NAME_LABEL] = group
    if total is not None:
        annotations[c.POD_GROUP_TOTAL_COUNT_ANNOTATION] = total
    if managed:
        labels[c.MANAGED_LABEL] = "true"
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": labels, "annotations": annotations}
    if owner_kind:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": owner_kind, "name": "parent", "uid": "u-1", "controller": True}
        ]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if gated:
        spec["schedulingGates"] = [{"name": c.ADMISSION_SCHEDULING_GATE}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


_KINDS = {
    "Job": ("batch", "v1"),
    "Pod": ("", "v1"),
}


def review_body(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    kind: str | None = None,
    user: str = "alice",
    dry_run: bool = False,
    namespace: str = NAMESPACE,
    uid: str = "7f0c4c5e-0000-4000-8000-000000000001",
) -> dict[str, Any]:
    kind = kind or str((obj or old or {}).get("kind"))
    group, version = _KINDS.get(kind, (c.GROUP, c.VERSION))
    name = str(((obj or old or {}).get("metadata") or {}).get("name", ""))
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "operation": operation,
        "namespace": namespace,
        "name": name,
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }
    return {"apiVersion": review.API_VERSION, "kind": review.KIND, "request": request}


def make_request(obj: dict[str, Any] | None, **kwargs: Any) -> review.Request:
    """A decoded request, built through the real decoder."""
    return review.decode(orjson.dumps(review_body(obj, **kwargs)))


def apply(obj: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The object after the verdict's patch, as the API server would store it."""
    patched: dict[str, Any] = jsonpatch.apply_patch(obj, list(verdict.patch))
    return patched


def decode_patch(encoded: str) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(encoded))
    return ops
